package io.nicstack.nic.fault;

import io.nicstack.nic.FrameHandler;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.SplittableRandom;

/**
 * One direction of a {@link FaultInjectingDevice}: frames go in, zero or more come out to a sink now or later.
 *
 * <p>Each frame travels with its receive flags ({@link FrameHandler#RX_L4_CHECKSUM_TRUSTED}), which reach the sink
 * through the four-argument {@link FrameHandler#onFrame(DirectBuffer, int, int, int)}, also after a hold; a corrupted
 * copy loses {@code RX_L4_CHECKSUM_TRUSTED}, since nobody verified the bytes it now has. The transmit side passes 0.
 *
 * <p>Stages in order: loss, rate policer, corruption (of a copy), duplication, reordering (hold one frame until the
 * next has passed), delay (a FIFO of copies in preallocated slots; every frame has the same delay, so due times are in
 * order). Random draws happen in a fixed order
 * and only for configured faults, so a seed and the same input replay exactly.
 */
final class FaultLine
{
    /** A frame held for reordering is let go after this long even if no other frame came. */
    static final long REORDER_TIMEOUT_NANOS = 1_000_000;

    /** The policer's bucket holds this much time at the configured rate (but at least one frame). */
    static final long RATE_BURST_NANOS = 10_000_000;

    private final FaultConfig config;
    private final FaultStats stats = new FaultStats();
    private final SplittableRandom random;

    private final double bytesPerNano;
    private final double burstBytes;
    private double tokens;
    private long lastRefillNanos;

    private final UnsafeBuffer corruptFrame;
    private final UnsafeBuffer reorderFrame;
    private int reorderLength = -1;
    private int reorderFlags;
    private long reorderSinceNanos;

    /** Frames the delay holds, each with the time it is due. */
    private final FrameQueue held;

    FaultLine(final FaultConfig config, final int maxFrameLength, final int holdFrames, final long nowNanos)
    {
        this.config = config;
        this.random = new SplittableRandom(config.seed());

        bytesPerNano = config.rateBitsPerSecond() / 8e9;
        burstBytes = Math.max(maxFrameLength, bytesPerNano * RATE_BURST_NANOS);
        tokens = burstBytes;
        lastRefillNanos = nowNanos;

        corruptFrame = config.corrupt() > 0 ? new UnsafeBuffer(new byte[maxFrameLength]) : null;
        reorderFrame = config.reorder() > 0 ? new UnsafeBuffer(new byte[maxFrameLength]) : null;

        held = new FrameQueue(config.delayNanos() > 0 ? holdFrames : 0, maxFrameLength);
    }

    FaultConfig config()
    {
        return config;
    }

    FaultStats stats()
    {
        return stats;
    }

    /** Pass one frame with its flags through every stage (to the sink now, or held for later). */
    void process(
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final int flags,
        final long nowNanos,
        final FrameHandler sink)
    {
        if (config.loss() > 0 && random.nextDouble() < config.loss())
        {
            stats.lost++;
            return;
        }

        if (bytesPerNano > 0 && !admit(length, nowNanos))
        {
            stats.rateDropped++;
            return;
        }

        DirectBuffer frame = buffer;
        int frameOffset = offset;
        int frameFlags = flags;
        if (config.corrupt() > 0 && random.nextDouble() < config.corrupt() && length > 0)
        {
            // Flip a bit of a copy: on receive the buffer belongs to the inner device.
            corruptFrame.putBytes(0, buffer, offset, length);
            final int index = random.nextInt(length);
            corruptFrame.putByte(index, (byte)(corruptFrame.getByte(index) ^ (1 << random.nextInt(8))));
            frame = corruptFrame;
            frameOffset = 0;
            // A wire fault: whatever verified the checksum saw other bytes, so the receiver must verify it again.
            frameFlags &= ~FrameHandler.RX_L4_CHECKSUM_TRUSTED;
            stats.corrupted++;
        }

        reorder(frame, frameOffset, length, frameFlags, nowNanos, sink);
        if (config.duplicate() > 0 && random.nextDouble() < config.duplicate())
        {
            stats.duplicated++;
            reorder(frame, frameOffset, length, frameFlags, nowNanos, sink);
        }
    }

    /** Let go of up to {@code limit} held frames that are due; returns how many reached the sink. */
    int release(final long nowNanos, final FrameHandler sink, final int limit)
    {
        int emitted = 0;
        if (reorderLength >= 0 && limit > 0 && nowNanos - reorderSinceNanos >= REORDER_TIMEOUT_NANOS)
        {
            emitted += releaseReordered(nowNanos, sink);
        }

        while (!held.isEmpty() && emitted < limit && nowNanos - held.headTime() >= 0)
        {
            held.removeTo(sink);
            emitted++;
        }

        return emitted;
    }

    /** True when a frame is held for reordering or delay. */
    boolean holding()
    {
        return reorderLength >= 0 || !held.isEmpty();
    }

    /**
     * Earliest time a held frame may be let go by {@link #release(long, FrameHandler, int)}; only if {@link #holding()}.
     * Clock readings may be negative and compare only by difference, so there is no "never" value to start from (one
     * such as {@code Long.MAX_VALUE} overflows the difference): each due time counts only when its frame is held.
     */
    long nextDueNanos()
    {
        final long reorderDueNanos = reorderSinceNanos + REORDER_TIMEOUT_NANOS;
        if (held.isEmpty())
        {
            return reorderDueNanos;
        }
        final long delayDueNanos = held.headTime();
        return reorderLength >= 0 && reorderDueNanos - delayDueNanos < 0 ? reorderDueNanos : delayDueNanos;
    }

    /** Frames dropped because no slot was free to hold them. */
    long overflowDropped()
    {
        return stats.overflowDropped;
    }

    /** Token bucket policer (RFC 2697 with a single bucket): a frame passes only if the bucket holds its bytes. */
    private boolean admit(final int length, final long nowNanos)
    {
        final long elapsed = nowNanos - lastRefillNanos;
        if (elapsed > 0)
        {
            tokens = Math.min(burstBytes, tokens + elapsed * bytesPerNano);
            lastRefillNanos = nowNanos;
        }
        if (tokens < length)
        {
            return false;
        }
        tokens -= length;
        return true;
    }

    private void reorder(
        final DirectBuffer frame,
        final int offset,
        final int length,
        final int flags,
        final long nowNanos,
        final FrameHandler sink)
    {
        if (reorderLength < 0 && config.reorder() > 0 && random.nextDouble() < config.reorder())
        {
            reorderFrame.putBytes(0, frame, offset, length);
            reorderLength = length;
            reorderFlags = flags;
            reorderSinceNanos = nowNanos;
            stats.reordered++;
            return;
        }

        delay(frame, offset, length, flags, nowNanos, sink);
        if (reorderLength >= 0)
        {
            releaseReordered(nowNanos, sink);
        }
    }

    private int releaseReordered(final long nowNanos, final FrameHandler sink)
    {
        final int length = reorderLength;
        reorderLength = -1;
        return delay(reorderFrame, 0, length, reorderFlags, nowNanos, sink);
    }

    private int delay(
        final DirectBuffer frame,
        final int offset,
        final int length,
        final int flags,
        final long nowNanos,
        final FrameHandler sink)
    {
        if (config.delayNanos() == 0)
        {
            sink.onFrame(frame, offset, length, flags);
            return 1;
        }

        if (held.isFull())
        {
            stats.overflowDropped++;
            return 0;
        }
        held.add(frame, offset, length, flags, nowNanos + config.delayNanos());
        stats.delayed++;
        return 0;
    }
}
