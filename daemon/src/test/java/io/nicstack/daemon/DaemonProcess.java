package io.nicstack.daemon;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@code nicstack daemon} as a child process inside a test's namespace, from the test classpath. */
public final class DaemonProcess implements AutoCloseable
{
    public final Process process;
    public final Path shm;
    public final List<String> output = Collections.synchronizedList(new ArrayList<>());
    private volatile String readyLine;

    public DaemonProcess(final Netns ns, final Path shm, final String... daemonArgs) throws IOException
    {
        this(ns, shm, new String[0], daemonArgs);
    }

    /** As above, the JVM started by {@code prefix} (say {@code unshare --pid --mount-proc}) inside the namespace. */
    public DaemonProcess(final Netns ns, final Path shm, final String[] prefix, final String... daemonArgs) throws IOException
    {
        this.shm = shm;
        final List<String> cmd = new ArrayList<>(List.of(prefix));
        cmd.addAll(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx512m",
            "-cp", System.getProperty("java.class.path"),
            "io.nicstack.daemon.Main", "daemon", "--shm", shm.toString()));
        cmd.addAll(List.of(daemonArgs));
        process = ns.start(cmd.toArray(new String[0]));
        final Thread reader = new Thread(() ->
        {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)))
            {
                String line;
                while ((line = r.readLine()) != null)
                {
                    output.add(line);
                    if (line.startsWith("nicstack ready"))
                    {
                        readyLine = line;
                    }
                }
            }
            catch (final IOException ignored)
            {
                // Process gone.
            }
        }, "daemon-output");
        reader.setDaemon(true);
        reader.start();
    }

    /** Wait (bounded) for the ready line; fails with the daemon's output otherwise. */
    public String awaitReady() throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (readyLine == null && System.nanoTime() < deadline && process.isAlive())
        {
            Thread.sleep(20);
        }
        if (readyLine == null)
        {
            throw new AssertionError("daemon not ready; output:\n" + String.join("\n", output));
        }
        return readyLine;
    }

    /** Wait (bounded) for a line of the daemon's output (stdout or stderr) that contains {@code fragment}. */
    public void awaitLine(final String fragment) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && process.isAlive())
        {
            synchronized (output)
            {
                if (output.stream().anyMatch(line -> line.contains(fragment)))
                {
                    return;
                }
            }
            Thread.sleep(20);
        }
        synchronized (output)
        {
            if (output.stream().noneMatch(line -> line.contains(fragment)))
            {
                throw new AssertionError("no line with '" + fragment + "'; output:\n" + String.join("\n", output));
            }
        }
    }

    /**
     * A kernel test class's teardown: stop {@code daemon} and check that it exited 0 (its output is the message), then,
     * whatever happened, close it and the namespace and delete the work directory. Any of them may be null (set-up
     * failed before it was made).
     */
    public static void stopAndCleanUp(final DaemonProcess daemon, final Netns ns, final Path work) throws Exception
    {
        try
        {
            if (daemon != null)
            {
                org.junit.jupiter.api.Assertions.assertEquals(0, daemon.stop(), String.join("\n", daemon.output));
            }
        }
        finally
        {
            try
            {
                if (daemon != null)
                {
                    daemon.close();
                }
                if (ns != null)
                {
                    ns.close();
                }
            }
            finally
            {
                Netns.deleteTree(work);
            }
        }
    }

    /** SIGTERM, then the exit code (bounded wait). */
    public int stop() throws InterruptedException
    {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS))
        {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            throw new AssertionError("daemon ignored SIGTERM; output:\n" + String.join("\n", output));
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
