package io.nicstack.pipes;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AppFileTest
{
    private static final int RING = 4096;
    private static final int PIPE = 8192;
    private static final int SLOTS = 4;

    @TempDir
    Path dir;

    @Test
    void createThenOpenSeesTheSameHeaderRingsAndPipes() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "echo-server", RING, PIPE, SLOTS, 1_700_000_000_000L))
        {
            final Path file = dir.resolve("apps").resolve("echo-server-" + PID + ".app");
            assertEquals(file, app.path());
            assertEquals(AppFileDescriptor.HEADER_LENGTH, Files.size(file), "the app file is the header only");
            assertEquals(AppFileDescriptor.STATE_ATTACHING, app.state());

            try (AppFile daemon = AppFile.open(file))
            {
                assertEquals(AppFileDescriptor.VERSION, daemon.version());
                assertEquals("echo-server", daemon.name());
                assertEquals(PID, daemon.appPid());
                assertEquals(1_700_000_000_000L, daemon.appHeartbeat());
                assertEquals(RING, daemon.ringCapacity());
                assertEquals(PIPE, daemon.pipeCapacity());
                assertEquals(SLOTS, daemon.maxConnections());
                assertEquals(AppFileDescriptor.STATE_ATTACHING, daemon.state());

                daemon.markAttached(777, 1_700_000_000_050L);
                assertEquals(AppFileDescriptor.STATE_ATTACHED, app.state());
                assertEquals(777, app.daemonPid());
                assertEquals(AppFileDescriptor.VERSION, app.daemonVersion());
                assertEquals(1_700_000_000_050L, app.daemonHeartbeat());
                assertEquals(AppFileDescriptor.STATE_ATTACHED, stateInTheAppFile(file), "a scan passes it over");

                // Control ring: app -> daemon over two mappings of one memory.
                final UnsafeBuffer message = new UnsafeBuffer(new byte[Protocol.CONTROL_LENGTH]);
                message.putLong(0, -5L);
                message.putInt(8, 8080);
                assertTrue(app.controlRing().write(Protocol.LISTEN, message, 0, Protocol.CONTROL_LENGTH));
                final int[] seen = new int[2];
                daemon.controlRing().read((type, buffer, index, length) ->
                {
                    seen[0] = type;
                    seen[1] = buffer.getInt(index + 8);
                });
                assertArrayEquals(new int[] {Protocol.LISTEN, 8080}, seen);

                // Slot 3: the daemon opens it and writes RX bytes, the app writes TX bytes.
                daemon.openSlot(3, Protocol.connectionId(3, 9), 8080, 0xC6120002, 50000);
                assertEquals(AppFileDescriptor.SLOT_IN_USE, app.slotState(3));
                assertEquals(Protocol.connectionId(3, 9), app.slotConnectionId(3));
                assertEquals(0xC6120002, app.slotRemoteAddress(3));
                assertEquals(50000, app.slotRemotePort(3));
                assertEquals(8080, app.slotLocalPort(3));
                assertEquals(5, daemon.rx(3).write(new byte[] {1, 2, 3, 4, 5}, 0, 5));
                assertEquals(5, app.rx(3).readable());
                assertEquals(0, app.rx(2).readable());
                app.tx(3).write(new byte[] {9}, 0, 1);
                assertEquals(1, daemon.tx(3).readable());
                assertEquals(AppFileDescriptor.rxPipeOffset(RING, PIPE, 3) + PipeDescriptor.DATA_OFFSET,
                    app.rx(3).peekIndex());
                assertThrows(IndexOutOfBoundsException.class, () -> app.rx(SLOTS));
            }
        }
    }

    @Test
    void fileIsOwnerReadWriteOnly() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "secret", RING, PIPE, SLOTS, 0))
        {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(app.path())));
            app.delete();
            assertFalse(Files.exists(app.path()));
        }
    }

    /**
     * The app file's name is the app's name and pid, so a second app of one name in this process would take the first
     * one's file: it is refused while the first is open, and taken once it closed. Before, create deleted the live
     * file as the leftover of a dead process; the daemon, still attached to that path, skipped the new one, and both
     * clients broke (the second with "no daemon attached").
     */
    @Test
    void aSecondAppOfOneNameInThisProcessIsRefusedWhileTheFirstIsOpen() throws IOException
    {
        final AppFile first = AppFile.create(dir, "twice", RING, PIPE, SLOTS, 0);
        final FileAlreadyExistsException e = assertThrows(FileAlreadyExistsException.class,
            () -> AppFile.create(dir, "twice", RING, PIPE, SLOTS, 0));
        assertTrue(e.getMessage().contains("twice"), e.getMessage());
        assertTrue(Files.exists(first.path()), "the first app's file is left alone");
        first.delete();
        first.close();
        try (AppFile again = AppFile.create(dir, "twice", RING, PIPE, SLOTS, 0))
        {
            assertTrue(Files.exists(again.path()));
        }
    }

    @Test
    void createNeedsTheSharedMemoryDirectoryButMakesApps() throws IOException
    {
        assertThrows(NoSuchFileException.class, () -> AppFile.create(dir.resolve("nope"), "a", RING, PIPE, 1, 0));
        try (AppFile app = AppFile.create(dir, "a", RING, PIPE, 1, 0))
        {
            assertEquals(dir.resolve("apps"), app.path().getParent());
            assertTrue(Files.isDirectory(dir.resolve("apps")));
            try (var files = Files.list(dir.resolve("apps")))
            {
                assertEquals(1, files.count(), "no temporary file is left behind");
            }
        }
        assertThrows(IllegalArgumentException.class, () -> AppFile.create(dir, "../evil", RING, PIPE, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> AppFile.create(dir, "a", 3000, PIPE, 1, 0));
    }

    @Test
    void versionMismatchIsRefusedAndCanBeRejected() throws IOException
    {
        final Path file;
        try (AppFile app = AppFile.create(dir, "old", RING, PIPE, SLOTS, 0))
        {
            file = app.path();
            app.buffer().putInt(AppFileDescriptor.VERSION_OFFSET, AppFileDescriptor.VERSION + 1);

            final AppFileException ex = assertThrows(AppFileException.class, () -> AppFile.open(file));
            assertEquals(AppFileException.Kind.VERSION_MISMATCH, ex.kind());
            assertEquals(Protocol.Reason.VERSION_MISMATCH, ex.reason());

            assertTrue(AppFile.reject(file, ex.reason()));
            assertEquals(AppFileDescriptor.STATE_REJECTED, app.state());
            assertEquals(Protocol.Reason.VERSION_MISMATCH, app.reason());
        }
    }

    @Test
    void aTruncatedAppFileIsRefused() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "cut", RING, PIPE, SLOTS, 0))
        {
            try (RandomAccessFile raf = new RandomAccessFile(app.path().toFile(), "rw"))
            {
                raf.setLength(AppFileDescriptor.HEADER_LENGTH - 1);
            }
            assertEquals(AppFileException.Kind.TRUNCATED,
                assertThrows(AppFileException.class, () -> AppFile.open(app.path())).kind());
        }
    }

    /**
     * The memory cannot shrink or grow, not even by the app that made it and holds it read-write: the daemon's mapping
     * of it can never fault.
     */
    @Test
    void theMemoryIsSealedAgainstEveryChangeOfSize() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "sealed", RING, PIPE, SLOTS, 0))
        {
            final Libc.Calls libc = Libc.calls();
            final int fd = memoryFd(app);
            final int fSealExec = 0x20; // added by the kernel where vm.memfd_noexec asks for it
            assertEquals(AppFile.MEMORY_SEALS, libc.fcntl(fd, Libc.F_GET_SEALS, 0) & ~fSealExec);
            assertEquals(-1, libc.ftruncate(fd, 0), "shrink");
            assertEquals(1, Libc.errno(), "EPERM");
            assertEquals(-1, libc.ftruncate(fd, AppFileDescriptor.fileLength(RING, PIPE, SLOTS) + 4096), "grow");
            assertEquals(1, Libc.errno(), "EPERM");
            assertEquals(-1, libc.fcntl(fd, Libc.F_ADD_SEALS, Libc.F_SEAL_FUTURE_WRITE), "no more seals");
            assertEquals(1, Libc.errno(), "EPERM (F_SEAL_SEAL), not EBUSY");
            try (FileChannel reopened = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.WRITE))
            {
                assertThrows(IOException.class, () -> reopened.truncate(0), "nor through another open file");
            }
            assertEquals(AppFileDescriptor.fileLength(RING, PIPE, SLOTS), Files.size(Path.of("/proc/self/fd/" + fd)));
        }
    }

    /**
     * An app file naming a descriptor that is not its sealed memory is refused: a memfd that can shrink, one whose seals
     * are not sealed, a regular file, a sealed memfd of another inode, the memory opened read-only, a descriptor that is
     * not open.
     */
    @Test
    void anAppFileNamingAnythingButItsSealedMemoryIsRefused() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "named", RING, PIPE, SLOTS, 0))
        {
            final Path file = app.path();
            final int sealed = memoryFd(app);
            final long inode = app.buffer().getLong(AppFileDescriptor.MEMORY_INODE_OFFSET);
            final long length = AppFileDescriptor.fileLength(RING, PIPE, SLOTS);
            final int unsealed = memfd(length, 0);
            final int sealsOpen = memfd(length, Libc.F_SEAL_SHRINK);
            final int other = memfd(length, AppFile.MEMORY_SEALS);
            final Path regular = Files.write(dir.resolve("regular"), new byte[(int)length]);
            final Libc.Calls libc = Libc.calls();
            final int plain = libc.open(regular.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
            final int readOnly = libc.open("/proc/self/fd/" + sealed, Libc.O_RDONLY | Libc.O_CLOEXEC);
            try
            {
                name(file, unsealed, inodeOf(unsealed));
                assertTrue(refusal(file).contains("not sealed against shrinking"), "a memfd that can shrink");
                name(file, sealsOpen, inodeOf(sealsOpen));
                assertTrue(refusal(file).contains("F_SEAL_SEAL"), "a memfd that may still be sealed against writing");
                name(file, plain, inodeOf(plain));
                final String regularRefusal = refusal(file);
                // On disk F_GET_SEALS fails; a tmpfs file answers F_SEAL_SEAL alone.
                assertTrue(regularRefusal.contains("not a memfd") || regularRefusal.contains("not sealed against shrinking"),
                    regularRefusal);
                name(file, other, inode);
                assertTrue(refusal(file).contains("is inode"), "another sealed memfd than the app file names");
                name(file, readOnly, inode);
                assertTrue(refusal(file).contains("not open for reading and writing"), "the memory, read-only");
                name(file, 1_000_000, inode);
                assertTrue(refusal(file).contains("cannot take descriptor"), "no such descriptor");
                name(file, sealed, inode);
                try (AppFile daemon = AppFile.open(file))
                {
                    assertEquals(SLOTS, daemon.maxConnections());
                }
            }
            finally
            {
                for (final int fd : new int[] {unsealed, sealsOpen, other, plain, readOnly})
                {
                    libc.close(fd);
                }
            }
        }
    }

    private static int memfd(final long length, final int seals)
    {
        final Libc.Calls libc = Libc.calls();
        final int fd = libc.memfd_create("test", Libc.MFD_CLOEXEC | Libc.MFD_ALLOW_SEALING);
        assertTrue(fd >= 0);
        assertEquals(0, libc.ftruncate(fd, length));
        assertEquals(0, seals == 0 ? 0 : libc.fcntl(fd, Libc.F_ADD_SEALS, seals));
        return fd;
    }

    /** A rejection is written in the app file, and the app sees it as its state, with the reason. */
    @Test
    void aRejectionInTheAppFileIsTheAppsState() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "refused", RING, PIPE, SLOTS, 0))
        {
            assertEquals(AppFileDescriptor.STATE_ATTACHING, app.state());
            assertTrue(AppFile.reject(app.path(), Protocol.Reason.LIMIT_MEMORY));
            assertEquals(AppFileDescriptor.STATE_REJECTED, app.state());
            assertEquals(Protocol.Reason.LIMIT_MEMORY, app.reason());
        }
    }

    private static final long PID = ProcessHandle.current().pid();

    private static int memoryFd(final AppFile app)
    {
        return app.buffer().getInt(AppFileDescriptor.MEMORY_FD_OFFSET);
    }

    private static long inodeOf(final int fd) throws IOException
    {
        return (Long)Files.getAttribute(Path.of("/proc/self/fd/" + fd), "unix:ino");
    }

    /** Rewrite the app file to name descriptor {@code fd} and inode {@code inode}. */
    private static void name(final Path file, final int fd, final long inode) throws IOException
    {
        final byte[] header = Files.readAllBytes(file);
        final UnsafeBuffer b = new UnsafeBuffer(header);
        b.putInt(AppFileDescriptor.MEMORY_FD_OFFSET, fd);
        b.putLong(AppFileDescriptor.MEMORY_INODE_OFFSET, inode);
        Files.write(file, header);
    }

    private static String refusal(final Path file)
    {
        final AppFileException e = assertThrows(AppFileException.class, () -> AppFile.open(file));
        assertEquals(AppFileException.Kind.BAD_MEMORY, e.kind(), e.getMessage());
        return e.getMessage();
    }

    private static int stateInTheAppFile(final Path file) throws IOException
    {
        return new UnsafeBuffer(Files.readAllBytes(file)).getInt(AppFileDescriptor.STATE_OFFSET);
    }

    @Test
    void badMagicSizesAndNameAreRefused() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "bad", RING, PIPE, SLOTS, 0))
        {
            final Path file = app.path();
            app.buffer().putInt(AppFileDescriptor.PIPE_CAPACITY_OFFSET, PIPE + 1);
            assertEquals(AppFileException.Kind.BAD_SIZES, assertThrows(AppFileException.class, () -> AppFile.open(file)).kind());
            app.buffer().putInt(AppFileDescriptor.PIPE_CAPACITY_OFFSET, PIPE);
            app.buffer().putInt(AppFileDescriptor.MAX_CONNECTIONS_OFFSET, 0);
            assertEquals(AppFileException.Kind.BAD_SIZES, assertThrows(AppFileException.class, () -> AppFile.open(file)).kind());
            app.buffer().putInt(AppFileDescriptor.MAX_CONNECTIONS_OFFSET, SLOTS);
            app.buffer().putInt(AppFileDescriptor.NAME_OFFSET, 1000);
            assertEquals(AppFileException.Kind.BAD_NAME, assertThrows(AppFileException.class, () -> AppFile.open(file)).kind());
            app.buffer().putStringAscii(AppFileDescriptor.NAME_OFFSET, "bad");
            app.buffer().putLong(AppFileDescriptor.MAGIC_OFFSET, 0x1234);
            assertEquals(AppFileException.Kind.BAD_MAGIC, assertThrows(AppFileException.class, () -> AppFile.open(file)).kind());
        }
    }
}
