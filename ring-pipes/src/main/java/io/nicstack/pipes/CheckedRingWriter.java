package io.nicstack.pipes;

import java.lang.invoke.VarHandle;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * Producer of an Agrona {@code OneToOneRingBuffer} in an app's shared memory whose consumer is another process: the
 * daemon writes the app's event and notification rings with it, the client reads them with {@link CheckedRingReader}.
 *
 * <p>Same records and producer protocol as Agrona 2.x {@code OneToOneRingBuffer.write}: the tail is release-stored
 * when space is claimed, before the record; the header after the record is zeroed ahead (the consumer never zeroes);
 * a padding record fills the buffer's end when a record does not fit before it; a record is written with minus its
 * length, then its payload and type, then its length release-stored. What differs is whom it believes. Agrona's
 * producer reads its tail (and a head cache) back from the ring on every write and stores at {@code (int)tail & mask}:
 * across processes the consumer can write any value there, and an odd tail made the daemon do misaligned ordered
 * stores, which fault (SIGBUS) on aarch64 and would take the daemon, and every app with it, down. Here the tail is
 * this producer's own: read once at the attach and checked (8-aligned, at most {@code capacity} past the head), and
 * from then on only stored, never read, so every index is derived from it and every store is aligned and in the
 * buffer by construction, whatever the app writes. The head cache is a field here, not the ring's. The consumer's head
 * is read only to learn the free space, and one that is not 8-aligned, is past this tail, or is more than
 * {@code capacity} behind it is {@link #CORRUPT}, as is a ring whose positions were bad at the attach, and, as
 * {@link CheckedRingReader} does for its head, a tail word that is not the one this producer stored (it is compared,
 * never used: an app that changes it after the comparison changes nothing here); once corrupt, nothing more is stored.
 *
 * <p>One thread writes. No allocation, no locks.
 */
public final class CheckedRingWriter
{
    /** The record was written. */
    public static final int WRITTEN = 1;
    /** No room for the record now (the consumer is behind); nothing was written. */
    public static final int FULL = 0;
    /** The consumer broke the ring's positions; nothing was written, nor will be. */
    public static final int CORRUPT = -1;

    private final AtomicBuffer buffer;
    private final int capacity;
    private final int mask;
    private final int maxMessageLength;
    private final int tailPositionIndex;
    private final int headPositionIndex;
    /** The producer's position: bytes claimed so far. Never read back from the ring. */
    private long tail;
    /** The consumer's position as last read and checked: at most {@link #tail}, at least {@code tail - capacity}. */
    private long headCache;
    private boolean corrupt;

    /**
     * A producer over {@code buffer} (a power-of-two capacity plus {@link RingBufferDescriptor#TRAILER_LENGTH}, at an
     * 8-aligned address) going on from the ring's positions as they are now; positions that no producer and consumer
     * could have left make it {@link #corrupt()} from the start.
     */
    public CheckedRingWriter(final AtomicBuffer buffer)
    {
        this.capacity = RingBufferDescriptor.checkCapacity(buffer.capacity(), 2 * RecordDescriptor.ALIGNMENT);
        buffer.verifyAlignment();
        this.buffer = buffer;
        this.mask = capacity - 1;
        // As Agrona's producer, so that whatever it could write fits here too.
        this.maxMessageLength = capacity == 2 * RecordDescriptor.ALIGNMENT ? 0 : Math.max(RecordDescriptor.ALIGNMENT, capacity >> 3);
        this.tailPositionIndex = capacity + RingBufferDescriptor.TAIL_POSITION_OFFSET;
        this.headPositionIndex = capacity + RingBufferDescriptor.HEAD_POSITION_OFFSET;
        final long tail = buffer.getLongVolatile(tailPositionIndex);
        this.tail = tail;
        this.headCache = tail;
        this.corrupt = (tail & (RecordDescriptor.ALIGNMENT - 1)) != 0 || !takeHead();
    }

    /** Bytes of records the ring holds. */
    public int capacity()
    {
        return capacity;
    }

    /** The longest message {@link #write} takes. */
    public int maxMessageLength()
    {
        return maxMessageLength;
    }

    /** The producer's position: bytes claimed so far (its own count, not what the ring's tail word says now). */
    public long position()
    {
        return tail;
    }

    /** Whether the consumer broke the ring's positions (every write is then {@link #CORRUPT}). */
    public boolean corrupt()
    {
        return corrupt;
    }

    /**
     * Write {@code length} bytes of {@code source} from {@code offset} as a message of type {@code typeId} (positive):
     * {@link #WRITTEN}, {@link #FULL} or {@link #CORRUPT}. A bad type or length is the caller's bug and throws.
     */
    public int write(final int typeId, final DirectBuffer source, final int offset, final int length)
    {
        RecordDescriptor.checkTypeId(typeId);
        if (length < 0 || length > maxMessageLength)
        {
            throw new IllegalArgumentException("message length " + length + " not in [0, " + maxMessageLength + "]");
        }
        if (corrupt || buffer.getLongVolatile(tailPositionIndex) != tail)
        {
            corrupt = true;
            return CORRUPT;
        }
        final int recordLength = length + RecordDescriptor.HEADER_LENGTH;
        final int alignedLength = BitUtil.align(recordLength, RecordDescriptor.ALIGNMENT);
        // The record and the header after it, zeroed ahead (the consumer never zeroes what it took).
        final int required = alignedLength + RecordDescriptor.HEADER_LENGTH;
        final int tailIndex = (int)tail & mask;
        final int toEnd = capacity - tailIndex;
        // A record that does not end the buffer exactly and leaves no room for the next header before its end goes to
        // index 0, behind a padding record filling the end.
        final int padding = alignedLength != toEnd && required > toEnd ? toEnd : 0;
        if (padding + required > capacity - (int)(tail - headCache) && !takeHead())
        {
            corrupt = true;
            return CORRUPT;
        }
        final int free = capacity - (int)(tail - headCache);
        if (required > free)
        {
            return FULL;
        }
        if (padding + required > free)
        {
            // Room for the padding but not for the record after it: pad now, as Agrona's producer does.
            tail += padding;
            buffer.putLongRelease(tailPositionIndex, tail);
            pad(tailIndex, padding);
            return FULL;
        }

        final int recordIndex = padding == 0 ? tailIndex : 0;
        tail += padding + alignedLength;
        // Claimed before the record's length is stored: CheckedRingReader takes only records below the tail it reads
        // after their length.
        buffer.putLongRelease(tailPositionIndex, tail);
        if (padding != 0)
        {
            pad(tailIndex, padding);
        }
        buffer.putLong((int)tail & mask, 0L);
        buffer.putIntRelease(RecordDescriptor.lengthOffset(recordIndex), -recordLength);
        VarHandle.releaseFence();
        buffer.putBytes(RecordDescriptor.encodedMsgOffset(recordIndex), source, offset, length);
        buffer.putInt(RecordDescriptor.typeOffset(recordIndex), typeId);
        buffer.putIntRelease(RecordDescriptor.lengthOffset(recordIndex), recordLength);
        return WRITTEN;
    }

    /** A padding record of {@code length} bytes at {@code index}, to the buffer's end; the header at 0 zeroed first. */
    private void pad(final int index, final int length)
    {
        buffer.putLong(0, 0L); // the next record's header, left from the pass before: not zeroed ahead
        buffer.putIntRelease(RecordDescriptor.lengthOffset(index), -length);
        VarHandle.releaseFence();
        buffer.putInt(RecordDescriptor.typeOffset(index), RingBuffer.PADDING_MSG_TYPE_ID);
        buffer.putIntRelease(RecordDescriptor.lengthOffset(index), length);
    }

    /**
     * Read the consumer's head into {@link #headCache} if it is one a consumer could have stored: 8-aligned, not past
     * this producer's tail, at most {@code capacity} behind it. Compared as differences, as positions may wrap.
     */
    private boolean takeHead()
    {
        final long head = buffer.getLongVolatile(headPositionIndex);
        final long used = tail - head;
        if ((head & (RecordDescriptor.ALIGNMENT - 1)) != 0 || used < 0 || used > capacity)
        {
            return false;
        }
        headCache = head;
        return true;
    }
}
