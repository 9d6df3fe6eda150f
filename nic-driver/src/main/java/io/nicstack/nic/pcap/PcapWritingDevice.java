package io.nicstack.nic.pcap;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NetDeviceDecorator;
import io.nicstack.nic.linux.Linux;
import org.agrona.BufferUtil;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.EpochNanoClock;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static io.nicstack.nic.linux.Linux.LIBC;

/**
 * Decorator that records every received and transmitted frame in a classic libpcap file (smoltcp phy/pcap_writer.rs).
 *
 * <p>Format of pcap-savefile(5), all fields little-endian:
 * <pre>
 * File header (24 bytes):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                     Magic (0xa1b2c3d4, us)                    |
 *  +-------------------------------+-------------------------------+
 *  |        Major Version (2)      |        Minor Version (4)      |
 *  +-------------------------------+-------------------------------+
 *  |                     This Zone (0, GMT)                        |
 *  +---------------------------------------------------------------+
 *  |                     Sigfigs (0)                               |
 *  +---------------------------------------------------------------+
 *  |                     Snaplen (65535)                           |
 *  +---------------------------------------------------------------+
 *  |                     Link Type (1, Ethernet)                   |
 *  +---------------------------------------------------------------+
 * Record header (16 bytes), followed by the captured bytes:
 *  +---------------------------------------------------------------+
 *  |                     Timestamp (seconds)                       |
 *  +---------------------------------------------------------------+
 *  |                     Timestamp (microseconds)                  |
 *  +---------------------------------------------------------------+
 *  |                     Captured Length                           |
 *  +---------------------------------------------------------------+
 *  |                     Original Length                           |
 *  +---------------------------------------------------------------+
 * </pre>
 * The file header is written when the device is made. Received frames are recorded as they are delivered, transmitted
 * frames when committed, each stamped with the clock's time then. A regular file is written by a writer thread
 * ({@link PcapFileWriter}), never by the caller, so a slow or hung filesystem (NFS, dirty-page throttling) holds up no
 * frame: the caller copies each record into a ring of 1 MiB, and a record that finds it full (the file has not taken
 * the last MiB yet) is left out and counted in {@link #framesNotCaptured()}. The writer writes in blocks of up to
 * 1 MiB, when one is full, after {@link #flushCapture()} and on {@link #close()}, which waits for it to write every
 * record recorded before, then closes the file and the inner device.
 *
 * <p>A write that fails (a full disk) stops the capture, as tcpdump -w stops, and never the frames: they still pass in
 * both directions, nothing is thrown from the data path, and {@link #captureFailure()} says why the capture stopped
 * ({@link #framesNotCaptured()} how many were left out), once the writer has met the failure. The file is cut back to
 * the last whole record it holds, so readers take it.
 *
 * <p>The path is never followed if it is a symbolic link, which is refused, as are a block device and a socket. A live
 * capture, to a named pipe ({@code tcpdump -r -}, {@code wireshark -k -i}) or a character device (a terminal), waits for its reader when the device is made and writes the file header, then never waits again: it
 * writes with O_NONBLOCK, the buffer keeps what the pipe does not take yet, and a frame that finds the buffer full
 * because the reader is behind is left out and counted in {@link #framesNotCaptured()}; the capture goes on once the
 * reader reads. Left out rather than stopped: a pipe holds 64 KiB, which fills in half a millisecond at 1 Gb/s while a
 * reader pauses. Records go into the pipe only whole (pipe(7): a write of up to PIPE_BUF bytes is taken whole or not at
 * all, and an empty pipe takes up to its capacity), so the stream holds whole records wherever the reader stops, even
 * at close; only a record longer than the pipe's capacity (a pipe shrunk below 64 KiB) goes in parts. A write that
 * fails otherwise (EPIPE: the reader went away) stops the capture, as a full disk does.
 *
 * <p>Checksums: receive flags pass through unchanged, and frames are recorded as the inner device delivers them. On a
 * tap with checksum offload, frames the local kernel sent carry only the pseudo-header sum in their TCP/UDP checksum
 * field ({@code NEEDS_CSUM}), so a reader that verifies checksums reports them as bad, just as tcpdump does on a host
 * that offloads checksums. Transmit offload is not offered ({@link #transmitChecksumOffload()}), so every recorded
 * transmitted frame carries the complete checksum the stack computed.
 */
public final class PcapWritingDevice extends NetDeviceDecorator
{
    /** Classic pcap magic for microsecond timestamps. */
    public static final int MAGIC = 0xa1b2c3d4;
    public static final short VERSION_MAJOR = 2;
    public static final short VERSION_MINOR = 4;
    public static final int SNAPLEN = 65_535;
    /** LINKTYPE_ETHERNET from the tcpdump.org link-layer header types. */
    public static final int LINKTYPE_ETHERNET = 1;
    public static final int FILE_HEADER_LENGTH = 24;
    public static final int RECORD_HEADER_LENGTH = 16;

    private static final int BUFFER_LENGTH = 1 << 20;
    /** pipe(7): a write of at most this many bytes to a pipe is atomic (taken whole or, with O_NONBLOCK, EAGAIN). */
    private static final int PIPE_BUF = 4096;
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;

    private final Path file;
    private final EpochNanoClock clock;
    /** The regular file written to, or null for a live capture ({@link #fd}). */
    private final FileChannel channel;
    /** The regular file's writer thread, or null for a live capture. */
    private final PcapFileWriter writer;
    /** The live capture's non-blocking descriptor, or -1. */
    private final int fd;
    /** The pipe's capacity (F_GETPIPE_SZ), or -1 for a live capture to something that is not a pipe (a terminal). */
    private final int pipeCapacity;
    /** FIONREAD's answer (an int), for a live capture. */
    private final UnsafeBuffer queuedBytes;
    /** A live capture's records not yet in the pipe. */
    private final ByteBuffer byteBuffer;
    private final UnsafeBuffer buffer;
    private int position;
    /** Live capture: the first byte of the buffer not yet in the pipe; the records before it are. */
    private int head;
    /** Live capture: the end of the record that {@link #head} is inside, or 0 when head is at a record's start. */
    private int tornEnd;
    /** The write that stopped a live capture; null while capturing. */
    private IOException failure;
    /** Frames left out on this side: a live capture's, or those a file's ring had no room for. */
    private long framesNotCaptured;

    private MutableDirectBuffer claimed;
    private final FrameHandler rxTap = new FrameHandler()
    {
        @Override
        public void onFrame(final DirectBuffer frame, final int offset, final int length)
        {
            onFrame(frame, offset, length, 0);
        }

        @Override
        public void onFrame(final DirectBuffer frame, final int offset, final int length, final int flags)
        {
            record(frame, offset, length);
            rxHandler.onFrame(frame, offset, length, flags);
        }
    };
    private FrameHandler rxHandler;
    private boolean closed;

    /** Wrap {@code inner}, creating or truncating {@code file} and writing the pcap file header to it. */
    public PcapWritingDevice(final NetDevice inner, final Path file, final EpochNanoClock clock)
    {
        this(inner, file, Target.open(file), clock);
    }

    /** As the public constructor, writing through {@code channel} (open on {@code file}, empty). */
    PcapWritingDevice(final NetDevice inner, final Path file, final FileChannel channel, final EpochNanoClock clock)
    {
        this(inner, file, new Target(channel, -1), clock);
    }

    private PcapWritingDevice(final NetDevice inner, final Path file, final Target target, final EpochNanoClock clock)
    {
        super(inner);
        this.file = file;
        this.clock = clock;
        this.channel = target.channel;
        this.fd = target.fd;
        // The file header; a regular file's writer takes its own buffer, a live capture keeps this one.
        this.byteBuffer = BufferUtil.allocateDirectAligned(fd < 0 ? FILE_HEADER_LENGTH : BUFFER_LENGTH, 64);
        this.buffer = new UnsafeBuffer(byteBuffer);

        buffer.putInt(0, MAGIC, ORDER);
        buffer.putShort(4, VERSION_MAJOR, ORDER);
        buffer.putShort(6, VERSION_MINOR, ORDER);
        buffer.putInt(8, 0, ORDER);
        buffer.putInt(12, 0, ORDER);
        buffer.putInt(16, SNAPLEN, ORDER);
        buffer.putInt(20, LINKTYPE_ETHERNET, ORDER);
        position = FILE_HEADER_LENGTH;
        // Written now, not with the first records: a process killed before close (SIGKILL, a crash) then leaves a
        // capture readers accept, if without the records still buffered, instead of an empty file they refuse.
        try
        {
            if (fd < 0)
            {
                writer = new PcapFileWriter(channel, buffer, FILE_HEADER_LENGTH, file.toString());
                position = 0;
                pipeCapacity = -1;
                queuedBytes = null;
            }
            else
            {
                // The header while the descriptor still blocks: the reader gets it even if something fills the pipe.
                writer = null;
                writeHeaderToLiveCapture();
                if (LIBC.fcntl(fd, Linux.F_SETFL, LIBC.fcntl(fd, Linux.F_GETFL, 0) | Linux.O_NONBLOCK) < 0)
                {
                    throw new IOException("fcntl(F_SETFL, O_NONBLOCK): " + Linux.describe(Linux.errno()));
                }
                pipeCapacity = LIBC.fcntl(fd, Linux.F_GETPIPE_SZ, 0);
                queuedBytes = new UnsafeBuffer(BufferUtil.allocateDirectAligned(8, 8));
            }
        }
        catch (final IOException ex)
        {
            CloseHelper.quietClose(channel);
            if (fd >= 0)
            {
                Linux.closeQuietly(fd);
            }
            throw new UncheckedIOException("cannot write pcap file " + file + ": " + ex.getMessage(), ex);
        }
    }

    /** Where the records go: a regular file's channel, or a live capture's descriptor. */
    private record Target(FileChannel channel, int fd)
    {
        /**
         * Open {@code file} without following a symbolic link at its last component (O_NOFOLLOW): the daemon runs as
         * root, and a link planted at the path (in /tmp, say) must not get the file it points to truncated, written or
         * created. A named pipe or a character device (a terminal) is a live capture; any other file that is not a
         * regular one (a block device, a socket) is refused rather than written over.
         */
        static Target open(final Path file)
        {
            final int type = fileType(file);
            if (type == Linux.S_IFLNK)
            {
                throw refused(file, "it is a symbolic link, which the capture does not follow");
            }
            if (type == Linux.S_IFIFO || type == Linux.S_IFCHR)
            {
                return new Target(null, openLiveCapture(file));
            }
            if (type != 0 && type != Linux.S_IFREG)
            {
                throw refused(file, "it is neither a regular file nor a named pipe or terminal");
            }
            try
            {
                // NOFOLLOW_LINKS is O_NOFOLLOW: a link planted since the check above fails here with ELOOP.
                return new Target(FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), -1);
            }
            catch (final IOException ex)
            {
                throw refused(file, ex.getMessage());
            }
        }

        /** The file's type (S_IFMT bits) without following a symbolic link, or 0 if there is no such file. */
        private static int fileType(final Path file)
        {
            try
            {
                return (Integer)Files.getAttribute(file, "unix:mode", LinkOption.NOFOLLOW_LINKS) & Linux.S_IFMT;
            }
            catch (final NoSuchFileException ex)
            {
                return 0;
            }
            catch (final IOException ex)
            {
                throw refused(file, ex.getMessage());
            }
        }

        private static UncheckedIOException refused(final Path file, final String reason)
        {
            return new UncheckedIOException("cannot open pcap file " + file + ": " + reason, new IOException(reason));
        }

        /** Open a named pipe for writing, waiting for its reader as the capture always has (fifo(7)). */
        private static int openLiveCapture(final Path file)
        {
            while (true)
            {
                final int fd = LIBC.open(file.toString(), Linux.O_WRONLY | Linux.O_CLOEXEC | Linux.O_NOFOLLOW);
                if (fd >= 0)
                {
                    return fd;
                }
                final int errno = Linux.errno();
                if (errno != Linux.EINTR)
                {
                    throw refused(file, Linux.describe(errno));
                }
            }
        }
    }

    private void writeHeaderToLiveCapture() throws IOException
    {
        int written = 0;
        while (written < position)
        {
            final long n = LIBC.write(fd, buffer.addressOffset() + written, position - written);
            if (n < 0)
            {
                final int errno = Linux.errno();
                if (errno != Linux.EINTR)
                {
                    throw new IOException(Linux.describe(errno));
                }
                continue;
            }
            written += (int)n;
        }
        position = 0;
    }

    /** The capture file. */
    public Path file()
    {
        return file;
    }

    /**
     * Have every recorded frame written to the file, never waiting: a regular file's writer thread writes them soon, a
     * live capture takes what its pipe takes now. A write that fails stops the capture ({@link #captureFailure()}).
     */
    public void flushCapture()
    {
        if (writer != null)
        {
            writer.requestFlush();
            return;
        }
        if (failure != null)
        {
            return;
        }
        try
        {
            writeToLiveCapture();
        }
        catch (final IOException ex)
        {
            failure = ex;
            framesNotCaptured += recordsNotInThePipe();
            head = 0;
            tornEnd = 0;
            position = 0;
        }
    }

    /**
     * For tests, on the event loop: wait at most {@code timeoutMillis} until a regular file's writer thread has taken
     * every recorded frame and done the last {@link #flushCapture()}.
     */
    boolean awaitWriter(final long timeoutMillis) throws InterruptedException
    {
        return writer == null || writer.awaitWriter(timeoutMillis);
    }

    /** Why the capture stopped ("cannot write pcap file ...: No space left on device"), or null while it runs. */
    public String captureFailure()
    {
        final IOException f = writer == null ? failure : writer.failure();
        return f == null ? null : "cannot write pcap file " + file + ": " + f.getMessage();
    }

    /**
     * Frames left out of the capture: since it stopped, those lost from its buffer included; those that found a
     * regular file's buffer full because the file was slow to take the ones before; and those a live capture's reader
     * was too far behind to take.
     */
    public long framesNotCaptured()
    {
        return writer == null ? framesNotCaptured : framesNotCaptured + writer.lost();
    }

    /**
     * Write to the live capture what it takes now, whole records at a time, never waiting: a record longer than
     * PIPE_BUF goes only into an empty pipe, which takes it whole. Resets the buffer once all of it is written.
     */
    private void writeToLiveCapture() throws IOException
    {
        while (head < position)
        {
            final int end = tornEnd != 0 ? tornEnd : wholeRecordsEnd();
            if (end == head)
            {
                return; // a long record waits for an empty pipe
            }
            final long n = LIBC.write(fd, buffer.addressOffset() + head, end - head);
            if (n < 0)
            {
                final int errno = Linux.errno();
                if (errno == Linux.EINTR)
                {
                    continue;
                }
                if (errno == Linux.EAGAIN)
                {
                    return; // the reader is behind
                }
                throw new IOException(Linux.describe(errno));
            }
            if (n == 0)
            {
                return;
            }
            final int written = head + (int)n;
            if (written < end && tornEnd == 0)
            {
                // Taken in part (a record longer than the pipe, or not a pipe): the rest of it goes first next time.
                int start = head;
                while (start + recordLength(start) <= written)
                {
                    start += recordLength(start);
                }
                tornEnd = start == written ? 0 : start + recordLength(start);
            }
            else if (written == tornEnd)
            {
                tornEnd = 0;
            }
            head = written;
        }
        head = 0;
        position = 0;
    }

    /** The end of the whole records from {@link #head} that the pipe takes whole now, all of them if not a pipe. */
    private int wholeRecordsEnd()
    {
        if (pipeCapacity < 0)
        {
            return position;
        }
        final boolean empty = LIBC.ioctl(fd, Linux.FIONREAD, queuedBytes.addressOffset()) == 0 && queuedBytes.getInt(0) == 0;
        final int limit = empty ? Math.max(pipeCapacity, PIPE_BUF) : PIPE_BUF;
        int end = head;
        while (end < position && end + recordLength(end) - head <= limit)
        {
            end += recordLength(end);
        }
        // A record longer than an empty pipe holds (a pipe shrunk by pipe-user-pages-soft) goes in parts, or never.
        return empty && end == head ? head + recordLength(head) : end;
    }

    private int recordLength(final int offset)
    {
        return RECORD_HEADER_LENGTH + buffer.getInt(offset + 8, ORDER);
    }

    /** Records of the live capture's buffer not wholly in the pipe, the one it holds a part of included. */
    private int recordsNotInThePipe()
    {
        int records = 0;
        int at = head;
        if (tornEnd != 0)
        {
            records++;
            at = tornEnd;
        }
        while (at < position)
        {
            at += recordLength(at);
            records++;
        }
        return records;
    }

    /** After a live capture's write left part of a full buffer, move that part to its start once it is half empty. */
    private void compactLiveCapture()
    {
        if (head >= BUFFER_LENGTH / 2)
        {
            byteBuffer.limit(position).position(head);
            byteBuffer.compact();
            byteBuffer.clear();
            position -= head;
            tornEnd = tornEnd == 0 ? 0 : tornEnd - head;
            head = 0;
        }
    }

    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        rxHandler = handler;
        try
        {
            return inner.receive(rxTap, limit);
        }
        finally
        {
            rxHandler = null;
        }
    }

    @Override
    public MutableDirectBuffer claim()
    {
        claimed = inner.claim();
        return claimed;
    }

    @Override
    public void commit(final int length)
    {
        if (null != claimed && length >= 0 && length <= claimed.capacity())
        {
            record(claimed, 0, length);
        }
        claimed = null;
        inner.commit(length);
    }

    /**
     * False even when the inner device could: a recorded frame is taken before the inner device would complete its
     * checksum, and a capture with partial checksums on every sent frame is of little use (the tests verify them).
     */
    @Override
    public boolean transmitChecksumOffload()
    {
        return false;
    }

    @Override
    public void abort()
    {
        claimed = null;
        inner.abort();
    }

    /** Write the remaining records, close the file and the inner device. */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        try
        {
            if (writer != null)
            {
                writer.close(); // writes every record offered before it
            }
            else
            {
                flushCapture();
            }
            if (fd >= 0 && failure == null)
            {
                // What the reader did not make room for stays out: close never waits on it.
                framesNotCaptured += recordsNotInThePipe();
                head = 0;
                tornEnd = 0;
                position = 0;
            }
        }
        finally
        {
            if (fd >= 0)
            {
                Linux.closeQuietly(fd);
            }
            CloseHelper.closeAll(channel, inner);
        }
    }

    @Override
    public String toString()
    {
        return inner + " > " + file;
    }

    private void record(final DirectBuffer frame, final int offset, final int length)
    {
        final int captured = Math.min(length, SNAPLEN);
        if (writer != null)
        {
            if (writer.failure() != null || !writer.offer(clock.nanoTime(), frame, offset, captured, length))
            {
                framesNotCaptured++;
            }
            return;
        }
        if (failure == null && position + RECORD_HEADER_LENGTH + captured > BUFFER_LENGTH)
        {
            flushCapture();
            if (failure == null)
            {
                compactLiveCapture();
            }
        }
        if (failure != null || position + RECORD_HEADER_LENGTH + captured > BUFFER_LENGTH)
        {
            framesNotCaptured++;
            return;
        }

        final long nanos = clock.nanoTime();
        buffer.putInt(position, (int)(nanos / 1_000_000_000L), ORDER);
        buffer.putInt(position + 4, (int)(nanos % 1_000_000_000L / 1_000L), ORDER);
        buffer.putInt(position + 8, captured, ORDER);
        buffer.putInt(position + 12, length, ORDER);
        buffer.putBytes(position + RECORD_HEADER_LENGTH, frame, offset, captured);
        position += RECORD_HEADER_LENGTH + captured;
    }
}
