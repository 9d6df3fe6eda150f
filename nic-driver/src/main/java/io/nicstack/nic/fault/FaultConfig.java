package io.nicstack.nic.fault;

import io.nicstack.nic.AsciiDigits;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Faults to inject in one direction of a {@link FaultInjectingDevice}; immutable.
 *
 * <p>Written as {@code loss=0.01,reorder=0.02,dup=0.01,corrupt=0.001,delay=1ms,rate=100mbps,seed=7}: probabilities
 * per frame in [0, 1] as plain decimals (ASCII digits, then a point and digits or nothing: no sign, exponent or
 * suffix), delay in ns/us/ms/s, rate of Ethernet frame bytes in bps/kbps/mbps/gbps (0 = unlimited), the seed a 64-bit
 * integer in ASCII digits with a minus sign or none;
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
                // Read no further: BigDecimal's stripTrailingZeros is quadratic in the digits (1.000...0s).
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
        final int point = value.indexOf('.');
        if (!AsciiDigits.isDigits(value, 0, point < 0 ? value.length() : point)
            || point >= 0 && !AsciiDigits.isDigits(value, point + 1, value.length()))
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

    private static long parseScaled(final String key, final String value, final String[] units, final long[] scales)
    {
        final String lower = value.toLowerCase(Locale.ROOT);
        int unit = -1;
        for (int i = 0; i < units.length; i++)
        {
            // The longest matching suffix wins: "ms" over "s", "kbps" over "bps".
            if (lower.endsWith(units[i]) && (unit < 0 || units[i].length() > units[unit].length()))
            {
                unit = i;
            }
        }
        if (unit >= 0)
        {
            final String number = lower.substring(0, lower.length() - units[unit].length()).trim();
            return scale(key, value, number, scales[unit], units, "delay".equals(key) ? "nanoseconds" : "bits per second");
        }
        if (lower.equals("0"))
        {
            return 0;
        }
        // A number followed by letters that are no unit: name them (1h is not a value without a unit).
        int letters = lower.length();
        while (letters > 0 && Character.isLetter(lower.charAt(letters - 1)))
        {
            letters--;
        }
        if (letters < lower.length() && isNumber(lower.substring(0, letters).trim()))
        {
            throw new IllegalArgumentException("fault " + key + " '" + value + "': unknown unit " + lower.substring(letters)
                + "; use " + String.join(", ", java.util.Arrays.copyOf(units, units.length - 1)) + " or "
                + units[units.length - 1]);
        }
        throw new IllegalArgumentException(
            "fault " + key + " '" + value + "' needs a unit (" + String.join(", ", units) + ")");
    }

    private static boolean isNumber(final String text)
    {
        try
        {
            new BigDecimal(text);
            return true;
        }
        catch (final NumberFormatException ex)
        {
            return false;
        }
    }

    private static long scale(
        final String key,
        final String value,
        final String number,
        final long scale,
        final String[] units,
        final String keptIn)
    {
        try
        {
            final BigDecimal scaled = new BigDecimal(number).multiply(BigDecimal.valueOf(scale));
            if (scaled.signum() < 0)
            {
                throw new IllegalArgumentException("fault " + key + " must not be negative: '" + value + "'");
            }
            if (scaled.signum() == 0)
            {
                return 0;
            }
            // Digits before the point, read from the exponent: setScale would first compute 10^|exponent| as a
            // BigInteger, hours of CPU for 1e300000000s. A long has 19.
            final long integerDigits = (long)scaled.precision() - scaled.scale();
            if (integerDigits > 19)
            {
                throw new ArithmeticException("more than 19 digits");
            }
            // Whole units only, never rounded: 0.5bps would quietly be 1bps (or, below one half, 0: unlimited). The
            // trailing zeros go first (1.000bps is whole); stripping reads only the digits given.
            if (scaled.stripTrailingZeros().scale() > 0)
            {
                throw new IllegalArgumentException("fault " + key + " '" + value + "' is not a whole number of "
                    + units[0] + " (the " + key + " is kept in " + keptIn + ")");
            }
            return scaled.longValueExact();
        }
        catch (final ArithmeticException | NumberFormatException ex)
        {
            throw new IllegalArgumentException(
                "fault " + key + " '" + value + "' is not a number with a unit (" + String.join(", ", units) + ")");
        }
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
