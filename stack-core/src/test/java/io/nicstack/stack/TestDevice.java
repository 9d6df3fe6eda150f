package io.nicstack.stack;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;

/** A scripted device for segment-level tests: frames are injected by the test and transmitted ones collected. */
public final class TestDevice implements NetDevice
{
    private final int mtu;
    private final ArrayDeque<byte[]> inbound = new ArrayDeque<>();
    private final List<byte[]> sent = new ArrayList<>();
    private final UnsafeBuffer txBuffer;
    private final UnsafeBuffer rxBuffer;
    private boolean claimed;
    private int rxFlags;
    private boolean transmitChecksumOffload;
    private int partialCommits;
    private final List<String> partialChecksumErrors = new ArrayList<>();

    public TestDevice(final int mtu)
    {
        this.mtu = mtu;
        this.txBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(mtu + ETHERNET_HEADER_LENGTH));
        this.rxBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(65536 + 64));
    }

    /** Receive flags ({@link FrameHandler#RX_L4_CHECKSUM_TRUSTED}) handed up with every frame from now on. */
    public TestDevice rxFlags(final int flags)
    {
        rxFlags = flags;
        return this;
    }

    /**
     * Offer transmit checksum offload (set before the stack is built: it asks once). Frames committed with
     * {@link #TX_L4_CHECKSUM_PARTIAL} must carry the folded pseudo-header sum in the TCP/UDP checksum field
     * (any other value is recorded in {@link #partialChecksumErrors()}); the device then completes the checksum
     * as a NIC would, so what {@link #takeSent()} returns is what the wire would carry.
     */
    public TestDevice transmitChecksumOffload(final boolean offload)
    {
        transmitChecksumOffload = offload;
        return this;
    }

    @Override
    public boolean transmitChecksumOffload()
    {
        return transmitChecksumOffload;
    }

    /** Frames committed with {@link #TX_L4_CHECKSUM_PARTIAL} so far. */
    public int partialCommits()
    {
        return partialCommits;
    }

    /** Contract violations seen in partial-checksum commits. */
    public List<String> partialChecksumErrors()
    {
        return partialChecksumErrors;
    }

    public void inject(final byte[] frame)
    {
        inbound.add(frame);
    }

    /** Frames transmitted since the last call. */
    public List<byte[]> takeSent()
    {
        final List<byte[]> copy = new ArrayList<>(sent);
        sent.clear();
        return copy;
    }

    @Override
    public String name()
    {
        return "test";
    }

    @Override
    public int mtu()
    {
        return mtu;
    }

    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        int n = 0;
        while (n < limit && !inbound.isEmpty())
        {
            final byte[] frame = inbound.poll();
            // An exactly sized buffer: any read past the frame throws IndexOutOfBoundsException.
            final UnsafeBuffer exact = new UnsafeBuffer(rxBuffer, 0, frame.length);
            exact.putBytes(0, frame);
            handler.onFrame(exact, 0, frame.length, rxFlags);
            n++;
        }
        return n;
    }

    @Override
    public MutableDirectBuffer claim()
    {
        if (claimed)
        {
            throw new IllegalStateException("claim without commit");
        }
        claimed = true;
        txBuffer.setMemory(0, txBuffer.capacity(), (byte)0xA5);
        return txBuffer;
    }

    @Override
    public void commit(final int length, final int flags)
    {
        if (flags == 0)
        {
            commit(length);
            return;
        }
        if (flags != TX_L4_CHECKSUM_PARTIAL || !transmitChecksumOffload)
        {
            throw new IllegalArgumentException("unexpected transmit flags " + flags);
        }
        partialCommits++;
        completePartialChecksum(length);
        commit(length);
    }

    /** What the NIC does for NEEDS_CSUM: check the pseudo-header sum is there, then sum from the L4 header on. */
    private void completePartialChecksum(final int length)
    {
        final io.nicstack.stack.wire.Ipv4Header ip = new io.nicstack.stack.wire.Ipv4Header().wrap(txBuffer, 14, length - 14);
        final int l4 = 14 + ip.headerLength();
        final int l4Length = ip.totalLength() - ip.headerLength();
        final int protocol = ip.protocol();
        final int field = l4 + (protocol == io.nicstack.stack.wire.Ipv4Header.PROTOCOL_TCP ? 16 : 6);
        if (protocol != io.nicstack.stack.wire.Ipv4Header.PROTOCOL_TCP && protocol != io.nicstack.stack.wire.Ipv4Header.PROTOCOL_UDP
            || ip.moreFragments() || ip.fragmentOffset() != 0)
        {
            partialChecksumErrors.add("not a whole TCP/UDP datagram: protocol " + protocol);
            return;
        }
        final int expected = io.nicstack.stack.wire.Checksum.fold(
            io.nicstack.stack.wire.Checksum.pseudoHeaderIpv4(ip.source(), ip.destination(), protocol, l4Length));
        final int actual = txBuffer.getShort(field, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF;
        if (actual != expected)
        {
            partialChecksumErrors.add("checksum field " + Integer.toHexString(actual) + ", pseudo-header sum " + Integer.toHexString(expected));
        }
        final int checksum = io.nicstack.stack.wire.Checksum.compute(txBuffer, l4, l4Length);
        txBuffer.putShort(field, (short)(protocol == io.nicstack.stack.wire.Ipv4Header.PROTOCOL_UDP && checksum == 0 ? 0xFFFF : checksum),
            java.nio.ByteOrder.BIG_ENDIAN);
    }

    @Override
    public void commit(final int length)
    {
        if (!claimed)
        {
            throw new IllegalStateException("commit without claim");
        }
        claimed = false;
        final byte[] frame = new byte[length];
        txBuffer.getBytes(0, frame);
        sent.add(frame);
    }

    @Override
    public void abort()
    {
        claimed = false;
    }

    @Override
    public int flush()
    {
        return 0;
    }

    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        return !inbound.isEmpty();
    }

    @Override
    public long droppedFrames()
    {
        return 0;
    }

    @Override
    public void close()
    {
    }
}
