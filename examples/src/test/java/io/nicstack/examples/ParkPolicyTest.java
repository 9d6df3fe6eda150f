package io.nicstack.examples;

import org.junit.jupiter.api.Test;

import static io.nicstack.examples.ParkPolicy.MAX_PARK_NANOS;
import static io.nicstack.examples.ParkPolicy.MIN_PARK_NANOS;
import static io.nicstack.examples.ParkPolicy.SPINS;
import static org.junit.jupiter.api.Assertions.*;

class ParkPolicyTest
{
    /** Idle passes until the policy parks; returns the park. */
    private static long idleUntilPark(final ParkPolicy p)
    {
        for (int i = 0; i < SPINS; i++)
        {
            assertEquals(0, p.afterPass(0, false), "spins before parking");
        }
        final long park = p.afterPass(0, false);
        assertTrue(park > 0);
        return park;
    }

    @Test
    void anIdleLoopSpinsBrieflyThenParksTheLongestAllowed()
    {
        final ParkPolicy p = new ParkPolicy();
        assertEquals(MAX_PARK_NANOS, idleUntilPark(p));
        assertEquals(MAX_PARK_NANOS, p.afterPass(0, false), "and keeps parking, no more spins");
    }

    @Test
    void workDoesNotShortenTheParkButSpinsStartOver()
    {
        final ParkPolicy p = new ParkPolicy();
        idleUntilPark(p);
        for (int i = 0; i < 100; i++)
        {
            assertEquals(0, p.afterPass(1, false), "work: go on at once");
            assertEquals(MAX_PARK_NANOS, idleUntilPark(p), "a request now and then keeps the park long");
        }
    }

    @Test
    void hurryHalvesTheParkDownToTheFloorAndItGrowsBackByAQuarter()
    {
        final ParkPolicy p = new ParkPolicy();
        assertEquals(0, p.afterPass(1, true));
        assertEquals(MAX_PARK_NANOS / 2, idleUntilPark(p));
        for (int i = 0; i < 20; i++)
        {
            p.afterPass(1, true);
        }
        assertEquals(MIN_PARK_NANOS, idleUntilPark(p), "never below the floor");
        long previous = MIN_PARK_NANOS;
        int parks = 0;
        while (previous < MAX_PARK_NANOS)
        {
            final long park = p.afterPass(0, false);
            assertEquals(Math.min(MAX_PARK_NANOS, previous + previous / 4), park);
            previous = park;
            parks++;
        }
        assertTrue(parks > 10 && parks < 20, "back to the longest park within a few milliseconds: " + parks);
        assertEquals(MAX_PARK_NANOS, p.afterPass(0, false));
    }

    @Test
    void aHurryOnAnIdlePassShortensThisVeryPark()
    {
        final ParkPolicy p = new ParkPolicy();
        for (int i = 0; i < SPINS; i++)
        {
            p.afterPass(0, false);
        }
        assertEquals(MAX_PARK_NANOS / 2, p.afterPass(0, true));
    }
}
