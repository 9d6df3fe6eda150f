package io.nicstack.daemon;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.*;

/** The daemon lock: held while the daemon runs, named by its identity, and never dropped by a reader. */
class DaemonLockTest
{
    @TempDir
    Path dir;

    @Test
    void theLockIsHeldByThisProcessUntilClosed() throws Exception
    {
        final String self = DaemonLock.identity();
        assertTrue(self.matches(ProcessHandle.current().pid() + " [1-9][0-9]*"), self);
        final String[] parts = self.split(" ");
        final String samePidOtherStart = parts[0] + " " + (Long.parseLong(parts[1]) + 1);
        assertFalse(DaemonLock.heldBy(dir, self), "no lock file yet");
        try (DaemonLock lock = DaemonLock.acquire(dir))
        {
            assertEquals(self + "\n", Files.readString(lock.path()));
            assertTrue(DaemonLock.heldBy(dir, self));
            assertFalse(DaemonLock.heldBy(dir, samePidOtherStart), "a reused pid is another daemon");
        }
        assertFalse(DaemonLock.heldBy(dir, self), "released: the daemon is gone");
        try (DaemonLock again = DaemonLock.acquire(dir))
        {
            assertTrue(DaemonLock.heldBy(dir, self), "a later daemon takes the file over");
        }
    }

    /**
     * Java's FileLock (a classic POSIX lock) would fail both: it is never reported to its own process, and any close of
     * another descriptor of the file, here a reader's, drops it.
     */
    @Test
    void aReaderInTheSameProcessSeesTheLockAndCannotReleaseIt() throws Exception
    {
        try (DaemonLock lock = DaemonLock.acquire(dir))
        {
            for (int i = 0; i < 3; i++)
            {
                Files.readString(lock.path()); // opens and closes the file
                assertTrue(DaemonLock.heldBy(dir, DaemonLock.identity()));
            }
            final IOException e = assertThrows(IOException.class, () -> DaemonLock.acquire(dir));
            assertTrue(e.getMessage().contains("in use by another daemon (pid " + ProcessHandle.current().pid() + ")"),
                e.getMessage());
            assertTrue(DaemonLock.heldBy(dir, DaemonLock.identity()), "the refused second daemon left the lock alone");
        }
    }

    /**
     * The directory is held, not the name daemon.lock: a second daemon is refused also after daemon.lock was deleted
     * under the first (an operator, a tmp cleaner where --shm is under /tmp). Before, the lock was on the file alone, so
     * the second daemon made a new daemon.lock, locked that, and took the directory the first one still used.
     */
    @Test
    void aSecondDaemonIsRefusedEvenAfterTheLockFileWasDeleted() throws Exception
    {
        try (DaemonLock first = DaemonLock.acquire(dir))
        {
            Files.delete(first.path());
            final IOException e = assertThrows(IOException.class, () -> DaemonLock.acquire(dir),
                "a second daemon on a directory the first one holds");
            assertTrue(e.getMessage().contains("is in use by another daemon"), e.getMessage());
            Files.writeString(first.path(), "junk\n"); // a daemon.lock someone made anew, that nobody locks
            assertThrows(IOException.class, () -> DaemonLock.acquire(dir), "nor with a new daemon.lock in its place");
        }
        try (DaemonLock next = DaemonLock.acquire(dir))
        {
            assertTrue(DaemonLock.heldBy(dir, DaemonLock.identity()), "the first one gone, the next takes the directory");
        }
    }

    /** A daemon.lock that is a symbolic link is not followed, by the daemon or by readers; readers say what it is. */
    @Test
    void aSymbolicLinkInPlaceOfTheLockFileIsNotFollowed() throws Exception
    {
        final Path target = Files.writeString(dir.resolve("elsewhere"), "x");
        final Path link = Files.createSymbolicLink(dir.resolve(DaemonLock.FILE_NAME), target);
        final IOException e = assertThrows(IOException.class, () -> DaemonLock.acquire(dir));
        assertTrue(e.getMessage().contains("symbolic links"), e.getMessage());
        assertEquals("x", Files.readString(target));
        final IOException read = assertThrows(IOException.class, () -> DaemonLock.heldBy(dir, DaemonLock.identity()));
        assertEquals(link + " is a symbolic link, not a daemon lock file (a regular file)", read.getMessage());
    }

    /**
     * A counters file opened as the working directory's ({@code Path.of("")}, which the API allows, though the command
     * line refuses an empty --shm) is judged by the lock beside it; its path had no parent, and this threw a
     * NullPointerException (the review of 613145a).
     */
    @Test
    void aCountersFileInTheWorkingDirectoryIsJudgedByTheLockThere() throws Exception
    {
        final Path here = Path.of("");
        assertFalse(Files.exists(here.resolve(CountersFileDescriptor.FILE_NAME)), "a counters file in " + here.toAbsolutePath());
        try (CountersFile written = CountersFile.create(here); CountersFile read = CountersFile.open(here))
        {
            assertFalse(read.daemonRunning(), "no daemon holds ./daemon.lock");
        }
        finally
        {
            Files.deleteIfExists(here.resolve(CountersFileDescriptor.FILE_NAME));
        }
    }

    /** A lock file an earlier daemon made under umask 077 is made readable again: other users' readers must open it. */
    @Test
    void theLockFileIsReadableByAllWhateverTheModeItWasMadeWith() throws Exception
    {
        final Path file = Files.createFile(dir.resolve(DaemonLock.FILE_NAME),
            java.nio.file.attribute.PosixFilePermissions.asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        try (DaemonLock lock = DaemonLock.acquire(dir))
        {
            assertEquals(0644, (Integer)Files.getAttribute(file, "unix:mode") & 0777);
        }
    }

    /**
     * A daemon.lock that is a named pipe: stats and conns say so in one line and exit 1, without blocking. Before,
     * their open(2) of it waited for a writer for ever (the review's probe fifo_lock_hangs_readers.sh); bounded here, so
     * a regression fails instead of hanging the build.
     */
    @Test
    void aNamedPipeInPlaceOfTheLockFileIsRefusedByReadersWithoutBlocking() throws Exception
    {
        final Path fifo = mkfifo(dir.resolve(DaemonLock.FILE_NAME));
        try (CountersFile counters = CountersFile.create(dir); ConnectionsFile conns = ConnectionsFile.create(dir))
        {
            for (final String command : new String[] {"stats", "conns"})
            {
                final String[] r = assertTimeoutPreemptively(Duration.ofSeconds(10),
                    () -> run(command, "--shm", dir.toString()), command + " blocked on the named pipe");
                assertEquals("1", r[0], command + ": " + r[1] + r[2]);
                assertEquals("", r[1], command);
                assertEquals(command + ": " + fifo + " is a named pipe, not a daemon lock file (a regular file)\n", r[2]);
            }
        }
        finally
        {
            unblock(fifo);
        }
    }

    /** The daemon does not take a named pipe (or anything but a regular file) for its lock either. */
    @Test
    void aNamedPipeInPlaceOfTheLockFileIsRefusedByTheDaemon() throws Exception
    {
        final Path fifo = mkfifo(dir.resolve(DaemonLock.FILE_NAME));
        try
        {
            final IOException e = assertThrows(IOException.class,
                () -> assertTimeoutPreemptively(Duration.ofSeconds(10), () -> DaemonLock.acquire(dir).close()));
            assertEquals(fifo + " is a named pipe, not a daemon lock file (a regular file)", e.getMessage());
        }
        finally
        {
            unblock(fifo);
        }
    }

    private static Path mkfifo(final Path path) throws Exception
    {
        assertEquals(0, new ProcessBuilder("mkfifo", path.toString()).start().waitFor());
        return path;
    }

    /** A reader blocked in open(2) of the pipe goes on once the pipe has a writer: opening it read-write never blocks. */
    private static void unblock(final Path fifo) throws IOException
    {
        new RandomAccessFile(fifo.toFile(), "rw").close();
    }

    private static String[] run(final String... args)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }
}
