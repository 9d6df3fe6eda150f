package io.nicstack.stack.time;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * A fresh wheel allocates nothing as its timers first land in each of its spokes: the handler and generation tables
 * are made with the wheel, not spoke by spoke on first use, so a stack's first second of timers (a timer a
 * millisecond) costs nothing and allocation tests need no long warm-up. Counted with the JVM's per-thread allocation
 * counter; the code is compiled first on another wheel.
 */
class TimersAllocationTest
{
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
    private static final long START = 1_000_000_000L;
    private static final long MS = 1_000_000L;
    /** Noise only: one 16-slot table for each of the 1024 spokes would be about 160 KiB. */
    private static final long ALLOWED_BYTES = 1024;

    private int fired;
    private final Timers.Handler handler = (now, id) -> fired++;

    /** One timer in each spoke (one a millisecond for a revolution and a bit), each cancelled or run. */
    private void revolution(final Timers timers, final long from)
    {
        final int timersPerRevolution = Timers.TICKS_PER_WHEEL + 8;
        for (int i = 0; i < timersPerRevolution; i++)
        {
            final long id = timers.schedule(from + i * MS, handler);
            if (i % 8 == 7)
            {
                timers.cancel(id);
            }
        }
        for (int i = 0; i <= timersPerRevolution; i++)
        {
            timers.poll(from + i * MS);
        }
    }

    @Test
    void timersLandingInEverySpokeOfAFreshWheelAllocateNothing()
    {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported(), "no per-thread allocation counter");
        THREADS.setThreadAllocatedMemoryEnabled(true);
        final Timers warm = new Timers(START);
        for (int r = 0; r < 50; r++)
        {
            revolution(warm, START + r * 2L * Timers.TICKS_PER_WHEEL * MS);
        }
        final Timers timers = new Timers(START);
        fired = 0;
        final long before = THREADS.getCurrentThreadAllocatedBytes();
        revolution(timers, START);
        final long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        assertEquals(0, timers.count());
        assertEquals(Timers.TICKS_PER_WHEEL + 8 - (Timers.TICKS_PER_WHEEL + 8) / 8, fired);
        assertTrue(allocated < ALLOWED_BYTES, () -> allocated + " B for the first revolution of a fresh wheel");
    }

    @Test
    void aSpokeThatOutgrowsItsSlotsKeepsEveryTimerAndId()
    {
        // 100 timers in one spoke: the wheel and the tables double twice (16, 32, 64, 128 slots a spoke) under them.
        final Timers timers = new Timers(START);
        final long deadline = START + 5 * MS;
        final long[] ids = new long[100];
        final Set<Long> armed = new HashSet<>();
        for (int i = 0; i < ids.length; i++)
        {
            ids[i] = timers.schedule(deadline, (now, id) -> assertTrue(armed.remove(id), "fired once, with its id"));
            armed.add(ids[i]);
            timers.schedule(deadline + Timers.TICKS_PER_WHEEL * MS / 2, handler); // and some in another spoke
        }
        for (int i = 0; i < ids.length; i += 3)
        {
            assertTrue(timers.cancel(ids[i]), "an id from before the tables grew still cancels");
            armed.remove(ids[i]);
            assertFalse(timers.cancel(ids[i]), "a stale id cancels nothing");
        }
        timers.poll(deadline - 1);
        assertEquals(66, armed.size());
        timers.poll(deadline);
        assertTrue(armed.isEmpty(), "every timer left fired");
        fired = 0;
        timers.poll(deadline + Timers.TICKS_PER_WHEEL * MS);
        assertEquals(100, fired);
        assertEquals(0, timers.count());
    }
}
