package io.nicstack.daemon;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

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

    /** A daemon.lock that is a symbolic link is not followed, by the daemon or by readers. */
    @Test
    void aSymbolicLinkInPlaceOfTheLockFileIsNotFollowed() throws Exception
    {
        final Path target = Files.writeString(dir.resolve("elsewhere"), "x");
        Files.createSymbolicLink(dir.resolve(DaemonLock.FILE_NAME), target);
        final IOException e = assertThrows(IOException.class, () -> DaemonLock.acquire(dir));
        assertTrue(e.getMessage().contains("symbolic links"), e.getMessage());
        assertEquals("x", Files.readString(target));
        assertFalse(DaemonLock.heldBy(dir, DaemonLock.identity()));
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
}
