package io.nicstack.nic;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** Scripted device for decorator tests: offered frames are received, committed ones recorded; allocates freely. */
public final class FakeDevice implements NetDevice
{
    public final ArrayDeque<byte[]> toReceive = new ArrayDeque<>();
    public final List<byte[]> committed = new ArrayList<>();
    public final UnsafeBuffer rxBuffer;
    /** Receive flags handed with every received frame. */
    public int receiveFlags;
    public int flushed;
    public boolean closed;

    private final int mtu;
    private final UnsafeBuffer txBuffer;

    public FakeDevice(final int mtu)
    {
        this.mtu = mtu;
        this.rxBuffer = new UnsafeBuffer(new byte[maxFrameLength() + 10]);
        this.txBuffer = new UnsafeBuffer(new byte[maxFrameLength()]);
    }

    @Override
    public String name()
    {
        return "fake";
    }

    @Override
    public int mtu()
    {
        return mtu;
    }

    /** Delivers at offset 10 of a shared buffer, so decorators must honour the offset. */
    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        int frames = 0;
        while (frames < Math.min(limit, BURST) && !toReceive.isEmpty())
        {
            final byte[] frame = toReceive.poll();
            rxBuffer.putBytes(10, frame);
            handler.onFrame(rxBuffer, 10, frame.length, receiveFlags);
            frames++;
        }
        return frames;
    }

    @Override
    public MutableDirectBuffer claim()
    {
        return txBuffer;
    }

    @Override
    public void commit(final int length)
    {
        final byte[] frame = new byte[length];
        txBuffer.getBytes(0, frame);
        committed.add(frame);
    }

    @Override
    public void abort()
    {
    }

    @Override
    public int flush()
    {
        flushed++;
        return 0;
    }

    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        return !toReceive.isEmpty();
    }

    @Override
    public long droppedFrames()
    {
        return 0;
    }

    @Override
    public void close()
    {
        closed = true;
    }
}
