package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * Flyweight over a UDP header (RFC 768). The view covers header and payload, since the checksum
 * covers both.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |          Source Port          |       Destination Port        |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |            Length             |           Checksum            |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |     Data ...
 * +-+-+-+-+-
 * </pre>
 *
 * <p>Checksums use the wrapped length both as the pseudo-header length and as the summed region,
 * so wrap exactly the datagram (the caller checks the length field against the IP payload).
 */
public final class UdpHeader extends HeaderView<UdpHeader>
{
    /** Header length. */
    public static final int HEADER_LENGTH = 8;

    /** Offset of the source port. */
    public static final int SOURCE_PORT_OFFSET = 0;

    /** Offset of the destination port. */
    public static final int DESTINATION_PORT_OFFSET = 2;

    /** Offset of the length. */
    public static final int LENGTH_OFFSET = 4;

    /** Offset of the checksum. */
    public static final int CHECKSUM_OFFSET = 6;

    /** Holds the 8-byte header; the length field is not checked. */
    @Override
    protected boolean holdsHeader(final DirectBuffer buffer, final int offset, final int length)
    {
        return length >= HEADER_LENGTH;
    }

    /** Source port, unsigned 16 bits, big endian. */
    public int sourcePort()
    {
        return buffer().getShort(offset() + SOURCE_PORT_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Destination port, unsigned 16 bits, big endian. */
    public int destinationPort()
    {
        return buffer().getShort(offset() + DESTINATION_PORT_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Length field (header and data), unsigned 16 bits, big endian. */
    public int datagramLength()
    {
        return buffer().getShort(offset() + LENGTH_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Checksum field, unsigned 16 bits, big endian; zero means none was computed. */
    public int checksum()
    {
        return buffer().getShort(offset() + CHECKSUM_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Absolute index of the payload. */
    public int payloadOffset()
    {
        return offset() + HEADER_LENGTH;
    }

    /** Length of the wrapped payload. */
    public int payloadLength()
    {
        return length() - HEADER_LENGTH;
    }

    /**
     * Checksum over the pseudo header and the wrapped datagram with the checksum field taken as
     * zero. RFC 768: a computed zero is transmitted as all ones, since zero means "no checksum".
     */
    public int computeChecksum(final int sourceIp, final int destinationIp)
    {
        long sum = Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_UDP, length());
        sum = Checksum.partial(buffer(), offset(), CHECKSUM_OFFSET, sum);
        sum = Checksum.partial(buffer(), offset() + HEADER_LENGTH, length() - HEADER_LENGTH, sum);
        final int checksum = Checksum.finish(sum);
        return checksum == 0 ? 0xFFFF : checksum;
    }

    /** True when the checksum field is zero (none, RFC 768) or verifies over pseudo header and datagram. */
    public boolean checksumValid(final int sourceIp, final int destinationIp)
    {
        if (checksum() == 0)
        {
            return true;
        }
        final long sum = Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_UDP, length());
        return Checksum.finish(Checksum.partial(buffer(), offset(), length(), sum)) == 0;
    }

    /** Set the source port. */
    public UdpHeader sourcePort(final int port)
    {
        mutable().putShort(offset() + SOURCE_PORT_OFFSET, (short)port, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the destination port. */
    public UdpHeader destinationPort(final int port)
    {
        mutable().putShort(offset() + DESTINATION_PORT_OFFSET, (short)port, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the length field. */
    public UdpHeader datagramLength(final int datagramLength)
    {
        mutable().putShort(offset() + LENGTH_OFFSET, (short)datagramLength, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the checksum field. */
    public UdpHeader checksum(final int checksum)
    {
        mutable().putShort(offset() + CHECKSUM_OFFSET, (short)checksum, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /**
     * Store only the folded pseudo-header sum (not complemented) for a device that completes the checksum over
     * the wrapped datagram ({@code NetDevice.TX_L4_CHECKSUM_PARTIAL}).
     */
    public UdpHeader partialChecksum(final int sourceIp, final int destinationIp)
    {
        return checksum(Checksum.fold(Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_UDP, length())));
    }

    /** Compute the checksum over pseudo header and the wrapped datagram and store it. */
    public UdpHeader updateChecksum(final int sourceIp, final int destinationIp)
    {
        return checksum(computeChecksum(sourceIp, destinationIp));
    }
}
