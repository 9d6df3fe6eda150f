package io.nicstack.daemon.pipes;

import org.agrona.concurrent.AtomicBuffer;

import io.nicstack.nic.linux.Linux;
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
 * FIN's sequence number cannot move. Between {@link #beginFill()} and {@link #endFill()} (a SEND_FILE) the
 * daemon is the producer: {@link #fill} reads file bytes into the free space and publishes the tail itself,
 * and the app's tail is not followed (the client library does not write it until told the file is done).
 * Event loop thread only; no call allocates.
 */
public final class PipeSendBuffer extends AbstractSendBuffer
{
    private final AtomicBuffer pipe;
    private final long dataAddress;
    private final int mask;
    private boolean frozen;
    private boolean filling;

    /** View of the pipe that starts at {@code pipe}'s index 0 and holds {@code capacity} (a power of two) data bytes. */
    public PipeSendBuffer(final AtomicBuffer pipe, final int capacity)
    {
        super(PipeData.ring(pipe, capacity));
        this.pipe = pipe;
        this.dataAddress = pipe.byteArray() == null ? pipe.addressOffset() + PipeDescriptor.DATA_OFFSET : 0;
        this.mask = capacity - 1;
    }

    /** Restart the stream at offset 0 for a new connection (the app does not touch the pipe until told of it). */
    public void reset()
    {
        resetPositions();
        frozen = false;
        filling = false;
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 0);
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, 0);
    }

    /** Stop following the app's tail: what was appended so far is all that will be sent. */
    public void freeze()
    {
        end();
        frozen = true;
    }

    /** Whether {@link #freeze()} was called: nothing more will be appended. */
    public boolean isFrozen()
    {
        return frozen;
    }

    /** Take over the tail from the app: until {@link #endFill()} only {@link #fill} appends. */
    public void beginFill()
    {
        end();
        filling = true;
    }

    /** Give the tail back to the app; it continues at {@link #end()}, where the last fill published it. */
    public void endFill()
    {
        filling = false;
    }

    /**
     * pread(2) up to {@code max} bytes of {@code fd} at {@code position} into the free space after {@link #end()}
     * (up to the wrap: call again for the rest) and publish them as the app's commit would.
     *
     * @return bytes appended, 0 at the end of the file, or -errno.
     */
    public long fill(final int fd, final long position, final int max)
    {
        if (dataAddress == 0)
        {
            throw new IllegalStateException("fill needs a pipe in native memory");
        }
        final long end = super.end();
        final int at = (int)end & mask;
        final int count = Math.min(Math.min(free(), max), capacity() - at);
        if (count <= 0)
        {
            return 0;
        }
        final long read = Linux.LIBC.pread(fd, dataAddress + at, count, position);
        if (read < 0)
        {
            return -Linux.errno();
        }
        if (read > 0)
        {
            extendEnd(end + read);
            pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, end + read);
        }
        return read;
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
        if (!frozen && !filling)
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
