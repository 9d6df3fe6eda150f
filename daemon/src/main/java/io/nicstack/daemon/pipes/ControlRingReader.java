package io.nicstack.daemon.pipes;

import org.agrona.BitUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * Consumer of an Agrona {@code OneToOneRingBuffer} written by an untrusted producer (the app's control ring).
 *
 * <p>Same consumer protocol as Agrona 2.x {@code OneToOneRingBuffer.read} (a record is ready when its
 * length word is positive, padding records are skipped, the head is release-stored after the batch, the
 * producer zeroes ahead), but every length is read once and checked before use: a record shorter than
 * its header or running past the end of the buffer, or a head position the app overwrote, is
 * {@link #CORRUPT} instead of an out-of-bounds access or a head moved by garbage. Agrona's reader trusts
 * the length word, which is right for a ring shared by cooperating threads and wrong across a trust boundary.
 */
final class ControlRingReader
{
    static final int CORRUPT = -1;

    /** A consumer that may ask to stop before the next message (it stays in the ring for the next read). */
    interface Handler extends MessageHandler
    {
        /** Whether the consumer takes another message now. */
        boolean ready();
    }

    private final AtomicBuffer buffer;
    private final int capacity;
    private final int headPositionIndex;
    private long head;

    ControlRingReader(final AtomicBuffer buffer)
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
     * Deliver up to {@code limit} messages (padding records within the buffer count too), while the handler is ready;
     * returns how many were delivered or skipped, or {@link #CORRUPT}.
     */
    int read(final Handler handler, final int limit)
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
                if (recordLength <= 0)
                {
                    break;
                }
                final int aligned = BitUtil.align(recordLength, RecordDescriptor.ALIGNMENT);
                if (recordLength < RecordDescriptor.HEADER_LENGTH || aligned > contiguous - bytesRead || aligned < 0)
                {
                    corrupt = true;
                    break;
                }
                final int typeId = buffer.getInt(RecordDescriptor.typeOffset(recordIndex));
                bytesRead += aligned;
                if (typeId == RingBuffer.PADDING_MSG_TYPE_ID)
                {
                    // Padding fills the end of the buffer, and an aborted claim (Agrona's abort) leaves one anywhere:
                    // skipped, but counted against the limit, so a ring of nothing else is not walked whole at once.
                    if (bytesRead != contiguous)
                    {
                        messages++;
                    }
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
