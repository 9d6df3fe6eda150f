package io.nicstack.daemon;

import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import org.agrona.BitUtil;
import org.agrona.BufferUtil;
import org.agrona.IoUtil;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.daemon.pipes.LogText;
import io.nicstack.nic.linux.Linux;
import io.nicstack.stack.tcp.Tcp;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.cc.CongestionControls;
import io.nicstack.stack.wire.Ipv4Address;

import static io.nicstack.nic.linux.Linux.LIBC;

/**
 * A snapshot of the TCP connection table in shared memory, {@code <shm>/conns.dat}, published by the daemon when
 * {@code nicstack conns} asks for one (like {@code ss -tin}, cwnd and ssthresh in segments).
 *
 * <pre>
 *   0        8        12       16       24         32      36        64                 72       80        88        96      128
 *  +--------+--------+--------+--------+----------+-------+-- ... --+--------------------+--------+---------+---------+-- ... -+---- ... ----+
 *  | magic  |version |capacity|  pid   |start time| state |  pad    | sequence (seqlock) | length |answered |published|  pad   | UTF-8 text  |
 *  +--------+--------+--------+--------+----------+-------+-- ... --+--------------------+--------+---------+---------+-- ... -+---- ... ----+
 * </pre>
 *
 * The pid and start time (in clock ticks since boot) say which daemon writes the file, and state becomes
 * {@link #STATE_STOPPED} when it closes it: a reader tells a running daemon's table from a stale one as {@code stats}
 * does, by the {@link DaemonLock} that daemon holds.
 *
 * <p>On demand: building the table costs the event loop some 2 us a connection (100 ms and more at 100,000), frames
 * unpolled all that time, so the daemon builds it only when asked. A reader writes a random nonzero request word into
 * {@code <shm>/conns.request} ({@link #REQUEST_FILE_NAME}, 8 bytes, writable by every user, never mapped: whoever
 * truncates it makes the daemon's pread(2) short, not fault); {@link #publish(Tcp, int)}, called by the event loop
 * twice a second, reads the word (one pread, nothing allocated) and returns at once unless it differs from the one its
 * last table answered. The table carries the request it answers ("answered") and when it was published (epoch ms).
 * The reader waits, up to {@link #READ_BUDGET_NANOS}, for a table that answers its request or a later one (a request
 * word another reader wrote after its own: that table was built after its request too); a daemon that does not answer
 * in time gets its last table shown, with a note of its age, or an error if it never published one.
 *
 * <p>One writer (the daemon's event loop): the sequence is made odd, a store-store fence keeps the text, length,
 * answered and published writes after it, they are written, then the sequence made even again with release semantics.
 * Readers read the sequence (acquire), copy, fence (load-load), read the sequence again, and accept the copy only when
 * both are the same even value (a seqlock), so they never block the daemon. A sequence odd for good with its daemon
 * gone means the daemon died while publishing.
 */
public final class ConnectionsFile implements AutoCloseable
{
    public static final String FILE_NAME = "conns.dat";
    public static final long MAGIC = 0x534E_4E4F_434E_494EL; // "NICONNS" little endian, roughly
    /** 2: the request word ({@link #REQUEST_FILE_NAME}), the answered and published fields; tables on demand. */
    public static final int VERSION = 2;
    /** Where readers ask for a table: 8 bytes, a request word in native byte order. */
    public static final String REQUEST_FILE_NAME = "conns.request";
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
    /** The request word this table answers (0: none yet). */
    static final int ANSWERED_OFFSET = LENGTH_OFFSET + 8;
    /** When this table was published, epoch milliseconds (the reader says how old a table it shows unasked is). */
    static final int PUBLISHED_AT_OFFSET = ANSWERED_OFFSET + 8;
    static final int TEXT_OFFSET = 2 * BitUtil.CACHE_LINE_LENGTH;
    static final int DEFAULT_CAPACITY = 8 << 20;
    /**
     * The largest text a reader takes: eight times the daemon's. A forged file's capacity or length (the mapped size
     * may be up to 2 GiB) cannot make a reader allocate more than this, once.
     */
    static final int MAX_CAPACITY = 64 << 20;
    /**
     * How long a reader waits for the daemon's answer (it looks twice a second) and a consistent copy (a multi-MiB
     * publish takes milliseconds).
     */
    static final long READ_BUDGET_NANOS = 2_000_000_000L;
    private static final long POLL_PARK_NANOS = 200_000L;
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
    /** {@link #REQUEST_FILE_NAME} open read-only, and where its word is read to (native memory, kept). */
    private final int requestFd;
    private final ByteBuffer request = ByteBuffer.allocateDirect(Long.BYTES).order(ByteOrder.nativeOrder());
    private final long requestAddress = BufferUtil.address(request);
    /** The request word the last table answered. */
    private long answered;

    private ConnectionsFile(final MappedByteBuffer mapped, final int capacity, final int requestFd)
    {
        this.mapped = mapped;
        this.capacity = capacity;
        this.buffer = new UnsafeBuffer(mapped);
        this.requestFd = requestFd;
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
        final Path requestPath = dir.resolve(REQUEST_FILE_NAME);
        Files.deleteIfExists(requestPath);
        Files.write(requestPath, new byte[Long.BYTES], StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        // Every user who may read the table may ask for one, whatever the umask.
        Files.setAttribute(requestPath, "unix:mode", 0666, LinkOption.NOFOLLOW_LINKS);
        final int requestFd = NoFollowFiles.openRegular(requestPath, Linux.O_RDONLY, "connections request");
        Files.deleteIfExists(path);
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, TEXT_OFFSET + capacity);
        }
        catch (final IOException | RuntimeException e)
        {
            LIBC.close(requestFd);
            throw e;
        }
        final ConnectionsFile file = new ConnectionsFile(mapped, capacity, requestFd);
        file.buffer.putLong(MAGIC_OFFSET, MAGIC);
        file.buffer.putInt(CAPACITY_OFFSET, capacity);
        file.buffer.putLong(PID_OFFSET, ProcessHandle.current().pid());
        file.buffer.putLong(START_TIME_OFFSET, DaemonLock.ownStartTicks());
        file.buffer.putInt(STATE_OFFSET, STATE_RUNNING);
        file.buffer.putIntRelease(VERSION_OFFSET, VERSION);
        return file;
    }

    /**
     * Publish the table if a reader asked for one since the last: the event loop calls this twice a second, and
     * without a request it costs one pread(2) of 8 bytes, nothing built and nothing allocated. A table is built for
     * every connection: no String.format and no string per line (a formatted line cost 3-8 us, tens of milliseconds of stalled packets at 10k connections);
     * one builder and one byte array, kept and grown, make the text. A table longer than the file (some 40,000
     * connections in 8 MiB) shows the whole lines that fit and then says how many connections it leaves out; lines
     * past the file are not built.
     */
    void publish(final Tcp tcp, final int localAddress)
    {
        final long request = pendingRequest();
        if (request == answered)
        {
            return;
        }
        answered = request;
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
        write(bytes, length, request);
    }

    /** The request word readers wrote last, or the one last answered when it cannot be read (a file cut short). */
    private long pendingRequest()
    {
        return LIBC.pread(requestFd, requestAddress, Long.BYTES, 0) == Long.BYTES ? request.getLong(0) : answered;
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

    /** Publish {@code length} bytes of {@code text} now, asked or not, as the answer to the pending request (tests). */
    void publish(final byte[] text, final int length)
    {
        answered = pendingRequest();
        write(text, length, answered);
    }

    /** Write {@code length} bytes of {@code text}, the answer to request word {@code request}, under the seqlock. */
    private void write(final byte[] text, final int length, final long request)
    {
        final long sequence = buffer.getLong(SEQUENCE_OFFSET);
        buffer.putLong(SEQUENCE_OFFSET, sequence + 1);
        // The odd sequence must be visible before any byte of the new text: a release store orders only what
        // comes before it.
        VarHandle.storeStoreFence();
        buffer.putInt(LENGTH_OFFSET, length);
        buffer.putLong(ANSWERED_OFFSET, request);
        buffer.putLong(PUBLISHED_AT_OFFSET, System.currentTimeMillis());
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

    /** Ask the daemon on {@code dir} for its table and read it, waiting up to {@link #READ_BUDGET_NANOS}. */
    static String read(final Path dir) throws IOException
    {
        return read(dir, System::nanoTime, READ_BUDGET_NANOS);
    }

    static String read(final Path dir, final NanoClock clock, final long budgetNanos) throws IOException
    {
        return read(dir, clock, budgetNanos, () -> { });
    }

    /**
     * Ask for a table and read it: the table that answers the request, or when none comes within {@code budgetNanos}
     * of {@code clock}, the last one with a first line saying how old it is. An {@link IOException} saying why there is
     * none: the daemon stopped or died (then its last table is stale and not shown), it died mid-publish, the file is
     * inconsistent, it never published a table, or no consistent copy came in time. {@code whileWaiting} runs between
     * looks (tests: the daemon's event loop).
     */
    static String read(final Path dir, final NanoClock clock, final long budgetNanos, final Runnable whileWaiting)
        throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        // No least length here: a short file is "not a nicstack connections file", below.
        final MappedByteBuffer mapped = CountersFile.mapForReading(dir, FILE_NAME, "connections", 0, TEXT_OFFSET + MAX_CAPACITY);
        try (Request request = new Request())
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
            request.send(dir); // asked only now: a running daemon's file, of this layout
            final long deadline = clock.nanoTime() + budgetNanos;
            final Snapshot snapshot = new Snapshot();
            while (true)
            {
                final boolean late = clock.nanoTime() - deadline >= 0;
                if (late || request.answeredBy(answered(b)))
                {
                    if (snapshot.copy(b, capacity, path) && request.answeredBy(snapshot.answered))
                    {
                        return printable(snapshot.text());
                    }
                    if (late)
                    {
                        break;
                    }
                }
                request.follow();
                whileWaiting.run();
                LockSupport.parkNanos(POLL_PARK_NANOS);
            }
            final long budgetMillis = budgetNanos / 1_000_000;
            if (!snapshot.consistent)
            {
                if (!DaemonLock.heldBy(dir, daemon))
                {
                    throw new IOException("the daemon (pid " + pid + ") died while publishing its table: no complete table");
                }
                throw new IOException("no consistent table within " + budgetMillis + " ms: the daemon (pid " + pid + ") "
                    + ((b.getLongVolatile(SEQUENCE_OFFSET) & 1) != 0 ? "has been publishing all that time (stuck?)"
                    : "publishes without pause"));
            }
            final String why = request.problem == null ? "did not answer within " + budgetMillis + " ms (busy?)"
                : "was not asked (" + request.problem + ")";
            if (snapshot.sequence == 0)
            {
                throw new IOException("no table: the daemon (pid " + pid + ") " + why + " and has published none (" + path + ")");
            }
            final long ageMillis = Math.max(0, System.currentTimeMillis() - snapshot.publishedAt);
            return printable("(the daemon, pid " + pid + ", " + why + "; its last table, published "
                + ageMillis / 1000 + "." + ageMillis % 1000 / 100 + " s ago:)\n" + snapshot.text());
        }
        finally
        {
            IoUtil.unmap(mapped);
        }
    }

    /** The request word the table in {@code b} answers, or 0 while it is being published. */
    private static long answered(final UnsafeBuffer b)
    {
        final long sequence = b.getLongVolatile(SEQUENCE_OFFSET);
        final long answered = b.getLong(ANSWERED_OFFSET);
        VarHandle.loadLoadFence();
        return (sequence & 1) == 0 && b.getLongVolatile(SEQUENCE_OFFSET) == sequence ? answered : 0;
    }

    /** A reader's copy of a table: one buffer for every attempt, grown to the longest length seen, at most the capacity. */
    private static final class Snapshot
    {
        private byte[] bytes = new byte[0];
        private int length;
        private long sequence;
        private long answered;
        private long publishedAt;
        /** Whether a copy was consistent (the last such stays when a later attempt is not). */
        private boolean consistent;

        /** One attempt at a consistent copy of the table in {@code b}; an {@link IOException} for an impossible length. */
        boolean copy(final UnsafeBuffer b, final int capacity, final Path path) throws IOException
        {
            final long before = b.getLongVolatile(SEQUENCE_OFFSET);
            if ((before & 1) != 0)
            {
                return false;
            }
            final int length = b.getInt(LENGTH_OFFSET);
            final long answered = b.getLong(ANSWERED_OFFSET);
            final long publishedAt = b.getLong(PUBLISHED_AT_OFFSET);
            final boolean lengthFits = length >= 0 && length <= capacity;
            if (lengthFits && bytes.length < length)
            {
                bytes = new byte[length];
            }
            b.getBytes(TEXT_OFFSET, bytes, 0, lengthFits ? length : 0);
            VarHandle.loadLoadFence();
            if (b.getLongVolatile(SEQUENCE_OFFSET) != before)
            {
                return false;
            }
            if (!lengthFits)
            {
                throw new IOException("connections file inconsistent (text length " + length + ", capacity " + capacity
                    + "): " + path);
            }
            this.length = length;
            this.sequence = before;
            this.answered = answered;
            this.publishedAt = publishedAt;
            this.consistent = true;
            return true;
        }

        String text()
        {
            return new String(bytes, 0, length, StandardCharsets.UTF_8);
        }
    }

    /**
     * A reader's request: a random nonzero word written to {@link #REQUEST_FILE_NAME}. Another reader may overwrite it
     * before the daemon looks; then the word there now is followed instead (written after ours, so its answer was built
     * after our request too). {@link #problem} says why no request could be made (nothing to answer then).
     */
    private static final class Request implements AutoCloseable
    {
        private final ByteBuffer word = ByteBuffer.allocateDirect(Long.BYTES).order(ByteOrder.nativeOrder());
        private int fd = -1;
        private long target;
        private String problem;

        /** Write the request into {@code dir}'s request file, or say in {@link #problem} why it cannot be. */
        void send(final Path dir)
        {
            final Path path = dir.resolve(REQUEST_FILE_NAME);
            try
            {
                fd = NoFollowFiles.openRegular(path, Linux.O_RDWR, "connections request");
            }
            catch (final IOException e)
            {
                problem = DaemonCommand.describe(e);
                return;
            }
            long token;
            do
            {
                token = ThreadLocalRandom.current().nextLong();
            }
            while (token == 0);
            word.putLong(0, token);
            final long written = LIBC.pwrite(fd, BufferUtil.address(word), Long.BYTES, 0);
            if (written != Long.BYTES)
            {
                problem = "cannot write " + path + ": " + (written < 0 ? Linux.describe(Linux.errno()) : "short write");
                return;
            }
            target = token;
        }

        boolean answeredBy(final long answered)
        {
            return target != 0 && answered == target;
        }

        /** Follow a request word written after ours. */
        void follow()
        {
            if (target != 0 && LIBC.pread(fd, BufferUtil.address(word), Long.BYTES, 0) == Long.BYTES)
            {
                final long now = word.getLong(0);
                if (now != 0)
                {
                    target = now;
                }
            }
        }

        @Override
        public void close()
        {
            Linux.closeQuietly(fd);
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
        LIBC.close(requestFd);
    }
}
