package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * Flyweight over a TCP header (RFC 9293 section 3.1). The view covers header, options and payload,
 * since the checksum covers all three. Options are parsed by {@link TcpRepr}.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |          Source Port          |       Destination Port        |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                        Sequence Number                        |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                    Acknowledgment Number                      |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  Data |       |C|E|U|A|P|R|S|F|                               |
 * | Offset| Rsrvd |W|C|R|C|S|S|Y|I|            Window             |
 * |       |       |R|E|G|K|H|T|N|N|                               |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |           Checksum            |         Urgent Pointer        |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                           [Options]                           |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                                                               :
 * :                             Data                              :
 * :                                                               |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>Sequence and acknowledgment numbers are raw 32-bit values: compare them only through
 * {@link Seq}. {@link #wrapChecked} guarantees {@code 20 <= dataOffset() <= length}.
 */
public final class TcpHeader extends HeaderView<TcpHeader>
{
    /** Header length without options. */
    public static final int HEADER_LENGTH = 20;

    /** Header length with 40 bytes of options (data offset 15). */
    public static final int MAX_HEADER_LENGTH = 60;

    /** No more data from sender. */
    public static final int FIN = 0x01;

    /** Synchronize sequence numbers. */
    public static final int SYN = 0x02;

    /** Reset the connection. */
    public static final int RST = 0x04;

    /** Push function. */
    public static final int PSH = 0x08;

    /** Acknowledgment field is significant. */
    public static final int ACK = 0x10;

    /** Urgent pointer field is significant. */
    public static final int URG = 0x20;

    /** ECN-Echo (RFC 3168). */
    public static final int ECE = 0x40;

    /** Congestion Window Reduced (RFC 3168). */
    public static final int CWR = 0x80;

    /** Offset of the source port. */
    public static final int SOURCE_PORT_OFFSET = 0;

    /** Offset of the destination port. */
    public static final int DESTINATION_PORT_OFFSET = 2;

    /** Offset of the sequence number. */
    public static final int SEQUENCE_NUMBER_OFFSET = 4;

    /** Offset of the acknowledgment number. */
    public static final int ACKNOWLEDGMENT_NUMBER_OFFSET = 8;

    /** Offset of the data offset nibble and reserved bits. */
    public static final int DATA_OFFSET_OFFSET = 12;

    /** Offset of the control bits. */
    public static final int FLAGS_OFFSET = 13;

    /** Offset of the window. */
    public static final int WINDOW_OFFSET = 14;

    /** Offset of the checksum. */
    public static final int CHECKSUM_OFFSET = 16;

    /** Offset of the urgent pointer. */
    public static final int URGENT_POINTER_OFFSET = 18;

    /** Holds {@code 20 <= dataOffset() <= length}. */
    @Override
    protected boolean holdsHeader(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length < HEADER_LENGTH)
        {
            return false;
        }
        final int dataOffset = ((buffer.getByte(offset + DATA_OFFSET_OFFSET) & 0xFF) >>> 4) * 4;
        return dataOffset >= HEADER_LENGTH && dataOffset <= length;
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

    /** Sequence number, raw 32 bits, big endian; compare with {@link Seq}. */
    public int sequenceNumber()
    {
        return buffer().getInt(offset() + SEQUENCE_NUMBER_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** Acknowledgment number, raw 32 bits, big endian; compare with {@link Seq}. */
    public int acknowledgmentNumber()
    {
        return buffer().getInt(offset() + ACKNOWLEDGMENT_NUMBER_OFFSET, ByteOrder.BIG_ENDIAN);
    }

    /** Data offset in bytes: the header length, options included (field times 4). */
    public int dataOffset()
    {
        return ((buffer().getByte(offset() + DATA_OFFSET_OFFSET) & 0xFF) >>> 4) * 4;
    }

    /** The 4 reserved bits after the data offset (RFC 9293: must be zero, ignored on receipt). */
    public int reserved()
    {
        return buffer().getByte(offset() + DATA_OFFSET_OFFSET) & 0x0F;
    }

    /** Control bits CWR..FIN, unsigned 8 bits. */
    public int flags()
    {
        return buffer().getByte(offset() + FLAGS_OFFSET) & 0xFF;
    }

    /** True when every bit of {@code mask} is set in {@link #flags()}. */
    public boolean hasFlags(final int mask)
    {
        return (flags() & mask) == mask;
    }

    /** Window, unsigned 16 bits, big endian, before window scaling. */
    public int window()
    {
        return buffer().getShort(offset() + WINDOW_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Checksum field, unsigned 16 bits, big endian. */
    public int checksum()
    {
        return buffer().getShort(offset() + CHECKSUM_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Urgent pointer, unsigned 16 bits, big endian. */
    public int urgentPointer()
    {
        return buffer().getShort(offset() + URGENT_POINTER_OFFSET, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    /** Absolute index of the options. */
    public int optionsOffset()
    {
        return offset() + HEADER_LENGTH;
    }

    /** Length of the options: {@code dataOffset() - 20}. */
    public int optionsLength()
    {
        return dataOffset() - HEADER_LENGTH;
    }

    /** Absolute index of the payload: {@code offset() + dataOffset()}. */
    public int payloadOffset()
    {
        return offset() + dataOffset();
    }

    /** Length of the payload: {@code length() - dataOffset()}. */
    public int payloadLength()
    {
        return length() - dataOffset();
    }

    /**
     * Checksum over the pseudo header (RFC 9293 section 3.1) and the wrapped segment, with the
     * checksum field taken as zero.
     */
    public int computeChecksum(final int sourceIp, final int destinationIp)
    {
        long sum = Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_TCP, length());
        sum = Checksum.partial(buffer(), offset(), CHECKSUM_OFFSET, sum);
        sum = Checksum.partial(buffer(), offset() + URGENT_POINTER_OFFSET, length() - URGENT_POINTER_OFFSET, sum);
        return Checksum.finish(sum);
    }

    /** True when the sum over pseudo header and segment, checksum included, is all ones. */
    public boolean checksumValid(final int sourceIp, final int destinationIp)
    {
        final long sum = Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_TCP, length());
        return Checksum.finish(Checksum.partial(buffer(), offset(), length(), sum)) == 0;
    }

    /** Set the source port. */
    public TcpHeader sourcePort(final int port)
    {
        mutable().putShort(offset() + SOURCE_PORT_OFFSET, (short)port, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the destination port. */
    public TcpHeader destinationPort(final int port)
    {
        mutable().putShort(offset() + DESTINATION_PORT_OFFSET, (short)port, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the sequence number. */
    public TcpHeader sequenceNumber(final int seq)
    {
        mutable().putInt(offset() + SEQUENCE_NUMBER_OFFSET, seq, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the acknowledgment number. */
    public TcpHeader acknowledgmentNumber(final int ack)
    {
        mutable().putInt(offset() + ACKNOWLEDGMENT_NUMBER_OFFSET, ack, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /**
     * Set the data offset, given in bytes (a multiple of 4, 20..60). Writes the whole byte, so the
     * reserved bits become zero as RFC 9293 requires of a sender.
     */
    public TcpHeader dataOffset(final int dataOffsetBytes)
    {
        mutable().putByte(offset() + DATA_OFFSET_OFFSET, (byte)((dataOffsetBytes >>> 2) << 4));
        return this;
    }

    /** Set the control bits. */
    public TcpHeader flags(final int flags)
    {
        mutable().putByte(offset() + FLAGS_OFFSET, (byte)flags);
        return this;
    }

    /** Set the window. */
    public TcpHeader window(final int window)
    {
        mutable().putShort(offset() + WINDOW_OFFSET, (short)window, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the checksum field. */
    public TcpHeader checksum(final int checksum)
    {
        mutable().putShort(offset() + CHECKSUM_OFFSET, (short)checksum, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /** Set the urgent pointer. */
    public TcpHeader urgentPointer(final int urgentPointer)
    {
        mutable().putShort(offset() + URGENT_POINTER_OFFSET, (short)urgentPointer, ByteOrder.BIG_ENDIAN);
        return this;
    }

    /**
     * Store only the folded pseudo-header sum (not complemented) for a device that completes the checksum over
     * the wrapped segment ({@code NetDevice.TX_L4_CHECKSUM_PARTIAL}).
     */
    public TcpHeader partialChecksum(final int sourceIp, final int destinationIp)
    {
        return checksum(Checksum.fold(Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_TCP, length())));
    }

    /** Compute and store the checksum over pseudo header and the wrapped segment (one pass: the field is zeroed first). */
    public TcpHeader updateChecksum(final int sourceIp, final int destinationIp)
    {
        checksum(0);
        final long sum = Checksum.pseudoHeaderIpv4(sourceIp, destinationIp, Ipv4Header.PROTOCOL_TCP, length());
        return checksum(Checksum.finish(Checksum.partial(buffer(), offset(), length(), sum)));
    }
}
