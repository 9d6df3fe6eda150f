package io.nicstack.stack.storage;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * A TCP send buffer addressed by absolute stream offset (a 64-bit count of bytes since the first
 * payload byte, so it never wraps). The application appends at {@link #end()}; TCP reads any byte
 * in {@code [start(), end())} as often as it needs (first transmission, retransmissions) and
 * releases bytes only when they are acknowledged. The ring-pipes issue backs this with a
 * shared-memory TX pipe, so implementations must not assume who appends.
 */
public interface SendBuffer
{
    /** Offset of the oldest byte still held (the first unacknowledged byte). */
    long start();

    /** Offset one past the newest byte appended. */
    long end();

    /** Total capacity in bytes. */
    int capacity();

    /** Bytes that can still be appended: {@code capacity() - (end() - start())}. */
    default int free()
    {
        return capacity() - (int)(end() - start());
    }

    /** Append up to {@code length} bytes; returns how many fit. */
    int append(DirectBuffer source, int index, int length);

    /**
     * Copy {@code length} bytes starting at stream {@code offset} into {@code destination}: {@code [offset, offset +
     * length)} must lie within [start, end), so {@code offset} lies in [start, end), except that a zero-length read at
     * {@code end()} (a FIN-only segment at SND.NXT) is allowed and copies nothing.
     */
    void read(long offset, MutableDirectBuffer destination, int index, int length);

    /** Free every byte before {@code offset} (acknowledged); {@code offset} must lie in [start, end]. */
    void release(long offset);
}
