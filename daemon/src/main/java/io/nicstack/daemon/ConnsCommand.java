package io.nicstack.daemon;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Set;

/** {@code nicstack conns --shm DIR}: the daemon's TCP connections, like {@code ss -tin}. */
final class ConnsCommand
{
    private ConnsCommand()
    {
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        final Options options = new Options("conns", args, 1, Set.of("--shm"), Set.of());
        try
        {
            out.print(ConnectionsFile.read(Path.of(options.get("--shm", StatsCommand.DEFAULT_SHM))));
            return 0;
        }
        catch (final IOException e)
        {
            err.println("conns: " + e.getMessage());
            return 1;
        }
    }
}
