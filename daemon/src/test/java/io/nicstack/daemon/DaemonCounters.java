package io.nicstack.daemon;

import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;

/** A running daemon's stack counters, read from its counters file by label (as {@code nicstack stats} does). */
public final class DaemonCounters
{
    private DaemonCounters()
    {
    }

    /** Every {@link StackCounter} (0 when absent) from the counters file under {@code shm}. */
    public static Map<StackCounter, Long> read(final Path shm) throws IOException
    {
        final Map<String, StackCounter> byLabel = new HashMap<>();
        final Map<StackCounter, Long> values = new EnumMap<>(StackCounter.class);
        for (final StackCounter c : StackCounter.values())
        {
            byLabel.put(c.label(), c);
            values.put(c, 0L);
        }
        try (CountersFile file = CountersFile.open(shm))
        {
            file.reader().forEach((value, id, label) ->
            {
                final StackCounter c = byLabel.get(label);
                if (c != null)
                {
                    values.put(c, value);
                }
            });
        }
        return values;
    }

    /** Frames not accounted for by a terminal counter (see {@link StackCounters#unaccountedFrames()}). */
    public static long unaccounted(final Map<StackCounter, Long> values)
    {
        return StackCounters.unaccountedFrames(values::get);
    }
}
