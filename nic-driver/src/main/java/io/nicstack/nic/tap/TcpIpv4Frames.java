package io.nicstack.nic.tap;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

import io.nicstack.nic.NetDevice;

/**
 * What the tap's segmentation offloads ({@link TcpSuperframeSplitter}, {@link TcpSuperframeJoiner}) need to know of a
 * TCP/IPv4 frame: whether it is one and where its headers end, and the Internet checksum arithmetic (RFC 1071) to
 * rewrite those headers. stack-core has its own; nic-driver sits below it and cannot use that one.
 */
final class TcpIpv4Frames
{
    private static final int ETH = NetDevice.ETHERNET_HEADER_LENGTH;
    private static final int ETHERTYPE_IPV4 = 0x0800;
    private static final int PROTOCOL_TCP = 6;
    private static final int IPV4_MIN_HEADER_LENGTH = 20;
    private static final int TCP_MIN_HEADER_LENGTH = 20;

    private TcpIpv4Frames()
    {
    }

    /**
     * The length of the Ethernet, IPv4 and TCP headers of the frame at {@code offset}, when it is Ethernet II carrying
     * a whole IPv4 datagram (no fragment) carrying TCP with at least one payload byte, and the IPv4 total length fits
     * in {@code frameLength} (padding may follow it); else -1.
     */
    static int headersLength(final DirectBuffer b, final int offset, final int frameLength)
    {
        if (frameLength < ETH + IPV4_MIN_HEADER_LENGTH + TCP_MIN_HEADER_LENGTH
            || (b.getShort(offset + 12, ByteOrder.BIG_ENDIAN) & 0xFFFF) != ETHERTYPE_IPV4)
        {
            return -1;
        }
        final int ip = offset + ETH;
        final int versionIhl = b.getByte(ip) & 0xFF;
        final int ipLength = (versionIhl & 0x0F) * 4;
        final int totalLength = ipv4TotalLength(b, offset);
        if (versionIhl >>> 4 != 4 || ipLength < IPV4_MIN_HEADER_LENGTH
            || (b.getByte(ip + 9) & 0xFF) != PROTOCOL_TCP
            || (b.getShort(ip + 6, ByteOrder.BIG_ENDIAN) & 0x3FFF) != 0
            || ETH + totalLength > frameLength
            || totalLength < ipLength + TCP_MIN_HEADER_LENGTH)
        {
            return -1;
        }
        final int tcpLength = ((b.getByte(ip + ipLength + 12) & 0xFF) >>> 4) * 4;
        if (tcpLength < TCP_MIN_HEADER_LENGTH || totalLength - ipLength - tcpLength <= 0)
        {
            return -1;
        }
        return ETH + ipLength + tcpLength;
    }

    /** The IPv4 header length of the frame at {@code offset}, from its IHL. */
    static int ipv4HeaderLength(final DirectBuffer b, final int offset)
    {
        return (b.getByte(offset + ETH) & 0x0F) * 4;
    }

    /** The IPv4 total length of the frame at {@code offset}. */
    static int ipv4TotalLength(final DirectBuffer b, final int offset)
    {
        return b.getShort(offset + ETH + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** The IPv4 header checksum of the {@code length}-byte header at {@code ip}, whose checksum field reads 0. */
    static int ipv4HeaderChecksum(final DirectBuffer b, final int ip, final int length)
    {
        int sum = 0;
        for (int i = 0; i < length; i += 2)
        {
            sum += b.getShort(ip + i, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        }
        return ~fold(sum) & 0xFFFF;
    }

    /**
     * Source, destination and protocol words of the TCP pseudo-header (RFC 9293 §3.1) of the IPv4 header at
     * {@code ip}, summed but not folded; add the TCP length and {@link #fold} for what a {@code NEEDS_CSUM} frame
     * carries in its checksum field.
     */
    static int pseudoHeaderBase(final DirectBuffer b, final int ip)
    {
        return (b.getShort(ip + 12, ByteOrder.BIG_ENDIAN) & 0xFFFF)
            + (b.getShort(ip + 14, ByteOrder.BIG_ENDIAN) & 0xFFFF)
            + (b.getShort(ip + 16, ByteOrder.BIG_ENDIAN) & 0xFFFF)
            + (b.getShort(ip + 18, ByteOrder.BIG_ENDIAN) & 0xFFFF)
            + PROTOCOL_TCP;
    }

    /** Fold a 32-bit one's complement sum into 16 bits. */
    static int fold(final int sum)
    {
        int s = (sum & 0xFFFF) + (sum >>> 16);
        s = (s & 0xFFFF) + (s >>> 16);
        return s;
    }
}
