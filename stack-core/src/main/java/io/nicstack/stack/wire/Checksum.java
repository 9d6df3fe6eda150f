package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;

/**
 * The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
 *
 * <p>{@link #partial} accumulates 16-bit big-endian words into a {@code long} without folding, so
 * several regions (pseudo header, header, payload) can be summed and folded once by
 * {@link #finish}. Because 2^16 is congruent to 1 modulo 0xFFFF, adding 32-bit (or 64-bit) chunks
 * and folding at the end gives the same ones' complement sum as adding 16-bit words (RFC 1071
 * section 2 (C), "parallel summation").
 *
 * <p>A region that contains a correct checksum field verifies as {@code compute(...) == 0}.
 */
public final class Checksum
{
    private Checksum()
    {
    }

    /**
     * Add the 16-bit big-endian words of {@code buffer[offset, offset + length)} to {@code acc}
     * without folding. An odd trailing byte is padded with zero on the right (RFC 1071 section 4.1),
     * so only the last region of a chain may have an odd length.
     *
     * <p>The returned value is not the literal word sum (words are added in 32-bit pairs), only
     * congruent to it modulo 0xFFFF: use it solely as the {@code acc} of further partial sums or
     * with {@link #finish}.
     *
     * @return the new unfolded accumulator.
     */
    public static long partial(final DirectBuffer buffer, final int offset, final int length, final long acc)
    {
        long sum = acc;
        int i = offset;
        final int end = offset + length;

        // Two 32-bit halves per 8-byte read: each iteration adds at most 2^33, so the long cannot
        // overflow before 2^30 iterations (8 GiB), far beyond any frame.
        final int longEnd = end - 7;
        while (i < longEnd)
        {
            final long v = buffer.getLong(i, ByteOrder.BIG_ENDIAN);
            sum += (v >>> 32) + (v & 0xFFFF_FFFFL);
            i += 8;
        }

        if (end - i >= 4)
        {
            sum += buffer.getInt(i, ByteOrder.BIG_ENDIAN) & 0xFFFF_FFFFL;
            i += 4;
        }
        if (end - i >= 2)
        {
            sum += buffer.getShort(i, ByteOrder.BIG_ENDIAN) & 0xFFFF;
            i += 2;
        }
        if (end - i == 1)
        {
            sum += (buffer.getByte(i) & 0xFF) << 8;
        }

        return sum;
    }

    /**
     * Unfolded sum of the IPv4 pseudo header (RFC 9293 section 3.1, RFC 768): source, destination,
     * zero + protocol, and the transport length.
     */
    public static long pseudoHeaderIpv4(final int source, final int destination, final int protocol, final int l4Length)
    {
        return (source >>> 16) + (source & 0xFFFF) +
            (destination >>> 16) + (destination & 0xFFFF) +
            (protocol & 0xFF) +
            (l4Length & 0xFFFF_FFFFL);
    }

    /**
     * Fold the carries of {@code acc} into 16 bits and return the ones' complement, i.e. the value
     * to store in a checksum field (or 0 when verifying a region that includes a correct one).
     */
    public static int finish(final long acc)
    {
        long sum = acc;
        while ((sum >>> 16) != 0)
        {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~(int)sum & 0xFFFF;
    }

    /** Internet checksum of {@code buffer[offset, offset + length)}: {@code finish(partial(..., 0))}. */
    public static int compute(final DirectBuffer buffer, final int offset, final int length)
    {
        return finish(partial(buffer, offset, length, 0));
    }

    /**
     * Checksum after a 16-bit field changed from {@code oldValue} to {@code newValue}.
     * RFC 1624 eqn. 3: {@code HC' = ~(~HC + ~m + m')}, which, unlike eqn. 2, never yields -0.
     */
    public static int update16(final int oldChecksum, final int oldValue, final int newValue)
    {
        final long sum = (~oldChecksum & 0xFFFF) + (~oldValue & 0xFFFF) + (newValue & 0xFFFF);
        return finish(sum);
    }

    /** Checksum after a 32-bit field (e.g. an IPv4 address) changed; RFC 1624 eqn. 3 on both halves. */
    public static int update32(final int oldChecksum, final int oldValue, final int newValue)
    {
        final long sum = (~oldChecksum & 0xFFFF) +
            (~(oldValue >>> 16) & 0xFFFF) + (~oldValue & 0xFFFF) +
            (newValue >>> 16) + (newValue & 0xFFFF);
        return finish(sum);
    }
}
