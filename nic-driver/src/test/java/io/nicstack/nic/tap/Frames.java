package io.nicstack.nic.tap;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Ethernet/IPv4/UDP frames and RFC 1071 checksums for the tap tests, written independently of the stack.
 *
 * <p>Frames start at index 0 without VLAN tag; the IPv4 header has no options unless a test writes them.
 */
final class Frames
{
    static final int ETHERNET = 14;
    static final int IPV4 = 20;
    static final int UDP = 8;
    static final int PROTOCOL_TCP = 6;
    static final int PROTOCOL_UDP = 17;
    /** IEEE 802 local experimental EtherType 1. */
    static final int ETHERTYPE_LOCAL_EXPERIMENTAL = 0x88b5;

    private Frames()
    {
    }

    /**
     * A frame of the IEEE 802 local experimental EtherType 0x88b5, {@code length} bytes with the payload all
     * {@code fill}: no protocol in the kernel takes it, so sending it makes no traffic.
     */
    static byte[] localExperimental(final byte[] dstMac, final byte[] srcMac, final int length, final byte fill)
    {
        final byte[] frame = new byte[length];
        System.arraycopy(dstMac, 0, frame, 0, 6);
        System.arraycopy(srcMac, 0, frame, 6, 6);
        frame[12] = (byte)(ETHERTYPE_LOCAL_EXPERIMENTAL >>> 8);
        frame[13] = (byte)ETHERTYPE_LOCAL_EXPERIMENTAL;
        Arrays.fill(frame, ETHERNET, length, fill);
        return frame;
    }

    /**
     * Write an Ethernet II frame with IPv4 (TTL 64, DF, header checksum set) and UDP around {@code payload}; the UDP
     * checksum is left 0.
     *
     * @return the frame length.
     */
    static int udp(
        final MutableDirectBuffer frame,
        final byte[] dstMac,
        final byte[] srcMac,
        final int srcIp,
        final int dstIp,
        final int srcPort,
        final int dstPort,
        final byte[] payload)
    {
        final int udpLength = UDP + payload.length;
        ethernetIpv4(frame, dstMac, srcMac, srcIp, dstIp, 0x1234, PROTOCOL_UDP, udpLength);

        final int udp = ETHERNET + IPV4;
        frame.putShort(udp, (short)srcPort, ByteOrder.BIG_ENDIAN);
        frame.putShort(udp + 2, (short)dstPort, ByteOrder.BIG_ENDIAN);
        frame.putShort(udp + 4, (short)udpLength, ByteOrder.BIG_ENDIAN);
        frame.putShort(udp + 6, (short)0);
        frame.putBytes(udp + UDP, payload);
        return udp + udpLength;
    }

    /**
     * Write an Ethernet II frame with IPv4 (TTL 64, DF, header checksum set) and TCP around {@code payloadLength}
     * bytes of {@code payload} from {@code payloadOffset}, the TCP options given as bytes (a multiple of 4); the TCP
     * checksum field gets the folded pseudo-header sum, as for {@code TX_L4_CHECKSUM_PARTIAL}.
     *
     * @return the frame length.
     */
    static int tcp(
        final MutableDirectBuffer frame,
        final byte[] dstMac,
        final byte[] srcMac,
        final int srcIp,
        final int dstIp,
        final int ipId,
        final int srcPort,
        final int dstPort,
        final int seq,
        final int ack,
        final int flags,
        final int window,
        final byte[] options,
        final byte[] payload,
        final int payloadOffset,
        final int payloadLength)
    {
        final int tcpHeader = 20 + options.length;
        ethernetIpv4(frame, dstMac, srcMac, srcIp, dstIp, ipId, PROTOCOL_TCP, tcpHeader + payloadLength);

        final int tcp = ETHERNET + IPV4;
        frame.putShort(tcp, (short)srcPort, ByteOrder.BIG_ENDIAN);
        frame.putShort(tcp + 2, (short)dstPort, ByteOrder.BIG_ENDIAN);
        frame.putInt(tcp + 4, seq, ByteOrder.BIG_ENDIAN);
        frame.putInt(tcp + 8, ack, ByteOrder.BIG_ENDIAN);
        frame.putByte(tcp + 12, (byte)(tcpHeader / 4 << 4));
        frame.putByte(tcp + 13, (byte)flags);
        frame.putShort(tcp + 14, (short)window, ByteOrder.BIG_ENDIAN);
        frame.putShort(tcp + 18, (short)0);
        frame.putBytes(tcp + 20, options);
        frame.putBytes(tcp + tcpHeader, payload, payloadOffset, payloadLength);
        putPartialChecksum(frame);
        return tcp + tcpHeader + payloadLength;
    }

    /** Ethernet II and an IPv4 header without options (TTL 64, DF, header checksum set) for {@code ipPayload} bytes. */
    private static void ethernetIpv4(
        final MutableDirectBuffer frame,
        final byte[] dstMac,
        final byte[] srcMac,
        final int srcIp,
        final int dstIp,
        final int ipId,
        final int protocol,
        final int ipPayload)
    {
        frame.putBytes(0, dstMac);
        frame.putBytes(6, srcMac);
        frame.putShort(12, (short)0x0800, ByteOrder.BIG_ENDIAN);

        frame.putByte(ETHERNET, (byte)0x45);
        frame.putByte(ETHERNET + 1, (byte)0);
        frame.putShort(ETHERNET + 2, (short)(IPV4 + ipPayload), ByteOrder.BIG_ENDIAN);
        frame.putShort(ETHERNET + 4, (short)ipId, ByteOrder.BIG_ENDIAN);
        frame.putShort(ETHERNET + 6, (short)0x4000, ByteOrder.BIG_ENDIAN); // DF
        frame.putByte(ETHERNET + 8, (byte)64);
        frame.putByte(ETHERNET + 9, (byte)protocol);
        frame.putShort(ETHERNET + 10, (short)0);
        frame.putInt(ETHERNET + 12, srcIp, ByteOrder.BIG_ENDIAN);
        frame.putInt(ETHERNET + 16, dstIp, ByteOrder.BIG_ENDIAN);
        frame.putShort(ETHERNET + 10, (short)~fold(sum(frame, ETHERNET, IPV4)), ByteOrder.BIG_ENDIAN);
    }

    /** Offset of the IPv4 header's transport header in {@code frame}. */
    static int transportOffset(final DirectBuffer frame, final int offset)
    {
        return offset + ETHERNET + (frame.getByte(offset + ETHERNET) & 0x0F) * 4;
    }

    /** IP protocol number of the IPv4 frame. */
    static int protocol(final DirectBuffer frame, final int offset)
    {
        return frame.getByte(offset + ETHERNET + 9) & 0xFF;
    }

    /** Offset of the TCP or UDP checksum field. */
    static int checksumFieldOffset(final DirectBuffer frame, final int offset)
    {
        return transportOffset(frame, offset) + (protocol(frame, offset) == PROTOCOL_TCP ? 16 : 6);
    }

    /** The TCP or UDP checksum field as it is in the frame. */
    static int checksumField(final DirectBuffer frame, final int offset)
    {
        return frame.getShort(checksumFieldOffset(frame, offset), ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Length of the transport datagram from the IPv4 total length. */
    static int transportLength(final DirectBuffer frame, final int offset)
    {
        final int totalLength = frame.getShort(offset + ETHERNET + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        return totalLength - (transportOffset(frame, offset) - offset - ETHERNET);
    }

    /** Folded pseudo-header sum (RFC 9293 section 3.1, RFC 768), not complemented: what a partial checksum holds. */
    static int pseudoHeaderSum(final DirectBuffer frame, final int offset)
    {
        final int sum = sum(frame, offset + ETHERNET + 12, 8) + protocol(frame, offset) + transportLength(frame, offset);
        return fold(sum);
    }

    /** The complete TCP or UDP checksum the frame should carry, computed with its checksum field taken as zero. */
    static int fullChecksum(final DirectBuffer frame, final int offset)
    {
        final int transport = transportOffset(frame, offset);
        final int sum = pseudoHeaderSum(frame, offset) + sum(frame, transport, transportLength(frame, offset)) -
            checksumField(frame, offset);
        final int checksum = ~fold(sum) & 0xFFFF;
        // RFC 768: a computed UDP checksum of zero is sent as all ones (zero means "no checksum").
        return checksum == 0 && protocol(frame, offset) == PROTOCOL_UDP ? 0xFFFF : checksum;
    }

    /** True when the transport checksum in the frame verifies (RFC 1071: the sum over everything is all ones). */
    static boolean checksumValid(final DirectBuffer frame, final int offset)
    {
        final int transport = transportOffset(frame, offset);
        return fold(pseudoHeaderSum(frame, offset) + sum(frame, transport, transportLength(frame, offset))) == 0xFFFF;
    }

    /** Put the partial checksum (pseudo-header sum only), as for {@code TX_L4_CHECKSUM_PARTIAL}. */
    static void putPartialChecksum(final MutableDirectBuffer frame)
    {
        frame.putShort(checksumFieldOffset(frame, 0), (short)pseudoHeaderSum(frame, 0), ByteOrder.BIG_ENDIAN);
    }

    /** Put the complete checksum. */
    static void putFullChecksum(final MutableDirectBuffer frame)
    {
        frame.putShort(checksumFieldOffset(frame, 0), (short)fullChecksum(frame, 0), ByteOrder.BIG_ENDIAN);
    }

    /** RFC 1071 sum of big-endian 16-bit words, an odd last byte padded with zero; unfolded. */
    static int sum(final DirectBuffer buffer, final int offset, final int length)
    {
        int sum = 0;
        int i = 0;
        for (; i + 1 < length; i += 2)
        {
            sum += buffer.getShort(offset + i, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        }
        if (i < length)
        {
            sum += (buffer.getByte(offset + i) & 0xFF) << 8;
        }
        return sum;
    }

    /** Fold carries into 16 bits. */
    static int fold(final int sum)
    {
        int folded = sum;
        while ((folded >>> 16) != 0)
        {
            folded = (folded & 0xFFFF) + (folded >>> 16);
        }
        return folded;
    }
}
