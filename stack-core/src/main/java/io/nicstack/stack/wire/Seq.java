package io.nicstack.stack.wire;

/**
 * Sequence-number arithmetic modulo 2^32 (RFC 9293 section 3.4, RFC 1982 serial number
 * arithmetic) on raw {@code int} values.
 *
 * <p>Comparisons are only meaningful when the two numbers are less than 2^31 apart, which the
 * window limits of TCP guarantee. Never compare sequence numbers with {@code <} on raw values.
 */
public final class Seq
{
    private Seq()
    {
    }

    /** {@code a} is before {@code b}. */
    public static boolean lt(final int a, final int b)
    {
        return a - b < 0;
    }

    /** {@code a} is before or equal to {@code b}. */
    public static boolean le(final int a, final int b)
    {
        return a - b <= 0;
    }

    /** {@code a} is after {@code b}. */
    public static boolean gt(final int a, final int b)
    {
        return a - b > 0;
    }

    /** {@code a} is after or equal to {@code b}. */
    public static boolean ge(final int a, final int b)
    {
        return a - b >= 0;
    }

    /** {@code a + n} modulo 2^32. */
    public static int add(final int a, final int n)
    {
        return a + n;
    }

    /** Signed distance {@code a - b} modulo 2^32 (positive when {@code a} is after {@code b}). */
    public static int diff(final int a, final int b)
    {
        return a - b;
    }

    /** The later of the two. */
    public static int max(final int a, final int b)
    {
        return a - b >= 0 ? a : b;
    }

    /** The earlier of the two. */
    public static int min(final int a, final int b)
    {
        return a - b <= 0 ? a : b;
    }

    /**
     * {@code lo <= x < hiExclusive} modulo 2^32; false when the range is empty, i.e. when
     * {@code hiExclusive} is not after {@code lo}.
     */
    public static boolean inRange(final int x, final int lo, final int hiExclusive)
    {
        // Unsigned distance from lo: correct for ranges that straddle 2^32.
        final int span = hiExclusive - lo;
        return span > 0 && Integer.compareUnsigned(x - lo, span) < 0;
    }
}
