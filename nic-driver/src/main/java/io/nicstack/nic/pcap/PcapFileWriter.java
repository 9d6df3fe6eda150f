package io.nicstack.nic.pcap;

import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;

import static io.nicstack.nic.pcap.PcapWritingDevice.RECORD_HEADER_LENGTH;

/**
 * The writer thread of a capture to a regular file, so that a slow or hung filesystem (NFS, dirty-page throttling)
 * never holds up the packet path.
 *
 * <p>The event loop is the one producer: {@link #offer} copies a pcap record (header and captured bytes) into a
 * {@link OneToOneRingBuffer} of 1 MiB and never waits; a record that finds it full is refused and the caller counts it
 * out. {@link #requestFlush} and {@link #close} are the event loop's too. The writer thread is the one consumer: it
 * moves records from the ring into a staging buffer of 1 MiB and writes that to the file when it is full, when a flush
 * was asked for and on close, so the file sees the same large writes as before. While a write hangs, the ring still
 * takes up to 1 MiB of records. The ring orders memory (its commit is a release store), so records reach the file in
 * the order they were offered; {@link #flushRequested} and {@link #closing} are volatile and written after the records
 * they cover.
 *
 * <p>A write that fails (a full disk) stops the capture: the file is cut back to the last whole record it holds, and
 * every record staged or taken from the ring afterwards is counted in {@link #lost()}; {@link #failure()} says why.
 */
final class PcapFileWriter implements Runnable
{
    static final int RING_LENGTH = 1 << 20;
    static final int STAGING_LENGTH = 1 << 20;
    private static final int RECORD_TYPE = 1;
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;

    private final FileChannel channel;
    private final RingBuffer ring;
    private final AtomicBuffer ringBuffer;
    private final ByteBuffer staging;
    private final UnsafeBuffer stagingBuffer;
    private final MessageHandler stage = this::stage;
    /** The writer spins briefly, then parks for up to 1 ms: a record waits at most that long to leave the ring. */
    private final IdleStrategy idle = new BackoffIdleStrategy(100, 10, 1_000, 1_000_000);
    private final Thread thread;

    // The event loop's.
    private long offered;
    private long flushes;

    // Written by the event loop, read by the writer thread.
    private volatile long flushRequested;
    private volatile boolean closing;

    // The writer thread's; the volatile ones are read by the event loop.
    private int stagingPosition;
    private int recordsStaged;
    private long fileBytes;
    private volatile long flushesDone;
    /** Records taken from the ring: staged, written or counted in {@link #lost}. */
    private volatile long taken;
    private volatile long lost;
    private volatile IOException failure;

    /** Write the file header in {@code header[0, headerLength)} to {@code channel} now, then start the writer thread. */
    PcapFileWriter(final FileChannel channel, final DirectBuffer header, final int headerLength, final String name)
        throws IOException
    {
        this.channel = channel;
        this.ringBuffer = new UnsafeBuffer(
            BufferUtil.allocateDirectAligned(RING_LENGTH + RingBufferDescriptor.TRAILER_LENGTH, 64));
        this.ring = new OneToOneRingBuffer(ringBuffer);
        this.staging = BufferUtil.allocateDirectAligned(STAGING_LENGTH, 64);
        this.stagingBuffer = new UnsafeBuffer(staging);
        stagingBuffer.putBytes(0, header, 0, headerLength);
        stagingPosition = headerLength;
        // Written now, on the caller's thread, so that an unwritable file is an error of the start.
        write();
        fileBytes = headerLength;
        stagingPosition = 0;
        thread = new Thread(this, "pcap-writer " + name);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * On the event loop: copy a record of {@code frame[offset, offset + captured)} stamped {@code nanos} (epoch) into
     * the ring, false if it is full.
     */
    boolean offer(final long nanos, final DirectBuffer frame, final int offset, final int captured, final int length)
    {
        final int index = ring.tryClaim(RECORD_TYPE, RECORD_HEADER_LENGTH + captured);
        if (index < 0)
        {
            return false;
        }
        ringBuffer.putInt(index, (int)(nanos / 1_000_000_000L), ORDER);
        ringBuffer.putInt(index + 4, (int)(nanos % 1_000_000_000L / 1_000L), ORDER);
        ringBuffer.putInt(index + 8, captured, ORDER);
        ringBuffer.putInt(index + 12, length, ORDER);
        ringBuffer.putBytes(index + RECORD_HEADER_LENGTH, frame, offset, captured);
        ring.commit(index);
        offered++;
        return true;
    }

    /** On the event loop: have the writer write every record offered so far, soon; never waits. */
    void requestFlush()
    {
        flushRequested = ++flushes;
    }

    /**
     * For tests, on the event loop: wait at most {@code timeoutMillis} until the writer has taken every record offered
     * and carried out the last {@link #requestFlush}.
     */
    boolean awaitWriter(final long timeoutMillis) throws InterruptedException
    {
        final long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (taken != offered || flushesDone != flushes)
        {
            if (System.nanoTime() - deadline > 0)
            {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }

    /** The write that stopped the capture, or null. */
    IOException failure()
    {
        return failure;
    }

    /** Records taken from the ring that are not in the file because the capture stopped. */
    long lost()
    {
        return lost;
    }

    /**
     * On the event loop: let the writer write every record offered before this, wait for it, and return. The caller
     * closes the channel.
     */
    void close()
    {
        closing = true;
        boolean interrupted = false;
        while (thread.isAlive())
        {
            try
            {
                thread.join();
            }
            catch (final InterruptedException ex)
            {
                interrupted = true; // the tail is still written: a normal stop loses nothing
            }
        }
        if (interrupted)
        {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void run()
    {
        while (true)
        {
            // Read before the ring: every record offered before the request (or the close) is in it by now.
            final boolean last = closing;
            final long request = flushRequested;
            int read = 0;
            long head;
            do
            {
                // Until the head stops moving, not until a read returns 0: a read that meets the padding before the
                // ring's wrap handles no message yet moves the head, and the records after the wrap wait behind it.
                head = ring.consumerPosition();
                read += ring.read(stage);
            }
            while (ring.consumerPosition() != head);
            final boolean flush = request != flushesDone;
            if (stagingPosition > 0 && (flush || last))
            {
                writeStaged();
            }
            if (read > 0)
            {
                taken = taken + read; // only this thread writes it
            }
            if (flush)
            {
                flushesDone = request;
            }
            if (last)
            {
                return;
            }
            if (read == 0 && !flush)
            {
                idle.idle();
            }
            else
            {
                idle.reset();
            }
        }
    }

    private void stage(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length)
    {
        if (failure == null && stagingPosition + length > STAGING_LENGTH)
        {
            writeStaged();
        }
        if (failure != null)
        {
            lost = lost + 1; // only this thread writes it
            return;
        }
        stagingBuffer.putBytes(stagingPosition, buffer, index, length);
        stagingPosition += length;
        recordsStaged++;
    }

    /** Write the staged records; a write that fails stops the capture, keeping the whole records it got in. */
    private void writeStaged()
    {
        try
        {
            write();
            fileBytes += stagingPosition;
        }
        catch (final IOException | RuntimeException ex)
        {
            // Keep the whole records a short write got into the file; cut off the part of the one after them.
            final int written = staging.position();
            int kept = 0;
            int end = 0;
            while (kept < recordsStaged)
            {
                final int next = end + RECORD_HEADER_LENGTH + stagingBuffer.getInt(end + 8, ORDER);
                if (next > written)
                {
                    break;
                }
                end = next;
                kept++;
            }
            fileBytes += end;
            lost = lost + recordsStaged - kept;
            try
            {
                channel.truncate(fileBytes); // freeing space works on a full disk
            }
            catch (final IOException | RuntimeException ignored)
            {
                // The records before it are still there; a reader stops at the torn one.
            }
            failure = ex instanceof IOException ? (IOException)ex : new IOException(ex.toString(), ex);
        }
        finally
        {
            staging.clear();
            stagingPosition = 0;
            recordsStaged = 0;
        }
    }

    /** Write staging[0, stagingPosition) to the file; staging's position tells how much got in. */
    private void write() throws IOException
    {
        staging.limit(stagingPosition).position(0);
        while (staging.hasRemaining())
        {
            channel.write(staging);
        }
    }
}
