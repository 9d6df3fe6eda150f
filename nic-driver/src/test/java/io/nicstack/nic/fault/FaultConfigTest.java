package io.nicstack.nic.fault;

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
     * A value with an absurd exponent is refused at once, with the usual message: its size is read from the exponent,
     * never computed. Before, setScale computed 10^exponent first (a BigInteger of as many digits): delay=1e5000000s
     * took seconds of CPU to refuse, and the values here, just small enough for a BigInteger, would take hours. No time
     * is measured: the test finishing at all is the proof (surefire's fork timeout bounds it).
     */
    @Test
    void anAbsurdExponentIsRefusedAtOnce()
    {
        assertMessage("fault delay '1e300000000s' is not a number with a unit (ns, us, ms, s)", "delay=1e300000000s");
        assertMessage("fault rate '1E300000000gbps' is not a number with a unit", "rate=1E300000000gbps");
        assertMessage("fault delay '1e-300000000s' is not a whole number of ns", "delay=1e-300000000s");
        assertEquals(0, FaultConfig.parse("delay=0e300000000s").delayNanos());
        assertEquals(Long.MAX_VALUE, FaultConfig.parse("delay=9223372036854775807ns").delayNanos());
        assertEquals(Long.MAX_VALUE, FaultConfig.parse("delay=9223372036.854775807s").delayNanos());
        assertMessage("fault delay '9223372036854775808ns' is not a number", "delay=9223372036854775808ns");
        assertMessage("fault rate '99999999999999999999bps' is not a number", "rate=99999999999999999999bps");
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
