package io.nicstack.daemon;

import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import org.agrona.BitUtil;
import org.agrona.IoUtil;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.daemon.pipes.LogText;
import io.nicstack.stack.tcp.Tcp;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.cc.CongestionControls;
import io.nicstack.stack.wire.Ipv4Address;

/**
 * A snapshot of the TCP connection table in shared memory, {@code <shm>/conns.dat}, published by the
 * daemon twice a second and read by {@code nicstack conns} (like {@code ss -tin}, cwnd and ssthresh in segments).
 *
 * <pre>
 *   0        8        12       16       24         32      36        64                 72        128
 *  +--------+--------+--------+--------+----------+-------+-- ... --+--------------------+--------+---- ... ----+
 *  | magic  |version |capacity|  pid   |start time| state |  pad    | sequence (seqlock) | length | UTF-8 text  |
 *  +--------+--------+--------+--------+----------+-------+-- ... --+--------------------+--------+---- ... ----+
 * </pre>
 *
 * The pid and start time (in clock ticks since boot) say which daemon writes the file, and state becomes
 * {@link #STATE_STOPPED} when it closes it: a reader tells a running daemon's table from a stale one as {@code stats}
 * does, by the {@link DaemonLock} that daemon holds.
 *
 * <p>One writer (the daemon's event loop): the sequence is made odd, a store-store fence keeps the text and length
 * writes after it, they are written, then the sequence made even again with release semantics. Readers read the
 * sequence (acquire), copy, fence (load-load), read the sequence again, and retry until both are the same even
 * value (a seqlock), so they never block the daemon. A reader retries for up to {@link #READ_BUDGET_NANOS}; a
 * sequence odd for good with its daemon gone means the daemon died while publishing.
 */
public final class ConnectionsFile implements AutoCloseable
{
    public static final String FILE_NAME = "conns.dat";
    public static final long MAGIC = 0x534E_4E4F_434E_494EL; // "NICONNS" little endian, roughly
    public static final int VERSION = 1;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int CAPACITY_OFFSET = 12;
    static final int PID_OFFSET = 16;
    /** As the counters file's: the daemon's start in clock ticks since boot, so a reused pid is told apart. */
    static final int START_TIME_OFFSET = 24;
    static final int STATE_OFFSET = 32;
    static final int STATE_RUNNING = 1;
    static final int STATE_STOPPED = 2;
    static final int SEQUENCE_OFFSET = BitUtil.CACHE_LINE_LENGTH;
    static final int LENGTH_OFFSET = SEQUENCE_OFFSET + 8;
    static final int TEXT_OFFSET = 2 * BitUtil.CACHE_LINE_LENGTH;
    static final int DEFAULT_CAPACITY = 8 << 20;
    /**
     * The largest text a reader takes: eight times the daemon's. A forged file's capacity or length (the mapped size
     * may be up to 2 GiB) cannot make a reader allocate more than this, once.
     */
    static final int MAX_CAPACITY = 64 << 20;
    /** How long a reader retries for a consistent copy (a multi-MiB publish takes milliseconds). */
    static final long READ_BUDGET_NANOS = 1_000_000_000L;
    private static final long RETRY_PARK_NANOS = 100_000L;
    /** Room kept for the note that ends a table too long for the file: its text and the largest count. */
    private static final int TRUNCATED_NOTE_ROOM = 64;
    /** Room for the count line, the column header and the note, with some to spare. */
    static final int MIN_CAPACITY = 256;

    static final String HEADER = String.format("%-12s %-21s %-21s %s", "State", "Local", "Peer", "Details");

    private final MappedByteBuffer mapped;
    private final UnsafeBuffer buffer;
    private final int capacity;
    /** The event loop's, kept between publications: the table's text, and its bytes. */
    private final StringBuilder text = new StringBuilder(1 << 16);
    private final StringBuilder localPrefix = new StringBuilder(24);
    private final Consumer<TcpConnection> lineWriter = this::lineIfRoom;
    /** Connections of this publication whose lines did not fit. */
    private int omitted;
    private byte[] bytes = new byte[1 << 16];

    private ConnectionsFile(final MappedByteBuffer mapped, final int capacity)
    {
        this.mapped = mapped;
        this.capacity = capacity;
        this.buffer = new UnsafeBuffer(mapped);
    }

    static ConnectionsFile create(final Path dir) throws IOException
    {
        return create(dir, DEFAULT_CAPACITY);
    }

    /** A file whose text holds {@code capacity} bytes, at least {@link #MIN_CAPACITY} (tests use a small one). */
    static ConnectionsFile create(final Path dir, final int capacity) throws IOException
    {
        if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY)
        {
            throw new IllegalArgumentException("connections file capacity " + capacity + " not in " + MIN_CAPACITY + ".."
                + MAX_CAPACITY + ": room for the table's header and the note that it is full, and no more than readers take");
        }
        final Path path = dir.resolve(FILE_NAME);
        Files.deleteIfExists(path);
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, TEXT_OFFSET + capacity);
        }
        final ConnectionsFile file = new ConnectionsFile(mapped, capacity);
        file.buffer.putLong(MAGIC_OFFSET, MAGIC);
        file.buffer.putInt(CAPACITY_OFFSET, capacity);
        file.buffer.putLong(PID_OFFSET, ProcessHandle.current().pid());
        file.buffer.putLong(START_TIME_OFFSET, DaemonLock.ownStartTicks());
        file.buffer.putInt(STATE_OFFSET, STATE_RUNNING);
        file.buffer.putIntRelease(VERSION_OFFSET, VERSION);
        return file;
    }

    /**
     * Publish the table. Runs on the event loop twice a second, for every connection: no String.format and no
     * string per line (a formatted line cost 3-8 us, tens of milliseconds of stalled packets at 10k connections);
     * one builder and one byte array, kept and grown, make the text. A table longer than the file (some 40,000
     * connections in 8 MiB) shows the whole lines that fit and then says how many connections it leaves out; lines
     * past the file are not built.
     */
    void publish(final Tcp tcp, final int localAddress)
    {
        final StringBuilder sb = text;
        sb.setLength(0);
        sb.append(tcp.connectionCount()).append(" connections\n").append(HEADER).append('\n');
        localPrefix.setLength(0);
        Ipv4Address.append(localPrefix, localAddress).append(':');
        final int headerEnd = sb.length();
        omitted = 0;
        tcp.forEachConnection(lineWriter);
        if (sb.length() > capacity || omitted > 0)
        {
            // Cut after the last whole line that leaves room for the note, counting the lines cut.
            int cut = Math.max(headerEnd, sb.lastIndexOf("\n", capacity - TRUNCATED_NOTE_ROOM - 1) + 1);
            for (int i = cut; i < sb.length(); i++)
            {
                omitted += sb.charAt(i) == '\n' ? 1 : 0;
            }
            sb.setLength(cut);
            sb.append("... ").append(omitted).append(" more connections not shown: the table is full\n");
        }
        final int length = sb.length();
        if (bytes.length < length)
        {
            bytes = new byte[Math.min(capacity, Math.max(length, 2 * bytes.length))];
        }
        for (int i = 0; i < length; i++)
        {
            final char c = sb.charAt(i);
            bytes[i] = c < 0x80 ? (byte)c : (byte)'?'; // ASCII by construction
        }
        publish(bytes, length);
    }

    private void lineIfRoom(final TcpConnection c)
    {
        if (text.length() > capacity)
        {
            omitted++;
            return;
        }
        line(text, localPrefix, c);
    }

    /** Publish {@code length} bytes of {@code text} under the seqlock. */
    void publish(final byte[] text, final int length)
    {
        final long sequence = buffer.getLong(SEQUENCE_OFFSET);
        buffer.putLong(SEQUENCE_OFFSET, sequence + 1);
        // The odd sequence must be visible before any byte of the new text: a release store orders only what
        // comes before it.
        VarHandle.storeStoreFence();
        buffer.putInt(LENGTH_OFFSET, length);
        buffer.putBytes(TEXT_OFFSET, text, 0, length);
        buffer.putLongRelease(SEQUENCE_OFFSET, sequence + 2);
    }

    /** One line of the table, as {@code String.format("%-12s %-21s %-21s", state, local, peer)} and the details. */
    static void line(final StringBuilder sb, final CharSequence localPrefix, final TcpConnection c)
    {
        final int start = sb.length();
        sb.append(c.state().name());
        pad(sb, start + 12);
        sb.append(' ');
        final int local = sb.length();
        sb.append(localPrefix).append(c.localPort());
        pad(sb, local + 21);
        sb.append(' ');
        final int peer = sb.length();
        Ipv4Address.append(sb, c.remoteAddress()).append(':').append(c.remotePort());
        pad(sb, peer + 21);
        sb.append(' ').append(c.congestionControl());
        if (c.sackEnabled())
        {
            sb.append(" sack");
        }
        if (c.timestampsEnabled())
        {
            sb.append(" ts");
        }
        // cwnd and ssthresh in segments of the send MSS, as ss(8) shows Linux's (tcpi_snd_cwnd, tcpi_snd_ssthresh): the
        // whole segments they let out, ours being in bytes. ss leaves ssthresh out while it is the initial, infinite one.
        final int mss = c.sendMss();
        sb.append(" wscale:").append(c.sendWindowScale()).append(',').append(c.receiveWindowScale())
            .append(" mss:").append(mss)
            .append(" cwnd:");
        if (mss <= 0)
        {
            sb.append('-'); // no MSS yet (SYN-SENT)
        }
        else
        {
            sb.append(c.cwnd() / mss);
            if (c.ssthresh() < CongestionControls.INITIAL_SSTHRESH)
            {
                sb.append(" ssthresh:").append(c.ssthresh() / mss);
            }
        }
        sb.append(" srtt:");
        if (c.srttNanos() < 0)
        {
            sb.append('-');
        }
        else
        {
            // "%.3fms" of srtt / 1e6: microseconds rounded half up, then a point before the last three digits.
            final long micros = (c.srttNanos() + 500) / 1000;
            sb.append(micros / 1000).append('.');
            final long fraction = micros % 1000;
            if (fraction < 100)
            {
                sb.append('0');
            }
            if (fraction < 10)
            {
                sb.append('0');
            }
            sb.append(fraction).append("ms");
        }
        sb.append(" rto:").append(c.rtoNanos() / 1_000_000).append("ms")
            .append(" bytes_acked:").append(c.bytesAcked())
            .append(" bytes_received:").append(c.bytesReceived())
            .append(" retrans:").append(c.retransmittedSegments())
            .append('\n');
    }

    private static void pad(final StringBuilder sb, final int to)
    {
        while (sb.length() < to)
        {
            sb.append(' ');
        }
    }

    /** Read a consistent snapshot from a running daemon's file, retrying for up to {@link #READ_BUDGET_NANOS}. */
    static String read(final Path dir) throws IOException
    {
        return read(dir, System::nanoTime, READ_BUDGET_NANOS);
    }

    /**
     * Read a consistent snapshot; an {@link IOException} saying why there is none: the daemon stopped or died (then
     * its last table is stale and not shown), it died mid-publish, the file is inconsistent, or no consistent copy
     * came within {@code budgetNanos} of {@code clock}.
     */
    static String read(final Path dir, final NanoClock clock, final long budgetNanos) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        // No least length here: a short file is "not a nicstack connections file", below.
        final MappedByteBuffer mapped = CountersFile.mapForReading(dir, FILE_NAME, "connections", 0, TEXT_OFFSET + MAX_CAPACITY);
        try
        {
            final UnsafeBuffer b = new UnsafeBuffer(mapped);
            if (b.capacity() < TEXT_OFFSET || b.getLong(MAGIC_OFFSET) != MAGIC)
            {
                throw new IOException("not a nicstack connections file: " + path);
            }
            if (b.getIntVolatile(VERSION_OFFSET) != VERSION)
            {
                throw new IOException("connections file layout version " + b.getInt(VERSION_OFFSET) + ", this build reads "
                    + VERSION + ": " + path);
            }
            final int capacity = b.getInt(CAPACITY_OFFSET);
            if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY || capacity != b.capacity() - TEXT_OFFSET)
            {
                throw new IOException("connections file inconsistent (capacity " + capacity + " in a file of " + b.capacity()
                    + " bytes): " + path);
            }
            final long pid = b.getLong(PID_OFFSET);
            if (b.getIntVolatile(STATE_OFFSET) == STATE_STOPPED)
            {
                throw new IOException("the daemon (pid " + pid + ") has stopped: no connections (" + path + " is its last table)");
            }
            final String daemon = DaemonLock.identity(pid, b.getLong(START_TIME_OFFSET));
            if (!DaemonLock.heldBy(dir, daemon))
            {
                throw new IOException("the daemon (pid " + pid + ") is not running: it died "
                    + ((b.getLongVolatile(SEQUENCE_OFFSET) & 1) != 0 ? "while publishing its table: no complete table"
                    : "without stopping, and its last table is stale") + " (" + path + ")");
            }
            final long deadline = clock.nanoTime() + budgetNanos;
            // One copy buffer for every retry, grown to the longest length seen, at most the capacity.
            byte[] text = new byte[0];
            while (true)
            {
                final long before = b.getLongVolatile(SEQUENCE_OFFSET);
                if ((before & 1) == 0)
                {
                    final int length = b.getInt(LENGTH_OFFSET);
                    final boolean lengthFits = length >= 0 && length <= capacity;
                    if (lengthFits && text.length < length)
                    {
                        text = new byte[length];
                    }
                    b.getBytes(TEXT_OFFSET, text, 0, lengthFits ? length : 0);
                    VarHandle.loadLoadFence();
                    if (b.getLongVolatile(SEQUENCE_OFFSET) == before)
                    {
                        if (!lengthFits)
                        {
                            throw new IOException("connections file inconsistent (text length " + length + ", capacity "
                                + capacity + "): " + path);
                        }
                        return before == 0 ? "no snapshot published yet\n"
                            : printable(new String(text, 0, length, StandardCharsets.UTF_8));
                    }
                }
                if (clock.nanoTime() - deadline >= 0)
                {
                    if (!DaemonLock.heldBy(dir, daemon))
                    {
                        throw new IOException("the daemon (pid " + pid + ") died while publishing its table: no complete table");
                    }
                    throw new IOException("no consistent table within " + budgetNanos / 1_000_000 + " ms: the daemon (pid "
                        + pid + ") " + ((before & 1) != 0 ? "has been publishing all that time (stuck?)" : "publishes without pause"));
                }
                LockSupport.parkNanos(RETRY_PARK_NANOS);
            }
        }
        finally
        {
            IoUtil.unmap(mapped);
        }
    }

    /**
     * The text with control characters ({@link LogText#isControl}) other than newline and tab shown as '?' (it goes to a
     * terminal). A table of many lines, not one untrusted string in a log line: not {@link LogText#untrusted}'s rule.
     */
    static String printable(final String text)
    {
        StringBuilder sb = null;
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (LogText.isControl(c) && c != '\n' && c != '\t')
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

    /** Marks the file stopped (a reader says so instead of showing the last table), then unmaps it. */
    @Override
    public void close()
    {
        buffer.putIntRelease(STATE_OFFSET, STATE_STOPPED);
        IoUtil.unmap(mapped);
    }
}
