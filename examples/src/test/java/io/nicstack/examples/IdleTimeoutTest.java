package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class IdleTimeoutTest
{
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    private static final long T = 60 * S;
    /** Any start: the clock is compared modulo 2^64. */
    private static final long T0 = Long.MAX_VALUE - 10 * S;

    private final IdleTimeout idle = new IdleTimeout(T);

    @Test
    void aConnectionWithNothingMovingExpiresAfterTheTimeoutNotAtIt()
    {
        idle.released(0, T0);
        assertFalse(idle.expired(T0 + T));
        assertTrue(idle.expired(T0 + T + 1));
    }

    @Test
    void activityRestartsTheTimeoutHoweverLongTheConnectionLives()
    {
        idle.released(0, T0);
        for (long t = 0; t <= 10 * T; t += T / 2)
        {
            idle.activity(T0 + t);
            assertFalse(idle.expired(T0 + t + T));
        }
        assertTrue(idle.expired(T0 + 10 * T + T + 1));
    }

    /** The peer acknowledging output is activity; a released position that stands still is not. */
    @Test
    void aReleasedPositionThatMovesIsActivityOneThatStandsStillIsNot()
    {
        idle.released(1000, T0);
        idle.released(1000, T0 + T);
        assertTrue(idle.expired(T0 + T + 1));
        idle.released(1500, T0 + T);
        assertFalse(idle.expired(T0 + 2 * T));
        assertTrue(idle.expired(T0 + 2 * T + 1));
    }

    @Test
    void notStartedNeverExpires()
    {
        assertFalse(idle.expired(T0));
        assertFalse(idle.expired(T0 + 100 * T));
    }

    @Test
    void zeroIsNoTimeoutAndANegativeOneIsRefused()
    {
        final IdleTimeout never = new IdleTimeout(0);
        never.released(0, T0);
        assertFalse(never.expired(T0 + Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> new IdleTimeout(-1));
    }
}
