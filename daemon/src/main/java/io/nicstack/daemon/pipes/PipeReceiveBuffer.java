package io.nicstack.daemon.pipes;

import java.util.Objects;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;

import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.storage.ReceiveBuffer;

/**
 * {@link ReceiveBuffer} over an RX pipe ({@link PipeDescriptor}): TCP (the daemon) produces, the host app consumes.
 * The pipe is the reassembly buffer, as in stack-core's {@code RingReceiveBuffer}, whose semantics this mirrors.
 *
 * <pre>
 *   head (app)      tail (daemon)        out-of-order ranges (daemon only)      head + capacity
 *        |  readable      |     hole     [ooo)   hole   [ooo)                           |
 *        +----------------+--------------+-----+--------+-----+-------------------------+
 *        |&lt;---------------- window() = capacity - (tail - head) -------------------&gt;|
 * </pre>
 *
 * Payload is copied to its stream offset on arrival; the tail is release-stored only over contiguous bytes,
 * so the app never sees a hole. Out-of-order ranges live in preallocated arrays on the daemon side, most
 * recently updated first (RFC 2018 §4), disjoint and never adjacent; beyond {@code maxRanges} a segment that
 * touches none is {@link #REJECTED}. The first copy of every byte wins (retransmissions never overwrite).
 * The head the app writes (its doorbell) is read with {@code getLongVolatile} and trusted only within
 * {@code [previous head, tail]}, so a misbehaving app cannot make the window negative or larger than the pipe.
 * Event loop thread only; no call allocates.
 */
public final class PipeReceiveBuffer implements ReceiveBuffer
{
    private final AtomicBuffer pipe;
    private final int capacity;
    private final int mask;
    private final int maxRanges;
    private final long[] rangeStart;
    private final long[] rangeEnd;
    private int rangeCount;
    private long outOfOrderBytes;
    private long readPosition;
    private long contiguousEnd;

    public PipeReceiveBuffer(final AtomicBuffer pipe, final int capacity, final int maxRanges)
    {
        if (!BitUtil.isPowerOfTwo(capacity) || pipe.capacity() < PipeDescriptor.length(capacity))
        {
            throw new IllegalArgumentException("pipe of capacity " + capacity + " does not fit " + pipe.capacity() + " bytes");
        }
        if (maxRanges < 0)
        {
            throw new IllegalArgumentException("maxRanges must not be negative: " + maxRanges);
        }
        this.pipe = pipe;
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.maxRanges = maxRanges;
        rangeStart = new long[maxRanges];
        rangeEnd = new long[maxRanges];
    }

    /** Restart the stream at offset 0 for a new connection (the app does not touch the pipe until told of it). */
    public void reset()
    {
        readPosition = 0;
        contiguousEnd = 0;
        rangeCount = 0;
        outOfOrderBytes = 0;
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, 0);
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, 0);
    }

    /** The head the app wrote last, unvalidated (the doorbell). */
    public long headVolatile()
    {
        return pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET);
    }

    @Override
    public long readPosition()
    {
        final long head = pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET);
        if (head > readPosition)
        {
            readPosition = Math.min(head, contiguousEnd);
        }
        return readPosition;
    }

    @Override
    public long contiguousEnd()
    {
        return contiguousEnd;
    }

    @Override
    public int capacity()
    {
        return capacity;
    }

    public int maxRanges()
    {
        return maxRanges;
    }

    @Override
    public int write(final long offset, final DirectBuffer source, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative write length: " + length);
        }
        // RFC 9293 §3.10.7.4: keep only [RCV.NXT, RCV.NXT + RCV.WND); the window ends where the app's head allows.
        final long from = Math.max(offset, contiguousEnd);
        final long to = Math.min(offset + length, readPosition() + capacity);
        if (from >= to)
        {
            return 0;
        }
        return from == contiguousEnd ?
            writeInOrder(from, to, offset, source, index) :
            writeOutOfOrder(from, to, offset, source, index);
    }

    /** Not used by the daemon (the app consumes); copies and moves the head like the app would. */
    @Override
    public int read(final MutableDirectBuffer destination, final int index, final int length)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative read length: " + length);
        }
        final long position = readPosition();
        final int count = (int)Math.min(length, contiguousEnd - position);
        final int at = (int)position & mask;
        final int first = Math.min(count, capacity - at);
        destination.putBytes(index, pipe, PipeDescriptor.DATA_OFFSET + at, first);
        if (first < count)
        {
            destination.putBytes(index + first, pipe, PipeDescriptor.DATA_OFFSET, count - first);
        }
        readPosition = position + count;
        pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, readPosition);
        return count;
    }

    @Override
    public int outOfOrderRanges()
    {
        return rangeCount;
    }

    @Override
    public long outOfOrderStart(final int i)
    {
        return rangeStart[Objects.checkIndex(i, rangeCount)];
    }

    @Override
    public long outOfOrderEnd(final int i)
    {
        return rangeEnd[Objects.checkIndex(i, rangeCount)];
    }

    @Override
    public long outOfOrderBytes()
    {
        return outOfOrderBytes;
    }

    private int writeInOrder(
        final long from, final long to, final long offset, final DirectBuffer source, final int index)
    {
        copyUnreceived(from, to, offset, source, index);

        // Ranges start beyond the tail and are never adjacent: one pass absorbs all the new end reaches.
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
        // Publish: every byte before the new tail was written above (or earlier), so the app may read it.
        pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, newEnd);
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

    /** Copy the parts of stream range {@code [from, to)} that no out-of-order range holds yet. */
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
                put(position, source, index + (int)(position - offset), (int)(next - position));
                position = next;
            }
        }
    }

    private void put(final long position, final DirectBuffer source, final int index, final int length)
    {
        final int at = (int)position & mask;
        final int first = Math.min(length, capacity - at);
        pipe.putBytes(PipeDescriptor.DATA_OFFSET + at, source, index, first);
        if (first < length)
        {
            pipe.putBytes(PipeDescriptor.DATA_OFFSET, source, index + first, length - first);
        }
    }
}
