package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

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
public final class EthernetFrame
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

    private DirectBuffer buffer;
    private MutableDirectBuffer mutableBuffer;
    private int offset;
    private int length;

    /**
     * Wrap without checks, for emitting or for input already validated. Setters work when the
     * buffer is a {@link MutableDirectBuffer}.
     */
    public EthernetFrame wrap(final DirectBuffer buffer, final int offset, final int length)
    {
        this.buffer = buffer;
        this.mutableBuffer = buffer instanceof MutableDirectBuffer ? (MutableDirectBuffer)buffer : null;
        this.offset = offset;
        this.length = length;
        return this;
    }

    /** Wrap a writable buffer without checks, for emitting. */
    public EthernetFrame wrap(final MutableDirectBuffer buffer, final int offset, final int length)
    {
        this.buffer = buffer;
        this.mutableBuffer = buffer;
        this.offset = offset;
        this.length = length;
        return this;
    }

    /**
     * Wrap untrusted input: true only when the region lies inside the buffer and holds a whole
     * header, so that no getter can read out of bounds. On false the view is left unchanged.
     */
    public boolean wrapChecked(final DirectBuffer buffer, final int offset, final int length)
    {
        if (!Bounds.regionFits(buffer, offset, length) || length < HEADER_LENGTH)
        {
            return false;
        }
        wrap(buffer, offset, length);
        return true;
    }

    /** The wrapped buffer. */
    public DirectBuffer buffer()
    {
        return buffer;
    }

    /** Index of the first header byte in the buffer. */
    public int offset()
    {
        return offset;
    }

    /** Length of the wrapped frame: header and payload. */
    public int length()
    {
        return length;
    }

    /** Destination MAC address as a 48-bit value. */
    public long destination()
    {
        return MacAddress.read(buffer, offset + DESTINATION_OFFSET);
    }

    /** Source MAC address as a 48-bit value. */
    public long source()
    {
        return MacAddress.read(buffer, offset + SOURCE_OFFSET);
    }

    /** EtherType, unsigned 16 bits, big endian. */
    public int etherType()
    {
        return buffer.getShort(offset + ETHERTYPE_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Absolute index of the payload in the buffer. */
    public int payloadOffset()
    {
        return offset + HEADER_LENGTH;
    }

    /** Length of the payload (may include link-layer padding of short frames). */
    public int payloadLength()
    {
        return length - HEADER_LENGTH;
    }

    /** Set the destination MAC address. */
    public EthernetFrame destination(final long mac)
    {
        MacAddress.write(mutableBuffer, offset + DESTINATION_OFFSET, mac);
        return this;
    }

    /** Set the source MAC address. */
    public EthernetFrame source(final long mac)
    {
        MacAddress.write(mutableBuffer, offset + SOURCE_OFFSET, mac);
        return this;
    }

    /** Set the EtherType. */
    public EthernetFrame etherType(final int etherType)
    {
        mutableBuffer.putShort(offset + ETHERTYPE_OFFSET, (short)etherType, ByteOrder.BIG_ENDIAN);
        return this;
    }
}
