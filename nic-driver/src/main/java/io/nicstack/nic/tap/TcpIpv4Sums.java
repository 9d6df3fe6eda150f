package io.nicstack.nic.tap;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * The Internet checksum arithmetic (RFC 1071) that the tap's segmentation offloads need to rewrite IPv4 and TCP
 * headers. stack-core has its own; nic-driver sits below it and cannot use that one.
 */
final class TcpIpv4Sums
{
    private static final int PROTOCOL_TCP = 6;

    private TcpIpv4Sums()
    {
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
