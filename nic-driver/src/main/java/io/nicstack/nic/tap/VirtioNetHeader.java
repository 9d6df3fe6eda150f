package io.nicstack.nic.tap;

import io.nicstack.nic.NetDevice;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * Flyweight over the legacy virtio-net header that a tap opened with {@code IFF_VNET_HDR} puts in front of every frame
 * in both directions ({@code struct virtio_net_hdr}, include/uapi/linux/virtio_net.h; VIRTIO 1.2 section 5.1.6).
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------+---------------+-------------------------------+
 *  |     Flags     |   GSO Type    |   Header Length (hdr_len)     |
 *  +---------------+---------------+-------------------------------+
 *  |   GSO Size (gso_size)         |   Checksum Start (csum_start) |
 *  +-------------------------------+-------------------------------+
 *  |  Checksum Offset (csum_offset)|
 *  +-------------------------------+
 * </pre>
 *
 * <p>The 16-bit fields are little-endian: {@link TapDevice} switches the tap to little-endian headers with
 * {@code TUNSETVNETLE}, so the layout is the same on every host (drivers/net/tun_vnet.h: {@code TUN_VNET_LE} wins over
 * the legacy rule, which is native order, and over {@code TUN_VNET_BE}).
 *
 * <p>{@code NEEDS_CSUM}: the checksum field at {@code csum_start + csum_offset} holds only the folded pseudo-header sum;
 * whoever moves the frame on completes it over the bytes from {@code csum_start} to the end (the kernel does that in
 * {@code skb_checksum_help} when the frame leaves through a device that cannot, and trusts it on local delivery).
 * {@code DATA_VALID}: the checksum was verified. {@code gso_type} {@code GSO_TCPV4}: a TCP/IPv4 superframe, whose
 * payload is to be cut into segments of {@code gso_size} bytes ({@link TcpSuperframeSplitter}); a tap hands those out
 * only when offered {@code TUN_F_TSO4}, and other types only when offered their own offloads.
 */
public final class VirtioNetHeader
{
    /** Length of {@code struct virtio_net_hdr}; also the value given to {@code TUNSETVNETHDRSZ}. */
    public static final int LENGTH = 10;

    public static final int FLAGS_OFFSET = 0;
    public static final int GSO_TYPE_OFFSET = 1;
    public static final int HEADER_LENGTH_OFFSET = 2;
    public static final int GSO_SIZE_OFFSET = 4;
    public static final int CHECKSUM_START_OFFSET = 6;
    public static final int CHECKSUM_OFFSET_OFFSET = 8;

    /** {@code VIRTIO_NET_HDR_F_NEEDS_CSUM}: complete the checksum at {@code csum_start + csum_offset}. */
    public static final int F_NEEDS_CSUM = 1;
    /** {@code VIRTIO_NET_HDR_F_DATA_VALID}: the checksum has been verified. */
    public static final int F_DATA_VALID = 2;
    /** {@code VIRTIO_NET_HDR_GSO_NONE}: one frame, not a segmentation offload superframe. */
    public static final int GSO_NONE = 0;
    /** {@code VIRTIO_NET_HDR_GSO_TCPV4}, without the ECN bit (0x80, only with {@code TUN_F_TSO_ECN}, not offered). */
    public static final int GSO_TCPV4 = 1;

    /** Byte order of the 16-bit fields once the tap has been switched with {@code TUNSETVNETLE}. */
    public static final ByteOrder BYTE_ORDER = ByteOrder.LITTLE_ENDIAN;

    /** Offset of the checksum field in a TCP header (RFC 9293 section 3.1). */
    public static final int TCP_CHECKSUM_OFFSET = 16;
    /** Offset of the checksum field in a UDP header (RFC 768). */
    public static final int UDP_CHECKSUM_OFFSET = 6;

    private static final int ETHERTYPE_IPV4 = 0x0800;
    private static final int IPV4_MIN_HEADER_LENGTH = 20;
    private static final int PROTOCOL_TCP = 6;
    private static final int PROTOCOL_UDP = 17;
    private static final int TCP_MIN_HEADER_LENGTH = 20;
    private static final int UDP_HEADER_LENGTH = 8;

    private MutableDirectBuffer buffer;
    private int offset;

    /** View the {@link #LENGTH} bytes at {@code offset}; the caller guarantees they are in the buffer. */
    public VirtioNetHeader wrap(final MutableDirectBuffer buffer, final int offset)
    {
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    /** Flags, unsigned: {@link #F_NEEDS_CSUM}, {@link #F_DATA_VALID}. */
    public int flags()
    {
        return buffer.getByte(offset + FLAGS_OFFSET) & 0xFF;
    }

    public VirtioNetHeader flags(final int flags)
    {
        buffer.putByte(offset + FLAGS_OFFSET, (byte)flags);
        return this;
    }

    /** GSO type, unsigned; anything but {@link #GSO_NONE} is a superframe. */
    public int gsoType()
    {
        return buffer.getByte(offset + GSO_TYPE_OFFSET) & 0xFF;
    }

    public VirtioNetHeader gsoType(final int gsoType)
    {
        buffer.putByte(offset + GSO_TYPE_OFFSET, (byte)gsoType);
        return this;
    }

    /** {@code hdr_len}, unsigned little-endian: how many leading bytes are headers (a hint outside GSO). */
    public int headerLength()
    {
        return buffer.getShort(offset + HEADER_LENGTH_OFFSET, BYTE_ORDER) & 0xFFFF;
    }

    public VirtioNetHeader headerLength(final int headerLength)
    {
        buffer.putShort(offset + HEADER_LENGTH_OFFSET, (short)headerLength, BYTE_ORDER);
        return this;
    }

    /** {@code gso_size}, unsigned little-endian: payload bytes per segment of a superframe. */
    public int gsoSize()
    {
        return buffer.getShort(offset + GSO_SIZE_OFFSET, BYTE_ORDER) & 0xFFFF;
    }

    public VirtioNetHeader gsoSize(final int gsoSize)
    {
        buffer.putShort(offset + GSO_SIZE_OFFSET, (short)gsoSize, BYTE_ORDER);
        return this;
    }

    /** {@code csum_start}, unsigned little-endian: frame offset where checksumming starts (the transport header). */
    public int checksumStart()
    {
        return buffer.getShort(offset + CHECKSUM_START_OFFSET, BYTE_ORDER) & 0xFFFF;
    }

    public VirtioNetHeader checksumStart(final int checksumStart)
    {
        buffer.putShort(offset + CHECKSUM_START_OFFSET, (short)checksumStart, BYTE_ORDER);
        return this;
    }

    /** {@code csum_offset}, unsigned little-endian: where the checksum field is, counted from {@code csum_start}. */
    public int checksumOffset()
    {
        return buffer.getShort(offset + CHECKSUM_OFFSET_OFFSET, BYTE_ORDER) & 0xFFFF;
    }

    public VirtioNetHeader checksumOffset(final int checksumOffset)
    {
        buffer.putShort(offset + CHECKSUM_OFFSET_OFFSET, (short)checksumOffset, BYTE_ORDER);
        return this;
    }

    /** True when the kernel vouches for the transport checksum: {@code NEEDS_CSUM} or {@code DATA_VALID}. */
    public boolean checksumTrusted()
    {
        return (flags() & (F_NEEDS_CSUM | F_DATA_VALID)) != 0;
    }

    /** All zero: a frame whose checksums are complete (or not needed) and no GSO. */
    public VirtioNetHeader clear()
    {
        buffer.setMemory(offset, LENGTH, (byte)0);
        return this;
    }

    /**
     * Ask for the transport checksum of {@code frame} to be completed, as for {@link NetDevice#TX_L4_CHECKSUM_PARTIAL}:
     * {@code NEEDS_CSUM}, {@code csum_start} at the transport header, {@code csum_offset} of the TCP or UDP checksum
     * field, {@code hdr_len} through the fixed part of the transport header, no GSO.
     *
     * @param frame  an Ethernet frame without VLAN tag carrying IPv4 with one whole TCP or UDP datagram.
     * @param length bytes of the frame, at least the IPv4 total length after the Ethernet header.
     * @throws IllegalArgumentException when the frame is not such a frame (a stack bug: the flag was misused).
     */
    public VirtioNetHeader needsChecksum(final DirectBuffer frame, final int frameOffset, final int length)
    {
        if (length < NetDevice.ETHERNET_HEADER_LENGTH + IPV4_MIN_HEADER_LENGTH)
        {
            throw notOffloadable("a frame of " + length + " bytes is too short for Ethernet and IPv4 headers");
        }
        final int etherType = frame.getShort(frameOffset + 12, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        if (etherType != ETHERTYPE_IPV4)
        {
            throw notOffloadable("EtherType 0x" + Integer.toHexString(etherType) + " is not IPv4");
        }

        final int ip = frameOffset + NetDevice.ETHERNET_HEADER_LENGTH;
        final int versionIhl = frame.getByte(ip) & 0xFF;
        final int ipHeaderLength = (versionIhl & 0x0F) * 4;
        if (versionIhl >>> 4 != 4 || ipHeaderLength < IPV4_MIN_HEADER_LENGTH)
        {
            throw notOffloadable("IP version " + (versionIhl >>> 4) + " header length " + ipHeaderLength);
        }
        // RFC 791: total length covers IP header and data; the frame may carry Ethernet padding after it.
        final int totalLength = frame.getShort(ip + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        if (totalLength < ipHeaderLength || NetDevice.ETHERNET_HEADER_LENGTH + totalLength > length)
        {
            throw notOffloadable("IPv4 total length " + totalLength + " (header " + ipHeaderLength + ") in a frame of " +
                length + " bytes");
        }
        // MF set or a fragment offset: the checksum covers the whole datagram, which this frame does not hold.
        if ((frame.getShort(ip + 6, ByteOrder.BIG_ENDIAN) & 0x3FFF) != 0)
        {
            throw notOffloadable("an IPv4 fragment");
        }

        final int protocol = frame.getByte(ip + 9) & 0xFF;
        final int transportHeaderLength;
        final int checksumOffset;
        if (protocol == PROTOCOL_TCP)
        {
            transportHeaderLength = TCP_MIN_HEADER_LENGTH;
            checksumOffset = TCP_CHECKSUM_OFFSET;
        }
        else if (protocol == PROTOCOL_UDP)
        {
            transportHeaderLength = UDP_HEADER_LENGTH;
            checksumOffset = UDP_CHECKSUM_OFFSET;
        }
        else
        {
            throw notOffloadable("IP protocol " + protocol + " is neither TCP nor UDP");
        }
        if (totalLength - ipHeaderLength < transportHeaderLength)
        {
            throw notOffloadable((protocol == PROTOCOL_TCP ? "TCP" : "UDP") + " datagram of " +
                (totalLength - ipHeaderLength) + " bytes is shorter than its header");
        }

        final int checksumStart = NetDevice.ETHERNET_HEADER_LENGTH + ipHeaderLength;
        return flags(F_NEEDS_CSUM)
            .gsoType(GSO_NONE)
            .headerLength(checksumStart + transportHeaderLength)
            .gsoSize(0)
            .checksumStart(checksumStart)
            .checksumOffset(checksumOffset);
    }

    @Override
    public String toString()
    {
        return "virtio_net_hdr{flags=" + flags() + ", gso_type=" + gsoType() + ", hdr_len=" + headerLength() +
            ", gso_size=" + gsoSize() + ", csum_start=" + checksumStart() + ", csum_offset=" + checksumOffset() + "}";
    }

    private static IllegalArgumentException notOffloadable(final String why)
    {
        return new IllegalArgumentException("cannot offload the checksum: " + why);
    }
}
