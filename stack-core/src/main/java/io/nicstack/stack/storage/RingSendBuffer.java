package io.nicstack.stack.storage;

import org.agrona.concurrent.AtomicBuffer;

/**
 * {@link SendBuffer} over one power-of-two ring of bytes, positions in plain fields ({@link AbstractSendBuffer}).
 *
 * <p>The TCP state machine maps stream offsets to sequence numbers (RFC 9293 §3.4: SND.UNA is
 * {@code iss + 1 + start}). Single-threaded: the stack thread both appends and reads. No call allocates.
 */
public final class RingSendBuffer extends AbstractSendBuffer
{
    /** Ring over fresh direct memory; {@code capacity} must be a power of two. */
    public RingSendBuffer(final int capacity)
    {
        this(RingStorage.allocate(capacity));
    }

    /** Ring over caller-supplied memory (e.g. shared memory) whose capacity is a power of two. */
    public RingSendBuffer(final AtomicBuffer buffer)
    {
        super(buffer);
    }

    /** Empty the buffer and restart the stream at offset 0, for reuse by a new connection. */
    public void reset()
    {
        resetPositions();
    }
}
