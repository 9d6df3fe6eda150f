package io.nicstack.stack.time;

import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import org.agrona.DeadlineTimerWheel;
import org.agrona.ErrorHandler;
import org.agrona.LangUtil;

/**
 * One-shot timers on Agrona's {@link DeadlineTimerWheel}, driven by the injected clock.
 *
 * <p>Scheduling and expiry allocate nothing in steady state: handlers sit in a table beside the wheel's slots, laid out
 * as the wheel lays out its deadlines (a block of slots per spoke) and made with it, so a timer landing in a spoke for
 * the first time allocates nothing either; the table grows only when the wheel does, when a spoke holds more timers
 * than it has slots. Handlers run on the event loop thread inside {@link #poll(long)}.
 *
 * <p>A timer id is the wheel's (spoke {@code << 32 |} slot) with the slot's generation above: the wheel gives a freed
 * slot to the next timer in its spoke, and without the generation a stale id (expired or cancelled) would name that
 * timer. A stale id could only match again after its slot has been reused 2^21 times.
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
    /** Above the wheel's 32 bits of slot and 10 of spoke; 21 bits, so an id is never negative nor {@link #NO_TIMER}. */
    private static final int GENERATION_SHIFT = 42;
    private static final int GENERATION_MASK = (1 << 21) - 1;
    private static final long WHEEL_ID_MASK = (1L << GENERATION_SHIFT) - 1;
    /** The wheel's slots per spoke to start with (Agrona's default), a power of two: they double when one is short. */
    private static final int INITIAL_SLOTS_PER_SPOKE = 16;
    /** The wheel's {@code NULL_DEADLINE} (Long.MAX_VALUE) marks a free slot: a timer's deadline stays below it. */
    private static final long LATEST_DEADLINE = DeadlineTimerWheel.NULL_DEADLINE - 1;

    private final DeadlineTimerWheel wheel;
    private final ErrorHandler errorHandler;
    /**
     * Per slot of the wheel, at {@code spoke << slotShift | slot}: the handler of the timer in it (null when free), and
     * the slot's generation. At 16 slots for each of the 1024 spokes they take 128 KiB together, as the wheel's
     * deadlines do.
     */
    private Handler[] slotHandlers;
    private int[] slotGenerations;
    /** log2 of the slots per spoke of the tables above; the wheel has at least as many, and grows them first. */
    private int slotShift;
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

    /** Timers whose handlers' exceptions leave {@link #poll(long)}. */
    public Timers(final long startNanos)
    {
        this(startNanos, LangUtil::rethrowUnchecked);
    }

    /**
     * Timers that hand a handler's exception to {@code errorHandler} and go on with the next timer: the timer that
     * threw is gone (its slot freed and uncounted before it ran), the others are untouched.
     */
    public Timers(final long startNanos, final ErrorHandler errorHandler)
    {
        this.errorHandler = errorHandler;
        wheel = new DeadlineTimerWheel(TimeUnit.NANOSECONDS, startNanos, TICK_NANOS, TICKS_PER_WHEEL,
            INITIAL_SLOTS_PER_SPOKE);
        slotShift = Integer.numberOfTrailingZeros(INITIAL_SLOTS_PER_SPOKE);
        slotHandlers = new Handler[TICKS_PER_WHEEL << slotShift];
        slotGenerations = new int[TICKS_PER_WHEEL << slotShift];
        this.startNanos = startNanos;
        Arrays.fill(spokeMinDeadline, Long.MAX_VALUE);
    }

    /**
     * Schedule {@code handler} to run once at or after {@code deadlineNanos}; returns the timer id. A deadline of
     * {@code Long.MAX_VALUE} is taken as one less: the wheel marks its free slots with it.
     */
    public long schedule(final long deadlineNanos, final Handler handler)
    {
        Objects.requireNonNull(handler, "handler");
        long deadline = Math.min(deadlineNanos, LATEST_DEADLINE);
        if (polling && deadline - now <= 0)
        {
            // Due already, from a handler: the wheel would put it in the spoke being scanned, behind the scan, and then
            // move on, and it would wait a whole revolution. Past the current tick it goes to the next one (still due,
            // the scan comes to it); within it, poll scans the spoke again. Either way this poll runs it.
            dueFromHandler = true;
            final long tickEnd = wheel.currentTickTime();
            if (now - tickEnd >= 0)
            {
                deadline = Math.max(deadline, tickEnd);
            }
        }
        final long wheelId = wheel.scheduleTimer(deadline);
        final int spoke = spokeOf(wheelId);
        final int slot = (int)wheelId;
        if (slot >> slotShift != 0)
        {
            grow(slot);
        }
        final int index = spoke << slotShift | slot;
        slotHandlers[index] = handler;
        final int generation = (slotGenerations[index] + 1) & GENERATION_MASK;
        slotGenerations[index] = generation;
        spokeTimers[spoke]++;
        if (deadline < spokeMinDeadline[spoke])
        {
            spokeMinDeadline[spoke] = deadline;
        }
        return (long)generation << GENERATION_SHIFT | wheelId;
    }

    /**
     * Make room for {@code slot} in every spoke's block of the tables, as the wheel has in its own (it doubles the
     * slots of all its spokes when one is full), keeping each spoke's handlers and generations at their slots.
     */
    private void grow(final int slot)
    {
        final int shift = 32 - Integer.numberOfLeadingZeros(slot);
        final int oldSlots = 1 << slotShift;
        final Handler[] handlers = new Handler[TICKS_PER_WHEEL << shift];
        final int[] generations = new int[TICKS_PER_WHEEL << shift];
        for (int spoke = 0; spoke < TICKS_PER_WHEEL; spoke++)
        {
            System.arraycopy(slotHandlers, spoke << slotShift, handlers, spoke << shift, oldSlots);
            System.arraycopy(slotGenerations, spoke << slotShift, generations, spoke << shift, oldSlots);
        }
        slotHandlers = handlers;
        slotGenerations = generations;
        slotShift = shift;
    }

    /**
     * Cancel a timer; returns whether it was armed. {@link #NO_TIMER} and the ids of timers that expired or were
     * cancelled are ignored, even once the wheel has given their slot to another timer.
     */
    public boolean cancel(final long timerId)
    {
        if (timerId == NO_TIMER)
        {
            return false;
        }
        final int spoke = spokeOf(timerId);
        final int slot = (int)timerId;
        if (slot >>> slotShift != 0)
        {
            return false; // negative, or past any slot a timer was given
        }
        final int index = spoke << slotShift | slot;
        if (slotHandlers[index] == null || slotGenerations[index] != timerId >>> GENERATION_SHIFT)
        {
            return false;
        }
        slotHandlers[index] = null;
        wheel.cancelTimer(timerId & WHEEL_ID_MASK);
        removedFromSpoke(spoke);
        return true;
    }

    /** The spoke of a timer id or a wheel's id (spoke << 32 | slot, stable when a spoke grows). */
    static int spokeOf(final long timerId)
    {
        return (int)(timerId >>> 32) & (TICKS_PER_WHEEL - 1);
    }

    private void removedFromSpoke(final int spoke)
    {
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

    /**
     * Run every timer whose deadline is at or before {@code nowNanos}; returns how many ran. A timer that a handler of
     * this poll schedules at or before {@code nowNanos} runs in this poll too, after the handler returns, so a handler
     * that wants to run again later must schedule a deadline after {@code nowNanos}: one that always schedules itself at
     * {@code nowNanos} is run again and again until the poll's bound of 2^20 rounds (about a million runs) ends it, and
     * it runs again on the next poll. (No handler in the stack schedules a deadline at or before its {@code now}.) At
     * most 1,024 timers expire per tick and round; past that, the rest of that tick and later ones run on the next poll.
     */
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
    public boolean onTimerExpiry(final TimeUnit timeUnit, final long nowIgnored, final long wheelId)
    {
        final int spoke = spokeOf(wheelId);
        final int index = spoke << slotShift | (int)wheelId;
        final Handler handler = slotHandlers[index];
        slotHandlers[index] = null;
        removedFromSpoke(spoke);
        try
        {
            handler.onTimer(now, (long)slotGenerations[index] << GENERATION_SHIFT | wheelId);
        }
        catch (final RuntimeException e)
        {
            errorHandler.onError(e);
        }
        return true;
    }
}
