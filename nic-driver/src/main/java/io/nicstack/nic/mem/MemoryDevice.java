package io.nicstack.nic.mem;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.concurrent.locks.LockSupport;

/**
 * One end of a {@link MemoryWire}: transmits into one {@link FrameRing} and receives from the other.
 *
 * <p>Frames are written straight into ring slots and read in place. When the peer's queue is full, {@link #claim()}
 * hands out a scratch buffer and the frame is dropped on {@link #commit(int)}, like a NIC with a full TX ring.
 *
 * <p>With checksum offload (see {@link MemoryWire#pair(int, int, boolean)}) it behaves like two NICs that offload
 * TCP/UDP checksums on either side of a wire that cannot corrupt anything: a frame committed with
 * {@link #TX_L4_CHECKSUM_PARTIAL} keeps its pseudo-header sum (nobody computes the rest) and arrives flagged
 * {@link FrameHandler#RX_L4_CHECKSUM_TRUSTED}. Without it (the default), checksums are the stacks' own, end to end.
 */
public final class MemoryDevice implements NetDevice
{
    private static final int SPINS_BEFORE_PARK = 100;
    private static final long MAX_PARK_NANOS = 50_000;

    private final String name;
    private final int mtu;
    private final FrameRing.Producer tx;
    private final FrameRing.Consumer rx;
    private final UnsafeBuffer overflowFrame;
    private final boolean checksumOffload;

    private MutableDirectBuffer claimed;
    private int queued;
    private long droppedFrames;

    MemoryDevice(final String name, final int mtu, final FrameRing txRing, final FrameRing rxRing, final boolean checksumOffload)
    {
        this.checksumOffload = checksumOffload;
        this.name = name;
        this.mtu = mtu;
        this.tx = txRing.producer();
        this.rx = rxRing.consumer();
        this.overflowFrame = new UnsafeBuffer(new byte[txRing.maxFrameLength()]);
    }

    @Override
    public String name()
    {
        return name;
    }

    @Override
    public int mtu()
    {
        return mtu;
    }

    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        return rx.read(handler, Math.min(limit, BURST));
    }

    @Override
    public MutableDirectBuffer claim()
    {
        if (claimed == null)
        {
            if (queued == BURST)
            {
                flush();
            }
            final MutableDirectBuffer slot = tx.tryClaim();
            claimed = slot != null ? slot : overflowFrame;
        }

        return claimed;
    }

    @Override
    public boolean transmitChecksumOffload()
    {
        return checksumOffload;
    }

    @Override
    public void commit(final int length)
    {
        commit(length, 0);
    }

    @Override
    public void commit(final int length, final int flags)
    {
        if (flags != 0 && (flags != TX_L4_CHECKSUM_PARTIAL || !checksumOffload))
        {
            throw new IllegalArgumentException("transmit flags " + flags + " on " + name
                + (checksumOffload ? "" : ", which does not offload checksums"));
        }
        if (claimed == null)
        {
            throw new IllegalStateException("commit without claim on " + name);
        }
        if (length < 0 || length > maxFrameLength())
        {
            throw new IllegalArgumentException(
                "frame length " + length + " outside 0.." + maxFrameLength() + " on " + name);
        }

        if (claimed == overflowFrame)
        {
            droppedFrames++;
        }
        else
        {
            tx.commit(length, flags == 0 ? 0 : FrameHandler.RX_L4_CHECKSUM_TRUSTED);
            queued++;
        }
        claimed = null;
    }

    @Override
    public void abort()
    {
        claimed = null;
    }

    @Override
    public int flush()
    {
        queued = 0;
        return tx.publish();
    }

    /** Spins briefly, then parks in slices of at most 50 us, never longer than {@code timeoutNanos} in total. */
    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        if (!rx.isEmpty())
        {
            return true;
        }
        if (timeoutNanos <= 0)
        {
            return false;
        }

        final long deadline = System.nanoTime() + timeoutNanos;
        int spins = 0;
        while (rx.isEmpty())
        {
            final long remaining = deadline - System.nanoTime();
            if (remaining <= 0)
            {
                return false;
            }
            if (spins < SPINS_BEFORE_PARK)
            {
                spins++;
                Thread.onSpinWait();
            }
            else
            {
                LockSupport.parkNanos(Math.min(remaining, MAX_PARK_NANOS));
            }
        }

        return true;
    }

    @Override
    public long droppedFrames()
    {
        return droppedFrames;
    }

    @Override
    public void close()
    {
    }

    @Override
    public String toString()
    {
        return name + " (mtu " + mtu + ")";
    }
}
