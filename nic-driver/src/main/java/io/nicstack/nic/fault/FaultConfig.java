package io.nicstack.nic.fault;

import io.nicstack.nic.AsciiDigits;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Faults to inject in one direction of a {@link FaultInjectingDevice}; immutable.
 *
 * <p>Written as {@code loss=0.01,reorder=0.02,dup=0.01,corrupt=0.001,delay=1ms,rate=100mbps,seed=7}: probabilities
 * per frame in [0, 1] as plain decimals (ASCII digits, then a point and digits or nothing: no sign, exponent or
 * suffix), delay in ns/us/ms/s, rate of Ethernet frame bytes in bps/kbps/mbps/gbps (0 = unlimited), each a plain
 * decimal with its unit right after it, in any ASCII case ({@code 1.5ms}, {@code 100Mbps}; no sign, exponent or
 * blank), or 0 alone; the seed a 64-bit integer in ASCII digits with a minus sign or none;
 * delay and rate must come to whole ns and bps ({@code 1.5us} does, {@code 0.5ns} is refused): they are never
 * rounded.
 * {@link #toString()} prints every setting in the same form, seed included, so a failing run can be replayed with
 * {@link #parse(String)}.
 *
 * @param loss              probability that a frame is dropped.
 * @param reorder           probability that a frame is held back and sent after the next one.
 * @param duplicate         probability that a frame is delivered twice.
 * @param corrupt           probability that one bit of a frame is flipped.
 * @param delayNanos        time every frame is held before delivery.
 * @param rateBitsPerSecond policer rate on frame bytes, 0 for unlimited.
 * @param seed              seed of the random generator deciding which frames are hit.
 */
public record FaultConfig(
    double loss,
    double reorder,
    double duplicate,
    double corrupt,
    long delayNanos,
    long rateBitsPerSecond,
    long seed)
{
    /** No faults at all. */
    public static final FaultConfig NONE = new FaultConfig(0, 0, 0, 0, 0, 0, 0);

    private static final String KEYS = "loss, reorder, dup, corrupt, delay, rate, seed";
    private static final String[] DELAY_UNITS = { "ns", "us", "ms", "s" };
    private static final long[] DELAY_SCALES = { 1, 1_000, 1_000_000, 1_000_000_000 };
    private static final String[] RATE_UNITS = { "bps", "kbps", "mbps", "gbps" };
    private static final long[] RATE_SCALES = { 1, 1_000, 1_000_000, 1_000_000_000 };

    /** Validates the settings. */
    public FaultConfig
    {
        checkProbability("loss", loss);
        checkProbability("reorder", reorder);
        checkProbability("dup", duplicate);
        checkProbability("corrupt", corrupt);
        if (delayNanos < 0)
        {
            throw new IllegalArgumentException("fault delay must not be negative: " + delayNanos + "ns");
        }
        if (rateBitsPerSecond < 0)
        {
            throw new IllegalArgumentException("fault rate must not be negative: " + rateBitsPerSecond + "bps");
        }
    }

    /** The longest value parse reads; a real one (0.000001, 1.5ms, a seed of 19 digits) is far shorter. */
    static final int MAX_VALUE_LENGTH = 64;

    /** Parse {@code key=value,...}; a missing key means no such fault, a missing seed means a random one. */
    public static FaultConfig parse(final String spec)
    {
        double loss = 0;
        double reorder = 0;
        double duplicate = 0;
        double corrupt = 0;
        long delayNanos = 0;
        long rate = 0;
        Long seed = null;
        int seen = 0;

        for (final String item : spec.split(","))
        {
            final String setting = item.trim();
            if (setting.isEmpty())
            {
                continue;
            }

            final int equals = setting.indexOf('=');
            if (equals <= 0)
            {
                throw new IllegalArgumentException(
                    "fault setting '" + setting + "' is not key=value (keys: " + KEYS + ")");
            }
            final String key = setting.substring(0, equals).trim().toLowerCase(Locale.ROOT);
            final String value = setting.substring(equals + 1).trim();
            if (value.length() > MAX_VALUE_LENGTH)
            {
                // Read no further, and quote only the start: a daemon argument may hold 100,000 characters.
                throw new IllegalArgumentException("fault " + key + " value is " + value.length()
                    + " characters long (at most " + MAX_VALUE_LENGTH + "): '" + value.substring(0, 16) + "...'");
            }

            final int bit = switch (key)
            {
                case "loss" -> 1;
                case "reorder" -> 2;
                case "dup" -> 4;
                case "corrupt" -> 8;
                case "delay" -> 16;
                case "rate" -> 32;
                case "seed" -> 64;
                default -> throw new IllegalArgumentException(
                    "unknown fault key '" + key + "' in '" + spec + "' (keys: " + KEYS + ")");
            };
            if ((seen & bit) != 0)
            {
                throw new IllegalArgumentException("fault key '" + key + "' given twice in '" + spec + "'");
            }
            seen |= bit;

            switch (key)
            {
                case "loss" -> loss = parseProbability(key, value);
                case "reorder" -> reorder = parseProbability(key, value);
                case "dup" -> duplicate = parseProbability(key, value);
                case "corrupt" -> corrupt = parseProbability(key, value);
                case "delay" -> delayNanos = parseScaled(key, value, DELAY_UNITS, DELAY_SCALES);
                case "rate" -> rate = parseScaled(key, value, RATE_UNITS, RATE_SCALES);
                default -> seed = parseSeed(value);
            }
        }

        final long chosenSeed = null != seed ? seed : ThreadLocalRandom.current().nextLong();
        return new FaultConfig(loss, reorder, duplicate, corrupt, delayNanos, rate, chosenSeed);
    }

    /** The same faults with another seed. */
    public FaultConfig withSeed(final long seed)
    {
        return new FaultConfig(loss, reorder, duplicate, corrupt, delayNanos, rateBitsPerSecond, seed);
    }

    /** True when no fault is configured (the seed does not matter then). */
    public boolean isNone()
    {
        return loss == 0 && reorder == 0 && duplicate == 0 && corrupt == 0 && delayNanos == 0 && rateBitsPerSecond == 0;
    }

    /** Every setting in {@link #parse(String)} form, e.g. {@code loss=0.01,...,delay=1ms,rate=100mbps,seed=7}. */
    @Override
    public String toString()
    {
        return "loss=" + probability(loss) +
            ",reorder=" + probability(reorder) +
            ",dup=" + probability(duplicate) +
            ",corrupt=" + probability(corrupt) +
            ",delay=" + scaled(delayNanos, DELAY_UNITS, DELAY_SCALES) +
            ",rate=" + scaled(rateBitsPerSecond, RATE_UNITS, RATE_SCALES) +
            ",seed=" + seed;
    }

    private static void checkProbability(final String key, final double p)
    {
        if (!(p >= 0 && p <= 1))
        {
            throw new IllegalArgumentException("fault " + key + " must be a probability in [0, 1]: " + p);
        }
    }

    private static double parseProbability(final String key, final String value)
    {
        // Plain decimals only: Double.parseDouble also takes a sign (dup=-0 was -0.0, unequal to its own replay), an
        // exponent, an f or d suffix, hexadecimal, NaN, Infinity and digits of any script.
        if (!isPlainDecimal(value, 0, value.length()))
        {
            throw new IllegalArgumentException("fault " + key + " must be a probability in [0, 1]: '" + value + "'");
        }
        final double p = Double.parseDouble(value);
        checkProbability(key, p);
        return p;
    }

    private static long parseSeed(final String value)
    {
        // Long.parseLong also takes a plus sign and digits of any script.
        if (!AsciiDigits.isDigits(value, value.startsWith("-") ? 1 : 0, value.length()))
        {
            throw new IllegalArgumentException("fault seed must be a 64-bit integer: '" + value + "'");
        }
        try
        {
            return Long.parseLong(value);
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("fault seed must be a 64-bit integer: '" + value + "'");
        }
    }

    /**
     * A delay or rate: ASCII digits, then a point and digits or nothing, then one of {@code units} in any ASCII case
     * with nothing between ({@code 1.5ms}, {@code 100Mbps}), or {@code 0} alone. It must come to a whole number of the
     * smallest unit that a long holds: it is never rounded. BigDecimal, which read it before, also took a sign, an
     * exponent, a point with no digits on one side and digits of any script.
     */
    private static long parseScaled(final String key, final String value, final String[] units, final long[] scales)
    {
        if (value.equals("0"))
        {
            return 0;
        }
        int unit = -1;
        for (int i = 0; i < units.length; i++)
        {
            // The longest matching suffix wins: "ms" over "s", "kbps" over "bps".
            if (endsWithIgnoringAsciiCase(value, units[i]) && (unit < 0 || units[i].length() > units[unit].length()))
            {
                unit = i;
            }
        }
        if (unit < 0)
        {
            // A number followed by letters that are no unit: name them (1h is not a value without a unit).
            int letters = value.length();
            while (letters > 0 && isAsciiLetter(value.charAt(letters - 1)))
            {
                letters--;
            }
            if (letters < value.length() && isPlainDecimal(value, 0, letters))
            {
                throw new IllegalArgumentException("fault " + key + " '" + value + "': unknown unit "
                    + value.substring(letters) + "; use " + String.join(", ", Arrays.copyOf(units, units.length - 1))
                    + " or " + units[units.length - 1]);
            }
            throw new IllegalArgumentException(
                "fault " + key + " '" + value + "' needs a unit (" + String.join(", ", units) + ")");
        }

        final int end = value.length() - units[unit].length();
        if (value.startsWith("-") && isPlainDecimal(value, 1, end))
        {
            throw new IllegalArgumentException("fault " + key + " must not be negative: '" + value + "'");
        }
        if (!isPlainDecimal(value, 0, end))
        {
            throw new IllegalArgumentException("fault " + key + " '" + value + "' is not a number with a unit ("
                + String.join(", ", units) + "): ASCII digits, then a point and digits or nothing, then the unit");
        }
        return scale(key, value, end, scales[unit], units, "delay".equals(key) ? "nanoseconds" : "bits per second");
    }

    /**
     * The plain decimal {@code value} up to {@code end} (checked), times {@code scale} (a power of ten): exact, from
     * the digits alone, in time linear in them.
     */
    private static long scale(
        final String key,
        final String value,
        final int end,
        final long scale,
        final String[] units,
        final String keptIn)
    {
        final int point = value.lastIndexOf('.', end - 1);
        final int wholeEnd = point < 0 ? end : point;
        int fractionEnd = end;
        while (point >= 0 && fractionEnd > point + 1 && value.charAt(fractionEnd - 1) == '0')
        {
            fractionEnd--;
        }
        final int fractionDigits = point < 0 ? 0 : fractionEnd - (point + 1);
        long fractionScale = scale;
        for (int i = 0; i < fractionDigits && fractionScale > 1; i++)
        {
            fractionScale /= 10;
        }
        // Whole units only, never rounded: 0.5bps would quietly be 1bps (or, below one half, 0: unlimited). Trailing
        // zeros do not count (1.000bps is whole).
        if (fractionDigits > 0 && pow10(fractionDigits) > scale)
        {
            throw new IllegalArgumentException("fault " + key + " '" + value + "' is not a whole number of "
                + units[0] + " (the " + key + " is kept in " + keptIn + ")");
        }
        try
        {
            final long whole = AsciiDigits.parseLong(value, 0, wholeEnd);
            final long fraction = fractionDigits == 0 ? 0 : AsciiDigits.parseLong(value, point + 1, fractionEnd);
            return Math.addExact(Math.multiplyExact(whole, scale), fraction * fractionScale);
        }
        catch (final ArithmeticException | NumberFormatException ex)
        {
            throw new IllegalArgumentException(
                "fault " + key + " '" + value + "' is more than " + Long.MAX_VALUE + units[0]);
        }
    }

    /** 10^n, or Long.MAX_VALUE when that is more. */
    private static long pow10(final int n)
    {
        long p = 1;
        for (int i = 0; i < n; i++)
        {
            if (p > Long.MAX_VALUE / 10)
            {
                return Long.MAX_VALUE;
            }
            p *= 10;
        }
        return p;
    }

    /** Whether {@code text} from {@code from} to {@code to} is ASCII digits, then a point and digits or nothing. */
    private static boolean isPlainDecimal(final String text, final int from, final int to)
    {
        final int point = text.indexOf('.', from);
        return point < 0 || point >= to ? AsciiDigits.isDigits(text, from, to)
            : AsciiDigits.isDigits(text, from, point) && AsciiDigits.isDigits(text, point + 1, to);
    }

    /** Whether {@code text} ends with {@code lowerCaseUnit} in any ASCII case (Unicode's would take the Kelvin sign for k). */
    private static boolean endsWithIgnoringAsciiCase(final String text, final String lowerCaseUnit)
    {
        final int offset = text.length() - lowerCaseUnit.length();
        if (offset < 0)
        {
            return false;
        }
        for (int i = 0; i < lowerCaseUnit.length(); i++)
        {
            final char c = text.charAt(offset + i);
            if ((c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c) != lowerCaseUnit.charAt(i))
            {
                return false;
            }
        }
        return true;
    }

    private static boolean isAsciiLetter(final char c)
    {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z';
    }

    /** As parse takes it back: a plain decimal of Double.toString's digits (it wrote 0.0001 as 1.0E-4). */
    private static String probability(final double p)
    {
        return p == 0 ? "0" : new BigDecimal(Double.toString(p)).stripTrailingZeros().toPlainString();
    }

    private static String scaled(final long value, final String[] units, final long[] scales)
    {
        if (value == 0)
        {
            return "0";
        }
        int unit = scales.length - 1;
        while (value % scales[unit] != 0)
        {
            unit--;
        }
        return (value / scales[unit]) + units[unit];
    }
}
