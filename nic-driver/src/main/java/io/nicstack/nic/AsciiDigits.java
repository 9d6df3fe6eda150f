package io.nicstack.nic;

/**
 * Numbers from a command line or a spec as their usage writes them: ASCII digits 0 to 9 alone. Integer.parseInt,
 * Long.parseLong, Double.parseDouble and BigDecimal also take a sign and digits of any script (Arabic-Indic,
 * fullwidth), which no other tool reading the same command line would. Here, in the lowest module, for the daemon's
 * options, the stack's config and the fault injector's spec alike.
 */
public final class AsciiDigits
{
    private AsciiDigits()
    {
    }

    /** Whether {@code text} is one or more of the ASCII digits 0 to 9. */
    public static boolean isDigits(final CharSequence text)
    {
        return isDigits(text, 0, text.length());
    }

    /** Whether {@code text} from {@code from} to {@code to} (exclusive) is one or more of the ASCII digits 0 to 9. */
    public static boolean isDigits(final CharSequence text, final int from, final int to)
    {
        if (from >= to)
        {
            return false;
        }
        for (int i = from; i < to; i++)
        {
            final char c = text.charAt(i);
            if (c < '0' || c > '9')
            {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code text}, ASCII digits alone (leading zeros allowed), as an int.
     *
     * @throws NumberFormatException (an IllegalArgumentException) naming {@code text} when it is anything else, or more
     *                               than an int holds.
     */
    public static int parseInt(final String text)
    {
        final long value = parseLong(text, 0, text.length());
        if (value > Integer.MAX_VALUE)
        {
            throw new NumberFormatException("more than " + Integer.MAX_VALUE + ": '" + text + "'");
        }
        return (int)value;
    }

    /**
     * {@code text} from {@code from} to {@code to} (exclusive), ASCII digits alone (leading zeros allowed), as a long.
     *
     * @throws NumberFormatException (an IllegalArgumentException) naming the digits when they are anything else, or
     *                               more than a long holds.
     */
    public static long parseLong(final CharSequence text, final int from, final int to)
    {
        if (!isDigits(text, from, to))
        {
            throw new NumberFormatException("not ASCII digits: '" + text.subSequence(from, Math.max(from, to)) + "'");
        }
        long value = 0;
        for (int i = from; i < to; i++)
        {
            final int digit = text.charAt(i) - '0';
            if (value > (Long.MAX_VALUE - digit) / 10)
            {
                throw new NumberFormatException("more than " + Long.MAX_VALUE + ": '" + text.subSequence(from, to) + "'");
            }
            value = value * 10 + digit;
        }
        return value;
    }
}
