package io.nicstack.daemon;

import java.io.PrintStream;

/** Entry point of the {@code nicstack} command (the Java subcommands; the launcher script adds test and demo). */
public final class Main
{
    /** The launcher script ({@code ./nicstack --help}) holds the full usage; this is the Java side's reminder. */
    static final String USAGE = "usage: nicstack daemon --device tap:NAME --ip A.B.C.D/N [options] | nicstack stats|conns [--shm DIR]"
        + " (nicstack COMMAND --help, or ./nicstack --help, lists every option)";

    private Main()
    {
    }

    public static void main(final String[] args)
    {
        System.exit(run(args, System.out, System.err));
    }

    /** Run one command as the {@code nicstack} script does; returns the exit code (also for tests in other modules). */
    public static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        if (args.length == 0)
        {
            err.println(USAGE); // no command: an error, like any bad command line
            return 2;
        }
        if ("--help".equals(args[0]) || "-h".equals(args[0]) || "help".equals(args[0]))
        {
            out.println(USAGE);
            return 0;
        }
        try
        {
            switch (args[0])
            {
                case "daemon":
                    return DaemonCommand.run(args, out, err);
                case "stats":
                    return StatsCommand.run(args, out, err);
                case "conns":
                    return ConnsCommand.run(args, out, err);
                default:
                    throw new UsageException("nicstack: unknown command '" + args[0] + "' (try nicstack --help)");
            }
        }
        catch (final UsageException e)
        {
            err.println(e.getMessage());
            return 2;
        }
    }
}
