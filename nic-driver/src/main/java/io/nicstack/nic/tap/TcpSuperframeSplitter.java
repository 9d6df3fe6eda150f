package io.nicstack.nic.tap;

import java.nio.ByteOrder;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.NetDevice;

/**
 * Cuts a TCP/IPv4 segmentation-offload superframe ({@code VIRTIO_NET_HDR_GSO_TCPV4}: one Ethernet, IPv4 and TCP header
 * in front of up to 64 KiB of payload, with {@code gso_size} payload bytes per segment) into the frames the kernel
 * would otherwise have cut for us, in place and one at a time.
 *
 * <p>Frame {@code i} is a copy of the superframe's headers followed by payload bytes {@code [i * gso_size, (i + 1) *
 * gso_size)}. Its headers are written over the last header-length bytes of frame {@code i - 1}'s payload, which the
 * receiver is done with by then (a received frame is valid only during its callback, {@link NetDevice}), so only the
 * headers are copied, never the payload. The headers change as Linux's {@code tcp_gso_segment} and
 * {@code inet_gso_segment} change them: IPv4 total length, identification (plus {@code i}) and header checksum; TCP
 * sequence number (plus {@code i * gso_size}); FIN and PSH on the last frame only and CWR on the first only; and the
 * TCP checksum field, which holds the folded pseudo-header sum of a {@code NEEDS_CSUM} frame, gets each frame's own
 * length in that sum.
 *
 * <p>A superframe this cannot cut (not IPv4 carrying TCP, a fragment, lengths that disagree, no payload, a
 * {@code gso_size} of 0 or one that makes a frame longer than the link allows) is refused whole by {@link #start}.
 */
final class TcpSuperframeSplitter
{
    private static final int TCP_FIN = 0x01;
    private static final int TCP_PSH = 0x08;
    private static final int TCP_CWR = 0x80;
    private static final int MAX_HEADER_LENGTH = NetDevice.ETHERNET_HEADER_LENGTH + 60 + 60;

    /** The superframe's own headers, kept because frame 0's are rewritten before frame 1 is cut. */
    private final UnsafeBuffer headers = new UnsafeBuffer(new byte[MAX_HEADER_LENGTH]);
    private MutableDirectBuffer buffer;
    private int payloadOffset;
    private int headerLength;
    private int ipHeaderLength;
    private int payloadLength;
    private int gsoSize;
    private int frames;
    private int next;
    private int length;
    private int firstSeq;
    private int firstId;
    private int tcpFlags;
    /** Source, destination and protocol words of the TCP pseudo-header, summed (RFC 9293 §3.1). */
    private int pseudoHeaderBase;

    /**
     * Take the superframe at {@code [offset, offset + frameLength)} of {@code buffer}; its frames then come from
     * {@link #next()} while {@link #hasNext()}.
     *
     * @return false, with nothing to deliver, when the superframe cannot be cut into frames of at most
     *         {@code maxFrameLength} bytes.
     */
    boolean start(final MutableDirectBuffer buffer, final int offset, final int frameLength, final int gsoSize,
        final int maxFrameLength)
    {
        frames = 0;
        next = 0;
        final int headersEnd = TcpIpv4Frames.headersLength(buffer, offset, frameLength);
        if (headersEnd < 0 || gsoSize <= 0 || headersEnd + gsoSize > maxFrameLength)
        {
            return false;
        }
        final int ip = offset + NetDevice.ETHERNET_HEADER_LENGTH;
        final int ipLength = TcpIpv4Frames.ipv4HeaderLength(buffer, offset);
        final int tcp = ip + ipLength;
        final int payload = NetDevice.ETHERNET_HEADER_LENGTH + TcpIpv4Frames.ipv4TotalLength(buffer, offset) - headersEnd;

        this.buffer = buffer;
        this.headerLength = headersEnd;
        this.ipHeaderLength = ipLength;
        this.payloadOffset = offset + headersEnd;
        this.payloadLength = payload;
        this.gsoSize = gsoSize;
        headers.putBytes(0, buffer, offset, headersEnd);
        firstSeq = buffer.getInt(tcp + 4, ByteOrder.BIG_ENDIAN);
        firstId = buffer.getShort(ip + 4, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        tcpFlags = buffer.getByte(tcp + 13) & 0xFF;
        pseudoHeaderBase = TcpIpv4Frames.pseudoHeaderBase(buffer, ip);
        frames = (payload + gsoSize - 1) / gsoSize;
        return true;
    }

    /** True while the superframe has frames left. */
    boolean hasNext()
    {
        return next < frames;
    }

    /** Forget the rest of the superframe (the device is closing or the buffer is about to be reused). */
    void clear()
    {
        frames = 0;
        next = 0;
    }

    /**
     * Write the next frame's headers in front of its payload.
     *
     * @return the frame's offset in the buffer; its length is {@link #length()}.
     */
    int next()
    {
        final int i = next++;
        final int payloadStart = i * gsoSize;
        final int payload = Math.min(gsoSize, payloadLength - payloadStart);
        final int frame = payloadOffset + payloadStart - headerLength;
        final MutableDirectBuffer b = buffer;
        b.putBytes(frame, headers, 0, headerLength);

        final int ip = frame + NetDevice.ETHERNET_HEADER_LENGTH;
        final int tcp = ip + ipHeaderLength;
        final int tcpLength = headerLength - NetDevice.ETHERNET_HEADER_LENGTH - ipHeaderLength + payload;
        b.putShort(ip + 2, (short)(ipHeaderLength + tcpLength), ByteOrder.BIG_ENDIAN);
        b.putShort(ip + 4, (short)(firstId + i), ByteOrder.BIG_ENDIAN);
        b.putShort(ip + 10, (short)0);
        b.putShort(ip + 10, (short)TcpIpv4Frames.ipv4HeaderChecksum(b, ip, ipHeaderLength), ByteOrder.BIG_ENDIAN);

        b.putInt(tcp + 4, firstSeq + payloadStart, ByteOrder.BIG_ENDIAN);
        int flags = tcpFlags;
        if (next < frames)
        {
            flags &= ~(TCP_FIN | TCP_PSH);
        }
        if (i > 0)
        {
            flags &= ~TCP_CWR;
        }
        b.putByte(tcp + 13, (byte)flags);
        b.putShort(tcp + 16, (short)TcpIpv4Frames.fold(pseudoHeaderBase + tcpLength), ByteOrder.BIG_ENDIAN);

        length = headerLength + payload;
        return frame;
    }

    /** Length of the frame the last {@link #next()} returned. */
    int length()
    {
        return length;
    }

    /** Frames the current superframe is cut into. */
    int frames()
    {
        return frames;
    }
}
