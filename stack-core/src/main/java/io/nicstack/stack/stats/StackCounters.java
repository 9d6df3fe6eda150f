package io.nicstack.stack.stats;

import java.nio.ByteBuffer;
import java.util.function.ToLongFunction;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.CountersManager;
import org.agrona.concurrent.status.CountersReader;

/**
 * The stack's counters, one Agrona {@link AtomicCounter} per {@link StackCounter}.
 *
 * <p>Single writer (the event loop): increments use release semantics, so another process that
 * maps the same counters file (as {@code nicstack stats} does) reads consistent values without the
 * writer paying for a locked instruction.
 *
 * <p>The counts every received frame bumps ({@code FRAMES_IN}, {@code BYTES_IN}, {@code TCP_SEGMENTS_IN},
 * {@code RX_CHECKSUMS_TRUSTED}, {@code TCP_PREDICTED}) are kept in plain fields during a receive burst and added here when it ends
 * ({@code NetStack.flushCounts}), so they, like the identity of {@link #unaccountedFrames()}, hold between bursts.
 */
public final class StackCounters
{
    /** Type id of nicstack counters in the counters file (Aeron uses small ids; stay clear of them). */
    public static final int TYPE_ID = 1001;

    private static final StackCounter[] ALL = StackCounter.values();

    private final AtomicCounter[] counters = new AtomicCounter[ALL.length];

    /** Allocate every counter in the given manager (labels as in {@link StackCounter#label()}). */
    public StackCounters(final CountersManager manager)
    {
        for (final StackCounter c : ALL)
        {
            counters[c.ordinal()] = manager.newCounter(c.label(), TYPE_ID);
        }
    }

    /** Counters in heap memory, for tests and embedded use. */
    public static StackCounters inMemory()
    {
        return new StackCounters(newHeapManager(ALL.length * 2));
    }

    /** A counters manager over heap buffers with room for {@code count} counters. */
    public static CountersManager newHeapManager(final int count)
    {
        final UnsafeBuffer meta = new UnsafeBuffer(ByteBuffer.allocateDirect(count * CountersReader.METADATA_LENGTH));
        final UnsafeBuffer values = new UnsafeBuffer(ByteBuffer.allocateDirect(count * CountersReader.COUNTER_LENGTH));
        return new CountersManager(meta, values);
    }

    public void increment(final StackCounter counter)
    {
        counters[counter.ordinal()].incrementRelease();
    }

    public void add(final StackCounter counter, final long delta)
    {
        counters[counter.ordinal()].getAndAddRelease(delta);
    }

    public long get(final StackCounter counter)
    {
        return counters[counter.ordinal()].get();
    }

    /**
     * Frames received but not (yet) accounted for by a terminal counter; zero whenever the stack is
     * between bursts. See {@link StackCounter} for the identity.
     */
    public long unaccountedFrames()
    {
        return unaccountedFrames(this::get);
    }

    /** The same identity over counter values read elsewhere (another process's counters file). */
    public static long unaccountedFrames(final ToLongFunction<StackCounter> value)
    {
        long terminal = 0;
        for (final StackCounter c : ALL)
        {
            if (c.kind() != StackCounter.Kind.INFO)
            {
                terminal += value.applyAsLong(c);
            }
        }
        return value.applyAsLong(StackCounter.FRAMES_IN) - (terminal - value.applyAsLong(StackCounter.IPV4_REASSEMBLED));
    }

    /** Sum of every drop reason. */
    public long totalDrops()
    {
        long drops = 0;
        for (final StackCounter c : ALL)
        {
            if (c.kind() == StackCounter.Kind.DROP)
            {
                drops += get(c);
            }
        }
        return drops;
    }

    @Override
    public String toString()
    {
        final StringBuilder sb = new StringBuilder();
        for (final StackCounter c : ALL)
        {
            final long v = get(c);
            if (v != 0)
            {
                sb.append(String.format("%12d  %s%n", v, c.label()));
            }
        }
        return sb.toString();
    }
}
