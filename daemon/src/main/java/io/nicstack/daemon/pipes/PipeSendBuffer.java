package io.nicstack.daemon.pipes;

import org.agrona.concurrent.AtomicBuffer;

import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.storage.AbstractSendBuffer;
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
public final class PipeSendBuffer extends AbstractSendBuffer
{
    private final AtomicBuffer pipe;
    private boolean frozen;

    /** View of the pipe that starts at {@code pipe}'s index 0 and holds {@code capacity} (a power of two) data bytes. */
    public PipeSendBuffer(final AtomicBuffer pipe, final int capacity)
    {
        super(PipeData.ring(pipe, capacity));
        this.pipe = pipe;
    }

    /** Restart the stream at offset 0 for a new connection (the app does not touch the pipe until told of it). */
    public void reset()
    {
        resetPositions();
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
    public long end()
    {
        final long end = super.end();
        if (!frozen)
        {
            final long tail = Math.min(pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET), start() + capacity());
            if (tail > end)
            {
                extendEnd(tail);
                return tail;
            }
        }
        return end;
    }

    /** Only {@link #append} (not used by the daemon: the app appends) gets here; publishes the tail as the app would. */
    @Override
    protected void appended(final long end)
    {
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, end);
    }

    /** The app may reuse the space before the head once it sees it. */
    @Override
    protected void released(final long start)
    {
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, start);
    }
}
