package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.AppFileDescriptor;
import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.IdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How soon the client tells a dead daemon, and what it says to an app that attaches again: a killed daemon its parent
 * has not waited for (a zombie) is dead, a daemon.lock nobody holds any more is a daemon gone, an attach waiting for an
 * answer ends once the lock is released, and a second attach of a name whose client lost its daemon says to close that
 * client first. Time moves on the client's clock by hand; the processes played are real.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DaemonDeathTest
{
    @TempDir
    Path dir;

    private final CachedNanoClock clock = new CachedNanoClock();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final List<Process> processes = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        for (int i = toClose.size() - 1; i >= 0; i--)
        {
            toClose.get(i).close();
        }
        for (final Process process : processes)
        {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Options on the test's clock, with a daemon timeout no test reaches: only the process checks can end a session. */
    private ClientOptions options()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 2;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        options.clock = clock;
        options.daemonTimeoutMillis = TimeUnit.DAYS.toMillis(10);
        return options;
    }

    private <T extends AutoCloseable> T closing(final T closeable)
    {
        toClose.add(closeable);
        return closeable;
    }

    private Process start(final String... command) throws Exception
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        processes.add(process);
        return process;
    }

    /** A process that holds an open-file-description lock on dir/daemon.lock, as a running daemon does, until released. */
    private Process lockHolder(final BufferedReader[] out) throws Exception
    {
        final Process holder = start(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx64m", "-cp",
            System.getProperty("java.class.path"), LockHolderMain.class.getName(), dir.resolve("daemon.lock").toString(),
            "ofd");
        out[0] = holder.inputReader(StandardCharsets.UTF_8);
        assertEquals("locked", out[0].readLine());
        return holder;
    }

    private static void release(final Process holder) throws Exception
    {
        holder.getOutputStream().close();
        assertTrue(holder.waitFor(30, TimeUnit.SECONDS), "the lock holder did not end");
    }

    private void advance(final long millis)
    {
        clock.update(clock.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis));
    }

    private static String procState(final long pid) throws Exception
    {
        try
        {
            final String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        }
        catch (final NoSuchFileException ex)
        {
            return "gone";
        }
    }

    /**
     * The daemon's process killed, and not waited for by its parent (a supervisor busy elsewhere, an init that does not
     * reap): a zombie, dead all the same. Before, ProcessHandle took it for alive: this poll returned, and only the
     * stall, then the loss bound, ended the session (10 s after the kill with the default options).
     */
    @Test
    void aKilledDaemonNotYetReapedIsDead() throws Exception
    {
        // The child of a shell that then becomes a sleep: its parent never waits for it.
        final Process parent = start("sh", "-c", "sleep 600 & echo $!; exec sleep 600");
        final long pid = Long.parseLong(parent.inputReader(StandardCharsets.UTF_8).readLine().trim());
        final FakeDaemon daemon = closing(new FakeDaemon(dir, FakeDaemon.Mode.ATTACH));
        daemon.pid = pid;
        final NicstackClient client = closing(NicstackClient.attach(dir, "app", options()));
        advance(1000);
        client.poll(); // alive: a process check passes

        assertTrue(ProcessHandle.of(pid).orElseThrow().destroyForcibly());
        String state = procState(pid);
        for (int i = 0; i < 1000 && !"Z".equals(state); i++)
        {
            Thread.sleep(10);
            state = procState(pid);
        }
        assertEquals("Z", state, "the killed daemon stands for a zombie");
        assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "ProcessHandle takes it for alive");

        advance(1000);
        final DaemonGoneException e = assertThrows(DaemonGoneException.class, client::poll);
        assertEquals("the daemon process " + pid + " is dead", e.getMessage());
        assertTrue(client.isGone());
    }

    /**
     * Nobody holds daemon.lock any more: the daemon has stopped, whatever its pid names (here this live JVM, as a pid of
     * another PID namespace may). Before, the process check took the live pid for the daemon, and the poll returned.
     */
    @Test
    void aDaemonLockNobodyHoldsIsADaemonGone() throws Exception
    {
        final BufferedReader[] out = new BufferedReader[1];
        final Process holder = lockHolder(out);
        closing(new FakeDaemon(dir, FakeDaemon.Mode.ATTACH));
        final NicstackClient client = closing(NicstackClient.attach(dir, "app", options()));
        advance(1000);
        client.poll();

        release(holder);
        advance(1000);
        final DaemonGoneException e = assertThrows(DaemonGoneException.class, client::poll);
        assertEquals("the daemon process " + ProcessHandle.current().pid() + " is gone: nobody holds " +
            dir.resolve("daemon.lock"), e.getMessage());
        assertTrue(client.isGone());
    }

    /**
     * An attach that waits for the daemon's answer ends once the daemon.lock is released (the daemon was shutting down,
     * or failed to start), saying the daemon stopped. Before, it waited its whole attach timeout, then said that no
     * daemon had answered within it.
     */
    @Test
    void anAttachEndsWhenTheDaemonLockIsReleasedMidWait() throws Exception
    {
        final BufferedReader[] out = new BufferedReader[1];
        final Process holder = lockHolder(out);
        closing(new FakeDaemon(dir, FakeDaemon.Mode.IGNORE)); // a daemon that never answers
        final ClientOptions options = options();
        options.attachTimeoutMillis = TimeUnit.MINUTES.toMillis(1);
        final int[] idles = {0};
        options.idleStrategy = new IdleStrategy()
        {
            @Override
            public void idle(final int workCount)
            {
                idle();
            }

            @Override
            public void idle()
            {
                if (idles[0]++ == 0)
                {
                    try
                    {
                        release(holder);
                    }
                    catch (final Exception ex)
                    {
                        throw new AssertionError(ex);
                    }
                }
                advance(10);
            }

            @Override
            public void reset()
            {
            }
        };
        final DaemonNotRunningException e =
            assertThrows(DaemonNotRunningException.class, () -> NicstackClient.attach(dir, "app", options));
        assertEquals("no nicstack daemon runs in " + dir + " (nobody holds its daemon.lock: the daemon that used it has"
            + " stopped)", e.getMessage());
        assertFalse(Files.exists(AppFile.appFilePath(dir, "app", ProcessHandle.current().pid())), "no app file left");
    }

    /**
     * A client whose daemon is gone keeps its app file, and its name, until it is closed: an attach of that name before
     * says to close the lost client first; after the close, the attach works. Before, it said only that an app of that
     * name was already running.
     */
    @Test
    void anAttachOfALostClientsNameSaysToCloseItFirst() throws Exception
    {
        final FakeDaemon daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        final NicstackClient lost = NicstackClient.attach(dir, "app", options());
        try
        {
            daemon.call(d ->
            {
                d.file().state(AppFileDescriptor.STATE_DAEMON_GONE);
                return null;
            });
            assertEquals("the daemon shut down", assertThrows(DaemonGoneException.class, lost::poll).getMessage());

            final NicstackException e =
                assertThrows(NicstackException.class, () -> NicstackClient.attach(dir, "app", options()));
            assertEquals("an app named app is already running in this process, its client lost with its daemon (the " +
                "daemon shut down): close the lost client first, then attach again", e.getMessage());
            // The same directory named another way (relative to the working directory) is the same app file.
            final Path relative = Path.of("").toAbsolutePath().relativize(dir.toAbsolutePath());
            final NicstackException again =
                assertThrows(NicstackException.class, () -> NicstackClient.attach(relative, "app", options()));
            assertEquals(e.getMessage(), again.getMessage());
        }
        finally
        {
            lost.close();
            daemon.close();
        }
        try (FakeDaemon again = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
             NicstackClient client = NicstackClient.attach(dir, "app", options()))
        {
            client.poll();
            assertFalse(client.isGone());
        }
    }
}
