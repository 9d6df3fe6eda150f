package io.nicstack.stack.storage;

import org.agrona.concurrent.AtomicBuffer;

/**
 * {@link ReceiveBuffer} over one power-of-two ring of bytes that doubles as the TCP reassembly queue;
 * the reassembly itself (ranges, first copy wins, {@link #REJECTED}) is {@link AbstractReceiveBuffer}'s.
 * The read position is a plain field: nothing is published.
 *
 * <p>Single-threaded: the stack thread both writes and reads. No call allocates.
 */
public final class RingReceiveBuffer extends AbstractReceiveBuffer
{
    private long readPosition;

    /** Ring over fresh direct memory; {@code capacity} must be a power of two. */
    public RingReceiveBuffer(final int capacity, final int maxRanges)
    {
        this(RingStorage.allocate(capacity), maxRanges);
    }

    /**
     * Ring over caller-supplied memory (e.g. shared memory) whose capacity is a power of two;
     * {@code maxRanges} bounds the out-of-order ranges remembered (0 drops all out-of-order data).
     */
    public RingReceiveBuffer(final AtomicBuffer buffer, final int maxRanges)
    {
        super(buffer, maxRanges);
    }

    @Override
    public long readPosition()
    {
        return readPosition;
    }

    @Override
    protected void consumedTo(final long position)
    {
        readPosition = position;
    }

    /** Empty the buffer and restart the stream at offset 0, for reuse by a new connection. */
    public void reset()
    {
        readPosition = 0;
        resetReassembly();
    }
}
