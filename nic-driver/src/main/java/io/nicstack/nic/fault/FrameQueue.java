package io.nicstack.nic.fault;

import org.agrona.BitUtil;
import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.FrameHandler;

/**
 * A first-in first-out queue of frame copies, each with its receive flags and a time (when it is due, for a delay
 * line): a ring of slots allocated up front in one block of direct memory, so that queueing a frame allocates nothing.
 * Used by {@link FaultLine} for delayed frames and by {@link FaultInjectingDevice} for frames beyond a receive's limit.
 */
final class FrameQueue
{
    private final UnsafeBuffer[] frames;
    private final int[] lengths;
    private final int[] flags;
    private final long[] times;
    private int head;
    private int count;

    /** Room for {@code slots} frames of up to {@code maxFrameLength} bytes (0 slots: a queue that is always full). */
    FrameQueue(final int slots, final int maxFrameLength)
    {
        frames = new UnsafeBuffer[slots];
        lengths = new int[slots];
        flags = new int[slots];
        times = new long[slots];
        if (slots > 0)
        {
            final int slotLength = BitUtil.align(maxFrameLength, BitUtil.CACHE_LINE_LENGTH);
            final UnsafeBuffer memory = new UnsafeBuffer(
                BufferUtil.allocateDirectAligned(Math.multiplyExact(slots, slotLength), BitUtil.CACHE_LINE_LENGTH));
            for (int i = 0; i < slots; i++)
            {
                frames[i] = new UnsafeBuffer(memory, i * slotLength, maxFrameLength);
            }
        }
    }

    boolean isEmpty()
    {
        return count == 0;
    }

    boolean isFull()
    {
        return count == frames.length;
    }

    /** The time of the frame at the head; only if not empty. */
    long headTime()
    {
        return times[head];
    }

    /** Copy a frame to the tail; only if not full. */
    void add(final DirectBuffer frame, final int offset, final int length, final int frameFlags, final long time)
    {
        int slot = head + count;
        if (slot >= frames.length)
        {
            slot -= frames.length;
        }
        frames[slot].putBytes(0, frame, offset, length);
        lengths[slot] = length;
        flags[slot] = frameFlags;
        times[slot] = time;
        count++;
    }

    /**
     * Take the frame at the head off the queue and hand it to {@code sink}; only if not empty. It is off the queue
     * before the sink sees it, and its slot is not reused until the sink returns unless the sink adds to this queue.
     */
    void removeTo(final FrameHandler sink)
    {
        final int slot = head;
        head = head + 1 == frames.length ? 0 : head + 1;
        count--;
        sink.onFrame(frames[slot], 0, lengths[slot], flags[slot]);
    }
}
