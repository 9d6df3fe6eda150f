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

    /** Frames delivered an extra time by {@code dup}. */
    public long duplicated()
    {
        return duplicated;
    }

    /** Frames with one bit flipped by {@code corrupt}. */
    public long corrupted()
    {
        return corrupted;
    }

    /** Frames held back behind the next frame by {@code reorder}. */
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
