package io.nicstack.daemon.pipes;

import org.agrona.BitUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.pipes.PipeDescriptor;

/** The data area of a pipe ({@link PipeDescriptor}), as the ring stack-core's send and receive buffers copy through. */
final class PipeData
{
    private PipeData()
    {
    }

    /** View of the {@code capacity} (a power of two) data bytes of the pipe that starts at {@code pipe}'s index 0. */
    static AtomicBuffer ring(final AtomicBuffer pipe, final int capacity)
    {
        if (!BitUtil.isPowerOfTwo(capacity) || pipe.capacity() < PipeDescriptor.length(capacity))
        {
            throw new IllegalArgumentException("pipe of capacity " + capacity + " does not fit " + pipe.capacity() + " bytes");
        }
        return new UnsafeBuffer(pipe, PipeDescriptor.DATA_OFFSET, capacity);
    }
}
