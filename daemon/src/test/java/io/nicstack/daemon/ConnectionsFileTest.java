package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpHandler;

/** {@code conns}: a running daemon's table, never a stopped or dead one's, and a seqlock that holds under a race. */
class ConnectionsFileTest
{
    /** Above pid_max (at most 2^22 on Linux): never a live process. */
    private static final long DEAD_PID = Integer.MAX_VALUE;

    /** The daemon's lock on the directory, as DaemonCommand holds it; closed by each test (a dead daemon's is gone). */
    private DaemonLock lock;

    @AfterEach
    void releaseLock()
    {
        if (lock != null)
        {
            lock.close();
        }
    }

    @TempDir
    Path dir;

    private static String[] conns(final Path shm)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(new String[] {"conns", "--shm", shm.toString()}, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    /** The stack of {@link #fileWithOneConnection}. */
    private NetStack stack;

    private ConnectionsFile fileWithOneConnection(final Path shm) throws Exception
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        long now = 1_000_000_000L;
        final NetStack a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        final NetStack b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        new TcpServices().start(a.tcp(), true, false, false);
        b.tcp().connect(0xC612_0002, 7, new TcpHandler() { }, null);
        for (int i = 0; i < 100; i++)
        {
            a.poll(now);
            b.poll(now);
            now += 1_000_000L;
        }
        lock = DaemonLock.acquire(shm);
        final ConnectionsFile file = ConnectionsFile.create(shm);
        stack = a;
        assertTrue(ConnectionsFilePublishTest.served(shm, file, a).startsWith("1 connections\n"));
        return file;
    }

    private static void putLong(final Path shm, final int offset, final long value) throws IOException
    {
        try (RandomAccessFile raf = new RandomAccessFile(shm.resolve(ConnectionsFile.FILE_NAME).toFile(), "rw"))
        {
            raf.seek(offset);
            raf.writeLong(Long.reverseBytes(value));
        }
    }

    @Test
    void runningDaemonsTableIsShown() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (ConnectionsFile file = fileWithOneConnection(shm))
        {
            // The daemon's event loop, answering while conns waits.
            final AtomicBoolean stop = new AtomicBoolean();
            final Thread loop = new Thread(() ->
            {
                while (!stop.get())
                {
                    file.publish(stack.tcp(), 0xC612_0002);
                    java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
                }
            }, "event-loop");
            loop.start();
            final String[] r;
            try
            {
                r = conns(shm);
            }
            finally
            {
                stop.set(true);
                loop.join();
            }
            assertEquals("0", r[0], r[2]);
            assertTrue(r[1].startsWith("1 connections\n") && r[1].contains("ESTABLISHED"), r[1]);
        }
    }

    /** The review's probe: what DaemonCommand's try-with-resources does on exit, then conns. */
    @Test
    void connsAfterTheDaemonStoppedSaysSoInsteadOfTheLastTable() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        fileWithOneConnection(shm).close();
        final String[] r = conns(shm);
        assertEquals("1", r[0], r[1]);
        assertEquals("", r[1]);
        assertTrue(r[2].startsWith("conns: the daemon (pid " + ProcessHandle.current().pid() + ") has stopped"), r[2]);
    }

    @Test
    void connsAfterTheDaemonDiedSaysTheTableIsStale() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        fileWithOneConnection(shm); // not closed: a crash (kill -9) leaves the file so
        lock.close(); // and the kernel drops the dead daemon's lock
        final String[] r = conns(shm);
        assertEquals("1", r[0], r[1]);
        assertTrue(r[2].contains("is not running") && r[2].contains("stale"), r[2]);
    }

    /** A daemon holds the directory, but the file names another (an earlier one that died): its table is stale. */
    @Test
    void aTableOfAnotherDaemonThanTheLockHoldersIsStale() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        fileWithOneConnection(shm);
        putLong(shm, ConnectionsFile.PID_OFFSET, DEAD_PID);
        final String[] r = conns(shm);
        assertEquals("1", r[0], r[1]);
        assertTrue(r[2].contains("is not running") && r[2].contains("stale"), r[2]);
    }

    /** A file of another layout version: the message names it, as the counters file's does. Before, it gave no path. */
    @Test
    void anotherLayoutVersionIsNamedWithItsFile() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (ConnectionsFile file = fileWithOneConnection(shm))
        {
            try (RandomAccessFile raf = new RandomAccessFile(shm.resolve(ConnectionsFile.FILE_NAME).toFile(), "rw"))
            {
                raf.seek(ConnectionsFile.VERSION_OFFSET);
                raf.writeInt(Integer.reverseBytes(ConnectionsFile.VERSION + 1));
            }
            final String[] r = conns(shm);
            assertEquals("1", r[0], r[1]);
            assertEquals("conns: connections file layout version " + (ConnectionsFile.VERSION + 1) + ", this build reads "
                + ConnectionsFile.VERSION + ": " + shm.resolve(ConnectionsFile.FILE_NAME) + "\n", r[2]);
        }
    }

    @Test
    void daemonKilledMidPublishIsReportedAsSuch() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        fileWithOneConnection(shm);
        putLong(shm, ConnectionsFile.SEQUENCE_OFFSET, 3); // odd for good
        lock.close();
        final String[] r = conns(shm);
        assertEquals("1", r[0], r[1]);
        assertTrue(r[2].contains("died while publishing"), r[2]);
    }

    /** A live writer stuck mid-publish: the reader gives up when its budget has passed on its clock, and says why. */
    @Test
    void stuckWriterEndsTheReadAfterTheBudget() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (ConnectionsFile file = fileWithOneConnection(shm))
        {
            putLong(shm, ConnectionsFile.SEQUENCE_OFFSET, 3);
            final long[] now = {0};
            final IOException e = assertThrows(IOException.class,
                () -> ConnectionsFile.read(shm, () -> now[0] += 10_000_000L, ConnectionsFile.READ_BUDGET_NANOS));
            assertTrue(e.getMessage().contains("no consistent table within " + ConnectionsFile.READ_BUDGET_NANOS / 1_000_000
                + " ms") && e.getMessage().contains("stuck"),
                e.getMessage());
            assertTrue(now[0] >= ConnectionsFile.READ_BUDGET_NANOS, "gave up early: " + now[0]);
        }
    }

    /**
     * The seqlock under a real race: a writer alternates tables of different lengths made of one repeated letter, with
     * short pauses (readers race its publications, but can finish); every copy a reader gets must be one whole table.
     */
    @Test
    void readerRacingTheWriterOnlySeesWholeTables() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final byte[][] tables = new byte[3][];
        for (int i = 0; i < tables.length; i++)
        {
            tables[i] = new byte[(64 << 10) * (i + 1) + i];
            Arrays.fill(tables[i], (byte)('A' + i));
        }
        lock = DaemonLock.acquire(shm);
        try (ConnectionsFile file = ConnectionsFile.create(shm))
        {
            file.publish(tables[0], tables[0].length);
            final AtomicBoolean stop = new AtomicBoolean();
            final Thread writer = new Thread(() ->
            {
                for (int i = 0; !stop.get(); i++)
                {
                    file.publish(tables[i % tables.length], tables[i % tables.length].length);
                    // The daemon publishes twice a second; a writer with no pause at all would starve every reader.
                    java.util.concurrent.locks.LockSupport.parkNanos(200_000L);
                }
            }, "conns-writer");
            writer.start();
            try
            {
                for (int read = 0; read < 300; read++)
                {
                    final String text = ConnectionsFile.read(shm);
                    final int kind = text.charAt(0) - 'A';
                    assertTrue(kind >= 0 && kind < tables.length, "read " + read);
                    assertEquals(tables[kind].length, text.length(), "read " + read);
                    assertEquals(new String(tables[kind], StandardCharsets.US_ASCII), text, "read " + read);
                }
            }
            finally
            {
                stop.set(true);
                writer.join();
            }
        }
    }

    /**
     * The review's probe (ConnsForgedProbeTest): a sparse file near the mapping limit whose length field spans it. The
     * reader allocated the length, then a String and a printable copy, on every retry: OutOfMemoryError in a -Xmx1g
     * JVM. Now the file's size is bounded before anything is read.
     */
    @Test
    void aForgedFileTooLargeForAnyTableIsRefusedBeforeItIsRead() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        fileWithOneConnection(shm);
        final long size = Math.max(ConnectionsFile.TEXT_OFFSET + ConnectionsFile.MAX_CAPACITY + 1L,
            Math.min(Integer.MAX_VALUE, Runtime.getRuntime().maxMemory() * 3 / 5));
        try (RandomAccessFile raf = new RandomAccessFile(shm.resolve(ConnectionsFile.FILE_NAME).toFile(), "rw"))
        {
            raf.setLength(size);
            raf.seek(ConnectionsFile.LENGTH_OFFSET);
            raf.writeInt(Integer.reverseBytes((int)(size - ConnectionsFile.TEXT_OFFSET)));
        }
        final IOException e = assertThrows(IOException.class, () -> ConnectionsFile.read(shm, System::nanoTime, 0));
        assertEquals("connections file too large (" + size + " bytes, at most "
            + (ConnectionsFile.TEXT_OFFSET + ConnectionsFile.MAX_CAPACITY) + "): " + shm.resolve(ConnectionsFile.FILE_NAME),
            e.getMessage());
    }

    /** A capacity field that is not the file's: before, only the file's size bounded the text, whatever it said. */
    @Test
    void aCapacityFieldThatIsNotTheFilesIsRefused() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        lock = DaemonLock.acquire(shm);
        ConnectionsFile.create(shm, ConnectionsFile.MIN_CAPACITY); // left open: a running daemon's
        final long size = ConnectionsFile.TEXT_OFFSET + 4096;
        try (RandomAccessFile raf = new RandomAccessFile(shm.resolve(ConnectionsFile.FILE_NAME).toFile(), "rw"))
        {
            raf.setLength(size);
            raf.seek(ConnectionsFile.LENGTH_OFFSET);
            raf.writeInt(Integer.reverseBytes(4000));
        }
        putLong(shm, ConnectionsFile.SEQUENCE_OFFSET, 2);
        final IOException e = assertThrows(IOException.class, () -> ConnectionsFile.read(shm, System::nanoTime, 0));
        assertEquals("connections file inconsistent (capacity " + ConnectionsFile.MIN_CAPACITY + " in a file of " + size
            + " bytes): " + shm.resolve(ConnectionsFile.FILE_NAME), e.getMessage());
    }
}
