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

    public TestDevice(final int mtu)
    {
        this.mtu = mtu;
        this.txBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(mtu + ETHERNET_HEADER_LENGTH));
        this.rxBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(65536 + 64));
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
            handler.onFrame(exact, 0, frame.length);
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
