package io.nicstack.daemon;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network namespace owned by one test: unique name {@code nst-<pid>-<n>}, deleted on close (also
 * when the test fails). Commands run inside it with a time limit. Shared with other modules' tests
 * through this module's test jar.
 */
public final class Netns implements AutoCloseable
{
    private static final AtomicInteger COUNTER = new AtomicInteger();

    public final String name;

    /** Output and exit code of a finished command. */
    public record Result(int exitCode, String output)
    {
        public Result assertOk(final String what)
        {
            if (exitCode != 0)
            {
                throw new AssertionError(what + " failed (exit " + exitCode + "):\n" + output);
            }
            return this;
        }
    }

    public Netns() throws IOException
    {
        name = "nst-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
        run(10, "ip", "netns", "add", name).assertOk("ip netns add " + name);
        exec(10, "ip", "link", "set", "lo", "up").assertOk("lo up");
    }

    /** Run a command inside the namespace, killed after {@code timeoutSeconds}. */
    public Result exec(final int timeoutSeconds, final String... command) throws IOException
    {
        final List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
        full.addAll(Arrays.asList(command));
        return run(timeoutSeconds, full.toArray(new String[0]));
    }

    /** Start a long-running command inside the namespace. */
    public Process start(final String... command) throws IOException
    {
        final List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
        full.addAll(Arrays.asList(command));
        return new ProcessBuilder(full).redirectErrorStream(true).start();
    }

    public static Result run(final int timeoutSeconds, final String... command) throws IOException
    {
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        try
        {
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS))
            {
                p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                return new Result(-1, "timed out after " + timeoutSeconds + " s: " + String.join(" ", command) + "\n"
                    + new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted", e);
        }
        return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    @Override
    public void close() throws IOException
    {
        run(10, "ip", "netns", "del", name);
    }
}
