package io.nicstack.daemon;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Runs a short system command (iproute2) and turns a failure into an IOException with its output. */
final class Shell
{
    private Shell()
    {
    }

    static void run(final String... command) throws IOException
    {
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        try
        {
            if (!p.waitFor(10, TimeUnit.SECONDS))
            {
                p.destroyForcibly();
                throw new IOException("timed out: " + String.join(" ", command));
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", command), e);
        }
        final String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (p.exitValue() != 0)
        {
            throw new IOException(String.join(" ", command) + " failed: " + output);
        }
    }

    static void runQuietly(final String... command)
    {
        try
        {
            run(command);
        }
        catch (final IOException ignored)
        {
            // Best effort during shutdown: the interface may already be gone with its fd.
        }
    }
}
