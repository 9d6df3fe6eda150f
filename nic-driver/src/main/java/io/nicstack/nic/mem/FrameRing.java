package io.nicstack.nic.mem;

import io.nicstack.nic.FrameHandler;
import org.agrona.BufferUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import static io.nicstack.nic.mem.FrameRingDescriptor.FLAGS_OFFSET;
import static io.nicstack.nic.mem.FrameRingDescriptor.FRAME_OFFSET;
import static io.nicstack.nic.mem.FrameRingDescriptor.HEAD_POSITION_OFFSET;
import static io.nicstack.nic.mem.FrameRingDescriptor.LENGTH_OFFSET;
import static io.nicstack.nic.mem.FrameRingDescriptor.TAIL_POSITION_OFFSET;
import static org.agrona.BitUtil.CACHE_LINE_LENGTH;

/**
 * A single-producer single-consumer queue of frames in preallocated slots, layout in {@link FrameRingDescriptor}.
 *
 * <p>One thread uses the {@link Producer} (claim, commit, publish), another the {@link Consumer} (read). The producer
 * fills slots with plain stores and publishes a batch with a release store of the tail; the consumer acquires the tail
 * with a volatile load before reading slots and returns them with a release store of the head, which the producer
 * acquires before reusing a slot. Frames are never copied: the producer writes into the slot, the consumer's handler
 * reads it in place.
 */
public final class FrameRing
{
    private final int capacity;
    /** {@code capacity - 1} when the capacity is a power of two (slot index by mask), else -1 (by remainder). */
    private final int indexMask;
    private final int maxFrameLength;
    private final int slotLength;
    private final UnsafeBuffer buffer;
    private final int tailPositionIndex;
    private final int headPositionIndex;
    private final Producer producer;
    private final Consumer consumer;

    /** Allocate a ring of {@code capacity} slots for frames of up to {@code maxFrameLength} bytes. */
    public FrameRing(final int capacity, final int maxFrameLength)
    {
        this.capacity = capacity;
        this.indexMask = capacity > 0 && (capacity & (capacity - 1)) == 0 ? capacity - 1 : -1;
        this.maxFrameLength = maxFrameLength;
        this.slotLength = FrameRingDescriptor.slotLength(maxFrameLength);
        this.buffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(
            FrameRingDescriptor.requiredLength(capacity, maxFrameLength), CACHE_LINE_LENGTH));
        final int trailerOffset = capacity * slotLength;
        this.tailPositionIndex = trailerOffset + TAIL_POSITION_OFFSET;
        this.headPositionIndex = trailerOffset + HEAD_POSITION_OFFSET;
        this.producer = new Producer();
        this.consumer = new Consumer();
    }

    /** Number of slots. */
    public int capacity()
    {
        return capacity;
    }

    /** Largest frame a slot holds. */
    public int maxFrameLength()
    {
        return maxFrameLength;
    }

    /** The producer side; to be used by one thread only. */
    public Producer producer()
    {
        return producer;
    }

    /** The consumer side; to be used by one thread only. */
    public Consumer consumer()
    {
        return consumer;
    }

    private int slotOffset(final long position)
    {
        return slotIndex(position) * slotLength;
    }

    /** The slot of a position: a mask for power-of-two capacities (a 64-bit division costs tens of cycles). */
    private int slotIndex(final long position)
    {
        return indexMask >= 0 ? (int)position & indexMask : (int)(position % capacity);
    }

    /** Producer side: fills slots and publishes them in batches. */
    public final class Producer
    {
        /** One view per slot, made once: claiming a slot is an index, not a wrap. */
        private final UnsafeBuffer[] slots = new UnsafeBuffer[capacity];
        private long position;
        private long published;
        private long headCache;
        /** The last {@link #tryClaim()} returned a slot not yet committed. */
        private boolean claimed;

        private Producer()
        {
            for (int i = 0; i < capacity; i++)
            {
                slots[i] = new UnsafeBuffer(buffer, i * slotLength + FRAME_OFFSET, maxFrameLength);
            }
        }

        /** The next free slot (frame at index 0, capacity maxFrameLength), or null when the ring is full. */
        public MutableDirectBuffer tryClaim()
        {
            if (position - headCache >= capacity)
            {
                headCache = buffer.getLongVolatile(headPositionIndex);
                if (position - headCache >= capacity)
                {
                    claimed = false;
                    return null;
                }
            }

            claimed = true;
            return slots[slotIndex(position)];
        }

        /** Complete the slot returned by the last {@link #tryClaim()} with {@code length} bytes; not yet visible. */
        public void commit(final int length)
        {
            commit(length, 0);
        }

        /**
         * As {@link #commit(int)}, with the receive flags the consumer hands up with the frame.
         *
         * @throws IllegalStateException without a slot claimed since the last commit: it would overwrite a frame the
         *     consumer has not read, or publish a slot nobody wrote.
         */
        public void commit(final int length, final int flags)
        {
            if (!claimed)
            {
                throw new IllegalStateException("commit without a claimed slot");
            }
            if (length < 0 || length > maxFrameLength)
            {
                throw new IllegalArgumentException("frame length " + length + " outside 0.." + maxFrameLength);
            }
            final int slot = slotOffset(position);
            buffer.putInt(slot + LENGTH_OFFSET, length);
            buffer.putInt(slot + FLAGS_OFFSET, flags);
            position++;
            claimed = false;
        }

        /** Make every committed frame visible to the consumer; returns how many became visible. */
        public int publish()
        {
            final int count = (int)(position - published);
            if (count > 0)
            {
                published = position;
                buffer.putLongRelease(tailPositionIndex, position);
            }
            return count;
        }
    }

    /** Consumer side: hands published frames to a handler in order. */
    public final class Consumer
    {
        private final UnsafeBuffer frame = new UnsafeBuffer(buffer, 0, maxFrameLength);
        private long position;

        private Consumer()
        {
        }

        /** True when no published frame is waiting. */
        public boolean isEmpty()
        {
            return buffer.getLongVolatile(tailPositionIndex) == position;
        }

        /** Hand up to {@code limit} frames to the handler, each at index 0 of a view valid during the call, with its flags. */
        public int read(final FrameHandler handler, final int limit)
        {
            final long start = position;
            final long end = start + Math.min(buffer.getLongVolatile(tailPositionIndex) - start, Math.max(limit, 0));
            long next = start;
            try
            {
                while (next < end)
                {
                    final int offset = slotOffset(next);
                    final int length = buffer.getInt(offset + LENGTH_OFFSET);
                    final int flags = buffer.getInt(offset + FLAGS_OFFSET);
                    next++; // a handler that throws does not get the same frame again
                    frame.wrap(buffer, offset + FRAME_OFFSET, length); // exactly sized: a read past the frame throws
                    handler.onFrame(frame, 0, length, flags);
                }
            }
            finally
            {
                if (next != start)
                {
                    position = next;
                    buffer.putLongRelease(headPositionIndex, next);
                }
            }
            return (int)(next - start);
        }
    }
}
