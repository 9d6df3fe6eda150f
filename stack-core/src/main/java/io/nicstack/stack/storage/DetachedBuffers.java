package io.nicstack.stack.storage;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * What a connection in TIME-WAIT holds instead of its real buffers once it has given them back (as Linux replaces a
 * socket by a small timewait object): nothing left to send, nothing left to read, no data accepted, only the stream
 * positions the sequence-number arithmetic needs. The advertised window stays the old buffer's capacity.
 */
public final class DetachedBuffers implements SendBuffer, ReceiveBuffer, BufferProvider.ConnectionBuffers
{
    private final long sendEnd;
    private final long receiveEnd;
    private final int receiveCapacity;

    public DetachedBuffers(final long sendEnd, final long receiveEnd, final int receiveCapacity)
    {
        this.sendEnd = sendEnd;
        this.receiveEnd = receiveEnd;
        this.receiveCapacity = receiveCapacity;
    }

    @Override
    public SendBuffer sendBuffer()
    {
        return this;
    }

    @Override
    public ReceiveBuffer receiveBuffer()
    {
        return this;
    }

    // ---- send side: empty, everything acknowledged ----

    @Override
    public long start()
    {
        return sendEnd;
    }

    @Override
    public long end()
    {
        return sendEnd;
    }

    /**
     * The receive buffer's capacity, which the window the connection still advertises is computed from. The send side
     * shares the method and so the value, which is harmless: {@link #free()} is 0 whatever it is, and nothing asks a
     * detached connection for its send capacity (the stack's buffer budget reads both capacities of its own rings when
     * it takes them back, before they are swapped for this, and leaves detached connections out when they close).
     */
    @Override
    public int capacity()
    {
        return receiveCapacity;
    }

    @Override
    public int free()
    {
        return 0;
    }

    @Override
    public int append(final DirectBuffer source, final int index, final int length)
    {
        return 0;
    }

    @Override
    public void read(final long offset, final MutableDirectBuffer destination, final int index, final int length)
    {
        if (length != 0)
        {
            throw new IllegalStateException("a detached (TIME-WAIT) connection has no bytes to send");
        }
    }

    @Override
    public void release(final long offset)
    {
    }

    // ---- receive side: empty, nothing accepted ----

    @Override
    public long readPosition()
    {
        return receiveEnd;
    }

    @Override
    public long contiguousEnd()
    {
        return receiveEnd;
    }

    @Override
    public int write(final long offset, final DirectBuffer source, final int index, final int length)
    {
        return 0;
    }

    @Override
    public void discardOutOfOrderFrom(final long offset)
    {
    }

    @Override
    public int read(final MutableDirectBuffer destination, final int index, final int length)
    {
        return 0;
    }

    @Override
    public int outOfOrderRanges()
    {
        return 0;
    }

    @Override
    public long outOfOrderStart(final int i)
    {
        throw new IndexOutOfBoundsException("no out-of-order ranges: " + i);
    }

    @Override
    public long outOfOrderEnd(final int i)
    {
        throw new IndexOutOfBoundsException("no out-of-order ranges: " + i);
    }

    @Override
    public long outOfOrderBytes()
    {
        return 0;
    }
}
