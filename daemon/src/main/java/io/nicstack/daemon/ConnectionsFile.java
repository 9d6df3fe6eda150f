package io.nicstack.daemon;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.agrona.BitUtil;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.tcp.Tcp;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.wire.Ipv4Address;

/**
 * A snapshot of the TCP connection table in shared memory, {@code <shm>/conns.dat}, published by the
 * daemon twice a second and read by {@code nicstack conns} (like {@code ss -tin}).
 *
 * <pre>
 *   0        8        12       16            64                 72        128
 *  +--------+--------+--------+------ ... --+--------------------+--------+------ ... ------------+
 *  | magic  |version |capacity|   padding   | sequence (seqlock) | length |  UTF-8 text, length  |
 *  +--------+--------+--------+------ ... --+--------------------+--------+------ ... ------------+
 * </pre>
 *
 * One writer (the daemon's event loop): the sequence is made odd with release semantics, the text
 * and length written, then the sequence made even again. Readers copy and retry until they see the
 * same even sequence before and after (a seqlock), so they never block the daemon.
 */
public final class ConnectionsFile implements AutoCloseable
{
    public static final String FILE_NAME = "conns.dat";
    public static final long MAGIC = 0x534E_4E4F_434E_494EL; // "NICONNS" little endian, roughly
    public static final int VERSION = 1;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int CAPACITY_OFFSET = 12;
    static final int SEQUENCE_OFFSET = BitUtil.CACHE_LINE_LENGTH;
    static final int LENGTH_OFFSET = SEQUENCE_OFFSET + 8;
    static final int TEXT_OFFSET = 2 * BitUtil.CACHE_LINE_LENGTH;
    static final int DEFAULT_CAPACITY = 8 << 20;
    static final String HEADER = String.format("%-12s %-21s %-21s %s", "State", "Local", "Peer", "Details");

    private final MappedByteBuffer mapped;
    private final UnsafeBuffer buffer;
    private final int capacity;

    private ConnectionsFile(final MappedByteBuffer mapped, final int capacity)
    {
        this.mapped = mapped;
        this.capacity = capacity;
        this.buffer = new UnsafeBuffer(mapped);
    }

    static ConnectionsFile create(final Path dir) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        Files.deleteIfExists(path);
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, TEXT_OFFSET + DEFAULT_CAPACITY);
        }
        final ConnectionsFile file = new ConnectionsFile(mapped, DEFAULT_CAPACITY);
        file.buffer.putLong(MAGIC_OFFSET, MAGIC);
        file.buffer.putInt(CAPACITY_OFFSET, DEFAULT_CAPACITY);
        file.buffer.putIntRelease(VERSION_OFFSET, VERSION);
        return file;
    }

    /** Publish the table (allocates a string: called twice a second, never per packet). */
    void publish(final Tcp tcp, final int localAddress)
    {
        final String local = Ipv4Address.format(localAddress) + ":";
        final StringBuilder sb = new StringBuilder(256 + 160 * tcp.connectionCount());
        sb.append(tcp.connectionCount()).append(" connections\n").append(HEADER).append('\n');
        tcp.forEachConnection(c -> line(sb, local, c));
        byte[] text = sb.toString().getBytes(StandardCharsets.UTF_8);
        if (text.length > capacity)
        {
            final byte[] note = "... (truncated)\n".getBytes(StandardCharsets.UTF_8);
            final byte[] cut = new byte[capacity];
            System.arraycopy(text, 0, cut, 0, capacity - note.length);
            System.arraycopy(note, 0, cut, capacity - note.length, note.length);
            text = cut;
        }
        final long sequence = buffer.getLong(SEQUENCE_OFFSET);
        buffer.putLongRelease(SEQUENCE_OFFSET, sequence + 1);
        buffer.putInt(LENGTH_OFFSET, text.length);
        buffer.putBytes(TEXT_OFFSET, text);
        buffer.putLongRelease(SEQUENCE_OFFSET, sequence + 2);
    }

    static void line(final StringBuilder sb, final String local, final TcpConnection c)
    {
        sb.append(String.format("%-12s %-21s %-21s", c.state(), local + c.localPort(),
            Ipv4Address.format(c.remoteAddress()) + ":" + c.remotePort()));
        sb.append(' ').append(c.congestionControl());
        if (c.sackEnabled())
        {
            sb.append(" sack");
        }
        if (c.timestampsEnabled())
        {
            sb.append(" ts");
        }
        sb.append(" wscale:").append(c.sendWindowScale()).append(',').append(c.receiveWindowScale())
            .append(" mss:").append(c.sendMss())
            .append(" cwnd:").append(c.cwnd())
            .append(" ssthresh:").append(c.ssthresh() >= Integer.MAX_VALUE ? "-" : String.valueOf(c.ssthresh()))
            .append(" srtt:").append(c.srttNanos() < 0 ? "-" : String.format("%.3fms", c.srttNanos() / 1e6))
            .append(" rto:").append(c.rtoNanos() / 1_000_000).append("ms")
            .append(" bytes_acked:").append(c.bytesAcked())
            .append(" bytes_received:").append(c.bytesReceived())
            .append(" retrans:").append(c.retransmittedSegments())
            .append('\n');
    }

    /** Read a consistent snapshot from a daemon's file. */
    static String read(final Path dir) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        if (!Files.isDirectory(dir))
        {
            throw new IOException(Files.exists(dir) ? dir + " is not a directory (--shm names the daemon's directory)"
                : "no directory " + dir + " (is the daemon running with --shm " + dir + "?)");
        }
        if (!Files.exists(path))
        {
            throw new IOException("no connections file at " + path + " (is the daemon running with --shm " + dir + "?)");
        }
        if (!Files.isRegularFile(path))
        {
            throw new IOException(path + " is not a regular file: not a nicstack connections file");
        }
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ))
        {
            if (channel.size() > Integer.MAX_VALUE)
            {
                throw new IOException("connections file too large (" + channel.size() + " bytes): " + path);
            }
            mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size());
        }
        catch (final AccessDeniedException e)
        {
            throw new IOException("permission denied reading " + path);
        }
        try
        {
            final UnsafeBuffer b = new UnsafeBuffer(mapped);
            if (b.capacity() < TEXT_OFFSET || b.getLong(MAGIC_OFFSET) != MAGIC)
            {
                throw new IOException("not a nicstack connections file: " + path);
            }
            if (b.getIntVolatile(VERSION_OFFSET) != VERSION)
            {
                throw new IOException("connections file layout version " + b.getInt(VERSION_OFFSET) + ", this build reads " + VERSION);
            }
            for (int attempt = 0; attempt < 1000; attempt++)
            {
                final long before = b.getLongVolatile(SEQUENCE_OFFSET);
                if ((before & 1) != 0)
                {
                    Thread.onSpinWait();
                    continue;
                }
                final int length = b.getInt(LENGTH_OFFSET);
                if (length < 0 || TEXT_OFFSET + (long)length > b.capacity())
                {
                    continue;
                }
                final byte[] text = new byte[length];
                b.getBytes(TEXT_OFFSET, text);
                if (b.getLongVolatile(SEQUENCE_OFFSET) == before)
                {
                    return before == 0 ? "no snapshot published yet\n" : printable(new String(text, StandardCharsets.UTF_8));
                }
            }
            throw new IOException("could not read a consistent snapshot (daemon publishing continuously?)");
        }
        finally
        {
            IoUtil.unmap(mapped);
        }
    }

    /** The text with control characters other than newline and tab shown as '?' (it goes to a terminal). */
    static String printable(final String text)
    {
        StringBuilder sb = null;
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if ((c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7F && c < 0xA0))
            {
                if (sb == null)
                {
                    sb = new StringBuilder(text);
                }
                sb.setCharAt(i, '?');
            }
        }
        return sb == null ? text : sb.toString();
    }

    @Override
    public void close()
    {
        IoUtil.unmap(mapped);
    }
}
