package io.nicstack.stack.wire;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * What every header flyweight shares: the wrapped region and the wrap and checked-wrap contract.
 *
 * <p>A view covers {@code [offset, offset + length)} of a buffer it holds by composition, never by
 * extending {@code UnsafeBuffer}. Subclasses add offset constants and typed accessors, reading
 * through {@link #buffer()} and writing through {@link #mutable()}, and say in
 * {@link #holdsHeader} what their {@link #wrapChecked} needs beyond the region lying inside the
 * buffer.
 *
 * @param <T> the concrete view, returned by the fluent {@code wrap} methods.
 */
abstract class HeaderView<T extends HeaderView<T>>
{
    private DirectBuffer buffer;
    private MutableDirectBuffer mutableBuffer;
    private int offset;
    private int length;

    /**
     * Wrap without checks, for emitting or for input already validated. Setters work when the
     * buffer is a {@link MutableDirectBuffer}.
     */
    public final T wrap(final DirectBuffer buffer, final int offset, final int length)
    {
        this.buffer = buffer;
        this.mutableBuffer = buffer instanceof MutableDirectBuffer ? (MutableDirectBuffer)buffer : null;
        this.offset = offset;
        this.length = length;
        return self();
    }

    /** Wrap a writable buffer without checks, for emitting. */
    public final T wrap(final MutableDirectBuffer buffer, final int offset, final int length)
    {
        this.buffer = buffer;
        this.mutableBuffer = buffer;
        this.offset = offset;
        this.length = length;
        return self();
    }

    /**
     * Wrap untrusted input: true only when the region lies inside the buffer and holds the header
     * (see {@link #holdsHeader}), so that no getter can read out of bounds. On false the view is
     * left unchanged.
     */
    public final boolean wrapChecked(final DirectBuffer buffer, final int offset, final int length)
    {
        if (!Bounds.regionFits(buffer, offset, length) || !holdsHeader(buffer, offset, length))
        {
            return false;
        }
        wrap(buffer, offset, length);
        return true;
    }

    /** The wrapped buffer. */
    public final DirectBuffer buffer()
    {
        return buffer;
    }

    /** Index of the first header byte in the buffer. */
    public final int offset()
    {
        return offset;
    }

    /** Length of the wrapped region: the header and whatever was wrapped after it (payload, padding). */
    public final int length()
    {
        return length;
    }

    /**
     * The wrapped buffer for setters; null when it was wrapped as a read-only {@link DirectBuffer},
     * so a setter then fails with a {@link NullPointerException}.
     */
    protected final MutableDirectBuffer mutable()
    {
        return mutableBuffer;
    }

    /**
     * True when {@code [offset, offset + length)}, already known to lie inside the buffer, holds
     * every byte the getters read; called by {@link #wrapChecked} before the view changes.
     */
    protected abstract boolean holdsHeader(DirectBuffer buffer, int offset, int length);

    @SuppressWarnings("unchecked")
    private T self()
    {
        return (T)this;
    }
}
