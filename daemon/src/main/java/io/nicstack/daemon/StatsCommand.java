package io.nicstack.daemon;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Set;

import org.agrona.concurrent.status.CountersReader;

import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.stack.stats.StackCounters;

/** {@code nicstack stats --shm DIR}: the daemon's counters, read from shared memory like {@code netstat -s}. */
final class StatsCommand
{
    static final String DEFAULT_SHM = "/dev/shm/nicstack";

    private StatsCommand()
    {
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        final Options options = new Options("stats", args, 1, Set.of("--shm"), Set.of("--all"));
        final Path dir = Path.of(options.get("--shm", DEFAULT_SHM));
        try (CountersFile file = CountersFile.open(dir))
        {
            final boolean all = options.has("--all");
            final boolean alive = ProcessHandle.of(file.pid()).map(ProcessHandle::isAlive).orElse(false);
            out.println("nicstack counters " + file.path() + " (daemon pid " + file.pid() + (alive ? "" : ", not running") + ")");
            final CountersReader reader = file.reader();
            reader.forEach((value, id, label) ->
            {
                final int type = reader.getCounterTypeId(id);
                if ((type == StackCounters.TYPE_ID || type == PipeCounters.TYPE_ID) && (all || value != 0))
                {
                    out.printf("%14d  %s%n", value, label);
                }
            });
            return 0;
        }
        catch (final IOException e)
        {
            err.println("stats: " + e.getMessage());
            return 1;
        }
    }
}
