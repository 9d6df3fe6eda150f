package io.nicstack.pipes.client;

import org.agrona.concurrent.IdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.nicstack.pipes.AppFile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What {@link NicstackClient#attach} says, and leaves behind, when the directory it is given has no daemon. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AttachWithoutDaemonTest
{
    @TempDir
    Path dir;

    /** A regular file is not a directory; it was called one that does not exist. */
    @Test
    void aRegularFileIsNotADirectory() throws Exception
    {
        final Path file = Files.createFile(dir.resolve("shm"));
        final DaemonNotRunningException e = assertThrows(DaemonNotRunningException.class,
            () -> NicstackClient.attach(file, "app", new ClientOptions()));
        assertEquals("nicstack directory " + file + " is not a directory", e.getMessage());
        final DaemonNotRunningException missing = assertThrows(DaemonNotRunningException.class,
            () -> NicstackClient.attach(dir.resolve("none"), "app", new ClientOptions()));
        assertEquals("nicstack directory " + dir.resolve("none") + " does not exist: is the daemon running?",
            missing.getMessage());
    }

    /** Options whose idle strategy fails the test when attach waits for a daemon at all. */
    private static ClientOptions noWait()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 2;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
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
                throw new AssertionError("attach waited for a daemon");
            }

            @Override
            public void reset()
            {
            }
        };
        return options;
    }

    private static List<Path> contents(final Path dir) throws Exception
    {
        try (Stream<Path> files = Files.walk(dir))
        {
            return files.filter(p -> !p.equals(dir)).sorted().toList();
        }
    }

    /**
     * A directory no daemon has used (no daemon.lock, no apps): no daemon, said at once, and nothing made there.
     * Before, the client made apps/ and its app file there, then waited its whole attach timeout (5 s).
     */
    @Test
    void aDirectoryNoDaemonUsedFailsAtOnceAndStaysEmpty() throws Exception
    {
        final DaemonNotRunningException e = assertThrows(DaemonNotRunningException.class,
            () -> NicstackClient.attach(dir, "app", noWait()));
        assertEquals("no nicstack daemon runs in " + dir + " (no daemon has used it: it has no daemon.lock)", e.getMessage());
        assertEquals(List.of(), contents(dir));
    }

    /**
     * A directory whose daemon stopped (its daemon.lock is there, and nobody holds it): no daemon, said at once, and no
     * app file left. Before, the client waited its whole attach timeout.
     */
    @Test
    void aDirectoryWhoseDaemonStoppedFailsAtOnce() throws Exception
    {
        Files.writeString(dir.resolve("daemon.lock"), "4242 1\n");
        Files.createDirectory(dir.resolve(AppFile.APPS_DIRECTORY));
        final DaemonNotRunningException e = assertThrows(DaemonNotRunningException.class,
            () -> NicstackClient.attach(dir, "app", noWait()));
        assertEquals("no nicstack daemon runs in " + dir + " (nobody holds its daemon.lock: the daemon that used it has"
            + " stopped)", e.getMessage());
        assertEquals(List.of(dir.resolve(AppFile.APPS_DIRECTORY), dir.resolve("daemon.lock")), contents(dir));
    }

    /** A daemon.lock that is not a regular file (a named pipe, never opened) is no daemon's: no daemon, at once. */
    @Test
    void aLockFileThatIsANamedPipeIsNoDaemons() throws Exception
    {
        assertEquals(0, new ProcessBuilder("mkfifo", dir.resolve("daemon.lock").toString()).start().waitFor());
        final DaemonNotRunningException e = assertThrows(DaemonNotRunningException.class,
            () -> NicstackClient.attach(dir, "app", noWait()));
        assertEquals("no nicstack daemon runs in " + dir + " (its daemon.lock is not a regular file)", e.getMessage());
    }

    /**
     * While a process holds the lock (a daemon that runs, if slow to answer), attach waits for its answer as before:
     * here the fake daemon attaches the app.
     */
    @Test
    void aHeldLockIsADaemonToWaitFor() throws Exception
    {
        final Process holder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", System.getProperty("java.class.path"), LockHolderMain.class.getName(), dir.resolve("daemon.lock").toString())
            .redirectErrorStream(true).start();
        try (BufferedReader out = holder.inputReader(StandardCharsets.UTF_8);
             FakeDaemon daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH))
        {
            assertEquals("locked", out.readLine());
            final ClientOptions options = noWait();
            options.idleStrategy = new org.agrona.concurrent.BackoffIdleStrategy();
            try (NicstackClient client = NicstackClient.attach(dir, "app", options))
            {
                assertTrue(Files.exists(AppFile.appFilePath(dir, "app", ProcessHandle.current().pid())));
            }
        }
        finally
        {
            holder.getOutputStream().close();
            assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
        }
    }
}
