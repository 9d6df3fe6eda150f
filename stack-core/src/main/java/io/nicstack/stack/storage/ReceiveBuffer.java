package io.nicstack.stack.storage;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * A TCP receive buffer addressed by absolute stream offset: it is also the reassembly buffer.
 * Segment payload is placed at its offset as it arrives; {@link #contiguousEnd()} advances only
 * over contiguous bytes; out-of-order ranges are remembered (bounded in count) and reported for
 * SACK. The application reads from {@link #readPosition()}. The advertised window is
 * {@link #window()}, so a slow reader back-pressures the sender. The ring-pipes issue backs this
 * with a shared-memory RX pipe.
 */
public interface ReceiveBuffer
{
    /** Offset of the next byte the application will read. */
    long readPosition();

    /** Offset one past the last in-order byte received. */
    long contiguousEnd();

    int capacity();

    /** Free space beyond the in-order data: what may be advertised as the receive window. */
    default int window()
    {
        return capacity() - (int)(contiguousEnd() - readPosition());
    }

    /**
     * Place {@code length} bytes that belong at stream {@code offset}. Bytes before
     * {@link #contiguousEnd()} or beyond {@code readPosition() + capacity()} are ignored.
     *
     * @return the number of bytes newly made contiguous (0 for out-of-order or duplicate data),
     *         or {@link #REJECTED} when an out-of-order segment could not be remembered (range limit).
     */
    int write(long offset, DirectBuffer source, int index, int length);

    /** Returned by {@link #write} when out-of-order data was refused. */
    int REJECTED = -1;

    /**
     * Start of the first run of bytes the last {@link #write} found already held in an out-of-order range, so did not copy
     * (RFC 2883 reports it as a duplicate); equal to {@link #lastDuplicateEnd()} when there was none. Bytes before
     * {@link #contiguousEnd()} are not counted: the caller sees those itself.
     */
    default long lastDuplicateStart()
    {
        return 0;
    }

    /** End (exclusive) of the run {@link #lastDuplicateStart()} begins. */
    default long lastDuplicateEnd()
    {
        return 0;
    }

    /**
     * Forget every out-of-order byte at or past stream {@code offset}, which must not be before {@link #contiguousEnd()}:
     * the stream ends there (the peer's FIN), so what lies beyond was never part of it. Ranges are cut, not reordered.
     */
    void discardOutOfOrderFrom(long offset);

    /** Copy up to {@code length} in-order bytes to {@code destination} and consume them; returns the count. */
    int read(MutableDirectBuffer destination, int index, int length);

    /** Bytes readable now. */
    default int readable()
    {
        return (int)(contiguousEnd() - readPosition());
    }

    /** Out-of-order ranges held, most recently updated first (RFC 2018 §4: the first SACK block reports the newest). */
    int outOfOrderRanges();

    long outOfOrderStart(int i);

    long outOfOrderEnd(int i);

    /** Bytes held out of order. */
    long outOfOrderBytes();
}
