package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * Flyweight over an ARP packet for Ethernet and IPv4 (RFC 826), the only combination this stack
 * speaks: hardware addresses are 6 octets and protocol addresses 4.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |         Hardware Type         |         Protocol Type         |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  Hardware Len | Protocol Len  |           Operation           |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                   Sender Hardware Address                     |
 * +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                               |   Sender Protocol Address     |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |   Sender Protocol Address     |                               |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
 * |                   Target Hardware Address                     |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                   Target Protocol Address                     |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>The view may cover Ethernet padding after the packet. {@link #wrapChecked} only guarantees the
 * 28 bytes are there; the caller checks the hardware and protocol types and lengths before trusting
 * the addresses.
 */
public final class ArpPacket extends HeaderView<ArpPacket>
{
    /** Length of an Ethernet/IPv4 ARP packet. */
    public static final int LENGTH = 28;

    /** ARP request (RFC 826 ares_op$REQUEST). */
    public static final int OP_REQUEST = 1;

    /** ARP reply (RFC 826 ares_op$REPLY). */
    public static final int OP_REPLY = 2;

    /** Hardware type of Ethernet (10Mb), per the IANA ARP parameters registry. */
    public static final int HTYPE_ETHERNET = 1;

    /** Protocol type of IPv4: its EtherType. */
    public static final int PTYPE_IPV4 = EthernetFrame.ETHERTYPE_IPV4;

    /** Hardware address length of Ethernet. */
    public static final int HLEN_ETHERNET = 6;

    /** Protocol address length of IPv4. */
    public static final int PLEN_IPV4 = 4;

    /** Offset of the hardware type. */
    public static final int HARDWARE_TYPE_OFFSET = 0;

    /** Offset of the protocol type. */
    public static final int PROTOCOL_TYPE_OFFSET = 2;

    /** Offset of the hardware address length. */
    public static final int HARDWARE_LENGTH_OFFSET = 4;

    /** Offset of the protocol address length. */
    public static final int PROTOCOL_LENGTH_OFFSET = 5;

    /** Offset of the operation. */
    public static final int OPERATION_OFFSET = 6;

    /** Offset of the sender hardware address. */
    public static final int SENDER_HARDWARE_ADDRESS_OFFSET = 8;

    /** Offset of the sender protocol address. */
    public static final int SENDER_PROTOCOL_ADDRESS_OFFSET = 14;

    /** Offset of the target hardware address. */
    public static final int TARGET_HARDWARE_ADDRESS_OFFSET = 18;

    /** Offset of the target protocol address. */
    public static final int TARGET_PROTOCOL_ADDRESS_OFFSET = 24;

    /** Holds the {@link #LENGTH} bytes of an Ethernet/IPv4 packet; types and lengths are not checked. */
    @Override
    protected boolean holdsHeader(final DirectBuffer buffer, final int offset, final int length)
    {
        return length >= LENGTH;
    }

    /** Hardware type, unsigned 16 bits, big endian. */
    public int hardwareType()
    {
        return buffer().getShort(offset() + HARDWARE_TYPE_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Protocol type, unsigned 16 bits, big endian. */
    public int protocolType()
    {
        return buffer().getShort(offset() + PROTOCOL_TYPE_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Hardware address length, unsigned 8 bits. */
    public int hardwareLength()
    {
        return buffer().getByte(offset() + HARDWARE_LENGTH_OFFSET) & 0xFF;
    }

    /** Protocol address length, unsigned 8 bits. */
    public int protocolLength()
    {
        return buffer().getByte(offset() + PROTOCOL_LENGTH_OFFSET) & 0xFF;
    }

    /** Operation, unsigned 16 bits, big endian. */
    public int operation()
    {
        return buffer().getShort(offset() + OPERATION_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Sender hardware address as a 48-bit value. */
    public long senderHardwareAddress()
    {
        return MacAddress.read(buffer(), offset() + SENDER_HARDWARE_ADDRESS_OFFSET);
    }

    /** Sender protocol address, big endian. */
    public int senderProtocolAddress()
    {
        return buffer().getInt(offset() + SENDER_PROTOCOL_ADDRESS_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** Target hardware address as a 48-bit value. */
    public long targetHardwareAddress()
    {
        return MacAddress.read(buffer(), offset() + TARGET_HARDWARE_ADDRESS_OFFSET);
    }

    /** Target protocol address, big endian. */
    public int targetProtocolAddress()
    {
        return buffer().getInt(offset() + TARGET_PROTOCOL_ADDRESS_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** True for hardware type Ethernet, protocol type IPv4 and the matching address lengths. */
    public boolean isEthernetIpv4()
    {
        return hardwareType() == HTYPE_ETHERNET && protocolType() == PTYPE_IPV4 &&
            hardwareLength() == HLEN_ETHERNET && protocolLength() == PLEN_IPV4;
    }

    /** Set the hardware type. */
    public ArpPacket hardwareType(final int hardwareType)
    {
        mutable().putShort(offset() + HARDWARE_TYPE_OFFSET, (short)hardwareType, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the protocol type. */
    public ArpPacket protocolType(final int protocolType)
    {
        mutable().putShort(offset() + PROTOCOL_TYPE_OFFSET, (short)protocolType, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the hardware address length. */
    public ArpPacket hardwareLength(final int hardwareLength)
    {
        mutable().putByte(offset() + HARDWARE_LENGTH_OFFSET, (byte)hardwareLength);
        return this;
    }

    /** Set the protocol address length. */
    public ArpPacket protocolLength(final int protocolLength)
    {
        mutable().putByte(offset() + PROTOCOL_LENGTH_OFFSET, (byte)protocolLength);
        return this;
    }

    /** Set the operation. */
    public ArpPacket operation(final int operation)
    {
        mutable().putShort(offset() + OPERATION_OFFSET, (short)operation, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the sender hardware address. */
    public ArpPacket senderHardwareAddress(final long mac)
    {
        MacAddress.write(mutable(), offset() + SENDER_HARDWARE_ADDRESS_OFFSET, mac);
        return this;
    }

    /** Set the sender protocol address. */
    public ArpPacket senderProtocolAddress(final int address)
    {
        mutable().putInt(offset() + SENDER_PROTOCOL_ADDRESS_OFFSET, address, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the target hardware address. */
    public ArpPacket targetHardwareAddress(final long mac)
    {
        MacAddress.write(mutable(), offset() + TARGET_HARDWARE_ADDRESS_OFFSET, mac);
        return this;
    }

    /** Set the target protocol address. */
    public ArpPacket targetProtocolAddress(final int address)
    {
        mutable().putInt(offset() + TARGET_PROTOCOL_ADDRESS_OFFSET, address, ByteOrder.BIG_ENDIAN);
        return this;
    }
}
