package io.nicstack.nic.fault;

/** Live counters of the faults one direction of a {@link FaultInjectingDevice} has injected. */
public final class FaultStats
{
    long lost;
    long duplicated;
    long corrupted;
    long reordered;
    long delayed;
    long rateDropped;
    long overflowDropped;

    /** Frames dropped by {@code loss}. */
    public long lost()
    {
        return lost;
    }

    /**
     * Duplicates made by {@code dup}. A duplicate then goes through reordering and delay like any frame, so it may
     * also be counted in {@link #reordered()} or {@link #delayed()}, or dropped (and counted in
     * {@link #overflowDropped()}) when the ring of delayed frames is full: not every duplicate is delivered.
     */
    public long duplicated()
    {
        return duplicated;
    }

    /** Frames with one bit flipped by {@code corrupt}. */
    public long corrupted()
    {
        return corrupted;
    }

    /**
     * Frames held back by {@code reorder}: each is let go behind the next frame, or alone after
     * {@code FaultLine.REORDER_TIMEOUT_NANOS} (1 ms) if no frame comes, and then not actually reordered.
     */
    public long reordered()
    {
        return reordered;
    }

    /** Frames held for {@code delay}. */
    public long delayed()
    {
        return delayed;
    }

    /** Frames dropped by the {@code rate} policer. */
    public long rateDropped()
    {
        return rateDropped;
    }

    /** Frames dropped because the ring of delayed frames was full. */
    public long overflowDropped()
    {
        return overflowDropped;
    }

    @Override
    public String toString()
    {
        return "lost=" + lost + ",duplicated=" + duplicated + ",corrupted=" + corrupted + ",reordered=" + reordered +
            ",delayed=" + delayed + ",rateDropped=" + rateDropped + ",overflowDropped=" + overflowDropped;
    }
}
