package io.nicstack.stack;

import java.nio.ByteBuffer;

import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.UdpHeader;

/** Builders of test frames (fresh arrays; tests may allocate). */
public final class Frames
{
    public static final int PEER_IP = 0xC612_0001;   // 198.18.0.1
    public static final int STACK_IP = 0xC612_0002;  // 198.18.0.2
    public static final long PEER_MAC = 0x0A00_0000_0001L;

    private Frames()
    {
    }

    public static byte[] ethernet(final long destination, final long source, final int etherType, final byte[] payload)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[Math.max(60, 14 + payload.length)]);
        new EthernetFrame().wrap(b, 0, b.capacity()).destination(destination).source(source).etherType(etherType);
        b.putBytes(14, payload);
        return b.byteArray();
    }

    public static byte[] arp(final int op, final long sha, final int spa, final long tha, final int tpa)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[ArpPacket.LENGTH]);
        new ArpPacket().wrap(b, 0, ArpPacket.LENGTH).hardwareType(1).protocolType(0x0800).hardwareLength(6)
            .protocolLength(4).operation(op).senderHardwareAddress(sha).senderProtocolAddress(spa)
            .targetHardwareAddress(tha).targetProtocolAddress(tpa);
        return b.byteArray();
    }

    /** An IPv4 datagram (header with valid checksum, then payload); {@code fragOffset} in bytes, a multiple of 8. */
    public static byte[] ipv4(final int src, final int dst, final int protocol, final int id, final boolean mf, final int fragOffset, final byte[] payload)
    {
        return ipv4(src, dst, protocol, id, mf, fragOffset, new byte[0], payload);
    }

    /** An IPv4 datagram whose header carries {@code options} (a multiple of 4 octets, at most 40), then payload. */
    public static byte[] ipv4(final int src, final int dst, final int protocol, final int id, final boolean mf, final int fragOffset,
        final byte[] options, final byte[] payload)
    {
        final int headerLength = Ipv4Header.MIN_HEADER_LENGTH + options.length;
        final UnsafeBuffer b = new UnsafeBuffer(new byte[headerLength + payload.length]);
        b.putBytes(Ipv4Header.MIN_HEADER_LENGTH, options);
        new Ipv4Header().wrap(b, 0, b.capacity()).versionAndIhl(headerLength / 4).tos(0).totalLength(b.capacity())
            .identification(id).flagsAndFragmentOffset(false, mf, fragOffset).ttl(64).protocol(protocol).source(src)
            .destination(dst).updateChecksum();
        b.putBytes(headerLength, payload);
        return b.byteArray();
    }

    public static byte[] icmpEcho(final int type, final int id, final int seq, final byte[] data)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8 + data.length]);
        b.putBytes(8, data);
        new IcmpHeader().wrap(b, 0, b.capacity()).type(type).code(0).identifier(id).sequenceNumber(seq).checksum(0).updateChecksum();
        return b.byteArray();
    }

    /** An ICMP error or redirect (RFC 792): {@code type}, {@code code}, the rest of its header, then {@code quoted}. */
    public static byte[] icmpError(final int type, final int code, final int restOfHeader, final byte[] quoted)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[IcmpHeader.HEADER_LENGTH + quoted.length]);
        b.putBytes(IcmpHeader.HEADER_LENGTH, quoted);
        new IcmpHeader().wrap(b, 0, b.capacity()).type(type).code(code).restOfHeader(restOfHeader).checksum(0).updateChecksum();
        return b.byteArray();
    }

    public static byte[] udp(final int src, final int dst, final int srcPort, final int dstPort, final byte[] data)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8 + data.length]);
        b.putBytes(8, data);
        new UdpHeader().wrap(b, 0, b.capacity()).sourcePort(srcPort).destinationPort(dstPort).datagramLength(b.capacity())
            .checksum(0).updateChecksum(src, dst);
        return b.byteArray();
    }

    /** A bare TCP SYN (sequence 1000, window 65535, no options), checksummed for {@code src} to {@code dst}. */
    public static byte[] tcpSyn(final int src, final int dst, final int srcPort, final int dstPort)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[TcpHeader.HEADER_LENGTH]);
        new TcpHeader().wrap(b, 0, TcpHeader.HEADER_LENGTH).sourcePort(srcPort).destinationPort(dstPort)
            .sequenceNumber(1000).acknowledgmentNumber(0).dataOffset(TcpHeader.HEADER_LENGTH).flags(TcpHeader.SYN)
            .window(65535).urgentPointer(0).updateChecksum(src, dst);
        return b.byteArray();
    }

    /** A whole Ethernet frame carrying IPv4 from the peer to the stack. */
    public static byte[] fromPeer(final long stackMac, final byte[] ipDatagram)
    {
        return ethernet(stackMac, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipDatagram);
    }

    public static UnsafeBuffer view(final byte[] frame)
    {
        return new UnsafeBuffer(ByteBuffer.wrap(frame));
    }
}
