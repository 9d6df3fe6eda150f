package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersManager;
import org.agrona.concurrent.status.CountersReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpHandler;

/**
 * {@code stats} and {@code conns} read files another process wrote: whatever is in them, the answer is the table or
 * one line on stderr with exit status 1, never an exception. A seeded mutator (replay with -Dfuzz.seed=N).
 */
class ShmFilesFuzzTest
{
    private static final int COUNTERS_ROUNDS = 1000;
    private static final int CONNECTIONS_ROUNDS = 2000;

    /** The daemon lock a test took, released after it. */
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

    private static String[] run(final String... args)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    private static void assertCleanOutcome(final String command, final String[] r, final String context)
    {
        if ("1".equals(r[0]))
        {
            assertTrue(r[1].isEmpty(), context + ": output beside the error: " + r[1]);
            assertTrue(r[2].startsWith(command + ": ") && r[2].indexOf('\n') == r[2].length() - 1,
                context + ": not one line: " + r[2]);
        }
        else
        {
            assertEquals("0", r[0], context + " " + r[2]);
            assertTrue(r[2].isEmpty(), context + ": " + r[2]);
            for (final char c : r[1].toCharArray())
            {
                assertTrue(c >= 0x20 && c != 0x7F || c == '\n' || c == '\t', context + ": control character " + (int)c);
            }
        }
    }

    private Path countersFileWithTwoCounters() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (CountersFile f = CountersFile.create(shm))
        {
            final CountersManager m = f.manager();
            m.newCounter("first", StackCounters.TYPE_ID).increment();
            m.allocate("second", StackCounters.TYPE_ID, b -> { });
        }
        return shm;
    }

    /** The review's case: values length one counter, metadata for 256; then metadata not a whole record. */
    @Test
    void statsOnInconsistentCountersFileSaysSoInOneLine() throws Exception
    {
        final Path shm = countersFileWithTwoCounters();
        final Path file = shm.resolve(CountersFileDescriptor.FILE_NAME);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
        {
            raf.seek(CountersFileDescriptor.VALUES_LENGTH_OFFSET);
            raf.writeInt(Integer.reverseBytes(128));
        }
        String[] r = run("stats", "--shm", shm.toString(), "--all");
        assertEquals("1", r[0]);
        assertTrue(r[2].startsWith("stats: counters file inconsistent"), r[2]);
        assertCleanOutcome("stats", r, "values 128");

        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
        {
            raf.seek(CountersFileDescriptor.METADATA_LENGTH_OFFSET);
            raf.writeInt(Integer.reverseBytes(100));
            raf.writeInt(Integer.reverseBytes(256 * 128));
        }
        r = run("stats", "--shm", shm.toString(), "--all");
        assertEquals("1", r[0]);
        assertCleanOutcome("stats", r, "metadata 100");
    }

    @Test
    void statsOnAGoodFileListsItsCounters() throws Exception
    {
        final String[] r = run("stats", "--shm", countersFileWithTwoCounters().toString(), "--all");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("1  first") && r[1].contains("0  second"), r[1]);
    }

    @Test
    void countersFileCorruptionsGiveTheTableOrOneLine() throws Exception
    {
        final Path shm = countersFileWithTwoCounters();
        final Path file = shm.resolve(CountersFileDescriptor.FILE_NAME);
        final byte[] good = Files.readAllBytes(file);
        final int metadataEnd = CountersFileDescriptor.HEADER_LENGTH + 256 * CountersReader.METADATA_LENGTH;
        final long seed = Long.getLong("fuzz.seed", System.nanoTime());
        final Random random = new Random(seed);
        for (int round = 0; round < COUNTERS_ROUNDS; round++)
        {
            final byte[] b = mutate(random, good, new int[] {
                CountersFileDescriptor.METADATA_LENGTH_OFFSET, CountersFileDescriptor.VALUES_LENGTH_OFFSET,
                CountersFileDescriptor.VERSION_OFFSET, CountersFileDescriptor.PID_OFFSET,
                CountersFileDescriptor.HEADER_LENGTH, // first record's status
                CountersFileDescriptor.HEADER_LENGTH + CountersReader.LABEL_OFFSET, // its label length
                CountersFileDescriptor.HEADER_LENGTH + CountersReader.METADATA_LENGTH + CountersReader.LABEL_OFFSET,
                CountersFileDescriptor.HEADER_LENGTH + 2 * CountersReader.METADATA_LENGTH, // the first unused record
            }, metadataEnd);
            Files.write(file, b);
            try
            {
                assertCleanOutcome("stats", run("stats", "--shm", shm.toString(), "--all"), "seed " + seed + " round " + round);
            }
            catch (final RuntimeException e)
            {
                fail("seed " + seed + " round " + round + ": " + e, e);
            }
        }
    }

    @Test
    void connectionsFileCorruptionsGiveTheTableOrOneLine() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        long now = 1_000_000_000L;
        final NetStack a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        final NetStack b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        new TcpServices().start(a.tcp(), true, true, false);
        b.tcp().connect(0xC612_0002, 7, new TcpHandler() { }, null);
        b.tcp().connect(0xC612_0002, 9, new TcpHandler() { }, null);
        for (int i = 0; i < 100; i++)
        {
            a.poll(now);
            b.poll(now);
            now += 1_000_000L;
        }
        lock = DaemonLock.acquire(shm); // as a running daemon holds it
        // Left open: a running daemon's file. Small, so that the mutated copy below is the whole file (a reader refuses a
        // file whose capacity field is not its size).
        final ConnectionsFile f = ConnectionsFile.create(shm, 4096 - ConnectionsFile.TEXT_OFFSET);
        final Path file = shm.resolve(ConnectionsFile.FILE_NAME);
        final String published = ConnectionsFilePublishTest.served(shm, f, a);
        assertTrue(published.contains("ESTABLISHED"), published);
        final byte[] good = Files.readAllBytes(file);
        assertEquals(4096, good.length);
        final long seed = Long.getLong("fuzz.seed", System.nanoTime());
        final Random random = new Random(seed);
        for (int round = 0; round < CONNECTIONS_ROUNDS; round++)
        {
            final byte[] bytes = mutate(random, good, new int[] {
                ConnectionsFile.VERSION_OFFSET, ConnectionsFile.CAPACITY_OFFSET, ConnectionsFile.SEQUENCE_OFFSET,
                ConnectionsFile.LENGTH_OFFSET, ConnectionsFile.PID_OFFSET, ConnectionsFile.START_TIME_OFFSET,
                ConnectionsFile.STATE_OFFSET}, good.length);
            Files.write(file, bytes);
            try
            {
                final ByteArrayOutputStream out = new ByteArrayOutputStream();
                final ByteArrayOutputStream err = new ByteArrayOutputStream();
                // No budget: nobody answers, and waiting would cost two seconds a round (the last table is shown).
                final int status = ConnsCommand.run(new String[] {"conns", "--shm", shm.toString()},
                    new PrintStream(out, true), new PrintStream(err, true), System::nanoTime, 0);
                assertCleanOutcome("conns", new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8),
                    err.toString(StandardCharsets.UTF_8)}, "seed " + seed + " round " + round);
            }
            catch (final RuntimeException e)
            {
                fail("seed " + seed + " round " + round + ": " + e, e);
            }
        }
    }

    /** One to four of: a field set to an edge value, random bytes anywhere, a truncation. Magic kept most times. */
    private static byte[] mutate(final Random random, final byte[] good, final int[] fields, final int hotEnd)
    {
        byte[] b = good.clone();
        final int[] edges = {0, 1, -1, 2, 7, 64, 100, 128, 512, 4096, 32768, 1 << 20, Integer.MAX_VALUE, Integer.MIN_VALUE};
        final int n = 1 + random.nextInt(4);
        for (int i = 0; i < n; i++)
        {
            switch (random.nextInt(5))
            {
                case 0, 1 ->
                {
                    final int at = fields[random.nextInt(fields.length)];
                    final int v = random.nextBoolean() ? edges[random.nextInt(edges.length)] : random.nextInt();
                    if (random.nextInt(4) == 0 && at + 8 <= b.length)
                    {
                        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(at, random.nextBoolean() ? v : random.nextLong());
                    }
                    else if (at + 4 <= b.length)
                    {
                        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, v);
                    }
                }
                case 2 ->
                {
                    final int at = random.nextInt(Math.max(1, Math.min(b.length, hotEnd))); // a truncation may have emptied it
                    for (int k = 0; k < 1 + random.nextInt(16) && at + k < b.length; k++)
                    {
                        b[at + k] = (byte)random.nextInt();
                    }
                }
                case 3 -> b = Arrays.copyOf(b, random.nextInt(b.length + 1));
                default ->
                {
                    if (random.nextInt(10) == 0 && b.length > 0)
                    {
                        b[random.nextInt(Math.min(8, b.length))] ^= 1; // the magic
                    }
                }
            }
        }
        return b;
    }

    @Test
    void statsAndConnsOnWrongKindsOfPathSayWhatIsWrong() throws Exception
    {
        final Path plain = Files.writeString(dir.resolve("plainfile"), "x");
        String[] r = run("stats", "--shm", plain.toString());
        assertEquals("1", r[0]);
        assertTrue(r[2].contains("is not a directory"), r[2]);
        r = run("conns", "--shm", plain.toString());
        assertTrue(r[2].contains("is not a directory"), r[2]);
        final Path shm = Files.createDirectory(dir.resolve("s2"));
        Files.createDirectory(shm.resolve(CountersFileDescriptor.FILE_NAME));
        Files.createDirectory(shm.resolve(ConnectionsFile.FILE_NAME));
        r = run("stats", "--shm", shm.toString());
        assertEquals("1", r[0]);
        assertTrue(r[2].contains("is not a regular file"), r[2]);
        r = run("conns", "--shm", shm.toString());
        assertTrue(r[2].contains("is not a regular file"), r[2]);
        r = run("stats", "--shm", dir.resolve("nothing").toString());
        assertTrue(r[2].startsWith("stats: no directory"), r[2]);
    }
}
