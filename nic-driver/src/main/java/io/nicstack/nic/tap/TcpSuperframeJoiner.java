package io.nicstack.nic.tap;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.NetDevice;

/**
 * Joins a transmit burst's consecutive TCP/IPv4 segments of one flow into one segmentation-offload superframe
 * ({@code VIRTIO_NET_HDR_GSO_TCPV4}), the reverse of {@link TcpSuperframeSplitter}: the kernel takes up to 64 KiB in one
 * write(2) and, if the superframe leaves through a device that cannot segment, cuts it back with
 * {@code tcp_gso_segment} into exactly the frames it was joined from.
 *
 * <p>Frames {@code [first, first + n)} are joined when every frame after the first carries the first one's header
 * bytes except IPv4 total length, identification and header checksum, TCP sequence number, flags and checksum; its
 * sequence number continues the frame before it; every payload but the last is exactly as long as the first one (the
 * segment size) and the last is no longer; PSH and FIN are on the last frame only, and the other flags are the same
 * (ACK set, never SYN, RST, URG or CWR); every frame asked for {@code NEEDS_CSUM}; and the IPv4 total length stays
 * within 65535. Anything else, including a frame that does not parse, ends the run: a frame that cannot be joined is
 * sent alone, as it was given. A superframe with CWR would have to say {@code VIRTIO_NET_HDR_GSO_ECN} (the virtio-net
 * spec: "TCP has ECN set"), which the tap never writes, so a segment carrying CWR always goes alone.
 *
 * <p>When {@code n >= 2}, {@link #join} has rewritten the first frame's headers into the superframe's: IPv4 total
 * length and header checksum, the TCP flags (the last frame's PSH and FIN added) and the TCP checksum field, which holds
 * the folded pseudo-header sum over the superframe's TCP length, as the kernel's own superframes do. The superframe's
 * payload is then the first frame's followed by {@link #headerLength()} bytes onward of each joined frame.
 */
final class TcpSuperframeJoiner
{
    private static final int MAX_IPV4_TOTAL_LENGTH = 0xFFFF;
    private static final int TCP_FIN = 0x01;
    private static final int TCP_SYN = 0x02;
    private static final int TCP_RST = 0x04;
    private static final int TCP_PSH = 0x08;
    private static final int TCP_ACK = 0x10;
    private static final int TCP_URG = 0x20;
    private static final int TCP_CWR = 0x80;
    private static final int ETH = NetDevice.ETHERNET_HEADER_LENGTH;

    private int headerLength;
    private int gsoSize;
    // The first frame's fields as they were before the last join rewrote them, for restore.
    private int headTcp;
    private short headTotalLength;
    private short headIpChecksum;
    private byte headFlags;
    private short headTcpChecksum;

    /**
     * Join as many frames from {@code first} (before {@code end}) as the rules in the class comment allow.
     *
     * @param frames        frames at index 0 of each buffer.
     * @param frameLengths  their lengths.
     * @param needsChecksum whether each was committed with {@link NetDevice#TX_L4_CHECKSUM_PARTIAL}.
     * @return how many frames, at least 1, form the superframe; with 1 nothing was changed.
     */
    int join(final MutableDirectBuffer[] frames, final int[] frameLengths, final boolean[] needsChecksum,
        final int first, final int end)
    {
        if (end - first < 2 || !needsChecksum[first] || !needsChecksum[first + 1])
        {
            return 1;
        }
        final MutableDirectBuffer head = frames[first];
        final int headLength = frameLengths[first];
        final int headers = TcpIpv4Frames.headersLength(head, 0, headLength);
        if (headers < 0 || TcpIpv4Frames.ipv4TotalLength(head, 0) != headLength - ETH)
        {
            return 1;
        }
        final int ipLength = TcpIpv4Frames.ipv4HeaderLength(head, 0);
        final int tcp = ETH + ipLength;
        final int flags = head.getByte(tcp + 13) & 0xFF;
        final int segment = headLength - headers;
        if ((flags & (TCP_ACK | TCP_SYN | TCP_RST | TCP_URG | TCP_FIN | TCP_PSH | TCP_CWR)) != TCP_ACK)
        {
            return 1;
        }

        int nextSeq = head.getInt(tcp + 4, ByteOrder.BIG_ENDIAN) + segment;
        int total = headLength - ETH;
        int lastFlags = flags;
        int n = 1;
        for (int j = first + 1; j < end; j++)
        {
            final MutableDirectBuffer frame = frames[j];
            final int length = frameLengths[j];
            final int payload = length - headers;
            if (!needsChecksum[j] || payload <= 0 || payload > segment || total + payload > MAX_IPV4_TOTAL_LENGTH
                || TcpIpv4Frames.ipv4TotalLength(frame, 0) != length - ETH
                || frame.getInt(tcp + 4, ByteOrder.BIG_ENDIAN) != nextSeq
                || ((frame.getByte(tcp + 13) & 0xFF) & ~(TCP_FIN | TCP_PSH)) != flags
                || !sameFlowHeaders(head, frame, tcp, headers))
            {
                break;
            }
            n++;
            total += payload;
            nextSeq += payload;
            lastFlags = frame.getByte(tcp + 13) & 0xFF;
            if (payload < segment || (lastFlags & (TCP_FIN | TCP_PSH)) != 0)
            {
                break; // only the last frame may be short or carry PSH or FIN
            }
        }
        if (n == 1)
        {
            return 1;
        }

        headTcp = tcp;
        headTotalLength = head.getShort(ETH + 2);
        headIpChecksum = head.getShort(ETH + 10);
        headFlags = head.getByte(tcp + 13);
        headTcpChecksum = head.getShort(tcp + 16);
        head.putShort(ETH + 2, (short)total, ByteOrder.BIG_ENDIAN);
        head.putShort(ETH + 10, (short)0);
        head.putShort(ETH + 10, (short)TcpIpv4Frames.ipv4HeaderChecksum(head, ETH, ipLength), ByteOrder.BIG_ENDIAN);
        head.putByte(tcp + 13, (byte)(flags | lastFlags & (TCP_FIN | TCP_PSH)));
        head.putShort(tcp + 16, (short)TcpIpv4Frames.fold(TcpIpv4Frames.pseudoHeaderBase(head, ETH) + total - ipLength),
            ByteOrder.BIG_ENDIAN);
        headerLength = headers;
        gsoSize = segment;
        return n;
    }

    /**
     * Put the first frame of the last superframe {@link #join} made back as it was given, so that its frames can go
     * one by one after all; only the first frame was changed.
     */
    void restore(final MutableDirectBuffer head)
    {
        head.putShort(ETH + 2, headTotalLength);
        head.putShort(ETH + 10, headIpChecksum);
        head.putByte(headTcp + 13, headFlags);
        head.putShort(headTcp + 16, headTcpChecksum);
    }

    /** Ethernet, IPv4 and TCP header bytes of the last superframe {@link #join} made; its frames' payload follows. */
    int headerLength()
    {
        return headerLength;
    }

    /** Payload bytes per segment of the last superframe {@link #join} made: the first frame's payload. */
    int gsoSize()
    {
        return gsoSize;
    }

    /**
     * Equal header bytes but for the fields each segment of a superframe has its own: IPv4 total length,
     * identification and header checksum, TCP sequence number, flags and checksum.
     */
    private static boolean sameFlowHeaders(final DirectBuffer a, final DirectBuffer b, final int tcp, final int end)
    {
        return equal(a, b, 0, ETH + 2)                // Ethernet, IPv4 version, header length and DSCP/ECN
            && equal(a, b, ETH + 6, ETH + 10)         // fragment field, TTL, protocol
            && equal(a, b, ETH + 12, tcp + 4)         // addresses, IPv4 options, ports
            && equal(a, b, tcp + 8, tcp + 13)         // acknowledgment number, data offset
            && equal(a, b, tcp + 14, tcp + 16)        // window
            && equal(a, b, tcp + 18, end);            // urgent pointer, TCP options (timestamps)
    }

    private static boolean equal(final DirectBuffer a, final DirectBuffer b, final int from, final int to)
    {
        int i = from;
        for (; i + Long.BYTES <= to; i += Long.BYTES)
        {
            if (a.getLong(i) != b.getLong(i))
            {
                return false;
            }
        }
        for (; i < to; i++)
        {
            if (a.getByte(i) != b.getByte(i))
            {
                return false;
            }
        }
        return true;
    }
}
