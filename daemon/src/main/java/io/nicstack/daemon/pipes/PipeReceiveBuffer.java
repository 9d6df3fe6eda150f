package io.nicstack.daemon.pipes;

import org.agrona.concurrent.AtomicBuffer;

import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.storage.AbstractReceiveBuffer;
import io.nicstack.stack.storage.ReceiveBuffer;

/**
 * {@link ReceiveBuffer} over an RX pipe ({@link PipeDescriptor}): TCP (the daemon) produces, the host app consumes.
 * The pipe's data area is the reassembly buffer; the reassembly (ranges, first copy wins, {@link #REJECTED}) is
 * stack-core's {@link AbstractReceiveBuffer}, shared with {@code RingReceiveBuffer}.
 *
 * <pre>
 *   head (app)      tail (daemon)        out-of-order ranges (daemon only)      head + capacity
 *        |  readable      |     hole     [ooo)   hole   [ooo)                           |
 *        +----------------+--------------+-----+--------+-----+-------------------------+
 *        |&lt;---------------- window() = capacity - (tail - head) -------------------&gt;|
 * </pre>
 *
 * The tail is release-stored only over contiguous bytes, so the app never sees a hole. The head the app writes
 * (its doorbell) is read with {@code getLongVolatile} and trusted only within {@code [previous head, tail]}, so a
 * misbehaving app cannot make the window negative or larger than the pipe. Event loop thread only; no call allocates.
 */
public final class PipeReceiveBuffer extends AbstractReceiveBuffer
{
    private final AtomicBuffer pipe;
    private long readPosition;

    public PipeReceiveBuffer(final AtomicBuffer pipe, final int capacity, final int maxRanges)
    {
        super(PipeData.ring(pipe, capacity), maxRanges);
        this.pipe = pipe;
    }

    /** Restart the stream at offset 0 for a new connection (the app does not touch the pipe until told of it). */
    public void reset()
    {
        readPosition = 0;
        resetReassembly();
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, 0);
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 0);
    }

    /** The head the app wrote last, unvalidated (the doorbell). */
    public long headVolatile()
    {
        return pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET);
    }

    /** The app's head, trusted only within {@code [previous head, tail]}: it bounds the window {@link #write} keeps. */
    @Override
    public long readPosition()
    {
        final long head = pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET);
        if (head > readPosition)
        {
            readPosition = Math.min(head, contiguousEnd());
        }
        return readPosition;
    }

    /** The head as last read and validated by {@link #readPosition()}: no read of the shared pipe. */
    @Override
    protected long lastReadPosition()
    {
        return readPosition;
    }

    /** Publish the tail: every byte before it is in place, so the app may read it. */
    @Override
    protected void publishContiguousEnd(final long contiguousEnd)
    {
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, contiguousEnd);
    }

    /** Only {@link #read} (not used by the daemon: the app consumes) gets here; moves the head as the app would. */
    @Override
    protected void consumedTo(final long position)
    {
        readPosition = position;
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, position);
    }
}
