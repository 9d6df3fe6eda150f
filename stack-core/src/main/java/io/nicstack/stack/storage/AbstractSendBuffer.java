package io.nicstack.stack.storage;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;

/**
 * The logic shared by every {@link SendBuffer} over one power-of-two ring of bytes: {@link RingSendBuffer}
 * (positions in fields) and the daemon's TX pipe (positions shared with the app).
 *
 * <pre>
 *   stream:  ... released | start ...... unacknowledged, readable ...... end | free ...
 *                           (SND.UNA)                                  (appended)
 *   ring:    index = offset &amp; (capacity - 1); end - start &lt;= capacity
 * </pre>
 *
 * Positions are 64-bit absolute stream offsets, so they never wrap. Bytes stay readable until
 * {@link #release} so any sub-range can be retransmitted (RFC 9293 §3.8.1). Subclasses decide how
 * positions are published ({@link #appended}, {@link #released}) and may let {@link #end()} follow another
 * producer ({@link #extendEnd}). Single-threaded (the consumer's thread); no call allocates.
 */
public abstract class AbstractSendBuffer implements SendBuffer
{
    private final RingStorage storage;
    private final int capacity;
    private long start;
    private long end;

    /** Over {@code ring}, whose capacity is a power of two and is the buffer's capacity. */
    protected AbstractSendBuffer(final AtomicBuffer ring)
    {
        storage = new RingStorage(ring);
        capacity = storage.capacity();
    }

    /** Bytes up to {@code end} were appended here; by default nothing to publish. */
    protected void appended(final long end)
    {
    }

    /** Bytes before {@code start} were released (it moved forward); by default nothing to publish. */
    protected void released(final long start)
    {
    }

    /** Move the end forward to {@code end}, for bytes another producer placed in the ring. */
    protected final void extendEnd(final long end)
    {
        this.end = end;
    }

    /** Empty the buffer and restart the stream at offset 0. */
    protected final void resetPositions()
    {
        start = 0;
        end = 0;
    }

    @Override
    public final long start()
    {
        return start;
    }

    @Override
    public long end()
    {
        return end;
    }

    @Override
    public final int capacity()
    {
        return capacity;
    }

    @Override
    public final int append(final DirectBuffer source, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative append length: " + length);
        }
        final int count = Math.min(length, free());
        storage.put(end, source, index, count);
        end += count;
        appended(end);
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
    public final void read(final long offset, final MutableDirectBuffer destination, final int index, final int length)
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
    public final void release(final long offset)
    {
        if (offset < start || offset > end)
        {
            throw new IllegalArgumentException("release " + offset + " outside [" + start + ", " + end + "]");
        }
        if (offset != start)
        {
            start = offset;
            released(offset);
        }
    }
}
