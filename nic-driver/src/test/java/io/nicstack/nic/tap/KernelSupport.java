package io.nicstack.nic.tap;

import io.nicstack.nic.linux.NetNamespace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Namespaces and commands for the tap's kernel tests (TESTING.md): every test makes its own namespace
 * {@code nst-<pid>-<n>}, opens its taps in it, uses 198.18.0.0/15 only and deletes the namespace in a {@code finally}.
 */
final class KernelSupport
{
    /** Debian's python3 (TESTING.md: it may not be the first python3 on the PATH). */
    static final String PYTHON = "/usr/bin/python3";

    private static final AtomicInteger NAMESPACES = new AtomicInteger();

    private KernelSupport()
    {
    }

    /** Create a namespace with a name no other test of this JVM uses. */
    static String addNamespace() throws IOException, InterruptedException
    {
        final String ns = "nst-" + ProcessHandle.current().pid() + "-" + NAMESPACES.incrementAndGet();
        run("ip", "netns", "add", ns);
        return ns;
    }

    /** Run {@code action} on a fresh thread that has entered {@code ns}; a tap opened there stays there. */
    static <T> T inNamespace(final String ns, final Callable<T> action) throws Exception
    {
        final FutureTask<T> task = new FutureTask<>(() ->
        {
            NetNamespace.enter(ns);
            try
            {
                return action.call();
            }
            finally
            {
                NetNamespace.restore();
            }
        });
        new Thread(task, "netns-" + ns).start();
        try
        {
            final T result = task.get(10, TimeUnit.SECONDS);
            assertNotNull(result);
            return result;
        }
        catch (final ExecutionException ex)
        {
            throw ex.getCause() instanceof Exception cause ? cause : ex;
        }
    }

    /** Run a command to completion within 10 s and return its output; fail the test if it fails. */
    static String run(final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(10, TimeUnit.SECONDS) || process.exitValue() != 0)
        {
            process.destroyForcibly();
            fail(String.join(" ", command) + " failed (root and iproute2 needed): " + output.trim());
        }
        return output;
    }

    /** Run a command within 10 s; true when it exited 0. */
    static boolean runQuietly(final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        return process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0;
    }
}
