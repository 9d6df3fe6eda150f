package io.nicstack.nic;

import org.agrona.MutableDirectBuffer;

/**
 * Base of a device that wraps another ({@link io.nicstack.nic.fault.FaultInjectingDevice},
 * {@link io.nicstack.nic.pcap.PcapWritingDevice}): every call goes to the inner device until a subclass overrides it,
 * so a decorator states only what it changes, and a counter added to {@link NetDevice} passes through them all.
 *
 * <p>Two calls are deliberately not forwarded: {@link #transmitChecksumOffload()} stays false and
 * {@link #commit(int, int)} keeps the interface's default (no flags), because a decorator that sees transmitted frames
 * sees them before the inner device would complete their checksums. One that offers offload overrides both.
 */
public abstract class NetDeviceDecorator implements NetDevice
{
    protected final NetDevice inner;

    protected NetDeviceDecorator(final NetDevice inner)
    {
        this.inner = inner;
    }

    /** The decorated device. */
    public NetDevice inner()
    {
        return inner;
    }

    @Override
    public String name()
    {
        return inner.name();
    }

    @Override
    public int mtu()
    {
        return inner.mtu();
    }

    @Override
    public int maxFrameLength()
    {
        return inner.maxFrameLength();
    }

    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        return inner.receive(handler, limit);
    }

    @Override
    public MutableDirectBuffer claim()
    {
        return inner.claim();
    }

    @Override
    public void commit(final int length)
    {
        inner.commit(length);
    }

    @Override
    public void abort()
    {
        inner.abort();
    }

    @Override
    public int flush()
    {
        return inner.flush();
    }

    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        return inner.awaitReadable(timeoutNanos);
    }

    @Override
    public long droppedFrames()
    {
        return inner.droppedFrames();
    }

    @Override
    public long receiveSuperframes()
    {
        return inner.receiveSuperframes();
    }

    @Override
    public long receiveSuperframeSegments()
    {
        return inner.receiveSuperframeSegments();
    }

    @Override
    public long transmitSuperframes()
    {
        return inner.transmitSuperframes();
    }

    @Override
    public long transmitSuperframeSegments()
    {
        return inner.transmitSuperframeSegments();
    }

    @Override
    public long transmitSuperframesRefused()
    {
        return inner.transmitSuperframesRefused();
    }

    @Override
    public void close()
    {
        inner.close();
    }
}
