package io.nicstack.stack.storage;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;

/**
 * {@link SendBuffer} over one power-of-two ring of bytes.
 *
 * <pre>
 *   stream:  ... released | start ...... unacknowledged, readable ...... end | free ...
 *                           (SND.UNA)                                  (appended)
 *   ring:    index = offset &amp; (capacity - 1); end - start &lt;= capacity
 * </pre>
 *
 * Positions are 64-bit absolute stream offsets, so they never wrap; the TCP state machine maps them
 * to sequence numbers (RFC 9293 §3.4: SND.UNA is {@code iss + 1 + start}). Bytes stay readable until
 * {@link #release} so any sub-range can be retransmitted (RFC 9293 §3.8.1). Single-threaded: the
 * stack thread both appends and reads. No call allocates.
 */
public final class RingSendBuffer implements SendBuffer
{
    private final RingStorage storage;
    private long start;
    private long end;

    /** Ring over fresh direct memory; {@code capacity} must be a power of two. */
    public RingSendBuffer(final int capacity)
    {
        this(RingStorage.allocate(capacity));
    }

    /** Ring over caller-supplied memory (e.g. shared memory) whose capacity is a power of two. */
    public RingSendBuffer(final AtomicBuffer buffer)
    {
        storage = new RingStorage(buffer);
    }

    @Override
    public long start()
    {
        return start;
    }

    @Override
    public long end()
    {
        return end;
    }

    @Override
    public int capacity()
    {
        return storage.capacity();
    }

    @Override
    public int append(final DirectBuffer source, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative append length: " + length);
        }
        final int count = Math.min(length, free());
        storage.put(end, source, index, count);
        end += count;
        return count;
    }

    /**
     * Copy {@code length} bytes starting at stream {@code offset} into {@code destination}.
     *
     * <p>A zero-length read at {@code end()} (e.g. a FIN-only segment at SND.NXT) is accepted as a no-op.
     *
     * @throws IllegalArgumentException if {@code [offset, offset + length)} is not within {@code [start, end)}.
     */
    @Override
    public void read(final long offset, final MutableDirectBuffer destination, final int index, final int length)
    {
        // Written so that no overflow can hide a bad range: offset >= start >= 0, so end - offset cannot overflow.
        if (offset < start || length < 0 || length > end - offset)
        {
            throw new IllegalArgumentException(
                "read [" + offset + ", " + offset + " + " + length + ") outside [" + start + ", " + end + ")");
        }
        storage.get(offset, destination, index, length);
    }

    /**
     * Free every byte before {@code offset}: RFC 9293 §3.10.7.4, SND.UNA advanced by an acceptable ACK.
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
        start = offset;
    }

    /** Empty the buffer and restart the stream at offset 0, for reuse by a new connection. */
    public void reset()
    {
        start = 0;
        end = 0;
    }
}
