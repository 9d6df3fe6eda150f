package io.nicstack.nic.mem;

import io.nicstack.nic.NetDevice;

/**
 * Two {@link MemoryDevice}s joined back to back, like a crossover cable: what {@code a} flushes, {@code b} receives.
 *
 * <p>Each direction is its own {@link FrameRing}, so each end may be driven by its own thread.
 */
public final class MemoryWire
{
    /** Smallest MTU an IPv4 link may have, RFC 791. */
    public static final int MIN_MTU = 68;

    /** Largest MTU an IPv4 packet length can express. */
    public static final int MAX_MTU = 65_535;

    private final MemoryDevice a;
    private final MemoryDevice b;

    private MemoryWire(final int mtu, final int queueFrames, final boolean checksumOffload)
    {
        if (mtu < MIN_MTU || mtu > MAX_MTU)
        {
            throw new IllegalArgumentException("mtu " + mtu + " outside " + MIN_MTU + ".." + MAX_MTU);
        }
        if (queueFrames < 1)
        {
            throw new IllegalArgumentException("queueFrames must be at least 1: " + queueFrames);
        }

        final int maxFrameLength = mtu + NetDevice.ETHERNET_HEADER_LENGTH;
        final FrameRing aToB = new FrameRing(queueFrames, maxFrameLength);
        final FrameRing bToA = new FrameRing(queueFrames, maxFrameLength);
        a = new MemoryDevice("mem:a", mtu, aToB, bToA, checksumOffload);
        b = new MemoryDevice("mem:b", mtu, bToA, aToB, checksumOffload);
    }

    /** A wire with the given MTU and room for {@code queueFrames} frames in flight in each direction. */
    public static MemoryWire pair(final int mtu, final int queueFrames)
    {
        return new MemoryWire(mtu, queueFrames, false);
    }

    /**
     * As {@link #pair(int, int)}; with {@code checksumOffload} both ends offload TCP/UDP checksums as NICs do
     * (see {@link MemoryDevice}), for benchmarks that stand in for a NIC. Tests of the stack's own checksums
     * use the default.
     */
    public static MemoryWire pair(final int mtu, final int queueFrames, final boolean checksumOffload)
    {
        return new MemoryWire(mtu, queueFrames, checksumOffload);
    }

    /** The end named {@code mem:a}. */
    public MemoryDevice a()
    {
        return a;
    }

    /** The end named {@code mem:b}. */
    public MemoryDevice b()
    {
        return b;
    }
}
