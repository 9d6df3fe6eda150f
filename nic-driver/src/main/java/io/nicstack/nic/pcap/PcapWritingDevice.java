package io.nicstack.nic.pcap;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NetDeviceDecorator;
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
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

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
 * The file header is written when the device is made. Records are appended to a preallocated native buffer of 1 MiB
 * and written with a FileChannel when it fills, on {@link #flushCapture()} and on {@link #close()}, which also closes
 * the inner device. Received frames are recorded as
 * they are delivered, transmitted frames when committed.
 *
 * <p>A write that fails (a full disk) stops the capture, as tcpdump -w stops, and never the frames: they still pass in
 * both directions, nothing is thrown from the data path, and {@link #captureFailure()} says why the capture stopped
 * ({@link #framesNotCaptured()} how many were left out). The file is cut back to the last whole record it holds, so
 * readers take it.
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
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;

    private final Path file;
    private final EpochNanoClock clock;
    private final FileChannel channel;
    private final ByteBuffer byteBuffer;
    private final UnsafeBuffer buffer;
    private int position;
    /** Records in the buffer, not yet in the file. */
    private int recordsBuffered;
    /** Bytes in the file, whole records only. */
    private long fileBytes;
    /** How much of the buffer the last write got into the file. */
    private int bytesWritten;
    /** The write that stopped the capture; null while capturing. */
    private IOException failure;
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
        this(inner, file, open(file), clock);
    }

    /** As the public constructor, writing through {@code channel} (open on {@code file}, empty). */
    PcapWritingDevice(final NetDevice inner, final Path file, final FileChannel channel, final EpochNanoClock clock)
    {
        super(inner);
        this.file = file;
        this.clock = clock;
        this.channel = channel;
        this.byteBuffer = BufferUtil.allocateDirectAligned(BUFFER_LENGTH, 64);
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
            writeBuffer();
        }
        catch (final IOException ex)
        {
            CloseHelper.quietClose(channel);
            throw new UncheckedIOException("cannot write pcap file " + file + ": " + ex.getMessage(), ex);
        }
    }

    private static FileChannel open(final Path file)
    {
        try
        {
            return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException("cannot open pcap file " + file + ": " + ex.getMessage(), ex);
        }
    }

    /** The capture file. */
    public Path file()
    {
        return file;
    }

    /** Write every buffered record to the file now; a write that fails stops the capture ({@link #captureFailure()}). */
    public void flushCapture()
    {
        if (failure != null)
        {
            return;
        }
        try
        {
            writeBuffer();
        }
        catch (final IOException ex)
        {
            failure = ex;
            // Keep the whole records a short write got into the file; cut off the part of the one after them.
            int kept = 0;
            int end = 0;
            while (kept < recordsBuffered)
            {
                final int next = end + RECORD_HEADER_LENGTH + buffer.getInt(end + 8, ORDER);
                if (next > bytesWritten)
                {
                    break;
                }
                end = next;
                kept++;
            }
            fileBytes += end;
            framesNotCaptured += recordsBuffered - kept;
            recordsBuffered = 0;
            position = 0;
            try
            {
                channel.truncate(fileBytes); // freeing space works on a full disk
            }
            catch (final IOException | RuntimeException ignored)
            {
                // The records before it are still there; a reader stops at the torn one.
            }
        }
    }

    /** Why the capture stopped ("cannot write pcap file ...: No space left on device"), or null while it runs. */
    public String captureFailure()
    {
        return failure == null ? null : "cannot write pcap file " + file + ": " + failure.getMessage();
    }

    /** Frames left out of the capture since it stopped, those lost from its buffer included. */
    public long framesNotCaptured()
    {
        return framesNotCaptured;
    }

    private void writeBuffer() throws IOException
    {
        byteBuffer.limit(position).position(0);
        try
        {
            while (byteBuffer.hasRemaining())
            {
                channel.write(byteBuffer);
            }
        }
        finally
        {
            bytesWritten = byteBuffer.position();
            byteBuffer.clear();
        }
        fileBytes += position;
        position = 0;
        recordsBuffered = 0;
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
            flushCapture();
        }
        finally
        {
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
        if (failure == null && position + RECORD_HEADER_LENGTH + captured > BUFFER_LENGTH)
        {
            flushCapture();
        }
        if (failure != null)
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
        recordsBuffered++;
    }
}
