package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * Flyweight over an IPv4 header (RFC 791 section 3.1).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |Version|  IHL  |Type of Service|          Total Length         |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |         Identification        |Flags|      Fragment Offset    |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  Time to Live |    Protocol   |         Header Checksum       |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                       Source Address                          |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                    Destination Address                        |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                    Options                    |    Padding    |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * Flags: bit 0 reserved (must be zero), bit 1 DF, bit 2 MF.
 * </pre>
 *
 * <p>The view covers {@code [offset, offset + length)}: header and whatever follows it in the
 * buffer, so {@link #length()} may exceed {@link #totalLength()} by link-layer padding.
 * {@link #wrapChecked} guarantees {@code 20 <= headerLength() <= length}; it does not look at the
 * version, the total length or the checksum, which the caller classifies.
 */
public final class Ipv4Header extends HeaderView<Ipv4Header>
{
    /** Header length without options. */
    public static final int MIN_HEADER_LENGTH = 20;

    /** Header length with 40 bytes of options (IHL 15). */
    public static final int MAX_HEADER_LENGTH = 60;

    /** Internet Control Message Protocol. */
    public static final int PROTOCOL_ICMP = 1;

    /** Transmission Control Protocol. */
    public static final int PROTOCOL_TCP = 6;

    /** User Datagram Protocol. */
    public static final int PROTOCOL_UDP = 17;

    /** Offset of version and IHL. */
    public static final int VERSION_IHL_OFFSET = 0;

    /** Offset of the type of service (DSCP and ECN). */
    public static final int TOS_OFFSET = 1;

    /** Offset of the total length. */
    public static final int TOTAL_LENGTH_OFFSET = 2;

    /** Offset of the identification. */
    public static final int IDENTIFICATION_OFFSET = 4;

    /** Offset of flags and fragment offset. */
    public static final int FLAGS_FRAGMENT_OFFSET = 6;

    /** Offset of the time to live. */
    public static final int TTL_OFFSET = 8;

    /** Offset of the protocol. */
    public static final int PROTOCOL_OFFSET = 9;

    /** Offset of the header checksum. */
    public static final int CHECKSUM_OFFSET = 10;

    /** Offset of the source address. */
    public static final int SOURCE_OFFSET = 12;

    /** Offset of the destination address. */
    public static final int DESTINATION_OFFSET = 16;

    static final int FLAG_RESERVED = 0x8000;
    private static final int FLAG_DONT_FRAGMENT = 0x4000;
    static final int FLAG_MORE_FRAGMENTS = 0x2000;
    static final int FRAGMENT_OFFSET_MASK = 0x1FFF;

    /** Holds {@code 20 <= headerLength() <= length}, so no getter (checksum included) reads out of bounds. */
    @Override
    protected boolean holdsHeader(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length < MIN_HEADER_LENGTH)
        {
            return false;
        }
        final int headerLength = (buffer.getByte(offset + VERSION_IHL_OFFSET) & 0x0F) * 4;
        return headerLength >= MIN_HEADER_LENGTH && headerLength <= length;
    }

    /** Version, the high nibble of the first byte (4 for IPv4). */
    public int version()
    {
        return (buffer().getByte(offset() + VERSION_IHL_OFFSET) & 0xFF) >>> 4;
    }

    /** Internet header length in 32-bit words, the low nibble of the first byte. */
    public int ihl()
    {
        return buffer().getByte(offset() + VERSION_IHL_OFFSET) & 0x0F;
    }

    /** Header length in bytes: {@code ihl() * 4}. */
    public int headerLength()
    {
        return ihl() * 4;
    }

    /** Type of service byte (DSCP in the high 6 bits, ECN in the low 2; RFC 2474, RFC 3168). */
    public int tos()
    {
        return buffer().getByte(offset() + TOS_OFFSET) & 0xFF;
    }

    /** Total length of the datagram in bytes, unsigned 16 bits, big endian. */
    public int totalLength()
    {
        return buffer().getShort(offset() + TOTAL_LENGTH_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Identification, unsigned 16 bits, big endian. */
    public int identification()
    {
        return buffer().getShort(offset() + IDENTIFICATION_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** DF flag. */
    public boolean dontFragment()
    {
        return (flagsField() & FLAG_DONT_FRAGMENT) != 0;
    }

    /** MF flag. */
    public boolean moreFragments()
    {
        return (flagsField() & FLAG_MORE_FRAGMENTS) != 0;
    }

    /** The reserved flag, which RFC 791 requires to be zero. */
    public boolean reservedFlag()
    {
        return (flagsField() & FLAG_RESERVED) != 0;
    }

    /** Fragment offset in bytes (the field counts 8-byte units). */
    public int fragmentOffset()
    {
        return (flagsField() & FRAGMENT_OFFSET_MASK) * 8;
    }

    /** True when this datagram is a fragment: MF set or a non-zero fragment offset. */
    public boolean isFragment()
    {
        return (flagsField() & (FLAG_MORE_FRAGMENTS | FRAGMENT_OFFSET_MASK)) != 0;
    }

    /** Time to live, unsigned 8 bits. */
    public int ttl()
    {
        return buffer().getByte(offset() + TTL_OFFSET) & 0xFF;
    }

    /** Protocol number, unsigned 8 bits. */
    public int protocol()
    {
        return buffer().getByte(offset() + PROTOCOL_OFFSET) & 0xFF;
    }

    /** Header checksum field, unsigned 16 bits, big endian. */
    public int headerChecksum()
    {
        return buffer().getShort(offset() + CHECKSUM_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Source address, big endian. */
    public int source()
    {
        return buffer().getInt(offset() + SOURCE_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** Destination address, big endian. */
    public int destination()
    {
        return buffer().getInt(offset() + DESTINATION_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** Absolute index of the first byte after the header: {@code offset() + headerLength()}. */
    public int payloadOffset()
    {
        return offset() + headerLength();
    }

    /** Checksum of the header (options included) with the checksum field taken as zero. */
    public int computeChecksum()
    {
        long sum = Checksum.partial(buffer(), offset(), CHECKSUM_OFFSET, 0);
        sum = Checksum.partial(buffer(), offset() + SOURCE_OFFSET, headerLength() - SOURCE_OFFSET, sum);
        return Checksum.finish(sum);
    }

    /** RFC 791 section 3.1: the ones' complement sum over the header, checksum included, is all ones. */
    public boolean checksumValid()
    {
        return Checksum.compute(buffer(), offset(), headerLength()) == 0;
    }

    /** Write version 4 and the header length in 32-bit words. */
    public Ipv4Header versionAndIhl(final int ihl)
    {
        mutable().putByte(offset() + VERSION_IHL_OFFSET, (byte)(0x40 | (ihl & 0x0F)));
        return this;
    }

    /** Set the type of service byte. */
    public Ipv4Header tos(final int tos)
    {
        mutable().putByte(offset() + TOS_OFFSET, (byte)tos);
        return this;
    }

    /** Set the total length. */
    public Ipv4Header totalLength(final int totalLength)
    {
        mutable().putShort(offset() + TOTAL_LENGTH_OFFSET, (short)totalLength, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the identification. */
    public Ipv4Header identification(final int identification)
    {
        mutable().putShort(offset() + IDENTIFICATION_OFFSET, (short)identification, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /**
     * Set the flags and the fragment offset, given in bytes (a multiple of 8); the reserved flag is
     * cleared.
     */
    public Ipv4Header flagsAndFragmentOffset(
        final boolean dontFragment, final boolean moreFragments, final int fragmentOffsetBytes)
    {
        final int value = flagsAndFragmentOffsetField(dontFragment, moreFragments, fragmentOffsetBytes);
        mutable().putShort(offset() + FLAGS_FRAGMENT_OFFSET, (short)value, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** The 16-bit flags and fragment offset field (offset in bytes, a multiple of 8) as written on the wire. */
    public static int flagsAndFragmentOffsetField(
        final boolean dontFragment, final boolean moreFragments, final int fragmentOffsetBytes)
    {
        return (fragmentOffsetBytes >>> 3) & FRAGMENT_OFFSET_MASK
            | (dontFragment ? FLAG_DONT_FRAGMENT : 0) | (moreFragments ? FLAG_MORE_FRAGMENTS : 0);
    }

    /** Set the time to live. */
    public Ipv4Header ttl(final int ttl)
    {
        mutable().putByte(offset() + TTL_OFFSET, (byte)ttl);
        return this;
    }

    /** Set the protocol number. */
    public Ipv4Header protocol(final int protocol)
    {
        mutable().putByte(offset() + PROTOCOL_OFFSET, (byte)protocol);
        return this;
    }

    /** Set the header checksum field. */
    public Ipv4Header headerChecksum(final int checksum)
    {
        mutable().putShort(offset() + CHECKSUM_OFFSET, (short)checksum, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the source address. */
    public Ipv4Header source(final int address)
    {
        mutable().putInt(offset() + SOURCE_OFFSET, address, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the destination address. */
    public Ipv4Header destination(final int address)
    {
        mutable().putInt(offset() + DESTINATION_OFFSET, address, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Compute the header checksum and store it; call after every other field is written. */
    public Ipv4Header updateChecksum()
    {
        return headerChecksum(computeChecksum());
    }

    private int flagsField()
    {
        return buffer().getShort(offset() + FLAGS_FRAGMENT_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }
}
