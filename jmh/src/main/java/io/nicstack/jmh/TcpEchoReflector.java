package io.nicstack.jmh;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.stack.wire.Checksum;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.TcpHeader;

/**
 * The far end of {@link PipeRoundTripBenchmark#nicstackTcpReflect}: a TCP echo peer that costs next to nothing,
 * as the baseline's echo thread does, so the round trip is the daemon's own path. It answers each data segment
 * with one segment carrying the same payload back, as an established echo peer that replies at once would:
 * addresses and ports swapped, {@code SEQ = the segment's ACK} (the peer has nothing else in flight),
 * {@code ACK = SEQ + payload}, timestamps swapped (TSecr echoes the segment's TSval; TSval repeats the peer's own
 * last value, which the segment echoed), ACK|PSH, a fixed window. Segments without payload (pure ACKs) need no
 * answer. It takes over an established connection from a real stack (whose handshake set the options) and knows
 * only the layout that connection uses: IPv4 without options, TCP with NOP, NOP, timestamps.
 *
 * <p>Checksums: a frame that arrived trusted (sent with a partial checksum over an offloading wire) goes back the
 * same way, its pseudo-header sum unchanged by the swaps; otherwise the TCP checksum is computed in full. Nothing
 * allocates.
 */
final class TcpEchoReflector implements FrameHandler
{
    private static final int IP_AT = EthernetFrame.HEADER_LENGTH;
    private static final int TCP_AT = IP_AT + Ipv4Header.MIN_HEADER_LENGTH;
    private static final int TIMESTAMPS_LENGTH = 12;
    private static final int TSVAL_AT = TCP_AT + TcpHeader.HEADER_LENGTH + 4;
    private static final int TSECR_AT = TSVAL_AT + 4;
    private static final int WINDOW = 0xFFFF;
    private static final int ACK_PSH = 0x18;

    private final NetDevice device;
    long echoed;
    long ignored;

    TcpEchoReflector(final NetDevice device)
    {
        this.device = device;
    }

    /** Answer what arrived; returns the frames read. */
    int poll()
    {
        final int n = device.receive(this, 64);
        if (n > 0)
        {
            device.flush();
        }
        return n;
    }

    @Override
    public void onFrame(final DirectBuffer frame, final int offset, final int length)
    {
        onFrame(frame, offset, length, 0);
    }

    @Override
    public void onFrame(final DirectBuffer in, final int offset, final int length, final int flags)
    {
        final int ipLength = in.getShort(offset + IP_AT + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        final int tcpHeaderLength = ((in.getByte(offset + TCP_AT + 12) & 0xF0) >>> 4) * 4;
        final int payload = ipLength - Ipv4Header.MIN_HEADER_LENGTH - tcpHeaderLength;
        if (payload <= 0 || (in.getByte(offset + IP_AT) & 0x0F) != 5 ||
            tcpHeaderLength != TcpHeader.HEADER_LENGTH + TIMESTAMPS_LENGTH)
        {
            ignored++;
            return;
        }
        final int frameLength = IP_AT + ipLength;
        final MutableDirectBuffer out = device.claim();
        out.putBytes(0, in, offset, frameLength);
        // Ethernet: swap MACs.
        out.putBytes(0, in, offset + 6, 6);
        out.putBytes(6, in, offset, 6);
        // IPv4: swap addresses (the header checksum, a sum of the same words, stays valid).
        out.putInt(IP_AT + 12, in.getInt(offset + IP_AT + 16));
        out.putInt(IP_AT + 16, in.getInt(offset + IP_AT + 12));
        // TCP: swap ports, sequence numbers and timestamps.
        out.putShort(TCP_AT, in.getShort(offset + TCP_AT + 2));
        out.putShort(TCP_AT + 2, in.getShort(offset + TCP_AT));
        final int seq = in.getInt(offset + TCP_AT + TcpHeader.SEQUENCE_NUMBER_OFFSET, ByteOrder.BIG_ENDIAN);
        final int ack = in.getInt(offset + TCP_AT + TcpHeader.ACKNOWLEDGMENT_NUMBER_OFFSET, ByteOrder.BIG_ENDIAN);
        out.putInt(TCP_AT + TcpHeader.SEQUENCE_NUMBER_OFFSET, ack, ByteOrder.BIG_ENDIAN);
        out.putInt(TCP_AT + TcpHeader.ACKNOWLEDGMENT_NUMBER_OFFSET, seq + payload, ByteOrder.BIG_ENDIAN);
        out.putByte(TCP_AT + 13, (byte)ACK_PSH);
        out.putShort(TCP_AT + 14, (short)WINDOW, ByteOrder.BIG_ENDIAN);
        out.putInt(TSVAL_AT, in.getInt(offset + TSECR_AT));
        out.putInt(TSECR_AT, in.getInt(offset + TSVAL_AT));
        final int tcpLength = ipLength - Ipv4Header.MIN_HEADER_LENGTH;
        if ((flags & RX_L4_CHECKSUM_TRUSTED) != 0 && device.transmitChecksumOffload())
        {
            device.commit(frameLength, NetDevice.TX_L4_CHECKSUM_PARTIAL); // the pseudo-header sum is unchanged
        }
        else
        {
            out.putShort(TCP_AT + TcpHeader.CHECKSUM_OFFSET, (short)0);
            final long pseudo = Checksum.pseudoHeaderIpv4(out.getInt(IP_AT + 12, ByteOrder.BIG_ENDIAN),
                out.getInt(IP_AT + 16, ByteOrder.BIG_ENDIAN), 6, tcpLength);
            out.putShort(TCP_AT + TcpHeader.CHECKSUM_OFFSET,
                (short)Checksum.finish(Checksum.partial(out, TCP_AT, tcpLength, pseudo)), ByteOrder.BIG_ENDIAN);
            device.commit(frameLength);
        }
        echoed++;
    }
}
