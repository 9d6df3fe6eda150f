package io.nicstack.stack.time;

import java.util.concurrent.TimeUnit;

import org.agrona.DeadlineTimerWheel;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * One-shot timers on Agrona's {@link DeadlineTimerWheel}, driven by the injected clock.
 *
 * <p>Scheduling and expiry allocate nothing in steady state (the id-to-handler map is open
 * addressing over primitive keys). Handlers run on the event loop thread inside {@link #poll(long)}.
 */
public final class Timers implements DeadlineTimerWheel.TimerHandler
{
    /** Returned by {@link #schedule(long, Handler)} never; use it as "no timer". */
    public static final long NO_TIMER = DeadlineTimerWheel.NULL_DEADLINE;

    /** Callback of an expired timer. */
    @FunctionalInterface
    public interface Handler
    {
        void onTimer(long nowNanos, long timerId);
    }

    // 2^20 ns ~ 1.05 ms per tick, 1024 ticks per revolution: timers further out wrap, which the wheel handles.
    private static final int TICK_SHIFT = 20;
    private static final long TICK_NANOS = 1L << TICK_SHIFT;
    static final int TICKS_PER_WHEEL = 1024;
    private static final int EXPIRY_LIMIT = 1024;
    private static final int MAX_TICKS_PER_POLL = 1 << 20;

    private final DeadlineTimerWheel wheel;
    private final Long2ObjectHashMap<Handler> handlers = new Long2ObjectHashMap<>();
    /**
     * Per spoke of the wheel: a lower bound of the deadlines in it (Long.MAX_VALUE when it holds none) and how
     * many timers it holds. They let {@link #poll} skip the wheel's scan of the current spoke while nothing in
     * it can be due, which is nearly always: the scan reads every slot of the spoke on every poll.
     */
    private final long[] spokeMinDeadline = new long[TICKS_PER_WHEEL];
    private final int[] spokeTimers = new int[TICKS_PER_WHEEL];
    private final long startNanos;
    private long now;
    /** Inside {@link #poll}: handlers run, and the wheel is scanning its current spoke. */
    private boolean polling;
    /** A handler of this poll scheduled a timer already due. */
    private boolean dueFromHandler;

    public Timers(final long startNanos)
    {
        wheel = new DeadlineTimerWheel(TimeUnit.NANOSECONDS, startNanos, TICK_NANOS, TICKS_PER_WHEEL);
        this.startNanos = startNanos;
        java.util.Arrays.fill(spokeMinDeadline, Long.MAX_VALUE);
    }

    /** Schedule {@code handler} to run once at or after {@code deadlineNanos}; returns the timer id. */
    public long schedule(final long deadlineNanos, final Handler handler)
    {
        long deadline = deadlineNanos;
        if (polling && deadlineNanos - now <= 0)
        {
            // Due already, from a handler: the wheel would put it in the spoke being scanned, behind the scan, and then
            // move on, and it would wait a whole revolution. Past the current tick it goes to the next one (still due,
            // the scan comes to it); within it, poll scans the spoke again. Either way this poll runs it.
            dueFromHandler = true;
            final long tickEnd = wheel.currentTickTime();
            if (now - tickEnd >= 0)
            {
                deadline = Math.max(deadlineNanos, tickEnd);
            }
        }
        final long id = wheel.scheduleTimer(deadline);
        handlers.put(id, handler);
        final int spoke = spokeOf(id);
        spokeTimers[spoke]++;
        if (deadline < spokeMinDeadline[spoke])
        {
            spokeMinDeadline[spoke] = deadline;
        }
        return id;
    }

    /** Cancel a timer; {@link #NO_TIMER} and already expired ids are ignored. */
    public boolean cancel(final long timerId)
    {
        if (timerId == NO_TIMER)
        {
            return false;
        }
        handlers.remove(timerId);
        if (wheel.cancelTimer(timerId))
        {
            removedFromSpoke(timerId);
            return true;
        }
        return false;
    }

    /** The spoke a timer id lives in (the wheel's ids are spoke << 32 | slot, stable when a spoke grows). */
    static int spokeOf(final long timerId)
    {
        return (int)(timerId >>> 32);
    }

    private void removedFromSpoke(final long timerId)
    {
        final int spoke = spokeOf(timerId);
        if (--spokeTimers[spoke] == 0)
        {
            spokeMinDeadline[spoke] = Long.MAX_VALUE;
        }
    }

    /** The lower bound {@link #poll} keeps of the deadlines in {@code spoke} (for tests). */
    long spokeLowerBound(final int spoke)
    {
        return spokeMinDeadline[spoke];
    }

    /** Number of armed timers. */
    public long count()
    {
        return wheel.timerCount();
    }

    /** Run every timer whose deadline is at or before {@code nowNanos}; returns how many ran. */
    public int poll(final long nowNanos)
    {
        now = nowNanos;
        if (wheel.timerCount() == 0)
        {
            if (nowNanos >= wheel.currentTickTime())
            {
                wheel.currentTickTime(nowNanos);
            }
            return 0;
        }
        // Still inside the wheel's current tick and nothing in its spoke due: the wheel's poll would only scan.
        final long tickEnd = wheel.currentTickTime();
        if (nowNanos < tickEnd && nowNanos < spokeMinDeadline[(int)(((tickEnd - startNanos) >> TICK_SHIFT) - 1) & (TICKS_PER_WHEEL - 1)])
        {
            return 0;
        }
        int expired = 0;
        polling = true;
        try
        {
            // The wheel moves at most one tick per poll: poll until it stops moving, so the tick that
            // contains nowNanos is scanned too (tests move the clock by seconds at a time).
            for (int ticks = 0; ticks < MAX_TICKS_PER_POLL && wheel.timerCount() > 0; ticks++)
            {
                final long tickTime = wheel.currentTickTime();
                dueFromHandler = false;
                expired += wheel.poll(nowNanos, this, EXPIRY_LIMIT);
                if (wheel.currentTickTime() != tickTime)
                {
                    leftTick(tickTime);
                }
                else if (!dueFromHandler)
                {
                    break;
                }
            }
        }
        finally
        {
            polling = false;
        }
        return expired;
    }

    /**
     * The wheel has left the tick ending at {@code tickEnd}, having expired everything due in its spoke: what stays
     * there is due a whole revolution later or more, so the spoke's bound rises to that tick's start. Else a long
     * timer (TIME-WAIT, keep-alive) would hold the bound at a short deadline long gone, and the spoke would be scanned
     * on every poll of its tick, every revolution.
     */
    private void leftTick(final long tickEnd)
    {
        final int spoke = (int)((tickEnd - startNanos) >> TICK_SHIFT) - 1 & (TICKS_PER_WHEEL - 1);
        final long nextRevolution = tickEnd + (TICKS_PER_WHEEL - 1) * TICK_NANOS;
        if (spokeMinDeadline[spoke] < nextRevolution)
        {
            spokeMinDeadline[spoke] = nextRevolution;
        }
    }

    @Override
    public boolean onTimerExpiry(final TimeUnit timeUnit, final long nowIgnored, final long timerId)
    {
        removedFromSpoke(timerId);
        final Handler handler = handlers.remove(timerId);
        if (handler != null)
        {
            handler.onTimer(now, timerId);
        }
        return true;
    }
}
