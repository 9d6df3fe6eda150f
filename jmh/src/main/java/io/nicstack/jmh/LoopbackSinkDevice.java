package io.nicstack.jmh;

import java.nio.ByteBuffer;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;

/**
 * A benchmark-only {@link NetDevice}: every {@link #receive} hands the one preloaded frame to the handler,
 * and every transmitted frame lands in one reused buffer.
 *
 * <p>Nothing is allocated after construction: the receive buffer and the transmit buffer are direct
 * buffers created once, {@link #claim()} always returns the same {@link UnsafeBuffer}, and
 * {@link #commit(int)} only records the length. The device is a sink, not a wire: what the stack
 * transmits is never looped back as input, so each receive is the same request again.
 *
 * <p>With {@code checksumOffload} it behaves like a NIC with checksum offload: every received frame comes
 * with {@link FrameHandler#RX_L4_CHECKSUM_TRUSTED} (verified "in hardware"), and it accepts frames committed
 * with {@link #TX_L4_CHECKSUM_PARTIAL}, whose checksum the hardware would complete on the way out (here
 * nobody does: the work is the NIC's, not the stack's; {@link #lastTxFlags()} tells the checks).
 *
 * <p>{@link #fillRing} models a NIC's RX ring: before a poll (outside the timed region) the "hardware" writes a burst of
 * distinct frames into their own slots, and the next {@link #receive} hands over those slots, as a driver's poll
 * takes what DMA already placed. The stack then reads each frame from a different buffer, as it does from a real
 * ring, and the benchmark does not time its own frame generation.
 */
public final class LoopbackSinkDevice implements NetDevice
{
    private final int mtu;
    private final UnsafeBuffer rxBuffer;
    private final UnsafeBuffer txBuffer;
    private int rxLength;
    private int lastTxLength;
    private int pending;
    private long received;
    private long transmitted;
    private boolean claimed;
    private final boolean checksumOffload;
    private int lastTxFlags;
    private int burst = 1;
    private Runnable beforeEachFrame;
    /** The RX ring: {@link NetDevice#BURST} slots {@link #RING_SLOT} bytes apart, filled by {@link #fillRing}. */
    private final UnsafeBuffer ring;
    private int ringFrames;
    private int ringNext;

    /**
     * Bytes from one RX ring slot to the next: a DPDK mbuf as its default mempool lays them out (128-byte mbuf header,
     * 128 bytes of headroom, 2048 bytes of data room). Not a power of two, so the 32 frames' first lines do not all
     * fall into the same two L1 sets, as they would 2048 bytes apart.
     */
    public static final int RING_SLOT = 2304;
    /** Where a frame starts in its slot: after the mbuf header and the headroom. */
    public static final int RING_FRAME_AT = 256;

    public LoopbackSinkDevice(final int mtu)
    {
        this(mtu, false);
    }

    public LoopbackSinkDevice(final int mtu, final boolean checksumOffload)
    {
        this.mtu = mtu;
        this.checksumOffload = checksumOffload;
        this.rxBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(mtu + ETHERNET_HEADER_LENGTH));
        this.txBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(mtu + ETHERNET_HEADER_LENGTH));
        if (RING_FRAME_AT + mtu + ETHERNET_HEADER_LENGTH > RING_SLOT)
        {
            throw new IllegalArgumentException("MTU " + mtu + " does not fit a ring slot of " + RING_SLOT + " bytes");
        }
        this.ring = new UnsafeBuffer(ByteBuffer.allocateDirect(BURST * RING_SLOT));
    }

    /** Preload the frame every later {@link #receive} delivers; a length of 0 makes the device idle. */
    public void load(final DirectBuffer frame, final int offset, final int length)
    {
        if (length > rxBuffer.capacity())
        {
            throw new IllegalArgumentException("frame of " + length + " bytes exceeds " + rxBuffer.capacity());
        }
        rxBuffer.putBytes(0, frame, offset, length);
        rxLength = length;
    }

    /** The preloaded frame (for baselines that copy the same bytes). */
    public UnsafeBuffer rxBuffer()
    {
        return rxBuffer;
    }

    public int rxLength()
    {
        return rxLength;
    }

    /** The buffer every transmitted frame was written into; holds the last committed frame. */
    public UnsafeBuffer txBuffer()
    {
        return txBuffer;
    }

    /** Length of the last committed frame, 0 when none since {@link #resetLastTx()}. */
    public int lastTxLength()
    {
        return lastTxLength;
    }

    public void resetLastTx()
    {
        lastTxLength = 0;
    }

    /** Frames handed to a handler since construction. */
    public long received()
    {
        return received;
    }

    /** Frames committed since construction. */
    public long transmitted()
    {
        return transmitted;
    }

    @Override
    public String name()
    {
        return "bench:loopback-sink";
    }

    @Override
    public int mtu()
    {
        return mtu;
    }

    /**
     * Deliver the preloaded frame {@code frames} times per {@link #receive} call (a burst, as a NIC's RX ring hands
     * over under load), running {@code beforeEachFrame} (e.g. advancing its sequence number) before each.
     */
    public void burst(final int frames, final Runnable beforeEachFrame)
    {
        if (frames < 1 || frames > BURST)
        {
            throw new IllegalArgumentException("burst of " + frames + " outside 1.." + BURST);
        }
        this.burst = frames;
        this.beforeEachFrame = beforeEachFrame;
    }

    /**
     * The NIC's DMA, done before the next {@link #receive} and not by the stack: {@code frames} copies of the preloaded
     * frame go into the RX ring's slots, the per-frame action given to {@link #burst} (e.g. giving it the next sequence
     * number) running on the preloaded frame before each copy. The next {@link #receive} delivers these slots (the ring
     * takes precedence over {@link #burst}); after that the device is back to delivering the preloaded frame.
     */
    public void fillRing(final int frames)
    {
        if (frames < 1 || frames > BURST)
        {
            throw new IllegalArgumentException("ring fill of " + frames + " outside 1.." + BURST);
        }
        if (beforeEachFrame == null)
        {
            throw new IllegalStateException("no per-frame action: call burst(frames, action) first");
        }
        if (ringNext != ringFrames)
        {
            throw new IllegalStateException((ringFrames - ringNext) + " frames of the last ring fill were never received");
        }
        for (int i = 0; i < frames; i++)
        {
            beforeEachFrame.run();
            ring.putBytes(i * RING_SLOT + RING_FRAME_AT, rxBuffer, 0, rxLength);
        }
        ringFrames = frames;
        ringNext = 0;
    }

    /** One frame per call by default (when loaded and {@code limit > 0}), so one poll is one request; see {@link #burst}. */
    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        if (rxLength == 0 || limit <= 0)
        {
            return 0;
        }
        final int flags = checksumOffload ? FrameHandler.RX_L4_CHECKSUM_TRUSTED : 0;
        if (ringNext < ringFrames)
        {
            final int end = Math.min(ringFrames, ringNext + limit);
            final int first = ringNext;
            for (int i = first; i < end; i++)
            {
                received++;
                handler.onFrame(ring, i * RING_SLOT + RING_FRAME_AT, rxLength, flags);
            }
            ringNext = end;
            return end - first;
        }
        final int frames = Math.min(burst, limit);
        for (int i = 0; i < frames; i++)
        {
            if (beforeEachFrame != null)
            {
                beforeEachFrame.run();
            }
            received++;
            handler.onFrame(rxBuffer, 0, rxLength, flags);
        }
        return frames;
    }

    @Override
    public MutableDirectBuffer claim()
    {
        if (claimed)
        {
            throw new IllegalStateException("claim without commit");
        }
        claimed = true;
        return txBuffer;
    }

    @Override
    public boolean transmitChecksumOffload()
    {
        return checksumOffload;
    }

    /** Transmit flags of the last committed frame. */
    public int lastTxFlags()
    {
        return lastTxFlags;
    }

    @Override
    public void commit(final int length, final int flags)
    {
        if (flags != 0 && (flags != TX_L4_CHECKSUM_PARTIAL || !checksumOffload))
        {
            throw new IllegalArgumentException("unexpected transmit flags " + flags);
        }
        commit(length);
        lastTxFlags = flags;
    }

    @Override
    public void commit(final int length)
    {
        lastTxFlags = 0;
        if (!claimed)
        {
            throw new IllegalStateException("commit without claim");
        }
        claimed = false;
        lastTxLength = length;
        pending++;
        transmitted++;
    }

    @Override
    public void abort()
    {
        claimed = false;
    }

    @Override
    public int flush()
    {
        final int flushed = pending;
        pending = 0;
        return flushed;
    }

    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        return rxLength != 0;
    }

    @Override
    public long droppedFrames()
    {
        return 0;
    }

    @Override
    public void close()
    {
    }
}
