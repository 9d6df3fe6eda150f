package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

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
        // One explicit range check (always on, whatever agrona.disable.bounds.checks says), then raw loads:
        // per-read bounds checks cost a third of the loop.
        buffer.boundsCheck(offset, length);
        final byte[] array = buffer.byteArray();
        final long base = buffer.addressOffset() + offset;
        final int words = length & ~7;

        // The bulk as native-order 64-bit words, each split into two 32-bit halves so the long never overflows
        // (2^33 per word and accumulator: 2^30 words, far beyond any frame). Four accumulators keep four add
        // chains in flight instead of one.
        long a0 = 0;
        long a1 = 0;
        long a2 = 0;
        long a3 = 0;
        int i = 0;
        for (final int blocks = length & ~31; i < blocks; i += 32)
        {
            final long v0 = UnsafeApi.getLong(array, base + i);
            final long v1 = UnsafeApi.getLong(array, base + i + 8);
            final long v2 = UnsafeApi.getLong(array, base + i + 16);
            final long v3 = UnsafeApi.getLong(array, base + i + 24);
            a0 += (v0 >>> 32) + (v0 & 0xFFFF_FFFFL);
            a1 += (v1 >>> 32) + (v1 & 0xFFFF_FFFFL);
            a2 += (v2 >>> 32) + (v2 & 0xFFFF_FFFFL);
            a3 += (v3 >>> 32) + (v3 & 0xFFFF_FFFFL);
        }
        for (; i < words; i += 8)
        {
            final long v = UnsafeApi.getLong(array, base + i);
            a0 += (v >>> 32) + (v & 0xFFFF_FFFFL);
        }
        long words64 = a0 + a1 + a2 + a3;
        words64 = (words64 & 0xFFFF_FFFFL) + (words64 >>> 32);
        // RFC 1071 §2 (B): the sum is byte-order independent up to a byte swap, and a byte swap is a
        // multiplication by 2^8 modulo 0xFFFF (2^16 = 1): little-endian words become big-endian ones by << 8.
        long sum = acc + (Raw.LITTLE_ENDIAN ? words64 << 8 : words64);

        // The tail (under 8 bytes, starting at an even distance from offset) as big-endian words.
        final int end = offset + length;
        i = offset + words;
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

    /**
     * Fold the carries of {@code acc} into 16 bits without complementing: what a checksum field holds when a
     * device is to complete it (the pseudo-header sum of a {@code CHECKSUM_PARTIAL} segment).
     */
    public static int fold(final long acc)
    {
        return ~finish(acc) & 0xFFFF;
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
