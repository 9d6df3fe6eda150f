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
    private static final long TICK_NANOS = 1L << 20;
    private static final int TICKS_PER_WHEEL = 1024;
    private static final int EXPIRY_LIMIT = 1024;
    private static final int MAX_TICKS_PER_POLL = 1 << 20;

    private final DeadlineTimerWheel wheel;
    private final Long2ObjectHashMap<Handler> handlers = new Long2ObjectHashMap<>();
    private long now;

    public Timers(final long startNanos)
    {
        wheel = new DeadlineTimerWheel(TimeUnit.NANOSECONDS, startNanos, TICK_NANOS, TICKS_PER_WHEEL);
    }

    /** Schedule {@code handler} to run once at or after {@code deadlineNanos}; returns the timer id. */
    public long schedule(final long deadlineNanos, final Handler handler)
    {
        final long id = wheel.scheduleTimer(deadlineNanos);
        handlers.put(id, handler);
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
        return wheel.cancelTimer(timerId);
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
        int expired = 0;
        // The wheel moves at most one tick per poll: poll until it stops moving, so the tick that
        // contains nowNanos is scanned too (tests move the clock by seconds at a time).
        for (int ticks = 0; ticks < MAX_TICKS_PER_POLL && wheel.timerCount() > 0; ticks++)
        {
            final long tickTime = wheel.currentTickTime();
            expired += wheel.poll(nowNanos, this, EXPIRY_LIMIT);
            if (wheel.currentTickTime() == tickTime)
            {
                break;
            }
        }
        return expired;
    }

    @Override
    public boolean onTimerExpiry(final TimeUnit timeUnit, final long nowIgnored, final long timerId)
    {
        final Handler handler = handlers.remove(timerId);
        if (handler != null)
        {
            handler.onTimer(now, timerId);
        }
        return true;
    }
}
