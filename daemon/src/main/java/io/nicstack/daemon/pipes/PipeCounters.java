package io.nicstack.daemon.pipes;

import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.CountersManager;

import io.nicstack.stack.stats.StackCounters;

/** The pipe server's counters, one Agrona {@link AtomicCounter} per {@link PipeCounter}; single writer (the event loop). */
public final class PipeCounters
{
    /** Type id of pipe counters in the counters file (the stack's are {@link StackCounters#TYPE_ID}). */
    public static final int TYPE_ID = 1002;

    private static final PipeCounter[] ALL = PipeCounter.values();

    private final AtomicCounter[] counters = new AtomicCounter[ALL.length];

    public PipeCounters(final CountersManager manager)
    {
        for (final PipeCounter c : ALL)
        {
            counters[c.ordinal()] = manager.newCounter(c.label(), TYPE_ID);
        }
    }

    /** Counters in direct memory of their own, for tests. */
    public static PipeCounters inMemory()
    {
        return new PipeCounters(StackCounters.newHeapManager(ALL.length));
    }

    public void increment(final PipeCounter counter)
    {
        counters[counter.ordinal()].incrementRelease();
    }

    public void add(final PipeCounter counter, final long delta)
    {
        counters[counter.ordinal()].getAndAddRelease(delta);
    }

    public long get(final PipeCounter counter)
    {
        return counters[counter.ordinal()].get();
    }

    @Override
    public String toString()
    {
        final StringBuilder sb = new StringBuilder();
        for (final PipeCounter c : ALL)
        {
            sb.append(String.format("%12d  %s%n", get(c), c.label()));
        }
        return sb.toString();
    }
}
