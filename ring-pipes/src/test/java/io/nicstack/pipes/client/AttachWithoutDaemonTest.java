package io.nicstack.pipes.client;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
}
