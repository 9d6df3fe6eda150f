package io.nicstack.nic.fault;

import java.math.BigDecimal;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FaultConfigTest
{
    @Test
    void parsesEverySetting()
    {
        final FaultConfig config =
            FaultConfig.parse("loss=0.01,reorder=0.02,dup=0.01,corrupt=0.001,delay=1ms,rate=100mbps,seed=7");

        assertEquals(new FaultConfig(0.01, 0.02, 0.01, 0.001, 1_000_000, 100_000_000, 7), config);
        assertEquals("loss=0.01,reorder=0.02,dup=0.01,corrupt=0.001,delay=1ms,rate=100mbps,seed=7", config.toString());
    }

    @Test
    void unitsAndSpacing()
    {
        assertEquals(1_500, FaultConfig.parse("delay=1.5us").delayNanos());
        assertEquals(250, FaultConfig.parse(" delay = 250ns ").delayNanos());
        assertEquals(2_000_000_000L, FaultConfig.parse("delay=2s").delayNanos());
        assertEquals(1_500_000, FaultConfig.parse("rate=1.5Mbps").rateBitsPerSecond());
        assertEquals(64_000, FaultConfig.parse("rate=64kbps").rateBitsPerSecond());
        assertEquals(10_000_000_000L, FaultConfig.parse("rate=10gbps").rateBitsPerSecond());
        assertEquals(300, FaultConfig.parse("rate=300bps").rateBitsPerSecond());
        assertEquals(0, FaultConfig.parse("rate=0,delay=0").rateBitsPerSecond());
    }

    @Test
    void missingSeedIsRandomAndPrinted()
    {
        final FaultConfig config = FaultConfig.parse("loss=0.5");
        assertTrue(config.toString().endsWith(",seed=" + config.seed()));
        assertEquals(config, FaultConfig.parse(config.toString()), "toString replays");
    }

    @Test
    void noneHasNoFaults()
    {
        assertTrue(FaultConfig.NONE.isNone());
        assertTrue(FaultConfig.parse("seed=3").isNone());
        assertFalse(FaultConfig.parse("dup=0.1").isNone());
        assertEquals("loss=0,reorder=0,dup=0,corrupt=0,delay=0,rate=0,seed=0", FaultConfig.NONE.toString());
    }

    @Test
    void badSettingsNameTheKey()
    {
        assertMessage("unknown fault key 'jitter'", "loss=0.1,jitter=1ms");
        assertMessage("fault loss must be a probability in [0, 1]: 1.5", "loss=1.5");
        assertMessage("fault dup must be a probability in [0, 1]: 'x'", "dup=x");
        assertMessage("fault delay '5' needs a unit (ns, us, ms, s)", "delay=5");
        assertMessage("fault delay '1xs' is not a number with a unit", "delay=1xs");
        assertMessage("fault rate 'fast' needs a unit", "rate=fast");
        assertMessage("fault rate must not be negative", "rate=-1mbps");
        assertMessage("fault seed must be a 64-bit integer", "seed=0x10");
        assertMessage("fault key 'loss' given twice", "loss=0.1,loss=0.2");
        assertMessage("fault setting 'loss' is not key=value", "loss");
    }

    /**
     * A delay or rate that is not a whole number of ns or bps is refused, not rounded: rate=0.5bps became 1bps without a
     * word (and rate=0.4bps, before that, 0: unlimited). Fractions of a larger unit that come to whole ns or bps are
     * taken.
     */
    @Test
    void aValueThatIsNotAWholeNumberOfTheSmallestUnitIsRefused()
    {
        assertMessage("fault rate '0.5bps' is not a whole number of bps (the rate is kept in bits per second)",
            "rate=0.5bps");
        assertMessage("fault rate '1.4bps' is not a whole number of bps", "rate=1.4bps");
        assertMessage("fault rate '0.4bps' is not a whole number of bps", "rate=0.4bps");
        assertMessage("fault rate '1.0000005mbps' is not a whole number of bps", "rate=1.0000005mbps");
        assertMessage("fault delay '0.5ns' is not a whole number of ns (the delay is kept in nanoseconds)", "delay=0.5ns");
        assertMessage("fault delay '0.0000000001ms' is not a whole number of ns", "delay=0.0000000001ms");
        assertEquals(1, FaultConfig.parse("delay=1ns").delayNanos());
        assertEquals(1, FaultConfig.parse("rate=1.000bps").rateBitsPerSecond());
        assertEquals(500, FaultConfig.parse("rate=0.5kbps").rateBitsPerSecond());
        assertEquals(1_500, FaultConfig.parse("delay=0.0015ms").delayNanos());
        assertEquals(0, FaultConfig.parse("delay=0.0ms,rate=0gbps").delayNanos(), "0 in any unit is still none");
    }

    /** A value with a unit that is not one is said to have an unknown unit; it was said to need a unit. */
    @Test
    void anUnknownUnitIsNamed()
    {
        assertMessage("fault delay '1h': unknown unit h; use ns, us, ms or s", "delay=1h");
        assertMessage("fault delay '2.5min': unknown unit min; use ns, us, ms or s", "delay=2.5min");
        assertMessage("fault rate '5mb': unknown unit mb; use bps, kbps, mbps or gbps", "rate=5mb");
        assertMessage("fault delay '5' needs a unit (ns, us, ms, s)", "delay=5");
    }

    /**
     * A delay or rate is written as the README writes it: ASCII digits, then a point and digits or nothing, then the unit
     * (in any case) with nothing between. BigDecimal also took a sign, an exponent, a point with no digits on one side
     * and digits of any script, and the unit was matched after a Unicode lower-casing that made the Kelvin sign a k;
     * each of these is now refused with a message that quotes the value.
     */
    @Test
    void aDelayOrRateIsAsciiDigitsAPointAndAUnit()
    {
        for (final String value : new String[] {
            "+1ms", "1e3ns", "1E3ns", "1e+3ns", "\u0661ms", "1.\u0665ms", "\uff11s", "\u0967\u0966us", ".5ms", "1.ms",
            "5 ms", "5\tms", "1..5ms", "0x10ns", "1_000ns", "1.5.0ms", "ms", "--1ms"})
        {
            assertMessage("fault delay '" + value.trim() + "' is not a number with a unit (ns, us, ms, s)", "delay=" + value);
        }
        for (final String value : new String[] {"+100mbps", "1e2mbps", "1\u212Abps", "\u0661\u0660\u0660mbps", "100 mbps",
            "1.5.5gbps", ".5kbps"})
        {
            assertMessage("fault rate '" + value + "' is not a number with a unit (bps, kbps, mbps, gbps)", "rate=" + value);
        }
        assertMessage("fault delay must not be negative: '-1ms'", "delay=-1ms");
        assertMessage("fault rate must not be negative: '-0.5kbps'", "rate=-0.5kbps");
        assertEquals(1_500_000, FaultConfig.parse("delay=1.5MS").delayNanos(), "a unit in any case");
        assertEquals(100_000_000, FaultConfig.parse("rate=100MbPs").rateBitsPerSecond());
        assertEquals(1_500, FaultConfig.parse("delay=0001.500us").delayNanos(), "leading and trailing zeros");
    }

    /**
     * Random delays and rates in the documented form (up to 22 digits, a point anywhere or none, zeros on either end,
     * every unit) come to exactly what BigDecimal, the oracle here, makes of them: a whole number of ns or bps that a
     * long holds, else refused as not whole or as too large. The seed is printed; -Dnicstack.fuzz.seed=S repeats it.
     */
    @Test
    void aPlainDecimalWithAUnitComesToItsExactValue()
    {
        final long seed = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
        final SplittableRandom random = new SplittableRandom(seed);
        final String[][] units = {{"delay", "ns", "us", "ms", "s"}, {"rate", "bps", "kbps", "mbps", "gbps"}};
        final BigDecimal max = BigDecimal.valueOf(Long.MAX_VALUE);
        for (int i = 0; i < 30_000; i++)
        {
            final StringBuilder digits = new StringBuilder();
            final int length = 1 + random.nextInt(22);
            for (int k = 0; k < length; k++)
            {
                digits.append(random.nextInt(3) == 0 ? '0' : (char)('0' + random.nextInt(10)));
            }
            if (length > 1 && random.nextBoolean())
            {
                digits.insert(1 + random.nextInt(length - 1), '.');
            }
            final String[] kind = units[random.nextInt(2)];
            final int unit = 1 + random.nextInt(4);
            final String value = digits + kind[unit];
            final String where = kind[0] + "=" + value + ", seed " + seed;
            final BigDecimal exact = new BigDecimal(digits.toString()).multiply(BigDecimal.TEN.pow(3 * (unit - 1)));
            final long parsed;
            try
            {
                final FaultConfig config = FaultConfig.parse(kind[0] + "=" + value);
                parsed = kind[0].equals("delay") ? config.delayNanos() : config.rateBitsPerSecond();
            }
            catch (final IllegalArgumentException e)
            {
                final boolean whole = exact.signum() == 0 || exact.stripTrailingZeros().scale() <= 0;
                final String expected = whole ? "' is more than " + Long.MAX_VALUE + kind[1]
                    : "' is not a whole number of " + kind[1];
                assertTrue(e.getMessage().equals("fault " + kind[0] + " '" + value + expected)
                    || e.getMessage().startsWith("fault " + kind[0] + " '" + value + expected + " ("), e.getMessage() + ", " + where);
                assertTrue(!whole || exact.compareTo(max) > 0, e.getMessage() + ", " + where);
                continue;
            }
            assertEquals(0, exact.compareTo(BigDecimal.valueOf(parsed)), where);
        }
    }

    /**
     * An exponent is no part of a value, also an absurd one, which is refused at once: BigDecimal's setScale computed
     * 10^exponent first (a BigInteger of as many digits), hours of CPU for 1e300000000s. No time is measured: the test
     * finishing at all is the proof (surefire's fork timeout bounds it). A value that is too large for a long is refused
     * as such.
     */
    @Test
    void anAbsurdExponentIsRefusedAtOnce()
    {
        assertMessage("fault delay '1e300000000s' is not a number with a unit (ns, us, ms, s)", "delay=1e300000000s");
        assertMessage("fault rate '1E300000000gbps' is not a number with a unit", "rate=1E300000000gbps");
        assertMessage("fault delay '1e-300000000s' is not a number with a unit", "delay=1e-300000000s");
        assertMessage("fault delay '0e300000000s' is not a number with a unit", "delay=0e300000000s");
        assertEquals(Long.MAX_VALUE, FaultConfig.parse("delay=9223372036854775807ns").delayNanos());
        assertEquals(Long.MAX_VALUE, FaultConfig.parse("delay=9223372036.854775807s").delayNanos());
        assertEquals(Long.MAX_VALUE, FaultConfig.parse("delay=0000009223372036.8547758070000s").delayNanos());
        assertMessage("fault delay '9223372036854775808ns' is more than", "delay=9223372036854775808ns");
        assertMessage("fault delay '9223372036.854775808s' is more than", "delay=9223372036.854775808s");
        assertMessage("fault rate '99999999999999999999bps' is more than", "rate=99999999999999999999bps");
        assertMessage("fault rate '9223372036854775808gbps' is more than", "rate=9223372036854775808gbps");
    }

    /**
     * A value longer than any real one is refused before it is read as a number. Stripping the trailing zeros of
     * delay=1.000...0s (whole, so accepted before) takes time quadratic in their count: 17 s of CPU for 130,000, which
     * a daemon argument could hold. No time is measured: the refusal is the proof; the message quotes only the start.
     */
    @Test
    void aValueLongerThanAnyRealOneIsRefusedUnread()
    {
        final String zeros = "0".repeat(200_000);
        assertMessage("fault delay value is 200003 characters long (at most 64): '1.0000", "delay=1." + zeros + "s");
        assertMessage("fault loss value is 200002 characters long (at most 64)", "loss=0." + zeros);
        assertMessage("fault seed value is 200000 characters long (at most 64)", "seed=" + zeros);
        final String longest = "1." + "0".repeat(61) + "s";
        assertEquals(64, longest.length());
        assertEquals(1_000_000_000L, FaultConfig.parse("delay=" + longest).delayNanos());
        assertMessage("fault delay value is 65 characters long (at most 64)", "delay=0" + longest);
    }

    /**
     * A probability is a plain decimal, as the README writes it (0.01): ASCII digits, a point and digits or nothing.
     * Double.parseDouble took a sign, an exponent, a float or double suffix, hexadecimal, NaN and Infinity (refused by the
     * range check, but with another message) and digits of any script; dup=-0 made a config unequal to its own replay
     * (-0.0 printed as 0).
     */
    @Test
    void aProbabilityIsAPlainDecimal()
    {
        for (final String value : new String[] {
            "0.5f", "1d", "0x1p-3", "1e-3", "1E0", "+0.5", "-0", "-0.0", ".5", "1.", "0..5", "NaN", "Infinity", "\u0660.5",
            "0.\u0665", "\uff11", "0.5 5"})
        {
            assertMessage("fault loss must be a probability in [0, 1]: '" + value + "'", "loss=" + value);
        }
        assertEquals(new FaultConfig(0, 1, 0.05, 0.000001, 0, 0, 1),
            FaultConfig.parse("loss=0,reorder=1,dup=0.05,corrupt=0.000001,seed=1"));
        assertEquals(1, FaultConfig.parse("dup=1.000").duplicate());
        assertEquals(0.5, FaultConfig.parse("dup=00.50").duplicate());
        assertMessage("fault dup must be a probability in [0, 1]: 1.5", "dup=1.5");
    }

    /** A seed is ASCII digits, with a minus sign or none: Long.parseLong also took a plus sign and digits of any script. */
    @Test
    void aSeedIsASignedRunOfAsciiDigits()
    {
        for (final String value : new String[] {"+7", "\u0667", "7\uff17", "--7", "-", "7L", " 7 7"})
        {
            assertMessage("fault seed must be a 64-bit integer: '" + value.trim() + "'", "seed=" + value);
        }
        assertEquals(-7, FaultConfig.parse("seed=-7").seed());
        assertEquals(Long.MIN_VALUE, FaultConfig.parse("seed=" + Long.MIN_VALUE).seed());
        assertMessage("fault seed must be a 64-bit integer: '9223372036854775808'", "seed=9223372036854775808");
    }

    /**
     * toString writes a probability as a plain decimal that parse takes back to the same value: Double.toString wrote
     * 0.0001 as 1.0E-4, which a plain-decimal parse refuses.
     */
    @Test
    void aSmallProbabilityIsWrittenAsAPlainDecimal()
    {
        final FaultConfig config = new FaultConfig(0.0001, 1.0 / 3, 1, 1e-9, 0, 0, -5);
        assertEquals("loss=0.0001,reorder=0.3333333333333333,dup=1,corrupt=0.000000001,delay=0,rate=0,seed=-5",
            config.toString());
        assertEquals(config, FaultConfig.parse(config.toString()));
    }

    private static void assertMessage(final String expectedStart, final String spec)
    {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> FaultConfig.parse(spec));
        assertTrue(ex.getMessage().startsWith(expectedStart), ex.getMessage());
        assertFalse(ex.getMessage().contains("\n"));
    }
}
