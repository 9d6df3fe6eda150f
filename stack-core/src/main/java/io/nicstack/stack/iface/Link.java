package io.nicstack.stack.iface;

import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.NetDevice;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.EthernetFrame;

/** The stack's side of a {@link NetDevice}: frame emission with the source MAC filled and frames counted. */
public final class Link
{
    private final NetDevice device;
    private final long mac;
    private final StackCounters counters;
    private final EthernetFrame eth = new EthernetFrame();
    private final boolean transmitChecksumOffload;
    private MutableDirectBuffer claimed;

    public Link(final NetDevice device, final long mac, final StackCounters counters)
    {
        this.device = device;
        this.mac = mac;
        this.counters = counters;
        this.transmitChecksumOffload = device.transmitChecksumOffload();
    }

    /** True when the device completes TCP/UDP checksums of frames committed with {@link NetDevice#TX_L4_CHECKSUM_PARTIAL}. */
    public boolean transmitChecksumOffload()
    {
        return transmitChecksumOffload;
    }

    public long mac()
    {
        return mac;
    }

    public NetDevice device()
    {
        return device;
    }

    /** Claim the next frame buffer with its Ethernet header written (destination, our source, type). */
    public MutableDirectBuffer claim(final long destinationMac, final int etherType)
    {
        claimed = device.claim();
        eth.wrap(claimed, 0, EthernetFrame.HEADER_LENGTH).destination(destinationMac).source(mac).etherType(etherType);
        return claimed;
    }

    /** Queue the claimed frame with {@code length} bytes including the Ethernet header. */
    public void commit(final int length)
    {
        commit(length, 0);
    }

    /** Queue the claimed frame with the device's transmit flags ({@link NetDevice#TX_L4_CHECKSUM_PARTIAL}). */
    public void commit(final int length, final int flags)
    {
        claimed = null;
        device.commit(length, flags);
        counters.increment(StackCounter.FRAMES_OUT);
        counters.add(StackCounter.BYTES_OUT, length);
        if (flags != 0)
        {
            counters.increment(StackCounter.TX_CHECKSUMS_OFFLOADED);
        }
    }

    public void abort()
    {
        claimed = null;
        device.abort();
    }

    public int flush()
    {
        return device.flush();
    }
}
