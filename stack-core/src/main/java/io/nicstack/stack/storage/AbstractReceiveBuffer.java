package io.nicstack.stack.storage;

import java.util.Objects;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;

/**
 * The reassembly logic shared by every {@link ReceiveBuffer} over one power-of-two ring of bytes:
 * {@link RingReceiveBuffer} (positions in fields) and the daemon's RX pipe (positions shared with the app).
 *
 * <pre>
 *   readPosition()   contiguousEnd        out-of-order ranges            readPosition() + capacity
 *        |  readable      |     hole     [ooo)   hole   [ooo)                       |
 *        +----------------+--------------+-----+--------+-----+---------------------+
 *        |&lt;-------------- window() = capacity - readable() ---------------------&gt;|
 * </pre>
 *
 * Segment payload is copied to its stream offset on arrival, so an out-of-order segment costs no
 * extra copy when the hole fills. At most {@code maxRanges} out-of-order ranges are remembered, in
 * preallocated arrays, most recently updated first (RFC 2018 §4). Ranges are kept disjoint and never
 * adjacent: two ranges separated by no gap are merged.
 *
 * <p>Retransmitted bytes never overwrite bytes already received: only the parts of a segment that no
 * range covers (and that lie at or beyond {@link #contiguousEnd()}) are copied, so the first copy of
 * every byte wins. TCP promises identical bytes (RFC 9293 §3.10.7.4 trims but does not compare), so
 * this only matters against a faulty or hostile peer, and it means reassembled data cannot change
 * after it was first placed.
 *
 * <p>Subclasses decide where the read position lives ({@link #readPosition()}, {@link #consumedTo}) and
 * how a new {@link #contiguousEnd()} is made visible ({@link #publishContiguousEnd}); the ring bytes,
 * the ranges and {@code contiguousEnd} live here. Single-threaded (the writer's thread); no call allocates.
 */
public abstract class AbstractReceiveBuffer implements ReceiveBuffer
{
    private final RingStorage storage;
    private final int capacity;
    private final int maxRanges;
    private final long[] rangeStart;
    private final long[] rangeEnd;
    private int rangeCount;
    private long outOfOrderBytes;
    private long contiguousEnd;
    private long duplicateStart;
    private long duplicateEnd;

    /**
     * Over {@code ring}, whose capacity is a power of two and is the buffer's capacity;
     * {@code maxRanges} bounds the out-of-order ranges remembered (0 drops all out-of-order data).
     */
    protected AbstractReceiveBuffer(final AtomicBuffer ring, final int maxRanges)
    {
        if (maxRanges < 0)
        {
            throw new IllegalArgumentException("maxRanges must not be negative: " + maxRanges);
        }
        storage = new RingStorage(ring);
        capacity = storage.capacity();
        this.maxRanges = maxRanges;
        rangeStart = new long[maxRanges];
        rangeEnd = new long[maxRanges];
    }

    /**
     * The read position as last seen, at most {@link #readPosition()} (which may have to ask another party, as the
     * app's head of an RX pipe); by default {@link #readPosition()} itself.
     */
    protected long lastReadPosition()
    {
        return readPosition();
    }

    /** Every byte before {@code position} was read: move the read position there (never backwards). */
    protected abstract void consumedTo(long position);

    /** Every byte before {@code contiguousEnd} is in place and may be read; by default nothing to publish. */
    protected void publishContiguousEnd(final long contiguousEnd)
    {
    }

    /** Forget all data and ranges: {@link #contiguousEnd()} back to 0. The subclass resets the read position. */
    protected final void resetReassembly()
    {
        contiguousEnd = 0;
        rangeCount = 0;
        outOfOrderBytes = 0;
        duplicateStart = 0;
        duplicateEnd = 0;
    }

    @Override
    public final long contiguousEnd()
    {
        return contiguousEnd;
    }

    @Override
    public final int capacity()
    {
        return capacity;
    }

    /** Bound on the out-of-order ranges remembered. */
    public final int maxRanges()
    {
        return maxRanges;
    }

    /**
     * {@inheritDoc}
     *
     * <p>An out-of-order segment is {@link #REJECTED} only when it touches no range already held
     * and {@link #maxRanges()} are held; then nothing is copied and nothing changes.
     */
    @Override
    public final int write(final long offset, final DirectBuffer source, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative write length: " + length);
        }
        duplicateStart = 0;
        duplicateEnd = 0;
        // RFC 9293 §3.10.7.4 trims to the window; here to the buffer's free space, [RCV.NXT, read position + capacity),
        // which holds at least the window advertised. Text a peer sends past the advertised edge but within that space
        // is taken, as Linux's tcp_data_queue takes in-order text while the window is open (a FIN there is not noted
        // until it is within the advertised edge: TcpConnection.notePeerFin). The read position only moves forward, so
        // the one last seen bounds it from below: read it afresh only when the segment ends beyond.
        final long from = Math.max(offset, contiguousEnd);
        long limit = lastReadPosition() + capacity;
        if (offset + length > limit)
        {
            limit = readPosition() + capacity;
        }
        final long to = Math.min(offset + length, limit);
        if (from >= to)
        {
            return 0;
        }

        return from == contiguousEnd ?
            writeInOrder(from, to, offset, source, index) :
            writeOutOfOrder(from, to, offset, source, index);
    }

    @Override
    public final void discardOutOfOrderFrom(final long offset)
    {
        if (offset < contiguousEnd)
        {
            throw new IllegalArgumentException("offset " + offset + " before the contiguous end " + contiguousEnd);
        }
        // Cutting ranges keeps them disjoint and never adjacent, and the survivors keep their recency order.
        int kept = 0;
        for (int i = 0; i < rangeCount; i++)
        {
            final long start = rangeStart[i];
            final long cut = Math.max(start, Math.min(rangeEnd[i], offset));
            outOfOrderBytes -= rangeEnd[i] - cut;
            if (cut > start)
            {
                rangeStart[kept] = start;
                rangeEnd[kept] = cut;
                kept++;
            }
        }
        rangeCount = kept;
    }

    @Override
    public final int read(final MutableDirectBuffer destination, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative read length: " + length);
        }
        final long position = readPosition();
        final int count = (int)Math.min(length, contiguousEnd - position);
        storage.get(position, destination, index, count);
        consumedTo(position + count);
        return count;
    }

    @Override
    public final int outOfOrderRanges()
    {
        return rangeCount;
    }

    /** Start of out-of-order range {@code i}, 0 being the most recently updated. */
    @Override
    public final long outOfOrderStart(final int i)
    {
        return rangeStart[Objects.checkIndex(i, rangeCount)];
    }

    /** End (exclusive) of out-of-order range {@code i}, 0 being the most recently updated. */
    @Override
    public final long outOfOrderEnd(final int i)
    {
        return rangeEnd[Objects.checkIndex(i, rangeCount)];
    }

    @Override
    public final long outOfOrderBytes()
    {
        return outOfOrderBytes;
    }

    @Override
    public final long lastDuplicateStart()
    {
        return duplicateStart;
    }

    @Override
    public final long lastDuplicateEnd()
    {
        return duplicateEnd;
    }

    private int writeInOrder(
        final long from, final long to, final long offset, final DirectBuffer source, final int index)
    {
        copyUnreceived(from, to, offset, source, index);

        // Every range starts beyond contiguousEnd and ranges are never adjacent, so one pass absorbs all
        // that the new end reaches: absorbing a range cannot make another one touch.
        long newEnd = to;
        int kept = 0;
        for (int i = 0; i < rangeCount; i++)
        {
            if (rangeStart[i] <= newEnd)
            {
                newEnd = Math.max(newEnd, rangeEnd[i]);
                outOfOrderBytes -= rangeEnd[i] - rangeStart[i];
            }
            else
            {
                rangeStart[kept] = rangeStart[i];
                rangeEnd[kept] = rangeEnd[i];
                kept++;
            }
        }
        rangeCount = kept;

        final int advanced = (int)(newEnd - contiguousEnd);
        contiguousEnd = newEnd;
        // Every byte before the new end was copied above (or earlier), so it may be made visible.
        publishContiguousEnd(newEnd);
        return advanced;
    }

    private int writeOutOfOrder(
        final long from, final long to, final long offset, final DirectBuffer source, final int index)
    {
        long mergedStart = from;
        long mergedEnd = to;
        int touching = 0;
        for (int i = 0; i < rangeCount; i++)
        {
            if (rangeStart[i] <= to && rangeEnd[i] >= from)
            {
                mergedStart = Math.min(mergedStart, rangeStart[i]);
                mergedEnd = Math.max(mergedEnd, rangeEnd[i]);
                touching++;
            }
        }
        if (touching == 0 && rangeCount == maxRanges)
        {
            return REJECTED;
        }

        copyUnreceived(from, to, offset, source, index);

        // Drop the ranges merged into the new one, keeping the others in recency order.
        long absorbed = 0;
        int kept = 0;
        for (int i = 0; i < rangeCount; i++)
        {
            if (rangeStart[i] <= to && rangeEnd[i] >= from)
            {
                absorbed += rangeEnd[i] - rangeStart[i];
            }
            else
            {
                rangeStart[kept] = rangeStart[i];
                rangeEnd[kept] = rangeEnd[i];
                kept++;
            }
        }

        // RFC 2018 §4: the first SACK block reports the block holding the segment that triggered the ACK.
        System.arraycopy(rangeStart, 0, rangeStart, 1, kept);
        System.arraycopy(rangeEnd, 0, rangeEnd, 1, kept);
        rangeStart[0] = mergedStart;
        rangeEnd[0] = mergedEnd;
        rangeCount = kept + 1;
        outOfOrderBytes += (mergedEnd - mergedStart) - absorbed;
        return 0;
    }

    /** Copy the parts of stream range {@code [from, to)} that no out-of-order range holds yet; note the first part held. */
    private void copyUnreceived(
        final long from, final long to, final long offset, final DirectBuffer source, final int index)
    {
        long position = from;
        while (position < to)
        {
            long next = to;
            boolean held = false;
            for (int i = 0; i < rangeCount; i++)
            {
                final long start = rangeStart[i];
                if (start <= position && position < rangeEnd[i])
                {
                    if (duplicateEnd == duplicateStart)
                    {
                        duplicateStart = position;
                        duplicateEnd = Math.min(rangeEnd[i], to);
                    }
                    position = rangeEnd[i];
                    held = true;
                    break;
                }
                if (start > position && start < next)
                {
                    next = start;
                }
            }
            if (!held)
            {
                storage.put(position, source, index + (int)(position - offset), (int)(next - position));
                position = next;
            }
        }
    }
}
