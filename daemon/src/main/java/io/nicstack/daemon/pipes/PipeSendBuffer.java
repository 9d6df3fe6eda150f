package io.nicstack.daemon.pipes;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;

import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.storage.SendBuffer;

/**
 * {@link SendBuffer} over a TX pipe ({@link PipeDescriptor}): the host app produces, the daemon (TCP) consumes.
 *
 * <pre>
 *   stream:  ... acknowledged | head = start() ... in flight / unsent ... tail = end() | free ...
 *                               (SND.UNA, daemon writes)              (app writes: the doorbell)
 * </pre>
 *
 * The app appends and release-stores the tail; {@link #end()} reads it with {@code getLongVolatile}, so
 * bytes before it are visible. TCP reads any byte in {@code [start, end)} as often as it needs and
 * {@link #release} moves the head (putLongRelease) only over acknowledged bytes, handing the space back
 * to the app. The app is not trusted: the tail it writes is clamped to {@code [end, start + capacity]},
 * so {@link #end()} never moves backwards and never claims more than the pipe holds; the head is the
 * daemon's own copy, never read back. After {@link #freeze()} (SHUTDOWN, CLOSE) the end stays put so the
 * FIN's sequence number cannot move. Event loop thread only; no call allocates.
 */
public final class PipeSendBuffer implements SendBuffer
{
    private final AtomicBuffer pipe;
    private final int capacity;
    private final int mask;
    private long start;
    private long end;
    private boolean frozen;

    /** View of the pipe that starts at {@code pipe}'s index 0 and holds {@code capacity} (a power of two) data bytes. */
    public PipeSendBuffer(final AtomicBuffer pipe, final int capacity)
    {
        if (!BitUtil.isPowerOfTwo(capacity) || pipe.capacity() < PipeDescriptor.length(capacity))
        {
            throw new IllegalArgumentException("pipe of capacity " + capacity + " does not fit " + pipe.capacity() + " bytes");
        }
        this.pipe = pipe;
        this.capacity = capacity;
        this.mask = capacity - 1;
    }

    /** Restart the stream at offset 0 for a new connection (the app does not touch the pipe until told of it). */
    public void reset()
    {
        start = 0;
        end = 0;
        frozen = false;
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 0);
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, 0);
    }

    /** Stop following the app's tail: what was appended so far is all that will be sent. */
    public void freeze()
    {
        end();
        frozen = true;
    }

    /** The tail the app wrote last, unvalidated (the doorbell). */
    public long tailVolatile()
    {
        return pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET);
    }

    @Override
    public long start()
    {
        return start;
    }

    @Override
    public long end()
    {
        if (!frozen)
        {
            final long tail = Math.min(pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET), start + capacity);
            if (tail > end)
            {
                end = tail;
            }
        }
        return end;
    }

    @Override
    public int capacity()
    {
        return capacity;
    }

    /** Not used by the daemon (the app appends); complete for tests and other producers. */
    @Override
    public int append(final DirectBuffer source, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative append length: " + length);
        }
        final int count = Math.min(length, free());
        final int at = (int)end & mask;
        final int first = Math.min(count, capacity - at);
        pipe.putBytes(PipeDescriptor.DATA_OFFSET + at, source, index, first);
        if (first < count)
        {
            pipe.putBytes(PipeDescriptor.DATA_OFFSET, source, index + first, count - first);
        }
        end += count;
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, end);
        return count;
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if {@code [offset, offset + length)} is not within {@code [start, end)}.
     */
    @Override
    public void read(final long offset, final MutableDirectBuffer destination, final int index, final int length)
    {
        if (offset < start || length < 0 || length > end - offset)
        {
            throw new IllegalArgumentException(
                "read [" + offset + ", " + offset + " + " + length + ") outside [" + start + ", " + end + ")");
        }
        final int at = (int)offset & mask;
        final int first = Math.min(length, capacity - at);
        destination.putBytes(index, pipe, PipeDescriptor.DATA_OFFSET + at, first);
        if (first < length)
        {
            destination.putBytes(index + first, pipe, PipeDescriptor.DATA_OFFSET, length - first);
        }
    }

    /**
     * Free every byte before {@code offset} (acknowledged): the app may reuse the space once it sees the head.
     *
     * @throws IllegalArgumentException if {@code offset} is not within {@code [start, end]}.
     */
    @Override
    public void release(final long offset)
    {
        if (offset < start || offset > end)
        {
            throw new IllegalArgumentException("release " + offset + " outside [" + start + ", " + end + "]");
        }
        if (offset != start)
        {
            start = offset;
            pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, offset);
        }
    }
}
