package io.nicstack.nic.fault;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NetDeviceDecorator;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Decorator that injects seeded loss, rate policing, corruption, duplication, reordering and delay in each direction
 * (smoltcp phy/fault_injector.rs, Aeron's LossGenerator).
 *
 * <p>Frames held for delay or reordering are let go by a later {@link #receive(FrameHandler, int)} (receive side) or
 * {@link #flush()} (transmit side) once {@code clock} says they are due, so the event loop must keep calling both.
 * Transmitted frames are staged in a buffer of this device and copied into the inner device's claimed buffer; received
 * frames are passed through untouched or, when corrupted or held, as copies, never modified in the inner buffer.
 * Print {@link #toString()} on failure: it holds both seeds.
 *
 * <p>Receive flags of the inner device pass through with each frame (held ones included), except that a corrupted frame
 * loses {@link FrameHandler#RX_L4_CHECKSUM_TRUSTED}: corruption stands for a wire fault after whatever verified the
 * checksum, so the stack must verify it in software and drop the frame. Transmit checksum offload is not offered (see
 * {@link #transmitChecksumOffload()}).
 */
public final class FaultInjectingDevice extends NetDeviceDecorator
{
    /** Default number of frames each direction can hold for {@code delay}. */
    public static final int DEFAULT_HOLD_FRAMES = 1024;

    /**
     * Most frames one received frame can add beyond itself: the frame a reorder held, let go behind it, and its
     * duplicate. Only these can exceed a receive's limit, since the inner device is asked for one frame at a time.
     */
    private static final int EXTRA_FRAMES = 2;

    private final NanoClock clock;
    private final FaultLine rx;
    private final FaultLine tx;
    private final String name;

    private final UnsafeBuffer txFrame;
    private boolean claimed;
    private final FrameHandler txToInner = this::transmitToInner;

    private final FrameHandler rxFromInner = new FrameHandler()
    {
        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            onFrame(buffer, offset, length, 0);
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
        {
            rx.process(buffer, offset, length, flags, rxNowNanos, rxToHandler);
        }
    };
    /** Between the receive fault line and the caller's handler: frames beyond the limit are kept for the next call. */
    private final FrameHandler rxToHandler = new FrameHandler()
    {
        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            onFrame(buffer, offset, length, 0);
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
        {
            if (rxDelivered < rxLimit)
            {
                rxDelivered++;
                rxHandler.onFrame(buffer, offset, length, flags);
            }
            else
            {
                kept.add(buffer, offset, length, flags, 0);
            }
        }
    };
    private FrameHandler rxHandler;
    private long rxNowNanos;
    private int rxDelivered;
    private int rxLimit;

    /** Copies of frames the receive fault line let go beyond a call's limit, delivered first by the next. */
    private final FrameQueue kept;

    /** Wrap {@code inner} with faults per direction, holding up to {@link #DEFAULT_HOLD_FRAMES} delayed frames each. */
    public FaultInjectingDevice(
        final NetDevice inner, final FaultConfig rx, final FaultConfig tx, final NanoClock clock)
    {
        this(inner, rx, tx, clock, DEFAULT_HOLD_FRAMES);
    }

    /** As the four-argument constructor with room for {@code holdFrames} delayed frames per direction. */
    public FaultInjectingDevice(
        final NetDevice inner, final FaultConfig rx, final FaultConfig tx, final NanoClock clock, final int holdFrames)
    {
        super(inner);
        if (holdFrames < 1)
        {
            throw new IllegalArgumentException("holdFrames must be at least 1: " + holdFrames);
        }

        this.clock = clock;
        this.name = "fault:" + inner.name();
        final long nowNanos = clock.nanoTime();
        this.rx = new FaultLine(rx, inner.maxFrameLength(), holdFrames, nowNanos);
        this.tx = new FaultLine(tx, inner.maxFrameLength(), holdFrames, nowNanos);
        this.txFrame = new UnsafeBuffer(new byte[inner.maxFrameLength()]);

        // Without duplication or reordering every received frame yields at most one: nothing is ever kept.
        kept = new FrameQueue(rx.duplicate() > 0 || rx.reorder() > 0 ? EXTRA_FRAMES : 0, inner.maxFrameLength());
    }

    /** Faults applied to received frames. */
    public FaultConfig rxConfig()
    {
        return rx.config();
    }

    /** Faults applied to transmitted frames. */
    public FaultConfig txConfig()
    {
        return tx.config();
    }

    /** Counters of faults injected into received frames. */
    public FaultStats rxStats()
    {
        return rx.stats();
    }

    /** Counters of faults injected into transmitted frames. */
    public FaultStats txStats()
    {
        return tx.stats();
    }

    @Override
    public String name()
    {
        return name;
    }

    /**
     * Delivers up to {@code limit} frames: those the last call could not fit first, then due held frames, then frames
     * from the inner device. A received frame can come out as up to three (with the frame a reorder held and a
     * duplicate); those beyond {@code limit} are kept, as copies, for the next call.
     */
    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        final int max = Math.min(limit, BURST);
        int delivered = 0;
        while (!kept.isEmpty() && delivered < max)
        {
            kept.removeTo(handler);
            delivered++;
        }

        final long nowNanos = clock.nanoTime();
        delivered += rx.release(nowNanos, handler, max - delivered);
        if (delivered < max)
        {
            rxHandler = handler;
            rxNowNanos = nowNanos;
            rxDelivered = delivered;
            rxLimit = max;
            try
            {
                // One inner frame at a time, and no more of them than there is room for: once the limit is reached,
                // only what the last frame added is left over, at most EXTRA_FRAMES.
                int toRead = max - delivered;
                while (toRead > 0 && rxDelivered < max && inner.receive(rxFromInner, 1) > 0)
                {
                    toRead--;
                }
            }
            finally
            {
                rxHandler = null;
            }
            delivered = rxDelivered;
        }

        return delivered;
    }

    @Override
    public MutableDirectBuffer claim()
    {
        claimed = true;
        return txFrame;
    }

    @Override
    public void commit(final int length)
    {
        if (!claimed)
        {
            throw new IllegalStateException("commit without claim on " + name);
        }
        if (length < 0 || length > txFrame.capacity())
        {
            throw new IllegalArgumentException(
                "frame length " + length + " outside 0.." + txFrame.capacity() + " on " + name);
        }

        claimed = false;
        tx.process(txFrame, 0, length, 0, clock.nanoTime(), txToInner);
    }

    /**
     * False: the stack computes every checksum before a frame enters the fault line. Offloading through it would let
     * the inner device checksum bytes this device corrupted, hiding the very wire fault that corruption stands for.
     */
    @Override
    public boolean transmitChecksumOffload()
    {
        return false;
    }

    @Override
    public void abort()
    {
        claimed = false;
    }

    /** Hands due held frames to the inner device, then flushes it. */
    @Override
    public int flush()
    {
        tx.release(clock.nanoTime(), txToInner, Integer.MAX_VALUE);
        return inner.flush();
    }

    /** Readable when a held frame is due or the inner device is; waits no longer than the next due time. */
    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        if (!kept.isEmpty())
        {
            return true;
        }
        if (!rx.holding())
        {
            return inner.awaitReadable(timeoutNanos);
        }

        final long dueInNanos = rx.nextDueNanos() - clock.nanoTime();
        if (dueInNanos <= 0)
        {
            return true;
        }

        return inner.awaitReadable(Math.min(timeoutNanos, dueInNanos)) || rx.nextDueNanos() - clock.nanoTime() <= 0;
    }

    /** Drops of the inner device plus frames this device could not hold; injected faults are in the stats. */
    @Override
    public long droppedFrames()
    {
        return inner.droppedFrames() + rx.overflowDropped() + tx.overflowDropped();
    }

    /** Name and both configurations with their seeds, enough to replay a run. */
    @Override
    public String toString()
    {
        return name + " rx[" + rx.config() + "] tx[" + tx.config() + "]";
    }

    private void transmitToInner(final DirectBuffer buffer, final int offset, final int length)
    {
        inner.claim().putBytes(0, buffer, offset, length);
        inner.commit(length);
    }
}
