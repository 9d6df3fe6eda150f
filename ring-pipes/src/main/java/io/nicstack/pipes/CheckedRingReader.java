package io.nicstack.pipes;

import org.agrona.BitUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * Consumer of an Agrona {@code OneToOneRingBuffer} in an app's shared memory whose producer is another process: the
 * daemon reads the app's control ring with it, the client the daemon's event and notification rings.
 *
 * <p>Same consumer protocol as Agrona 2.x {@code OneToOneRingBuffer.read} (a record is ready when its length word is
 * positive, padding records are skipped, the head is release-stored after the batch, the producer zeroes ahead), but
 * every length word is read once and checked against the ring before use. Agrona's reader trusts it, which is right
 * for a ring shared by cooperating threads and wrong across processes: a length past the end of the buffer moved the
 * head by garbage (an out-of-bounds access, or every later record lost), and a negative one that no producer writes
 * (an unfinished record's is minus its length) stopped the ring for good. Here either is {@link #CORRUPT}, and so is a
 * head position that is not the one this reader stored, and a record that runs past the producer's position: Agrona's
 * producer release-stores its tail before it release-stores a record's length, so a record it wrote lies below the tail
 * the reader sees after that length. The reader never zeroes what it took (Agrona 2.x's producer zeroes ahead): a stale
 * record a producer left at the head, a padding record spanning the whole buffer say, is taken again on every pass
 * over the buffer, and each pass counts it, so no record can make a reader's loop unbounded.
 */
public final class CheckedRingReader
{
    public static final int CORRUPT = -1;

    /** A consumer that may ask to stop before the next message (it stays in the ring for the next read). */
    public interface Handler extends MessageHandler
    {
        /** Whether the consumer takes another message now. */
        default boolean ready()
        {
            return true;
        }
    }

    private final AtomicBuffer buffer;
    private final int capacity;
    private final int headPositionIndex;
    private final int tailPositionIndex;
    private long head;
    /** The producer's position as last read: every record taken lies below it. */
    private long claimed;
    /** Where the message being delivered lies: the bytes taken before it. */
    private long messagePosition;

    public CheckedRingReader(final AtomicBuffer buffer)
    {
        this.buffer = buffer;
        this.capacity = buffer.capacity() - RingBufferDescriptor.TRAILER_LENGTH;
        this.headPositionIndex = capacity + RingBufferDescriptor.HEAD_POSITION_OFFSET;
        this.tailPositionIndex = capacity + RingBufferDescriptor.TAIL_POSITION_OFFSET;
        this.head = buffer.getLongVolatile(headPositionIndex);
        this.claimed = head;
    }

    /** The consumer's position: bytes taken so far. */
    public long position()
    {
        return head;
    }

    /** The position of the message being delivered, during {@link Handler#onMessage}: the bytes taken before it. */
    public long messagePosition()
    {
        return messagePosition;
    }

    /**
     * The producer's position now: every message the producer has claimed space for so far lies below it (Agrona's
     * producer moves the tail when it claims, before it writes the record). Written by the producer, another process:
     * it bounds what the producer can have written, and is never used as an index into the buffer.
     */
    public long producerPosition()
    {
        return buffer.getLongVolatile(tailPositionIndex);
    }

    /**
     * Deliver up to {@code limit} messages (padding records count too, so a ring of nothing else is not walked whole
     * at once, and a read that moves the head returns at least 1), while the handler is ready; returns how many were
     * delivered or skipped, or {@link #CORRUPT} (after delivering those before the bad record, where the head stays).
     */
    public int read(final Handler handler, final int limit)
    {
        if (buffer.getLongVolatile(headPositionIndex) != head)
        {
            return CORRUPT;
        }
        final int headIndex = (int)head & (capacity - 1);
        final int contiguous = capacity - headIndex;
        int bytesRead = 0;
        int messages = 0;
        boolean corrupt = false;
        try
        {
            while (bytesRead < contiguous && messages < limit && handler.ready())
            {
                final int recordIndex = headIndex + bytesRead;
                final int recordLength = buffer.getIntVolatile(RecordDescriptor.lengthOffset(recordIndex));
                if (recordLength == 0)
                {
                    break;
                }
                // Negative: being written (minus its length); checked all the same, or a bad one stops the ring.
                final int length = recordLength > 0 ? recordLength : -recordLength;
                final int aligned = BitUtil.align(length, RecordDescriptor.ALIGNMENT);
                if (length < RecordDescriptor.HEADER_LENGTH || aligned > contiguous - bytesRead || aligned < 0)
                {
                    corrupt = true;
                    break;
                }
                if (recordLength < 0)
                {
                    break;
                }
                final long end = head + bytesRead + aligned;
                if (end - claimed > 0)
                {
                    claimed = buffer.getLongVolatile(tailPositionIndex); // after the length: see the class comment
                    if (end - claimed > 0)
                    {
                        corrupt = true; // never claimed: written past the producer, or left from a pass before
                        break;
                    }
                }
                final int typeId = buffer.getInt(RecordDescriptor.typeOffset(recordIndex));
                messagePosition = head + bytesRead;
                bytesRead += aligned;
                messages++;
                if (typeId == RingBuffer.PADDING_MSG_TYPE_ID)
                {
                    // Padding fills the end of the buffer, and an aborted claim (Agrona's abort) leaves one anywhere.
                    continue;
                }
                handler.onMessage(typeId, buffer, RecordDescriptor.encodedMsgOffset(recordIndex),
                    recordLength - RecordDescriptor.HEADER_LENGTH);
            }
        }
        finally
        {
            if (bytesRead > 0)
            {
                head += bytesRead;
                buffer.putLongRelease(headPositionIndex, head);
            }
        }
        return corrupt ? CORRUPT : messages;
    }
}
