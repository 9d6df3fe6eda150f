package io.nicstack.pipes;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
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
        try (AppFile app = AppFile.create(dir, "echo-server", 4242, RING, PIPE, SLOTS, 1_700_000_000_000L))
        {
            final Path file = dir.resolve("apps").resolve("echo-server-4242.app");
            assertEquals(file, app.path());
            assertEquals(AppFileDescriptor.fileLength(RING, PIPE, SLOTS), Files.size(file));
            assertEquals(AppFileDescriptor.STATE_ATTACHING, app.state());

            try (AppFile daemon = AppFile.open(file))
            {
                assertEquals(AppFileDescriptor.VERSION, daemon.version());
                assertEquals("echo-server", daemon.name());
                assertEquals(4242, daemon.appPid());
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

                // Control ring: app -> daemon over two mappings of one file.
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
        try (AppFile app = AppFile.create(dir, "secret", 1, RING, PIPE, SLOTS, 0))
        {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(app.path())));
            app.delete();
            assertFalse(Files.exists(app.path()));
        }
    }

    @Test
    void createNeedsTheSharedMemoryDirectoryButMakesApps() throws IOException
    {
        assertThrows(NoSuchFileException.class, () -> AppFile.create(dir.resolve("nope"), "a", 1, RING, PIPE, 1, 0));
        try (AppFile app = AppFile.create(dir, "a", 1, RING, PIPE, 1, 0))
        {
            assertEquals(dir.resolve("apps"), app.path().getParent());
            assertTrue(Files.isDirectory(dir.resolve("apps")));
            try (var files = Files.list(dir.resolve("apps")))
            {
                assertEquals(1, files.count(), "no temporary file is left behind");
            }
        }
        assertThrows(IllegalArgumentException.class, () -> AppFile.create(dir, "../evil", 1, RING, PIPE, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> AppFile.create(dir, "a", 1, 3000, PIPE, 1, 0));
    }

    @Test
    void versionMismatchIsRefusedAndCanBeRejected() throws IOException
    {
        final Path file;
        try (AppFile app = AppFile.create(dir, "old", 2, RING, PIPE, SLOTS, 0))
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
    void truncatedFilesAreRefused() throws IOException
    {
        final Path file;
        try (AppFile app = AppFile.create(dir, "cut", 3, RING, PIPE, SLOTS, 0))
        {
            file = app.path();
        }
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
        {
            raf.setLength(AppFileDescriptor.fileLength(RING, PIPE, SLOTS) - 1);
        }
        assertEquals(AppFileException.Kind.TRUNCATED, assertThrows(AppFileException.class, () -> AppFile.open(file)).kind());
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
        {
            raf.setLength(100);
        }
        assertEquals(AppFileException.Kind.TRUNCATED, assertThrows(AppFileException.class, () -> AppFile.open(file)).kind());
    }

    @Test
    void badMagicSizesAndNameAreRefused() throws IOException
    {
        try (AppFile app = AppFile.create(dir, "bad", 4, RING, PIPE, SLOTS, 0))
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
