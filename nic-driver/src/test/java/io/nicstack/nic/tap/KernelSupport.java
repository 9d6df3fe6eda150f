package io.nicstack.nic.tap;

import io.nicstack.nic.linux.NetNamespace;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Namespaces and commands for the tap's kernel tests (TESTING.md): every test makes its own namespace
 * {@code nst-<pid>-<n>}, opens its taps in it, uses 198.18.0.0/15 only and deletes the namespace in a {@code finally}.
 * Namespaces are created with IPv6 off (no DAD, router solicitations or MLD reports from the taps), after deleting
 * those a test JVM that no longer runs left behind; a shutdown hook deletes those of this JVM still there when it
 * exits (SIGTERM included). (The daemon module's {@code Netns} does the same; this module cannot use it.) Public for
 * this module's kernel tests in other packages.
 */
public final class KernelSupport
{
    /** Debian's python3 (TESTING.md: it may not be the first python3 on the PATH). */
    static final String PYTHON = "/usr/bin/python3";

    private static final AtomicInteger NAMESPACES = new AtomicInteger();
    private static final Pattern OWN_NAME = Pattern.compile("nst-(\\d+)-\\d+");
    /** Namespaces this JVM made; tests delete them themselves, the shutdown hook those still there at exit. */
    private static final Set<String> MADE = ConcurrentHashMap.newKeySet();

    static
    {
        // After SIGTERM (surefire's fork timeout, a cancelled build) no finally runs: delete what is left at exit,
        // as the daemon module's Netns does. SIGKILL leaves them to the next run's reapStale.
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            for (final String ns : MADE)
            {
                if (Files.exists(Path.of("/run/netns", ns)))
                {
                    try
                    {
                        System.err.println("[netns] deleting " + ns + " at exit");
                        delete(ns);
                    }
                    catch (final IOException | InterruptedException ignored)
                    {
                        // Best effort at exit; the next run reaps what is left.
                    }
                }
            }
        }, "netns-cleanup"));
    }

    private KernelSupport()
    {
    }

    /** Create a namespace with a name no other test of this JVM uses. */
    public static String addNamespace() throws IOException, InterruptedException
    {
        final String ns;
        synchronized (KernelSupport.class)
        {
            reapStale();
            ns = "nst-" + ProcessHandle.current().pid() + "-" + NAMESPACES.incrementAndGet();
        }
        MADE.add(ns);
        run("ip", "netns", "add", ns);
        try
        {
            run("ip", "netns", "exec", ns, "sh", "-c", "[ ! -d /proc/sys/net/ipv6 ] || "
                + "{ echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; }");
        }
        catch (final Throwable t)
        {
            runQuietly("ip", "netns", "del", ns);
            throw t;
        }
        return ns;
    }

    /**
     * Delete namespaces {@code nst-<pid>-<n>} whose test JVM {@code pid} no longer runs (killed with SIGKILL, say),
     * their processes (SIGKILL) first. Until this JVM has named a namespace, those with its own pid are stale too: an
     * earlier test JVM that had this pid and was killed left them, and {@code ip netns add} of the same name would fail
     * with "File exists" (as scripts/lib.sh's reap_stale). Called with the class's lock held, so no namespace this JVM
     * names can be taken for one of those.
     */
    private static void reapStale() throws IOException, InterruptedException
    {
        final long self = ProcessHandle.current().pid();
        final boolean noneOfOurOwnYet = NAMESPACES.get() == 0;
        for (final String line : output(10, "ip", "netns", "list").split("\n"))
        {
            final String name = line.trim().split("\\s+")[0];
            final Matcher m = OWN_NAME.matcher(name);
            if (!m.matches())
            {
                continue;
            }
            final long owner = Long.parseLong(m.group(1));
            final boolean ours = owner == self;
            if (ours ? noneOfOurOwnYet : !ProcessHandle.of(owner).map(ProcessHandle::isAlive).orElse(false))
            {
                System.err.println("[netns] deleting " + name + ", left by " + (ours
                    ? "an earlier test JVM with this JVM's pid " + owner : "test JVM " + owner + " which is gone"));
                delete(name);
            }
        }
    }

    /** SIGKILL the processes in namespace {@code name}, then delete it; says so on stderr when it is still there. */
    private static void delete(final String name) throws IOException, InterruptedException
    {
        for (final String pid : output(10, "ip", "netns", "pids", name).trim().split("\\s+"))
        {
            if (pid.matches("\\d+"))
            {
                ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
        if (!runQuietly("ip", "netns", "del", name) && Files.exists(Path.of("/run/netns", name)))
        {
            System.err.println("[netns] could not delete " + name);
        }
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
        final Bounded result = bounded(10, command);
        if (result.exitCode != 0)
        {
            fail(String.join(" ", command) + " failed (root and iproute2 needed)"
                + (result.exitCode == -1 ? ", timed out after 10 s" : "") + ": " + result.output.trim());
        }
        return result.output;
    }

    /** The output of a command (empty if it fails or takes longer than {@code seconds}). */
    private static String output(final int seconds, final String... command) throws IOException, InterruptedException
    {
        final Bounded result = bounded(seconds, command);
        return result.exitCode == 0 ? result.output : "";
    }

    /** Exit code (-1 when killed after {@code seconds}) and output (stdout and stderr) of a command. */
    record Bounded(int exitCode, String output)
    {
    }

    /**
     * Run a command for at most {@code seconds}, killing it after that; its output is read on another thread while
     * it runs, so a chatty command neither blocks on a full pipe nor escapes the time limit.
     */
    static Bounded bounded(final int seconds, final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final ByteArrayOutputStream output = new ByteArrayOutputStream();
        final Thread reader = new Thread(() ->
        {
            try (InputStream in = process.getInputStream())
            {
                in.transferTo(output);
            }
            catch (final IOException ignored)
            {
                // Closed under us: the process was killed.
            }
        }, "command-output");
        reader.setDaemon(true);
        reader.start();
        try
        {
            if (!process.waitFor(seconds, TimeUnit.SECONDS))
            {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                reader.join(1_000);
                return new Bounded(-1, output.toString(StandardCharsets.UTF_8));
            }
            // A grandchild that inherited the pipe may keep it open: wait for the output only briefly.
            reader.join(5_000);
            return new Bounded(process.exitValue(), output.toString(StandardCharsets.UTF_8));
        }
        finally
        {
            if (process.isAlive())
            {
                process.destroyForcibly();
            }
        }
    }

    /** Run a command within 10 s; true when it exited 0. */
    static boolean runQuietly(final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!process.waitFor(10, TimeUnit.SECONDS))
        {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            return false;
        }
        return process.exitValue() == 0;
    }
}
