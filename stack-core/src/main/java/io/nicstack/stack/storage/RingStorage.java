package io.nicstack.stack.storage;

import java.nio.ByteBuffer;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Power-of-two byte ring addressed by 64-bit absolute stream offset, under {@link AbstractSendBuffer} and
 * {@link AbstractReceiveBuffer} (heap rings and shared-memory pipes alike).
 *
 * <pre>
 *   index = offset &amp; (capacity - 1)
 *
 *   0                    at                        capacity
 *   +--------------------+-----------------------------+
 *   | second copy (tail) | first copy (head of range)  |
 *   +--------------------+-----------------------------+
 * </pre>
 *
 * A range that crosses the end of the array is split into two copies. The ring keeps no positions:
 * callers own them and guarantee a range never spans more than {@code capacity} bytes.
 */
final class RingStorage
{
    /** Largest capacity: stream distances must fit an {@code int} window. */
    static final int MAX_CAPACITY = 1 << 30;

    private final AtomicBuffer buffer;
    private final int capacity;
    private final int mask;

    RingStorage(final AtomicBuffer buffer)
    {
        this.capacity = checkCapacity(buffer.capacity());
        this.buffer = buffer;
        this.mask = capacity - 1;
    }

    /** Direct memory of {@code capacity} bytes, which must be a power of two. */
    static AtomicBuffer allocate(final int capacity)
    {
        return new UnsafeBuffer(ByteBuffer.allocateDirect(checkCapacity(capacity)));
    }

    static int checkCapacity(final int capacity)
    {
        if (capacity < 1 || capacity > MAX_CAPACITY || !BitUtil.isPowerOfTwo(capacity))
        {
            throw new IllegalArgumentException(
                "ring capacity must be a power of two in [1, " + MAX_CAPACITY + "]: " + capacity);
        }
        return capacity;
    }

    int capacity()
    {
        return capacity;
    }

    /** The backing memory, for tests and for a later shared-memory owner. */
    AtomicBuffer buffer()
    {
        return buffer;
    }

    /** Copy {@code length} bytes from {@code source} into the ring at stream {@code offset}. */
    void put(final long offset, final DirectBuffer source, final int index, final int length)
    {
        final int at = (int)offset & mask;
        final int first = Math.min(length, capacity - at);
        buffer.putBytes(at, source, index, first);
        if (first < length)
        {
            buffer.putBytes(0, source, index + first, length - first);
        }
    }

    /** Copy {@code length} bytes of the ring at stream {@code offset} into {@code destination}. */
    void get(final long offset, final MutableDirectBuffer destination, final int index, final int length)
    {
        final int at = (int)offset & mask;
        final int first = Math.min(length, capacity - at);
        destination.putBytes(index, buffer, at, first);
        if (first < length)
        {
            destination.putBytes(index + first, buffer, 0, length - first);
        }
    }
}
