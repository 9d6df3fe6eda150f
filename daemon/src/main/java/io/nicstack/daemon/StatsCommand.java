package io.nicstack.daemon;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Set;

import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.stack.stats.StackCounters;

/** {@code nicstack stats --shm DIR}: the daemon's counters, read from shared memory like {@code netstat -s}. */
final class StatsCommand
{
    static final String DEFAULT_SHM = "/dev/shm/nicstack";
    static final String USAGE = "usage: nicstack stats [--shm DIR] [--all]\n"
        + "  prints the counters of the daemon on DIR (default " + DEFAULT_SHM + "), like netstat -s: those not at 0,\n"
        + "  or with --all every one";

    private StatsCommand()
    {
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        final Options options = new Options("stats", args, 1, Set.of("--shm"), Set.of("--all"));
        if (options.help())
        {
            out.println(USAGE);
            return 0;
        }
        final Path dir = options.path("--shm", DEFAULT_SHM);
        try (CountersFile file = CountersFile.open(dir))
        {
            final boolean all = options.has("--all");
            final boolean alive = file.daemonRunning();
            final StringBuilder text = new StringBuilder();
            text.append("nicstack counters ").append(file.path()).append(" (daemon pid ").append(file.pid())
                .append(alive ? "" : ", not running").append(")\n");
            // Checked while read, printed only when all of it is good: a bad file gives one line on stderr, nothing else.
            file.forEachCounter((id, type, label, value) ->
            {
                if ((type == StackCounters.TYPE_ID || type == PipeCounters.TYPE_ID || type == DaemonCommand.DeviceCounters.TYPE_ID)
                    && (all || value != 0))
                {
                    text.append(String.format("%14d  %s%n", value, label));
                }
            });
            out.print(text);
            return 0;
        }
        catch (final IOException e)
        {
            err.println("stats: " + DaemonCommand.describe(e));
            return 1;
        }
    }
}
