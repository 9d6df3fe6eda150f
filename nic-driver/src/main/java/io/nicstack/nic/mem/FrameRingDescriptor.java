package io.nicstack.nic.mem;

import org.agrona.BitUtil;

import static org.agrona.BitUtil.CACHE_LINE_LENGTH;

/**
 * Layout of a {@link FrameRing}: {@code capacity} fixed-size frame slots followed by a trailer with the positions.
 *
 * <pre>
 * Slot i at i * slotLength (slotLength is FRAME_OFFSET + maxFrameLength rounded up to a cache line):
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                    Frame Length (native order)                |
 *  +---------------------------------------------------------------+
 *  |                 Frame Flags (native order)                    |
 *  +---------------------------------------------------------------+
 *  |                    Frame (up to maxFrameLength)              ...
 * ...                                                              |
 *  +---------------------------------------------------------------+
 *
 * Trailer at capacity * slotLength:
 *  +---------------------------------------------------------------+
 *  |                     Padding (2 cache lines)                  ...
 * ...                                                              |
 *  +---------------------------------------------------------------+
 *  |             Tail Position (frames published, 64 bits)         |
 *  +---------------------------------------------------------------+
 *  |                  Padding (2 cache lines - 8)                 ...
 * ...                                                              |
 *  +---------------------------------------------------------------+
 *  |             Head Position (frames consumed, 64 bits)          |
 *  +---------------------------------------------------------------+
 *  |                  Padding (2 cache lines - 8)                 ...
 * ...                                                              |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * Positions count frames and only grow (from 0, so never negative); the slot index is the position modulo
 * {@code capacity}, which need not be a power of two ({@link FrameRing} takes it with a mask when it is, by remainder
 * otherwise). Two cache lines of padding keep the producer's and consumer's positions apart even with adjacent-line
 * prefetch.
 */
public final class FrameRingDescriptor
{
    /** Offset of the frame length within a slot. */
    public static final int LENGTH_OFFSET = 0;

    /** Offset of the frame's receive flags ({@code FrameHandler.RX_L4_CHECKSUM_TRUSTED}) within a slot. */
    public static final int FLAGS_OFFSET = 4;

    /** Offset of the frame bytes within a slot. */
    public static final int FRAME_OFFSET = 8;

    /** Offset of the tail position (written by the producer) within the trailer. */
    public static final int TAIL_POSITION_OFFSET = CACHE_LINE_LENGTH * 2;

    /** Offset of the head position (written by the consumer) within the trailer. */
    public static final int HEAD_POSITION_OFFSET = CACHE_LINE_LENGTH * 4;

    /** Length of the trailer. */
    public static final int TRAILER_LENGTH = CACHE_LINE_LENGTH * 6;

    private FrameRingDescriptor()
    {
    }

    /** Length of one slot for frames of up to {@code maxFrameLength} bytes. */
    public static int slotLength(final int maxFrameLength)
    {
        return BitUtil.align(FRAME_OFFSET + maxFrameLength, CACHE_LINE_LENGTH);
    }

    /** Total buffer length for {@code capacity} slots plus the trailer. */
    public static int requiredLength(final int capacity, final int maxFrameLength)
    {
        if (capacity < 1)
        {
            throw new IllegalArgumentException("frame ring capacity must be at least 1: " + capacity);
        }
        return Math.addExact(Math.multiplyExact(capacity, slotLength(maxFrameLength)), TRAILER_LENGTH);
    }
}
