package io.nicstack.stack.time;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link Timers} against a plain model: every timer fires once, at the first poll at or after its deadline. */
class TimersTest
{
    private static final long MS = 1_000_000L;

    @Test
    void firesAtTheDeadlineNotBefore()
    {
        final long start = 5_000 * MS;
        final Timers timers = new Timers(start);
        final List<Long> fired = new ArrayList<>();
        timers.schedule(start + 40 * MS, (now, id) -> fired.add(now));
        timers.schedule(start + 40 * MS + 300_000, (now, id) -> fired.add(now)); // same 1 ms tick, later
        assertEquals(0, timers.poll(start + 40 * MS - 1));
        assertEquals(1, timers.poll(start + 40 * MS));
        assertEquals(List.of(start + 40 * MS), fired);
        assertEquals(0, timers.poll(start + 40 * MS + 299_999), "the second is not due yet, though in the same tick");
        assertEquals(1, timers.poll(start + 40 * MS + 300_000));
        assertEquals(0, timers.count());
    }

    @Test
    void aTimerScheduledInThePastFiresOnTheNextPoll()
    {
        final Timers timers = new Timers(0);
        timers.poll(10 * MS);
        final boolean[] fired = new boolean[1];
        timers.schedule(3 * MS, (now, id) -> fired[0] = true);
        timers.poll(10 * MS);
        assertTrue(fired[0]);
    }

    /**
     * A handler that schedules a timer already due (a deadline behind the clock) sees it fire in the same poll, whether
     * the clock is past the tick being scanned or within it. Before, the wheel put it in the spoke being scanned,
     * behind the scan, and it waited a whole revolution (about 1.07 s). No caller does that today; the next one that
     * does must not lose a second. (The randomized model test's handlers do it too.)
     */
    @Test
    void aPastDueTimerScheduledFromAHandlerFiresInTheSamePoll()
    {
        final Timers timers = new Timers(0);
        final long[] firedAt = {-1, -1};
        timers.schedule(5 * MS, (now, id) -> timers.schedule(3 * MS, (n, i) -> firedAt[0] = n));
        timers.poll(10 * MS);
        assertEquals(10 * MS, firedAt[0], "the clock past the tick");
        timers.schedule(20 * MS + 100, (now, id) -> timers.schedule(20 * MS, (n, i) -> firedAt[1] = n));
        timers.poll(20 * MS + 200);
        assertEquals(20 * MS + 200, firedAt[1], "the clock within the tick");
        assertEquals(0, timers.count());
    }

    /**
     * The contract of {@link Timers#poll}: a chain of timers, each scheduled by the previous one's handler at or before
     * the poll's time (exactly at it, in an earlier tick, at a tick's first nanosecond), runs whole in that poll; one
     * scheduled a nanosecond later waits for a poll at its deadline. Whether the poll's time is inside a tick or its
     * first nanosecond.
     */
    @Test
    void aChainOfDueTimersScheduledFromHandlersRunsInOnePollAndALaterOneWaits()
    {
        final long tick = 1L << 20;
        for (final long pollAt : new long[] {10 * MS + 500_000, 16 * tick})
        {
            final Timers timers = new Timers(0);
            final List<String> ran = new ArrayList<>();
            timers.schedule(5 * MS, (now, id) ->
            {
                ran.add("a@" + now);
                timers.schedule(now, (n1, i1) ->
                {
                    ran.add("b@" + n1);
                    timers.schedule(n1 - 2 * MS, (n2, i2) ->
                    {
                        ran.add("c@" + n2);
                        timers.schedule(n2 - n2 % tick, (n3, i3) ->
                        {
                            ran.add("d@" + n3);
                            timers.schedule(n3 + 1, (n4, i4) -> ran.add("e@" + n4));
                        });
                    });
                });
            });
            assertEquals(4, timers.poll(pollAt), "poll at " + pollAt);
            assertEquals(List.of("a@" + pollAt, "b@" + pollAt, "c@" + pollAt, "d@" + pollAt), ran);
            assertEquals(1, timers.count(), "the one a nanosecond later waits");
            assertEquals(0, timers.poll(pollAt));
            assertEquals(1, timers.poll(pollAt + 1));
            assertEquals("e@" + (pollAt + 1), ran.get(4));
            assertEquals(0, timers.count());
        }
    }

    /**
     * A handler that always schedules itself again at the poll's time runs again in that poll, as the contract says,
     * but does not hang it: the poll's bound ends it, the timers of other ticks due in that poll still run, and the
     * timer, still armed, runs on the next poll. (No handler in the stack does this; the bound is what keeps one that
     * did from stopping the event loop for good.)
     */
    @Test
    @Timeout(60)
    void aHandlerThatAlwaysReschedulesItselfAtNowDoesNotHangThePoll()
    {
        final Timers timers = new Timers(0);
        final long[] runs = {0};
        final Timers.Handler[] again = new Timers.Handler[1];
        again[0] = (now, id) ->
        {
            runs[0]++;
            timers.schedule(now, again[0]);
        };
        timers.schedule(5 * MS, again[0]);
        final boolean[] other = new boolean[1];
        timers.schedule(7 * MS, (now, id) -> other[0] = true);
        final int ran = timers.poll(10 * MS);
        assertTrue(runs[0] > 1, "it ran again in the same poll");
        assertEquals(runs[0] + 1, ran);
        assertTrue(other[0], "a timer of a later tick, due, ran in the same poll");
        assertEquals(1, timers.count(), "still armed");
        final long before = runs[0];
        timers.poll(10 * MS + 1);
        assertTrue(runs[0] > before, "and it runs on the next poll");
    }

    @Test
    void cancelledTimersNeverFire()
    {
        final Timers timers = new Timers(0);
        final boolean[] fired = new boolean[1];
        final long id = timers.schedule(2 * MS, (now, i) -> fired[0] = true);
        assertTrue(timers.cancel(id));
        assertFalse(timers.cancel(id));
        timers.poll(100 * MS);
        assertFalse(fired[0]);
        assertEquals(0, timers.count());
    }

    /**
     * A handler that throws costs its own timer only: with an error handler the poll goes on with the others; without
     * one the exception leaves poll, the wheel already rid of that timer, and the next poll runs the rest.
     */
    @Test
    void aThrowingHandlerCostsItsOwnTimerOnly()
    {
        final List<Throwable> errors = new ArrayList<>();
        final List<String> fired = new ArrayList<>();
        final Timers handled = new Timers(0, errors::add);
        final Timers plain = new Timers(0);
        for (final Timers timers : List.of(handled, plain))
        {
            final long thrower = timers.schedule(2 * MS, (now, id) ->
            {
                throw new IllegalStateException("bug");
            });
            timers.schedule(2 * MS, (now, id) -> fired.add("beside"));
            timers.schedule(3 * MS, (now, id) -> fired.add("after"));
            if (timers == plain)
            {
                assertThrows(IllegalStateException.class, () -> timers.poll(5 * MS));
                assertFalse(timers.cancel(thrower), "gone before it ran");
                assertEquals(2, timers.count());
            }
            timers.poll(5 * MS);
            assertEquals(List.of("beside", "after"), fired);
            assertEquals(0, timers.count());
            fired.clear();
        }
        assertEquals(1, errors.size());
    }

    /**
     * A deadline of {@code Long.MAX_VALUE} (a "never" setting, or now plus one saturated) is a timer that never fires.
     * Before, it was the wheel's mark of a free slot: the timer counted but its slot looked free, the next timer in
     * that spoke took it, and the first could no longer be cancelled; the count stayed one too high for good.
     */
    @Test
    void aDeadlineOfLongMaxValueNeverFiresAndStaysCancellable()
    {
        final Timers timers = new Timers(0);
        final long never = timers.schedule(Long.MAX_VALUE, (now, id) -> fail("fired"));
        final boolean[] fired = new boolean[1];
        timers.schedule(Timers.spokeOf(never) * (1L << 20), (now, id) -> fired[0] = true); // the same spoke
        assertEquals(2, timers.count());
        assertEquals(1, timers.poll(2_000 * MS));
        assertTrue(fired[0]);
        assertEquals(1, timers.count());
        assertTrue(timers.cancel(never));
        assertEquals(0, timers.count());
    }

    /**
     * An id that expired or was cancelled stays dead when the wheel gives its slot to the next timer in that spoke:
     * cancelling it again cancels nothing. Before, the wheel's ids were only spoke and slot, and such a cancel took
     * down the unrelated timer now in the slot.
     */
    @Test
    void aStaleIdCancelsNothingOnceItsSlotIsReused()
    {
        final Timers timers = new Timers(0);
        final long expired = timers.schedule(5 * MS, (now, id) -> { });
        timers.poll(5 * MS);
        final boolean[] fired = new boolean[2];
        final long next = timers.schedule(5 * MS + 1_000, (now, id) -> fired[0] = true); // same tick: the freed slot
        assertFalse(timers.cancel(expired), "expired");
        final long cancelled = timers.schedule(9 * MS, (now, id) -> { });
        assertTrue(timers.cancel(cancelled));
        final long reused = timers.schedule(9 * MS + 1_000, (now, id) -> fired[1] = true);
        assertFalse(timers.cancel(cancelled), "cancelled");
        assertTrue(expired != next && cancelled != reused, "a new timer in a freed slot gets a new id");
        assertEquals(2, timers.poll(10 * MS));
        assertTrue(fired[0] && fired[1], "the timers now in those slots fire");
    }

    /**
     * A spoke's lower bound moves up as the wheel leaves its tick: a long timer (TIME-WAIT's 60 s) sharing spokes with
     * short ones (delayed ACKs) must not pin the bound at a short deadline long expired, which turns off poll's
     * shortcut in that spoke for good. Before, with 2,000 timers at 60 s and a 40 ms timer every 100 µs polled every
     * 50 µs, 832 of the 1024 spokes had a bound in the past after 2 s; now only the spoke of the current tick may.
     */
    @Test
    void spokeBoundsDoNotStayBehindTheClock()
    {
        final Timers timers = new Timers(0);
        final Map<Long, Long> armed = new HashMap<>();
        final Timers.Handler handler = (t, id) -> armed.remove(id);
        final Random random = new Random(1);
        long now = 0;
        for (int i = 0; i < 2_000; i++)
        {
            final long d = now + 60_000 * MS + random.nextInt(1_000_000_000);
            armed.put(timers.schedule(d, handler), d);
        }
        for (int step = 0; step < 40_000; step++)
        {
            now += 50_000;
            if ((step & 1) == 0)
            {
                armed.put(timers.schedule(now + 40 * MS, handler), now + 40 * MS);
            }
            timers.poll(now);
        }
        for (final long deadline : armed.values())
        {
            assertTrue(deadline > now, "nothing is due");
        }
        int behind = 0;
        for (int spoke = 0; spoke < Timers.TICKS_PER_WHEEL; spoke++)
        {
            if (timers.spokeLowerBound(spoke) <= now)
            {
                behind++;
            }
        }
        assertTrue(behind <= 1, behind + " spokes with a bound behind the clock, none of their timers due");
    }

    /**
     * Each spoke's lower bound never exceeds the earliest deadline in it (else poll would skip a due timer), over many
     * seeds of sub-tick clock steps (poll's shortcut), far deadlines, handlers that schedule and cancel, and spokes that
     * grow while polled.
     */
    @Test
    void spokeBoundsStayAtOrBelowTheirEarliestDeadline()
    {
        for (long seed = 0; seed < 200; seed++)
        {
            final Random random = new Random(seed);
            final long start = random.nextLong() >> 4;
            final Timers timers = new Timers(start);
            final Map<Long, Long> model = new HashMap<>();
            final long[] now = {start};
            final Timers.Handler[] handler = new Timers.Handler[1];
            handler[0] = (t, id) ->
            {
                assertTrue(model.remove(id) <= t, "fired early");
                final int r = random.nextInt(8);
                if (r == 0)
                {
                    final long d = t + random.nextInt(-3, 5) * MS + random.nextInt(1_000_000);
                    model.put(timers.schedule(d, handler[0]), d);
                }
                else if (r == 1 && !model.isEmpty())
                {
                    final Long other = model.keySet().iterator().next();
                    model.remove(other);
                    assertTrue(timers.cancel(other), "a live timer, cancelled from a handler");
                }
                else if (r == 2 && random.nextInt(40) == 0)
                {
                    for (int i = 0; i < 20; i++)
                    {
                        final long d = t + 1 + random.nextInt(2_000_000);
                        model.put(timers.schedule(d, handler[0]), d);
                    }
                }
            };
            for (int step = 0; step < 2_000; step++)
            {
                boolean polled = false;
                final int action = random.nextInt(10);
                if (action < 4)
                {
                    final long d = now[0] + switch (random.nextInt(4))
                    {
                        case 0 -> random.nextInt(2_000_000);
                        case 1 -> random.nextInt(200) * MS;
                        case 2 -> random.nextLong(1L << 40); // up to 18 minutes: many revolutions
                        default -> -random.nextInt(3) * MS;
                    };
                    model.put(timers.schedule(d, handler[0]), d);
                }
                else if (action < 5 && !model.isEmpty())
                {
                    final Long id = model.keySet().iterator().next();
                    model.remove(id);
                    assertTrue(timers.cancel(id), "seed " + seed);
                }
                else
                {
                    now[0] += random.nextInt(4) == 0 ? random.nextInt(100) * MS : random.nextInt(300_000);
                    timers.poll(now[0]);
                    polled = true;
                }
                for (final Map.Entry<Long, Long> e : model.entrySet())
                {
                    assertTrue(!polled || e.getValue() > now[0], "seed " + seed + ": a due timer did not fire");
                    assertTrue(timers.spokeLowerBound(Timers.spokeOf(e.getKey())) <= e.getValue(),
                        "seed " + seed + ": a spoke's bound above one of its deadlines");
                }
                assertEquals(model.size(), timers.count(), "seed " + seed);
            }
        }
    }

    /**
     * Random schedules (near and up to several wheel revolutions out), cancels, re-schedules from handlers, and
     * clock steps from sub-tick to seconds, against a model; many timers share spokes, so spokes grow and empty.
     */
    @Test
    void randomizedAgainstAModel()
    {
        final long seed = System.nanoTime();
        final Random random = new Random(seed);
        final long start = random.nextInt(1 << 30);
        final Timers timers = new Timers(start);
        final Map<Long, Long> model = new HashMap<>(); // id -> deadline of armed timers
        final long[] now = {start};
        final List<long[]> firedLog = new ArrayList<>();
        final Timers.Handler[] handler = new Timers.Handler[1];
        handler[0] = (t, id) ->
        {
            final Long deadline = model.remove(id);
            firedLog.add(new long[] {id, deadline == null ? Long.MIN_VALUE : deadline});
            if (random.nextInt(4) == 0)
            {
                // Sometimes due already: it must still fire in this poll.
                final long d = t + random.nextInt(-3, 5) * MS + random.nextInt(1_000_000);
                model.put(timers.schedule(d, handler[0]), d);
            }
        };
        for (int step = 0; step < 20_000; step++)
        {
            final int action = random.nextInt(10);
            if (action < 4)
            {
                final long d = switch (random.nextInt(4))
                {
                    case 0 -> now[0] + random.nextInt(2_000_000);
                    case 1 -> now[0] + random.nextInt(200) * MS;
                    case 2 -> now[0] + (long)random.nextInt(4_000) * MS;
                    default -> now[0] - random.nextInt(3) * MS;
                };
                model.put(timers.schedule(d, handler[0]), d);
            }
            else if (action < 6 && !model.isEmpty())
            {
                final Long id = model.keySet().iterator().next();
                model.remove(id);
                assertTrue(timers.cancel(id), "seed " + seed);
            }
            else
            {
                now[0] += switch (random.nextInt(4))
                {
                    case 0 -> random.nextInt(300_000);
                    case 1 -> random.nextInt(3) * MS;
                    case 2 -> random.nextInt(100) * MS;
                    default -> random.nextInt(1_500) * MS;
                };
                firedLog.clear();
                timers.poll(now[0]);
                for (final long[] f : firedLog)
                {
                    assertTrue(f[1] != Long.MIN_VALUE, "seed " + seed + ": a timer fired twice or was never armed");
                    assertTrue(f[1] <= now[0], "seed " + seed + ": fired early");
                }
                for (final long deadline : model.values())
                {
                    assertTrue(deadline > now[0], "seed " + seed + ": a due timer did not fire at " + now[0]);
                }
            }
            assertEquals(model.size(), timers.count(), "seed " + seed);
        }
    }
}
