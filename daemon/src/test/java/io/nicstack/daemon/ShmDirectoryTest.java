package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.daemon.pipes.PipeServer;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;

/** The --shm directory: what the daemon refuses to write into, and one daemon per directory. */
class ShmDirectoryTest
{
    @TempDir
    Path dir;

    private static int mode(final Path p) throws IOException
    {
        return (Integer)Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
    }

    private static PipeServer pipeServer(final Path shm)
    {
        final NetStack a = new NetStack(MemoryWire.pair(1500, 16).a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), 1L);
        return new PipeServer(a, shm, PipeCounters.inMemory(), () -> 1L, () -> 1L, 1L << 30,
            new PrintStream(OutputStream.nullOutputStream()));
    }

    /** A user plants {@code <shm>/apps -> /etc} before the daemon starts: the daemon must not chmod 1777 the target. */
    @Test
    void plantedAppsSymlinkIsRefusedAndItsTargetKeepsItsMode() throws Exception
    {
        final Path victim = Files.createDirectory(dir.resolve("victim-etc"));
        Files.setPosixFilePermissions(victim, PosixFilePermissions.fromString("rwxr-xr-x"));
        final Path shm = Files.createDirectory(dir.resolve("planted-shm"));
        Files.createSymbolicLink(shm.resolve(PipeServer.APPS_DIRECTORY), victim);
        try (CountersFile counters = CountersFile.create(shm); ConnectionsFile conns = ConnectionsFile.create(shm))
        {
            final PipeServer server = pipeServer(shm);
            final IOException e = assertThrows(IOException.class, server::start);
            assertTrue(e.getMessage().contains("refusing"), e.getMessage());
        }
        finally
        {
            assertEquals(0755, mode(victim));
        }
    }

    @Test
    void appsDirectoryIsCreatedStickyAndWorldWritable() throws Exception
    {
        final Path shm = ShmDirectory.prepare(dir.resolve("shm"), ShmDirectory.ownUid()).path();
        pipeServer(shm).start().close();
        assertEquals(01777, mode(shm.resolve(PipeServer.APPS_DIRECTORY)));
        pipeServer(shm).start().close(); // an apps directory of ours from an earlier run is fine
    }

    @Test
    void appsThatIsAFileIsRefused() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        Files.writeString(shm.resolve(PipeServer.APPS_DIRECTORY), "x");
        assertThrows(IOException.class, pipeServer(shm)::start);
    }

    @Test
    void missingDirectoryAndParentsAreCreatedOwnerOnlyWritable() throws Exception
    {
        final ShmDirectory shm = ShmDirectory.prepare(dir.resolve("a/b/shm"), ShmDirectory.ownUid());
        assertEquals(dir.resolve("a/b/shm").toRealPath(), shm.path());
        assertEquals(0, mode(shm.path()) & 0022);
        assertEquals(0, mode(dir.resolve("a")) & 0022);
    }

    @Test
    void shmThatIsASymbolicLinkIsRefused() throws Exception
    {
        final Path target = Files.createDirectory(dir.resolve("target"));
        final Path link = Files.createSymbolicLink(dir.resolve("shm"), target);
        final IOException e = assertThrows(IOException.class, () -> ShmDirectory.prepare(link, ShmDirectory.ownUid()));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
    }

    /** Another uid's directory: the test claims a uid that does not own it, so it runs as any user. */
    @Test
    void shmOwnedBySomeoneElseIsRefused() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final int notOwner = ShmDirectory.ownUid() + 1;
        final IOException e = assertThrows(IOException.class, () -> ShmDirectory.prepare(shm, notOwner));
        assertTrue(e.getMessage().contains("owned by uid"), e.getMessage());
    }

    @Test
    void groupOrWorldWritableShmIsRefused() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        Files.setPosixFilePermissions(shm, PosixFilePermissions.fromString("rwxrwxrwx"));
        final IOException e = assertThrows(IOException.class, () -> ShmDirectory.prepare(shm, ShmDirectory.ownUid()));
        assertTrue(e.getMessage().contains("writable by group or others"), e.getMessage());
    }

    @Test
    void worldWritableParentWithoutStickyBitIsRefused() throws Exception
    {
        final Path open = Files.createDirectory(dir.resolve("open"));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertThrows(IOException.class, () -> ShmDirectory.prepare(open.resolve("shm"), ShmDirectory.ownUid()));
        Files.setAttribute(open, "unix:mode", 01777); // like /dev/shm: fine
        ShmDirectory.prepare(open.resolve("shm"), ShmDirectory.ownUid());
    }

    @Test
    void secondDaemonOnTheSameDirectoryIsRefused() throws Exception
    {
        final Path path = dir.resolve("shm");
        try (ShmDirectory first = ShmDirectory.prepare(path, ShmDirectory.ownUid()).lock())
        {
            final ShmDirectory second = ShmDirectory.prepare(path, ShmDirectory.ownUid());
            final IOException e = assertThrows(IOException.class, second::lock);
            assertTrue(e.getMessage().contains("in use by another daemon (pid " + ProcessHandle.current().pid() + ")"),
                e.getMessage());
        }
        ShmDirectory.prepare(path, ShmDirectory.ownUid()).lock().close(); // released with the first
    }

    /**
     * "link/.." is refused: the daemon would normalize it away by its text, while the kernel, for stats, conns and the
     * apps, goes through the link, so they would name another directory than the daemon's.
     */
    @Test
    void aPathWithDotDotIsRefused() throws Exception
    {
        final Path elsewhere = Files.createDirectories(dir.resolve("x/y"));
        final Path link = Files.createSymbolicLink(dir.resolve("link"), elsewhere);
        final Path given = link.resolve("../shm");
        final IOException e = assertThrows(IOException.class, () -> ShmDirectory.prepare(given, ShmDirectory.ownUid()));
        assertTrue(e.getMessage().contains("'..'"), e.getMessage());
        assertFalse(Files.exists(dir.resolve("shm")), "created where the text says, not where the kernel goes");
    }
}
