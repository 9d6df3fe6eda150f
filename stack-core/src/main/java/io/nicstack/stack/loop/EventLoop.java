package io.nicstack.stack.loop;

import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NanoClock;

import io.nicstack.stack.NetStack;

/**
 * Poll-mode, run-to-completion loop: burst RX, process, timers, burst TX; an Agrona idle strategy
 * while there is nothing to do, and after a while the device's own readiness wait (poll(2) on a
 * tap), bounded so that timers still fire on time.
 */
public final class EventLoop implements Runnable
{
    /** Rounds without work before the loop blocks in the device instead of spinning. */
    private static final int SPIN_ROUNDS = 1_000;
    private static final long MAX_BLOCK_NANOS = 1_000_000L;

    private final NetStack stack;
    private final NanoClock clock;
    private final CachedNanoClock roundClock;
    private final IdleStrategy idle;
    private final LoopTask[] tasks;
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
    }

    /** One round; returns the work done. */
    public int doWork()
    {
        final long now = clock.nanoTime();
        roundClock.update(now);
        int work = 0;
        for (final LoopTask task : tasks)
        {
            work += task.doWork();
        }
        return work + stack.poll(now);
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
            else if (++idleRounds < SPIN_ROUNDS)
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
