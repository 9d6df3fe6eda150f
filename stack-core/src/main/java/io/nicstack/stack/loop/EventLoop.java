package io.nicstack.stack.loop;

import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.agrona.concurrent.NanoClock;

import io.nicstack.stack.NetStack;

/**
 * Poll-mode, run-to-completion loop: burst RX, process, timers, burst TX; an Agrona idle strategy
 * while there is nothing to do, and after a while the device's own readiness wait (poll(2) on a
 * tap), bounded so that timers still fire on time.
 *
 * <p>With a {@link BusySpinIdleStrategy} (or {@link NoOpIdleStrategy}) the loop busy-polls, DPDK style: it never
 * blocks, a core is spent on it, and a doorbell or frame is seen within one round. Idle rounds then take tens of
 * nanoseconds, so the clock (a vDSO call of about 20 ns) is read only after a round that did work and otherwise
 * every {@link #CLOCK_REUSE_ROUNDS} rounds: a reading is at most that many idle spins old. Other strategies park,
 * and every round reads the clock.
 */
public final class EventLoop implements Runnable
{
    /** Rounds without work before the loop blocks in the device instead of spinning. */
    private static final int SPIN_ROUNDS = 1_000;
    private static final long MAX_BLOCK_NANOS = 1_000_000L;
    /** Busy-poll only: idle rounds that may reuse the previous clock reading. */
    static final int CLOCK_REUSE_ROUNDS = 8;

    private final NetStack stack;
    private final NanoClock clock;
    private final CachedNanoClock roundClock;
    private final IdleStrategy idle;
    private final LoopTask[] tasks;
    private final boolean busyPoll;
    private long now;
    private int clockAge = Integer.MAX_VALUE;
    private volatile boolean running = true;

    /**
     * @param tasks extra work run once per round on the loop thread (the pipe server, snapshots); their
     *              work counts like the stack's, so a busy pipe keeps the loop from blocking in the device.
     */
    public EventLoop(final NetStack stack, final NanoClock clock, final IdleStrategy idle, final LoopTask... tasks)
    {
        this(stack, clock, new CachedNanoClock(), idle, tasks);
    }

    /**
     * @param roundClock set to {@code clock}'s time once at the start of every round: tasks that need the time
     *                   read it there instead of asking the system clock again (one clock read per round).
     */
    public EventLoop(
        final NetStack stack, final NanoClock clock, final CachedNanoClock roundClock, final IdleStrategy idle, final LoopTask... tasks)
    {
        this.stack = stack;
        this.clock = clock;
        this.roundClock = roundClock;
        this.idle = idle;
        this.tasks = tasks;
        this.busyPoll = idle instanceof BusySpinIdleStrategy || idle instanceof NoOpIdleStrategy;
    }

    /** True when the loop busy-polls (never parks or blocks). */
    public boolean busyPoll()
    {
        return busyPoll;
    }

    /** One round; returns the work done. */
    public int doWork()
    {
        if (!busyPoll || clockAge >= CLOCK_REUSE_ROUNDS)
        {
            now = clock.nanoTime();
            roundClock.update(now);
            clockAge = 0;
        }
        else
        {
            clockAge++;
        }
        int work = 0;
        for (final LoopTask task : tasks)
        {
            work += task.doWork();
        }
        work += stack.poll(now);
        if (work > 0)
        {
            clockAge = CLOCK_REUSE_ROUNDS; // work moved time-dependent state: the next round reads the clock
        }
        return work;
    }

    @Override
    public void run()
    {
        stack.start(clock.nanoTime());
        int idleRounds = 0;
        while (running)
        {
            if (doWork() > 0)
            {
                idleRounds = 0;
                idle.reset();
            }
            else if (busyPoll || ++idleRounds < SPIN_ROUNDS)
            {
                idle.idle();
            }
            else
            {
                stack.device().awaitReadable(MAX_BLOCK_NANOS);
            }
        }
    }

    /** Ask the loop to return from {@link #run()} after the current round. */
    public void stop()
    {
        running = false;
    }
}
