package io.nicstack.stack.tcp.isn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SynCookiesTest
{
    private static final int LOCAL_IP = 0xC0A8_0001;  // 192.168.0.1
    private static final int REMOTE_IP = 0xC633_6407; // 198.51.100.7
    private static final int LOCAL_PORT = 443;
    private static final int REMOTE_PORT = 51_515;
    private static final int CLIENT_ISN = 0x9E37_79B9;
    private static final long SECOND = 1_000_000_000L;
    private static final long NOW = 10_000 * SECOND;

    private final SynCookies cookies = new SynCookies(0x5555_AAAA_5555_AAAAL, 0x1234_5678_9ABC_DEF0L);

    @Test
    void mssIndexPicksTheLargestTableEntryNotAboveTheClients()
    {
        assertEquals(7, SynCookies.mssIndexFor(1460));
        assertEquals(7, SynCookies.mssIndexFor(8960));
        assertEquals(6, SynCookies.mssIndexFor(1459));
        assertEquals(6, SynCookies.mssIndexFor(1440));
        assertEquals(5, SynCookies.mssIndexFor(1400));
        assertEquals(3, SynCookies.mssIndexFor(1220));
        assertEquals(2, SynCookies.mssIndexFor(1219));
        assertEquals(2, SynCookies.mssIndexFor(536));
        assertEquals(1, SynCookies.mssIndexFor(535));
        assertEquals(0, SynCookies.mssIndexFor(100));
        assertEquals(0, SynCookies.mssIndexFor(40));
        assertEquals(8, SynCookies.mssTableLength());
        assertEquals(1220, SynCookies.mssForIndex(3));
        for (int i = 1; i < SynCookies.mssTableLength(); i++)
        {
            assertTrue(SynCookies.mssForIndex(i) > SynCookies.mssForIndex(i - 1), "ascending");
        }
    }

    @Test
    void roundTripReturnsTheEncodedMss()
    {
        for (int index = 0; index < SynCookies.mssTableLength(); index++)
        {
            final int cookie = encode(CLIENT_ISN, index, NOW);
            assertEquals(SynCookies.mssForIndex(index), decode(CLIENT_ISN, cookie, NOW), "index " + index);
            assertEquals(SynCookies.mssForIndex(index), decode(CLIENT_ISN, cookie, NOW + 30 * SECOND));
        }
    }

    @Test
    void wrongTupleIsRejected()
    {
        final int cookie = encode(CLIENT_ISN, 7, NOW);

        assertEquals(-1, cookies.decode(LOCAL_IP + 1, LOCAL_PORT, REMOTE_IP, REMOTE_PORT, CLIENT_ISN, cookie, NOW));
        assertEquals(-1, cookies.decode(LOCAL_IP, LOCAL_PORT + 1, REMOTE_IP, REMOTE_PORT, CLIENT_ISN, cookie, NOW));
        assertEquals(-1, cookies.decode(LOCAL_IP, LOCAL_PORT, REMOTE_IP + 1, REMOTE_PORT, CLIENT_ISN, cookie, NOW));
        assertEquals(-1, cookies.decode(LOCAL_IP, LOCAL_PORT, REMOTE_IP, REMOTE_PORT + 1, CLIENT_ISN, cookie, NOW));
    }

    @Test
    void wrongClientIsnIsRejected()
    {
        final int cookie = encode(CLIENT_ISN, 7, NOW);

        assertEquals(-1, decode(CLIENT_ISN + 1, cookie, NOW));
        assertEquals(-1, decode(CLIENT_ISN ^ 0x8000_0000, cookie, NOW));
    }

    @Test
    void everySingleBitFlipIsRejected()
    {
        final int cookie = encode(CLIENT_ISN, 6, NOW);

        for (int bit = 0; bit < 32; bit++)
        {
            assertEquals(-1, decode(CLIENT_ISN, cookie ^ (1 << bit), NOW), "bit " + bit);
        }
    }

    @Test
    void anotherSecretRejects()
    {
        final SynCookies other = new SynCookies(0x5555_AAAA_5555_AAAAL, 0x1234_5678_9ABC_DEF1L);
        final int cookie = encode(CLIENT_ISN, 7, NOW);

        assertEquals(-1, other.decode(LOCAL_IP, LOCAL_PORT, REMOTE_IP, REMOTE_PORT, CLIENT_ISN, cookie, NOW));
    }

    @Test
    void cookieExpiresAfterTwoPeriods()
    {
        final long periodStart = SynCookies.PERIOD_NANOS * 1_000;
        final int cookie = encode(CLIENT_ISN, 7, periodStart);

        assertEquals(1460, decode(CLIENT_ISN, cookie, periodStart + 64 * SECOND));
        assertEquals(1460, decode(CLIENT_ISN, cookie, periodStart + 128 * SECOND - 1));
        assertEquals(-1, decode(CLIENT_ISN, cookie, periodStart + 128 * SECOND));
        assertEquals(-1, decode(CLIENT_ISN, cookie, periodStart + 1_000 * SECOND));
    }

    @Test
    void cookieIssuedLateInAPeriodStillLivesMoreThanOnePeriod()
    {
        final long issued = SynCookies.PERIOD_NANOS * 1_001 - 1;
        final int cookie = encode(CLIENT_ISN, 3, issued);

        assertEquals(1220, decode(CLIENT_ISN, cookie, issued + 64 * SECOND));
        assertEquals(-1, decode(CLIENT_ISN, cookie, issued + 64 * SECOND + 1));
    }

    @Test
    void cookieFromTheFutureIsRejected()
    {
        final int cookie = encode(CLIENT_ISN, 7, NOW);

        assertEquals(-1, decode(CLIENT_ISN, cookie, NOW - SynCookies.PERIOD_NANOS));
    }

    @Test
    void cookieIsRejectedWhenTheFiveBitCounterWrapsAround()
    {
        final int cookie = encode(CLIENT_ISN, 7, NOW);

        assertEquals(-1, decode(CLIENT_ISN, cookie, NOW + 32 * SynCookies.PERIOD_NANOS));
    }

    @Test
    void layoutCarriesCounterAndMssIndex()
    {
        final int cookie = encode(CLIENT_ISN, 6, NOW);
        final long counter = NOW / SynCookies.PERIOD_NANOS;

        assertEquals(counter & 0x1F, cookie >>> 27);
        assertEquals(6, (cookie >>> 24) & 0x7);
    }

    @Test
    void cookiesDifferAcrossTuplesAndPeriods()
    {
        final int cookie = encode(CLIENT_ISN, 7, NOW);

        assertNotEquals(cookie, cookies.encode(LOCAL_IP, LOCAL_PORT, REMOTE_IP, REMOTE_PORT + 1, CLIENT_ISN, 3, NOW));
        assertNotEquals(cookie, encode(CLIENT_ISN, 7, NOW + SynCookies.PERIOD_NANOS));
    }

    @Test
    void rejectsAnMssIndexOutsideTheTable()
    {
        assertThrows(IllegalArgumentException.class, () -> encode(CLIENT_ISN, 8, NOW));
        assertThrows(IllegalArgumentException.class, () -> encode(CLIENT_ISN, -1, NOW));
    }

    /**
     * The options a cookie SYN,ACK's TSval carries come back from its TSecr, for every shift and clock value (wrapping
     * ones included), and the TSval is never ahead of the clock by the unsigned comparison of RFC 7323 §5.2, nor more
     * than the option bits behind it.
     */
    @Test
    void theTimestampCarriesTheWindowScaleAndSackAndNeverRunsAheadOfTheClock()
    {
        final java.util.SplittableRandom random = new java.util.SplittableRandom(42);
        final int[] edges = { 0, 1, 63, 64, -1, -64, Integer.MAX_VALUE, Integer.MIN_VALUE };
        for (int i = 0; i < 20_000; i++)
        {
            final int tsNow = i < edges.length ? edges[i] : random.nextInt();
            final int shift = random.nextInt(-1, 15);
            final boolean sack = random.nextBoolean();
            final int ts = SynCookies.timestampWithOptions(tsNow, shift, sack);
            assertEquals(shift, SynCookies.windowScaleIn(ts), "shift at tsNow " + tsNow);
            assertEquals(sack, SynCookies.sackIn(ts), "sack at tsNow " + tsNow);
            final int behind = tsNow - ts;
            assertTrue(behind >= 0 && behind < 1 << SynCookies.TS_OPTION_BITS, "tsNow " + tsNow + " ts " + ts);
        }
    }

    private int encode(final int clientIsn, final int mssIndex, final long nowNanos)
    {
        return cookies.encode(LOCAL_IP, LOCAL_PORT, REMOTE_IP, REMOTE_PORT, clientIsn, mssIndex, nowNanos);
    }

    private int decode(final int clientIsn, final int cookie, final long nowNanos)
    {
        return cookies.decode(LOCAL_IP, LOCAL_PORT, REMOTE_IP, REMOTE_PORT, clientIsn, cookie, nowNanos);
    }
}
