package io.nicstack.stack.tcp.isn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;

import io.nicstack.stack.wire.Seq;
import org.junit.jupiter.api.Test;

class IsnGeneratorTest
{
    private static final int LOCAL_IP = 0x0A00_0001;  // 10.0.0.1
    private static final int REMOTE_IP = 0x0A00_0002; // 10.0.0.2
    private static final long NOW = 1_234_567_890_123L;

    private final IsnGenerator generator = new IsnGenerator(0x0123_4567_89AB_CDEFL, 0xFEDC_BA98_7654_3210L);

    @Test
    void rfc6528_sameTupleAndTimeGiveTheSameIsn()
    {
        assertEquals(
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW),
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW));
    }

    @Test
    void rfc6528_isnIsTheFourMicrosecondTimerPlusAHashOfTheTuple()
    {
        final long f = SipHash.hash(
            0x0123_4567_89AB_CDEFL,
            0xFEDC_BA98_7654_3210L,
            ((long)LOCAL_IP << 32) | REMOTE_IP,
            (80L << 16) | 40_000);

        assertEquals((int)(NOW / 4_000) + (int)f, generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW));
    }

    @Test
    void rfc6528_distinctIsnsForDistinctTuples()
    {
        final int base = generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW);
        assertNotEquals(base, generator.isn(LOCAL_IP + 1, 80, REMOTE_IP, 40_000, NOW));
        assertNotEquals(base, generator.isn(LOCAL_IP, 81, REMOTE_IP, 40_000, NOW));
        assertNotEquals(base, generator.isn(LOCAL_IP, 80, REMOTE_IP + 1, 40_000, NOW));
        assertNotEquals(base, generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_001, NOW));
        // Swapping the ends is a different connection.
        assertNotEquals(base, generator.isn(REMOTE_IP, 40_000, LOCAL_IP, 80, NOW));

        final Set<Integer> seen = new HashSet<>();
        for (int port = 32_768; port < 33_768; port++)
        {
            seen.add(generator.isn(LOCAL_IP, 80, REMOTE_IP, port, NOW));
        }
        assertEquals(1_000, seen.size());
    }

    @Test
    void rfc6528_isnAdvancesWithTheClockForTheSameTuple()
    {
        final int first = generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW);

        assertEquals(first, generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW + 3_999 - NOW % 4_000));
        assertEquals(first + 1, generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW + 4_000));
        assertEquals(first + 250_000, generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW + 1_000_000_000L));

        int previous = first;
        for (long t = NOW; t < NOW + 3_600_000_000_000L; t += 60_000_000_000L)
        {
            final int isn = generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, t + 60_000_000_000L);
            assertTrue(Seq.gt(isn, previous), "monotonic modulo 2^32");
            previous = isn;
        }
    }

    @Test
    void rfc6528_differentSecretsGiveUnrelatedIsns()
    {
        final IsnGenerator other = new IsnGenerator(0x0123_4567_89AB_CDEFL, 0xFEDC_BA98_7654_3211L);

        assertNotEquals(
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW),
            other.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW));
        assertNotEquals(
            IsnGenerator.withRandomSecret().isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW),
            IsnGenerator.withRandomSecret().isn(LOCAL_IP, 80, REMOTE_IP, 40_000, NOW));
    }

    @Test
    void rfc6528_timerIsMonotonicAcrossAZeroOrNegativeClock()
    {
        assertEquals(
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, 0) - 1,
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, -1));
        assertEquals(
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, -4_001) + 1,
            generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, -1));
    }
    /** The timestamp offset: stable per 4-tuple, different between tuples, and in a domain of its own (not the ISN's F). */
    @Test
    void rfc7323_timestampOffsetIsAKeyedHashOfTheTupleApartFromTheIsns()
    {
        final int offset = generator.timestampOffset(LOCAL_IP, 80, REMOTE_IP, 40_000);
        assertEquals(offset, generator.timestampOffset(LOCAL_IP, 80, REMOTE_IP, 40_000));
        assertNotEquals(offset, generator.timestampOffset(LOCAL_IP, 80, REMOTE_IP, 40_001));
        assertNotEquals(offset, generator.isn(LOCAL_IP, 80, REMOTE_IP, 40_000, 0), "not the ISN's hash");
        assertNotEquals(offset, generator.portOffset(LOCAL_IP, REMOTE_IP, 40_000));
        assertNotEquals(offset, new IsnGenerator(1, 2).timestampOffset(LOCAL_IP, 80, REMOTE_IP, 40_000));
    }
}
