package io.nicstack.stack.udp;

import java.nio.ByteBuffer;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.icmp.Icmp;
import io.nicstack.stack.icmp.IcmpErrorHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.stack.iface.IpProtocolHandler;
import io.nicstack.stack.iface.Ipv4;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.UdpHeader;

/**
 * UDP (RFC 768, RFC 1122 §4.1): checksum validation, port demultiplexing, port unreachable, sending, and received ICMP
 * errors passed to the socket whose datagram they quote.
 */
public final class Udp implements IpProtocolHandler, IcmpErrorHandler
{
    /** Largest payload of one datagram: 65535 - 20 (IPv4) - 8 (UDP). */
    public static final int MAX_PAYLOAD = 65507;

    private final Ipv4 ip;
    private final Icmp icmp;
    private final StackCounters counters;
    private final Int2ObjectHashMap<UdpSocket> sockets = new Int2ObjectHashMap<>();
    private final UdpHeader in = new UdpHeader();
    /** RFC 6335 dynamic ports, for a bind to port 0. */
    private static final int EPHEMERAL_FIRST = 49152;
    private static final int EPHEMERAL_COUNT = 65536 - EPHEMERAL_FIRST;

    private final UdpHeader quoted = new UdpHeader();
    private final UdpHeader out = new UdpHeader();
    private final UnsafeBuffer scratch = new UnsafeBuffer(ByteBuffer.allocateDirect(65536));

    public Udp(final Ipv4 ip, final Icmp icmp, final StackCounters counters)
    {
        this.ip = ip;
        this.icmp = icmp;
        this.counters = counters;
        ip.onLinkFailure(Ipv4Header.PROTOCOL_UDP, this::onLinkFailure);
    }

    /** Bind {@code port} with an inline handler (port 0: see {@link #bind(int, int)}). */
    public UdpSocket bind(final int port, final UdpHandler handler)
    {
        return bind(port, handler, 0);
    }

    /**
     * Bind {@code port} with a receive queue of about {@code queueBytes} (at least 512 KiB, so that it takes datagrams of
     * any size UDP allows, at most {@link UdpSocket#MAX_QUEUE_BYTES}), drained by {@link UdpSocket#receive}. Port 0
     * takes an unused port of the dynamic range (RFC 6335), as bind(2) does; {@link UdpSocket#port()} says which.
     *
     * @throws IllegalStateException when the port is taken (or, for 0, every port of the dynamic range).
     */
    public UdpSocket bind(final int port, final int queueBytes)
    {
        return bind(port, null, queueBytes);
    }

    private UdpSocket bind(final int requested, final UdpHandler handler, final int queueBytes)
    {
        final int port = requested == 0 ? unusedPort() : requested;
        if (port < 1 || port > 65535)
        {
            throw new IllegalArgumentException("udp port out of range: " + port);
        }
        if (queueBytes > UdpSocket.MAX_QUEUE_BYTES)
        {
            throw new IllegalArgumentException(
                "udp queueBytes must be at most " + UdpSocket.MAX_QUEUE_BYTES + ": " + queueBytes);
        }
        if (sockets.containsKey(port))
        {
            throw new IllegalStateException("udp port in use: " + port);
        }
        final UdpSocket socket = new UdpSocket(this, port, handler, queueBytes);
        sockets.put(port, socket);
        return socket;
    }

    /** RFC 6056 §3.3.1 (Algorithm 1): a random port of the dynamic range, the next unused one from there. */
    private int unusedPort()
    {
        final int start = java.util.concurrent.ThreadLocalRandom.current().nextInt(EPHEMERAL_COUNT);
        for (int i = 0; i < EPHEMERAL_COUNT; i++)
        {
            final int candidate = EPHEMERAL_FIRST + (start + i) % EPHEMERAL_COUNT;
            if (!sockets.containsKey(candidate))
            {
                return candidate;
            }
        }
        throw new IllegalStateException("udp: every port of the dynamic range is in use");
    }

    void unbind(final int port)
    {
        sockets.remove(port);
    }

    @Override
    public void onDatagram(
        final Ipv4Header header,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final boolean broadcast,
        final long now)
    {
        if (!in.wrapChecked(buffer, offset, length))
        {
            counters.increment(StackCounter.UDP_DROP_TRUNCATED);
            return;
        }
        final int udpLength = in.datagramLength();
        if (udpLength < UdpHeader.HEADER_LENGTH || udpLength > length)
        {
            counters.increment(StackCounter.UDP_DROP_TRUNCATED);
            return;
        }
        // The UDP length may be shorter than the IP payload (RFC 768); trailing bytes are not ours.
        in.wrap(buffer, offset, udpLength);
        if (ip.l4ChecksumTrusted() && in.checksum() != 0)
        {
            counters.increment(StackCounter.RX_CHECKSUMS_TRUSTED);
        }
        else if (!in.checksumValid(header.source(), header.destination()))
        {
            counters.increment(StackCounter.UDP_DROP_BAD_CHECKSUM);
            return;
        }
        final UdpSocket socket = sockets.get(in.destinationPort());
        if (socket == null)
        {
            counters.increment(StackCounter.UDP_DROP_NO_PORT);
            // RFC 1122 4.1.3.1: SHOULD send ICMP port unreachable.
            icmp.sendError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, header, broadcast, now);
            return;
        }
        if (socket.deliver(header, broadcast, in.sourcePort(), buffer, offset + UdpHeader.HEADER_LENGTH, udpLength - UdpHeader.HEADER_LENGTH, now))
        {
            counters.increment(StackCounter.UDP_IN_DATAGRAMS);
        }
        else
        {
            counters.increment(StackCounter.UDP_DROP_RECEIVE_QUEUE_FULL);
        }
    }

    /**
     * RFC 1122 §4.1.3.3: UDP MUST pass every ICMP error it receives to the application. The quote's first 8 octets
     * (all {@link Icmp} promises) are the whole UDP header: its source port is the socket's, its destination the remote
     * end. UDP has nothing else to check an error against (no sequence numbers, as TCP has), so any socket bound to the
     * quoted port hears it; Icmp has already refused quotes of datagrams not from our address.
     */
    @Override
    public void onIcmpError(
        final int type, final int code, final int restOfHeader, final int quotedDestination, final DirectBuffer buffer,
        final int offset, final int length, final long now)
    {
        quoted.wrap(buffer, offset, UdpHeader.HEADER_LENGTH);
        final UdpSocket socket = sockets.get(quoted.sourcePort());
        // RFC 1191 §4: the next-hop MTU is the low 16 bits of fragmentation needed's rest of header; other errors have none.
        final int nextHopMtu = type == IcmpHeader.TYPE_DESTINATION_UNREACHABLE && code == IcmpHeader.CODE_FRAGMENTATION_NEEDED
            ? restOfHeader & 0xFFFF : 0;
        if (socket == null)
        {
            counters.increment(StackCounter.UDP_ICMP_IGNORED);
        }
        else if (socket.deliverIcmpError(type, code, quotedDestination, quoted.destinationPort(), nextHopMtu, now))
        {
            counters.increment(StackCounter.UDP_ICMP_ERRORS);
        }
        else
        {
            counters.increment(StackCounter.UDP_ICMP_QUEUE_FULL);
        }
    }

    /**
     * A datagram of ours was discarded unsent, as ARP gave up on its first hop: the socket hears of it as of a host
     * unreachable (type 3, code 1) quoting it, the error Linux's arp_error_report delivers to the sending host, and
     * counted as the ICMP errors are. {@link #send} had reported the datagram sent: it waited for ARP.
     */
    private void onLinkFailure(
        final int destination, final DirectBuffer buffer, final int offset, final int length, final long now)
    {
        onIcmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_HOST_UNREACHABLE, 0, destination, buffer,
            offset, length, now);
    }

    /** The TTL of our datagrams unless a socket sets its own. */
    int defaultTtl()
    {
        return ip.config().defaultTtl();
    }

    /** One datagram from {@code sourcePort}, its IPv4 header carrying {@code tos} and {@code ttl} (RFC 1122 §4.1.4). */
    boolean send(
        final int sourcePort,
        final int address,
        final int port,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final int tos,
        final int ttl,
        final long now)
    {
        if (length < 0 || length > MAX_PAYLOAD)
        {
            throw new IllegalArgumentException("udp payload length out of range: " + length);
        }
        // Before anything is claimed or counted: a copy that failed half-way would leave a claimed frame behind.
        if (offset < 0 || offset > buffer.capacity() - length)
        {
            throw new IndexOutOfBoundsException("udp payload [" + offset + ", " + offset + " + " + length
                + ") outside its buffer of " + buffer.capacity() + " bytes");
        }
        // The header holds 16 bits: a larger port would go out as its low bits (65543 as 7). Port 0 is reserved, and a
        // source port of 0 means "none" (RFC 768); Linux's udp_sendmsg refuses it as a destination (EINVAL).
        if (port < 1 || port > 65535)
        {
            throw new IllegalArgumentException("udp destination port out of range: " + port);
        }
        // No peer holds a martian address (Ipv4.isMartian), but a datagram may go to all of them (broadcast).
        // Multicast would need its own MAC mapping (RFC 1112 6.4), which this stack does not have.
        if (ip.isMartian(address) && !ip.isBroadcast(address))
        {
            throw new IllegalArgumentException("udp cannot send to " + io.nicstack.stack.wire.Ipv4Address.format(address));
        }
        final int datagramLength = UdpHeader.HEADER_LENGTH + length;
        // One copy when the datagram fits a frame and the peer's MAC is known: straight into the frame.
        final MutableDirectBuffer frame = ip.claimDatagram(address, Ipv4Header.PROTOCOL_UDP, datagramLength, false,
            ip.identificationKey(address, Ipv4Header.PROTOCOL_UDP), tos, ttl, now);
        final boolean sent;
        if (frame != null)
        {
            final boolean offload = ip.transmitChecksumOffload();
            boolean committed = false;
            try
            {
                build(frame, Ipv4.L4_OFFSET, sourcePort, address, port, buffer, offset, length, offload);
                ip.commitDatagram(offload ? NetDevice.TX_L4_CHECKSUM_PARTIAL : 0);
                committed = true;
            }
            finally
            {
                if (!committed)
                {
                    // The range was checked above, but the caller's memory can still fail the copy (a mapped file that
                    // shrank faults): the frame goes back rather than stay claimed for the next send.
                    ip.abortDatagram();
                }
            }
            sent = true;
        }
        else
        {
            build(scratch, 0, sourcePort, address, port, buffer, offset, length, false);
            sent = ip.send(address, Ipv4Header.PROTOCOL_UDP, null, 0, scratch, 0, datagramLength, false, tos, ttl, now);
        }
        if (sent)
        {
            counters.increment(StackCounter.UDP_OUT_DATAGRAMS);
        }
        return sent;
    }

    private void build(
        final MutableDirectBuffer target,
        final int at,
        final int sourcePort,
        final int address,
        final int port,
        final DirectBuffer payload,
        final int offset,
        final int length,
        final boolean checksumOffload)
    {
        final int datagramLength = UdpHeader.HEADER_LENGTH + length;
        target.putBytes(at + UdpHeader.HEADER_LENGTH, payload, offset, length);
        out.wrap(target, at, datagramLength)
            .sourcePort(sourcePort)
            .destinationPort(port)
            .datagramLength(datagramLength)
            .checksum(0);
        if (checksumOffload)
        {
            out.partialChecksum(ip.config().address(), address);
        }
        else
        {
            out.updateChecksum(ip.config().address(), address);
        }
    }
}
