package io.nicstack.pipes.client;

import org.agrona.BitUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * The client's consumer of a daemon → app ring (events, notifications), an Agrona {@code OneToOneRingBuffer} in the
 * app's shared memory.
 *
 * <p>Same consumer protocol as Agrona 2.x {@code OneToOneRingBuffer.read} (a record is ready when its length word is
 * positive, padding records are skipped, the head is release-stored after the batch, the producer zeroes ahead), but
 * every length word is read once and checked against the ring before use. Agrona's reader trusts it: a length past the
 * end of the buffer moved the head by garbage and lost every event after it, and a negative one no producer writes
 * (an unfinished record's is minus its length) stopped the ring for good, so a blocking accept or connect hung. Here
 * either is {@link #CORRUPT}, and so is a head position that is not the one this reader stored.
 */
final class CheckedRingReader
{
    static final int CORRUPT = -1;

    private final AtomicBuffer buffer;
    private final int capacity;
    private final int headPositionIndex;
    private long head;

    CheckedRingReader(final AtomicBuffer buffer)
    {
        this.buffer = buffer;
        this.capacity = buffer.capacity() - RingBufferDescriptor.TRAILER_LENGTH;
        this.headPositionIndex = capacity + RingBufferDescriptor.HEAD_POSITION_OFFSET;
        this.head = buffer.getLongVolatile(headPositionIndex);
    }

    /** The consumer's position: bytes taken so far. */
    long position()
    {
        return head;
    }

    /**
     * Deliver up to {@code limit} messages; returns how many were delivered, or {@link #CORRUPT} (after delivering
     * those before the bad record, whose head stays there).
     */
    int read(final MessageHandler handler, final int limit)
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
            while (bytesRead < contiguous && messages < limit)
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
                final int typeId = buffer.getInt(RecordDescriptor.typeOffset(recordIndex));
                bytesRead += aligned;
                if (typeId == RingBuffer.PADDING_MSG_TYPE_ID)
                {
                    continue;
                }
                messages++;
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
