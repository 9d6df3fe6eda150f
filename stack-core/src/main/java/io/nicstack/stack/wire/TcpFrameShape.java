package io.nicstack.stack.wire;

import org.agrona.DirectBuffer;

/**
 * The frame shape that carries almost every segment of a TCP stream: Ethernet II to our unicast address, then IPv4
 * with a 20-byte header, not a fragment, protocol TCP, to our address. {@link #decode} reads the frame's first 54
 * bytes a few words at a time and accepts only frames of this shape that pass every check the Ethernet and IPv4 layers
 * make on the way to TCP but one: the source address, which its caller compares with a connection's (vetted when the
 * connection was made). Such a frame is one those layers would hand to TCP unchanged, from {@link #source} at
 * {@link #tcpOffset}. It has no opinion on any other frame: those take the layers' way, which counts each drop by its
 * reason. {@code TcpFrameShapeTest} holds {@link #decode} to the header flyweights on mutated and random frames.
 */
public final class TcpFrameShape
{
    /** Where the IPv4 header and the TCP header start in a frame of this shape. */
    public static final int IP_AT = EthernetFrame.HEADER_LENGTH;
    public static final int TCP_AT = IP_AT + Ipv4Header.MIN_HEADER_LENGTH;
    /** The first IPv4 header byte: version 4, header length 5 words. */
    private static final int VERSION_4_IHL_5 = 0x45;
    /** Flags and fragment offset bits of which any one set makes the frame another shape (only DF may be set). */
    private static final int NOT_WHOLE = Ipv4Header.FLAG_RESERVED | Ipv4Header.FLAG_MORE_FRAGMENTS
        | Ipv4Header.FRAGMENT_OFFSET_MASK;

    /** IPv4 source address of the frame last accepted. */
    public int source;
    /** The TCP header's first word, source port in the high half, destination port in the low. */
    public int ports;
    /** Index of the TCP header in the buffer. */
    public int tcpOffset;
    /** The TCP header and payload's length: the IPv4 total length less its 20-byte header (padding excluded). */
    public int tcpLength;

    /**
     * True when {@code buffer[offset, offset + length)} lies inside the buffer and is an Ethernet II frame to
     * {@code mac} with EtherType IPv4, whose datagram has version 4 and a 20-byte header, a total length of at least
     * 40 bytes that the frame holds, no flag but DF and fragment offset 0, protocol TCP, a header
     * checksum that verifies, and destination {@code address}. The fields then describe it; on false they are stale.
     * The source address is not checked: the caller compares it with a connection's, which was vetted when made.
     */
    public boolean decode(
        final DirectBuffer buffer, final int offset, final int length, final long mac, final int address)
    {
        if (length < TCP_AT + TcpHeader.HEADER_LENGTH || !Bounds.regionFits(buffer, offset, length))
        {
            return false;
        }
        // [offset, offset + 54) lies inside the buffer: every read below is in it.
        if (Raw.u48(buffer, offset + EthernetFrame.DESTINATION_OFFSET) != mac
            || Raw.u16(buffer, offset + EthernetFrame.ETHERTYPE_OFFSET) != EthernetFrame.ETHERTYPE_IPV4)
        {
            return false;
        }
        // The same five reads and sum as Ipv4Fixed.decode, kept in locals. Decoding through Ipv4Fixed (nine field
        // stores, then the checks on its fields) made ACK processing slower: median 2.50x the L1 copy against 2.25x
        // over 4 alternated rounds of scripts/bench-tcp-paths.sh 1 JAR each.
        final int ip = offset + IP_AT;
        final int w0 = Raw.i32(buffer, ip);
        final int w1 = Raw.i32(buffer, ip + 4);
        final int w2 = Raw.i32(buffer, ip + 8);
        final int src = Raw.i32(buffer, ip + 12);
        final int dst = Raw.i32(buffer, ip + 16);
        final int totalLength = w0 & 0xFFFF;
        if ((w0 >>> 24) != VERSION_4_IHL_5 || totalLength < Ipv4Header.MIN_HEADER_LENGTH + TcpHeader.HEADER_LENGTH
            || totalLength > length - IP_AT || (w1 & NOT_WHOLE) != 0
            || ((w2 >>> 16) & 0xFF) != Ipv4Header.PROTOCOL_TCP || dst != address)
        {
            return false;
        }
        // RFC 1071: the five words, checksum included, sum to 0xFFFF (32-bit chunks fold to the same sum).
        final long sum = (w0 & 0xFFFF_FFFFL) + (w1 & 0xFFFF_FFFFL) + (w2 & 0xFFFF_FFFFL) + (src & 0xFFFF_FFFFL)
            + (dst & 0xFFFF_FFFFL);
        if (Checksum.finish(sum) != 0)
        {
            return false;
        }
        source = src;
        ports = Raw.i32(buffer, offset + TCP_AT);
        tcpOffset = offset + TCP_AT;
        tcpLength = totalLength - Ipv4Header.MIN_HEADER_LENGTH;
        return true;
    }
}
