package io.nicstack.stack;

import org.agrona.DirectBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.stack.icmp.Icmp;
import io.nicstack.stack.iface.Arp;
import io.nicstack.stack.iface.Identifications;
import io.nicstack.stack.iface.Ipv4;
import io.nicstack.stack.iface.Link;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.Tcp;
import io.nicstack.stack.tcp.TcpSettings;
import io.nicstack.stack.tcp.isn.IsnGenerator;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.time.Timers;
import io.nicstack.stack.udp.Udp;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

/**
 * One host stack on one device: Ethernet demultiplexing, ARP, IPv4, ICMP and UDP, driven by
 * {@link #poll(long)} with an injected clock. Single threaded: everything runs on the caller of poll.
 */
public final class NetStack implements FrameHandler
{
    private final NetDevice device;
    private final StackConfig config;
    private final StackCounters counters;
    private final Timers timers;
    private final Link link;
    private final Arp arp;
    private final Ipv4 ipv4;
    private final Icmp icmp;
    private final Udp udp;
    private final Tcp tcp;
    private final EthernetFrame eth = new EthernetFrame();
    private final Ipv4Header quoted = new Ipv4Header();
    private long now;
    /** The device's drops, then superframes and their frames received and sent, at the last round's end. */
    private final long[] lastDeviceCounts = new long[6];
    /** True inside {@link #poll}'s receive burst: per-frame counts wait for {@link #flushCounts()} at its end. */
    private boolean inBurst;
    private long framesInBurst;
    private long bytesInBurst;

    public NetStack(final NetDevice device, final StackConfig config, final StackCounters counters, final long nowNanos)
    {
        this(device, config, counters, nowNanos, IsnGenerator.withRandomSecret(), SynCookies.withRandomSecret(),
            Identifications.withRandomSecret());
    }

    /**
     * With the secrets of TCP's initial sequence numbers and SYN cookies given, and fixed ones for IP identifications:
     * for runs that must repeat exactly (tests that compare two runs); everywhere else they must be random (RFC 6528
     * §3, RFC 7739 §5.3).
     */
    public NetStack(final NetDevice device, final StackConfig config, final StackCounters counters, final long nowNanos,
        final IsnGenerator isn, final SynCookies cookies)
    {
        this(device, config, counters, nowNanos, isn, cookies, new Identifications(0x6E69_6373_7461_636BL, 0x6964_656E_7469_7479L));
    }

    private NetStack(final NetDevice device, final StackConfig config, final StackCounters counters, final long nowNanos,
        final IsnGenerator isn, final SynCookies cookies, final Identifications identifications)
    {
        this.device = device;
        this.config = config.seal();
        this.counters = counters;
        this.now = nowNanos;
        this.timers = new Timers(nowNanos, this::onTimerError);
        this.link = new Link(device, config.mac(), counters);
        this.arp = new Arp(config, link, counters, timers);
        this.ipv4 = new Ipv4(config, link, arp, counters, timers, identifications, this::onReassemblyTimeout);
        this.icmp = new Icmp(ipv4, counters);
        this.udp = new Udp(ipv4, icmp, counters);
        this.tcp = new Tcp(ipv4, counters, timers, new TcpSettings(), isn, cookies, this::onHandlerError);
        tcp.now(nowNanos); // a connect before the first poll is timed from here, not from 0
        ipv4.register(Ipv4Header.PROTOCOL_ICMP, icmp);
        ipv4.register(Ipv4Header.PROTOCOL_UDP, udp);
        ipv4.register(Ipv4Header.PROTOCOL_TCP, tcp);
        icmp.onErrors(Ipv4Header.PROTOCOL_TCP, tcp::onIcmpError);
        icmp.onErrors(Ipv4Header.PROTOCOL_UDP, udp);
    }

    /** Announce our address with gratuitous ARP, now and again in 2 s (call once when the link is up). */
    public void start(final long nowNanos)
    {
        now = nowNanos;
        tcp.now(nowNanos);
        arp.start(nowNanos);
        link.flush();
    }

    /**
     * Hand every frame queued since the last flush to the device now, e.g. the segments that
     * application work outside {@link #poll} (a host app's doorbell) produced, instead of holding them
     * until the end of the next poll, behind its receive burst.
     *
     * @return the number of frames handed to the medium.
     */
    public int flush()
    {
        return link.flush();
    }

    /**
     * One run-to-completion round: a receive burst, due timers, then one transmit burst.
     *
     * @return work done (frames received plus timers run), 0 when idle.
     */
    public int poll(final long nowNanos)
    {
        now = nowNanos;
        tcp.now(nowNanos);
        inBurst = true;
        final int frames;
        try
        {
            frames = device.receive(this, NetDevice.BURST);
        }
        finally
        {
            inBurst = false;
            flushCounts();
        }
        // RFC 9293 §3.8.6.3: every segment of the burst is processed before ACKs go out.
        int work = frames + tcp.afterBurst(nowNanos);
        work += timers.poll(nowNanos);
        work += tcp.afterBurst(nowNanos);
        link.flush();
        syncDeviceCount(StackCounter.DEVICE_DROPS, 0, device.droppedFrames());
        syncDeviceCount(StackCounter.RX_SUPERFRAMES, 1, device.receiveSuperframes());
        syncDeviceCount(StackCounter.RX_SUPERFRAME_SEGMENTS, 2, device.receiveSuperframeSegments());
        syncDeviceCount(StackCounter.TX_SUPERFRAMES, 3, device.transmitSuperframes());
        syncDeviceCount(StackCounter.TX_SUPERFRAME_SEGMENTS, 4, device.transmitSuperframeSegments());
        syncDeviceCount(StackCounter.TX_SUPERFRAMES_REFUSED, 5, device.transmitSuperframesRefused());
        return work;
    }

    /** Add what the device's own count {@code index} of {@link #lastDeviceCounts} grew by since the last round. */
    private void syncDeviceCount(final StackCounter counter, final int index, final long deviceCount)
    {
        final long last = lastDeviceCounts[index];
        if (deviceCount != last)
        {
            counters.add(counter, deviceCount - last);
            lastDeviceCounts[index] = deviceCount;
        }
    }

    @Override
    public void onFrame(final DirectBuffer buffer, final int offset, final int length)
    {
        onFrame(buffer, offset, length, 0);
    }

    @Override
    public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
    {
        framesInBurst++;
        bytesInBurst += length;
        try
        {
            demux(buffer, offset, length, flags);
        }
        catch (final RuntimeException e)
        {
            // A bug must cost one frame, not the daemon: count it, log the first few, keep going.
            internalError("on a received frame (dropped)", e);
        }
        if (!inBurst)
        {
            flushCounts();
        }
    }

    /** A timer's handler threw: as on the receive path, a bug costs that timer, not the daemon. */
    private void onTimerError(final Throwable e)
    {
        internalError("in a timer handler (that timer dropped)", e);
    }

    /** A TCP event handler threw: the call is lost, not the stack (the other connections' events and ACKs go on). */
    private void onHandlerError(final Throwable e)
    {
        internalError("in a TCP event handler (that event dropped)", e);
    }

    /** Count a bug caught where it costs one frame or one timer, and log the first few. */
    private void internalError(final String where, final Throwable e)
    {
        counters.increment(StackCounter.INTERNAL_ERRORS);
        if (counters.get(StackCounter.INTERNAL_ERRORS) <= 10)
        {
            System.err.println("nicstack: internal error " + where + ": " + e);
            e.printStackTrace();
        }
    }

    /**
     * Publish the counts a burst keeps in fields: a counter update per frame costs more than the rest of
     * the Ethernet layer, and readers (another process's {@code nicstack stats}) only look between bursts.
     */
    private void flushCounts()
    {
        if (framesInBurst != 0)
        {
            counters.add(StackCounter.FRAMES_IN, framesInBurst);
            counters.add(StackCounter.BYTES_IN, bytesInBurst);
            framesInBurst = 0;
            bytesInBurst = 0;
        }
        tcp.flushCounts();
    }

    private void demux(final DirectBuffer buffer, final int offset, final int length, final int flags)
    {
        // A segment of an existing connection, in the usual frame shape, skips Ethernet and IPv4.
        if (tcp.onFrame(buffer, offset, length, link.mac(), (flags & RX_L4_CHECKSUM_TRUSTED) != 0, now))
        {
            return;
        }
        if (!eth.wrapInput(buffer, offset, length))
        {
            counters.increment(StackCounter.ETH_DROP_TRUNCATED);
            return;
        }
        final long destination = eth.inputDestination();
        if (destination != link.mac() && destination != MacAddress.BROADCAST)
        {
            counters.increment(StackCounter.ETH_DROP_NOT_FOR_US);
            return;
        }
        switch (eth.inputEtherType())
        {
            case EthernetFrame.ETHERTYPE_IPV4:
                ipv4.input(buffer, eth.payloadOffset(), eth.payloadLength(), now,
                    destination == MacAddress.BROADCAST ? flags | Ipv4.LINK_BROADCAST : flags);
                break;
            case EthernetFrame.ETHERTYPE_ARP:
                arp.input(buffer, eth.payloadOffset(), eth.payloadLength(), now);
                break;
            default:
                counters.increment(StackCounter.ETH_DROP_UNKNOWN_ETHERTYPE);
                break;
        }
    }

    private void onReassemblyTimeout(final DirectBuffer buffer, final int offset, final int length, final long nowNanos)
    {
        // RFC 1122 3.3.2: SHOULD send time exceeded (code 1) when fragment zero arrived.
        if (length >= Ipv4Header.MIN_HEADER_LENGTH)
        {
            quoted.wrap(buffer, offset, length);
            // Not about a broadcast, nor about an ICMP error (RFC 1122 3.2.2), as for every other error.
            if (!ipv4.isBroadcastDestination(quoted.destination()) && !Icmp.isIcmpError(quoted))
            {
                icmp.sendError(IcmpHeader.TYPE_TIME_EXCEEDED, 1, quoted.source(), buffer, offset, length, nowNanos);
            }
        }
    }

    public NetDevice device()
    {
        return device;
    }

    public StackConfig config()
    {
        return config;
    }

    public StackCounters counters()
    {
        return counters;
    }

    public Timers timers()
    {
        return timers;
    }

    public Arp arp()
    {
        return arp;
    }

    public Ipv4 ipv4()
    {
        return ipv4;
    }

    public Icmp icmp()
    {
        return icmp;
    }

    public Udp udp()
    {
        return udp;
    }

    public Tcp tcp()
    {
        return tcp;
    }

    /** Time of the current (or last) poll. */
    public long now()
    {
        return now;
    }
}
