package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * Flyweight over an Ethernet II frame header (IEEE 802.3 with an EtherType, no VLAN tag, no FCS).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                      Destination Address                      |
 * +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                               |                               |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
 * |                        Source Address                         |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |           EtherType           |          Payload ...          |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>The view covers {@code [offset, offset + length)} of the buffer: header and payload.
 */
public final class EthernetFrame extends HeaderView<EthernetFrame>
{
    /** Header length: two addresses and the EtherType. */
    public static final int HEADER_LENGTH = 14;

    /** Internet Protocol version 4. */
    public static final int ETHERTYPE_IPV4 = 0x0800;

    /** Address Resolution Protocol. */
    public static final int ETHERTYPE_ARP = 0x0806;

    /** Internet Protocol version 6. */
    public static final int ETHERTYPE_IPV6 = 0x86DD;

    /** Offset of the destination address. */
    public static final int DESTINATION_OFFSET = 0;

    /** Offset of the source address. */
    public static final int SOURCE_OFFSET = 6;

    /** Offset of the EtherType. */
    public static final int ETHERTYPE_OFFSET = 12;

    /** Destination and EtherType of the frame {@link #wrapInput} last accepted. */
    private long inputDestination;
    private int inputEtherType;

    /**
     * The receive path's wrap: {@link #wrapChecked}, then the destination address and the EtherType read once, raw
     * (the range check just made covers the 14 bytes), for {@link #inputDestination()} and {@link #inputEtherType()}.
     *
     * @return false, reading nothing, when the region is not inside the buffer or shorter than the header.
     */
    public boolean wrapInput(final DirectBuffer buffer, final int offset, final int length)
    {
        if (!wrapChecked(buffer, offset, length))
        {
            return false;
        }
        inputDestination = Raw.u48(buffer, offset + DESTINATION_OFFSET);
        inputEtherType = Raw.u16(buffer, offset + ETHERTYPE_OFFSET);
        return true;
    }

    /** The destination address of the frame {@link #wrapInput} last accepted, as a 48-bit value. */
    public long inputDestination()
    {
        return inputDestination;
    }

    /** The EtherType of the frame {@link #wrapInput} last accepted. */
    public int inputEtherType()
    {
        return inputEtherType;
    }

    /** Holds the 14-byte header; the payload may be empty. */
    @Override
    protected boolean holdsHeader(final DirectBuffer buffer, final int offset, final int length)
    {
        return length >= HEADER_LENGTH;
    }

    /** Destination MAC address as a 48-bit value. */
    public long destination()
    {
        return MacAddress.read(buffer(), offset() + DESTINATION_OFFSET);
    }

    /** Source MAC address as a 48-bit value. */
    public long source()
    {
        return MacAddress.read(buffer(), offset() + SOURCE_OFFSET);
    }

    /** EtherType, unsigned 16 bits, big endian. */
    public int etherType()
    {
        return buffer().getShort(offset() + ETHERTYPE_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Absolute index of the payload in the buffer. */
    public int payloadOffset()
    {
        return offset() + HEADER_LENGTH;
    }

    /** Length of the payload (may include link-layer padding of short frames). */
    public int payloadLength()
    {
        return length() - HEADER_LENGTH;
    }

    /** Set the destination MAC address. */
    public EthernetFrame destination(final long mac)
    {
        MacAddress.write(mutable(), offset() + DESTINATION_OFFSET, mac);
        return this;
    }

    /** Set the source MAC address. */
    public EthernetFrame source(final long mac)
    {
        MacAddress.write(mutable(), offset() + SOURCE_OFFSET, mac);
        return this;
    }

    /** Set the EtherType. */
    public EthernetFrame etherType(final int etherType)
    {
        mutable().putShort(offset() + ETHERTYPE_OFFSET, (short)etherType, ByteOrder.BIG_ENDIAN);
        return this;
    }
}
