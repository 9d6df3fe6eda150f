package io.nicstack.jmh;

import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.UdpHeader;

/**
 * Frames from a peer on 198.18.0.1 to the stack on 198.18.0.2 (RFC 2544 benchmarking range), built
 * once in setup with the stack's own flyweights; setup may allocate, the measured loop does not.
 */
final class BenchFrames
{
    static final String STACK_CIDR = "198.18.0.2/24";
    static final int PEER_IP = 0xC612_0001;
    static final int STACK_IP = 0xC612_0002;
    static final long PEER_MAC = 0x0A00_0000_0001L;
    static final int MTU = 1500;

    /** The clock never moves: the ARP entry stays fresh and no timer is armed, i.e. the steady state. */
    static final long NOW = 1_000_000_000_000L;

    private BenchFrames()
    {
    }

    static byte[] ethernet(final long destination, final long source, final int etherType, final byte[] payload)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[Math.max(60, EthernetFrame.HEADER_LENGTH + payload.length)]);
        new EthernetFrame().wrap(b, 0, b.capacity()).destination(destination).source(source).etherType(etherType);
        b.putBytes(EthernetFrame.HEADER_LENGTH, payload);
        return b.byteArray();
    }

    /** A broadcast ARP request from the peer for the stack's address: teaches the stack the peer's MAC. */
    static byte[] arpRequestFromPeer()
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[ArpPacket.LENGTH]);
        new ArpPacket().wrap(b, 0, ArpPacket.LENGTH)
            .hardwareType(ArpPacket.HTYPE_ETHERNET)
            .protocolType(ArpPacket.PTYPE_IPV4)
            .hardwareLength(ArpPacket.HLEN_ETHERNET)
            .protocolLength(ArpPacket.PLEN_IPV4)
            .operation(ArpPacket.OP_REQUEST)
            .senderHardwareAddress(PEER_MAC)
            .senderProtocolAddress(PEER_IP)
            .targetHardwareAddress(0L)
            .targetProtocolAddress(STACK_IP);
        return ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP, b.byteArray());
    }

    /** An IPv4 datagram from the peer to the stack, header checksum set, DF clear, TTL 64. */
    static byte[] ipv4FromPeer(final int protocol, final int id, final byte[] payload)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[Ipv4Header.MIN_HEADER_LENGTH + payload.length]);
        new Ipv4Header().wrap(b, 0, b.capacity())
            .versionAndIhl(5)
            .tos(0)
            .totalLength(b.capacity())
            .identification(id)
            .flagsAndFragmentOffset(false, false, 0)
            .ttl(64)
            .protocol(protocol)
            .source(PEER_IP)
            .destination(STACK_IP)
            .updateChecksum();
        b.putBytes(Ipv4Header.MIN_HEADER_LENGTH, payload);
        return b.byteArray();
    }

    /** A whole Ethernet frame with an ICMP echo request carrying {@code data}. */
    static byte[] icmpEchoRequestFrame(final long stackMac, final int identifier, final int sequence, final byte[] data)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[IcmpHeader.HEADER_LENGTH + data.length]);
        b.putBytes(IcmpHeader.HEADER_LENGTH, data);
        new IcmpHeader().wrap(b, 0, b.capacity())
            .type(IcmpHeader.TYPE_ECHO_REQUEST)
            .code(0)
            .identifier(identifier)
            .sequenceNumber(sequence)
            .checksum(0)
            .updateChecksum();
        return ethernet(stackMac, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipv4FromPeer(Ipv4Header.PROTOCOL_ICMP, sequence, b.byteArray()));
    }

    /** A whole Ethernet frame with a UDP datagram (checksum set) from {@code srcPort} to {@code dstPort}. */
    static byte[] udpFrame(final long stackMac, final int srcPort, final int dstPort, final byte[] data)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[UdpHeader.HEADER_LENGTH + data.length]);
        b.putBytes(UdpHeader.HEADER_LENGTH, data);
        new UdpHeader().wrap(b, 0, b.capacity())
            .sourcePort(srcPort)
            .destinationPort(dstPort)
            .datagramLength(b.capacity())
            .checksum(0)
            .updateChecksum(PEER_IP, STACK_IP);
        return ethernet(stackMac, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipv4FromPeer(Ipv4Header.PROTOCOL_UDP, 1, b.byteArray()));
    }

    /** Deterministic filler bytes (ping's pattern: 0x08, 0x09, ...). */
    static byte[] pattern(final int length)
    {
        final byte[] data = new byte[length];
        for (int i = 0; i < length; i++)
        {
            data[i] = (byte)(i + 8);
        }
        return data;
    }

    /** Run the peer's ARP request through {@code stack} so it answers immediately instead of queueing for ARP. */
    static void learnPeer(final NetStack stack, final LoopbackSinkDevice device)
    {
        final byte[] arp = arpRequestFromPeer();
        device.load(new UnsafeBuffer(arp), 0, arp.length);
        device.resetLastTx();
        stack.poll(NOW);
        check(device.lastTxLength() == 60, "the stack did not answer the peer's ARP request");
        check(stack.arp().lookup(PEER_IP) == PEER_MAC, "the stack did not learn the peer's MAC");
    }

    /** Fail setup loudly: a benchmark of a path that silently drops measures nothing. */
    static void check(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalStateException("benchmark setup check failed: " + message);
        }
    }
}
