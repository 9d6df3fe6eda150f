package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * Flyweight over an ICMP message header (RFC 792). The view covers header and data, since the
 * checksum covers both.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |     Type      |     Code      |          Checksum             |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |           Identifier          |        Sequence Number        |  (echo)
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |     Data ...
 * +-+-+-+-+-
 * </pre>
 *
 * <p>Bytes 4..7 depend on the type: identifier and sequence number for echo (RFC 792 page 14),
 * unused (or next-hop MTU, RFC 1191) for destination unreachable. {@link #restOfHeader()} reads
 * them as one 32-bit value.
 */
public final class IcmpHeader extends HeaderView<IcmpHeader>
{
    /** Header length: type, code, checksum and the 4 type-specific bytes. */
    public static final int HEADER_LENGTH = 8;

    /** Echo reply. */
    public static final int TYPE_ECHO_REPLY = 0;

    /** Destination unreachable. */
    public static final int TYPE_DESTINATION_UNREACHABLE = 3;

    /** Source quench (deprecated by RFC 6633; RFC 9293 MUST-55: TCP discards it). */
    public static final int TYPE_SOURCE_QUENCH = 4;

    /** Echo request. */
    public static final int TYPE_REDIRECT = 5;

    /** Highest Redirect code RFC 792 defines (3: for the type of service and host). */
    public static final int MAX_REDIRECT_CODE = 3;

    public static final int TYPE_ECHO_REQUEST = 8;

    /** Time exceeded. */
    public static final int TYPE_TIME_EXCEEDED = 11;

    /** Parameter problem. */
    public static final int TYPE_PARAMETER_PROBLEM = 12;

    /** Destination unreachable: host unreachable (also what a first hop that never answers ARP is told as). */
    public static final int CODE_HOST_UNREACHABLE = 1;

    /** Destination unreachable: protocol unreachable. */
    public static final int CODE_PROTOCOL_UNREACHABLE = 2;

    /** Destination unreachable: port unreachable. */
    public static final int CODE_PORT_UNREACHABLE = 3;

    /** Destination unreachable: fragmentation needed and DF set (RFC 1191 carries the MTU). */
    public static final int CODE_FRAGMENTATION_NEEDED = 4;

    /** Offset of the type. */
    public static final int TYPE_OFFSET = 0;

    /** Offset of the code. */
    public static final int CODE_OFFSET = 1;

    /** Offset of the checksum. */
    public static final int CHECKSUM_OFFSET = 2;

    /** Offset of the echo identifier. */
    public static final int IDENTIFIER_OFFSET = 4;

    /** Offset of the echo sequence number. */
    public static final int SEQUENCE_NUMBER_OFFSET = 6;

    /** Offset of the 4 type-specific bytes. */
    public static final int REST_OF_HEADER_OFFSET = 4;

    /** Holds the 8-byte header. */
    @Override
    protected boolean holdsHeader(final DirectBuffer buffer, final int offset, final int length)
    {
        return length >= HEADER_LENGTH;
    }

    /** Type, unsigned 8 bits. */
    public int type()
    {
        return buffer().getByte(offset() + TYPE_OFFSET) & 0xFF;
    }

    /** Code, unsigned 8 bits. */
    public int code()
    {
        return buffer().getByte(offset() + CODE_OFFSET) & 0xFF;
    }

    /** Checksum field, unsigned 16 bits, big endian. */
    public int checksum()
    {
        return buffer().getShort(offset() + CHECKSUM_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Echo identifier, unsigned 16 bits, big endian. */
    public int identifier()
    {
        return buffer().getShort(offset() + IDENTIFIER_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Echo sequence number, unsigned 16 bits, big endian. */
    public int sequenceNumber()
    {
        return buffer().getShort(offset() + SEQUENCE_NUMBER_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Bytes 4..7 as one big-endian 32-bit value. */
    public int restOfHeader()
    {
        return buffer().getInt(offset() + REST_OF_HEADER_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** Absolute index of the data after the header. */
    public int dataOffset()
    {
        return offset() + HEADER_LENGTH;
    }

    /** Length of the data after the header. */
    public int dataLength()
    {
        return length() - HEADER_LENGTH;
    }

    /** Checksum over the whole wrapped message with the checksum field taken as zero. */
    public int computeChecksum()
    {
        long sum = Checksum.partial(buffer(), offset(), CHECKSUM_OFFSET, 0);
        sum = Checksum.partial(buffer(), offset() + IDENTIFIER_OFFSET, length() - IDENTIFIER_OFFSET, sum);
        return Checksum.finish(sum);
    }

    /** RFC 792: the ones' complement sum over the message, checksum included, is all ones. */
    public boolean checksumValid()
    {
        return Checksum.compute(buffer(), offset(), length()) == 0;
    }

    /** Set the type. */
    public IcmpHeader type(final int type)
    {
        mutable().putByte(offset() + TYPE_OFFSET, (byte)type);
        return this;
    }

    /** Set the code. */
    public IcmpHeader code(final int code)
    {
        mutable().putByte(offset() + CODE_OFFSET, (byte)code);
        return this;
    }

    /** Set the checksum field. */
    public IcmpHeader checksum(final int checksum)
    {
        mutable().putShort(offset() + CHECKSUM_OFFSET, (short)checksum, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the echo identifier. */
    public IcmpHeader identifier(final int identifier)
    {
        mutable().putShort(offset() + IDENTIFIER_OFFSET, (short)identifier, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the echo sequence number. */
    public IcmpHeader sequenceNumber(final int sequenceNumber)
    {
        mutable().putShort(offset() + SEQUENCE_NUMBER_OFFSET, (short)sequenceNumber, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set bytes 4..7. */
    public IcmpHeader restOfHeader(final int value)
    {
        mutable().putInt(offset() + REST_OF_HEADER_OFFSET, value, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Compute the checksum over the whole wrapped length (header and data) and store it. */
    public IcmpHeader updateChecksum()
    {
        return checksum(computeChecksum());
    }
}
