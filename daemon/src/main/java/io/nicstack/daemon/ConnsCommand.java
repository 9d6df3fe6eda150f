package io.nicstack.daemon;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Set;

import org.agrona.concurrent.NanoClock;

/** {@code nicstack conns --shm DIR}: the daemon's TCP connections, like {@code ss -tin}. */
final class ConnsCommand
{
    static final String USAGE = "usage: nicstack conns [--shm DIR]\n"
        + "  lists the TCP connections of the daemon on DIR (default " + StatsCommand.DEFAULT_SHM + "), like ss -tin\n"
        + "  (cwnd and ssthresh in segments of the MSS); the daemon builds the table when asked, and one that does not\n"
        + "  answer within 2 s gets its last table shown, with its age";

    private ConnsCommand()
    {
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        return run(args, out, err, System::nanoTime, ConnectionsFile.READ_BUDGET_NANOS);
    }

    /** Tests: the clock and the time the reader waits for the daemon's table. */
    static int run(final String[] args, final PrintStream out, final PrintStream err, final NanoClock clock, final long budgetNanos)
    {
        final Options options = new Options("conns", args, 1, Set.of("--shm"), Set.of());
        if (options.help())
        {
            out.println(USAGE);
            return 0;
        }
        final Path dir = options.path("--shm", StatsCommand.DEFAULT_SHM);
        try
        {
            out.print(ConnectionsFile.read(dir, clock, budgetNanos));
            return 0;
        }
        catch (final IOException e)
        {
            err.println("conns: " + DaemonCommand.describe(e));
            return 1;
        }
    }
}
