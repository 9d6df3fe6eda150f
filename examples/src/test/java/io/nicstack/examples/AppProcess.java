package io.nicstack.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * An example app ({@code io.nicstack.examples.Main app ...}) as a child JVM from the test classpath. It
 * talks to the daemon through shared memory only, so it needs no namespace.
 */
final class AppProcess implements AutoCloseable
{
    final Process process;
    final List<String> output = Collections.synchronizedList(new ArrayList<>());
    private volatile String readyLine;

    AppProcess(final Path shm, final String... appArgs) throws IOException
    {
        // The app gets SIGKILL if the test JVM dies first (setpriv --pdeathsig KILL, where util-linux has it).
        final List<String> cmd = new ArrayList<>(io.nicstack.daemon.Netns.dieWithParent());
        cmd.addAll(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx256m",
            "-cp", System.getProperty("java.class.path"),
            "io.nicstack.examples.Main", "app"));
        cmd.addAll(List.of(appArgs));
        cmd.addAll(List.of("--shm", shm.toString()));
        process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final Thread reader = new Thread(() ->
        {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)))
            {
                String line;
                while ((line = r.readLine()) != null)
                {
                    output.add(line);
                    if (line.startsWith("nicstack app ready"))
                    {
                        readyLine = line;
                    }
                }
            }
            catch (final IOException ignored)
            {
                // Process gone.
            }
        }, "app-output");
        reader.setDaemon(true);
        reader.start();
    }

    long pid()
    {
        return process.pid();
    }

    /** Wait (bounded) for the ready line; null if the app exited first (see {@link #output}). */
    String awaitReadyOrExit() throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (readyLine == null && System.nanoTime() < deadline && process.isAlive())
        {
            Thread.sleep(20);
        }
        if (readyLine == null && process.isAlive())
        {
            throw new AssertionError("app not ready after 30 s; output:\n" + text());
        }
        return readyLine;
    }

    String awaitReady() throws InterruptedException
    {
        final String line = awaitReadyOrExit();
        if (line == null)
        {
            process.waitFor(5, TimeUnit.SECONDS);
            throw new AssertionError("app exited before it was ready; output:\n" + text());
        }
        return line;
    }

    /** The first output line that matches, waiting at most {@code seconds}; null if none. */
    String awaitLine(final Predicate<String> match, final int seconds) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline)
        {
            synchronized (output)
            {
                for (final String line : output)
                {
                    if (match.test(line))
                    {
                        return line;
                    }
                }
            }
            Thread.sleep(20);
        }
        return null;
    }

    String text()
    {
        synchronized (output)
        {
            return String.join("\n", output);
        }
    }

    /** SIGTERM, then the exit code (bounded wait). */
    int stop() throws InterruptedException
    {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS))
        {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            throw new AssertionError("app ignored SIGTERM; output:\n" + text());
        }
        return process.exitValue();
    }

    @Override
    public void close()
    {
        if (process.isAlive())
        {
            try
            {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
