package io.nicstack.pipes;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Races a real producer against a real consumer over a pipe: threads, processes, and paced notifications. */
class PipeConcurrencyTest
{
    private static final long GIGABYTE = 1L << 30;

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void byteExactAcrossTwoThreadsOverOneGigabyte() throws Exception
    {
        final int capacity = 64 * 1024;
        final UnsafeBuffer region = new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(capacity)));
        final StreamPattern pattern = new StreamPattern(42);
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        final Thread producerThread = new Thread(() ->
        {
            try
            {
                final Pipe pipe = new Pipe().wrap(region);
                final SplittableRandom random = new SplittableRandom(7);
                long position = 0;
                while (position < GIGABYTE && failure.get() == null)
                {
                    final int want = (int)Math.min(GIGABYTE - position, 1 + random.nextInt(9000));
                    final int taken;
                    if (random.nextBoolean())
                    {
                        // Zero-copy path: claim a contiguous span, fill it, commit.
                        taken = pipe.claim(want);
                        pipe.buffer().putBytes(pipe.claimIndex(), pattern.bytes, StreamPattern.offset(position), taken);
                        pipe.commit(taken);
                    }
                    else
                    {
                        // Copying path: write() splits at the wrap itself.
                        taken = pipe.write(pattern.bytes, StreamPattern.offset(position), want);
                    }
                    if (taken == 0)
                    {
                        Thread.onSpinWait();
                    }
                    position += taken;
                }
            }
            catch (final Throwable ex)
            {
                failure.compareAndSet(null, ex);
            }
        }, "pipe-producer");
        producerThread.start();

        final Pipe pipe = new Pipe().wrap(region);
        final SplittableRandom random = new SplittableRandom(11);
        final byte[] scratch = new byte[capacity];
        long position = 0;
        long wraps = 0;
        while (position < GIGABYTE && failure.get() == null)
        {
            final int span = pipe.peek();
            if (span == 0)
            {
                Thread.onSpinWait();
                continue;
            }
            final int take = 1 + random.nextInt(span);
            pipe.buffer().getBytes(pipe.peekIndex(), scratch, 0, take);
            final int from = StreamPattern.offset(position);
            if (!Arrays.equals(scratch, 0, take, pattern.bytes, from, from + take))
            {
                fail("mismatch in [" + position + ", " + (position + take) + ")");
            }
            if (((position + take) & (capacity - 1)) < (position & (capacity - 1)) || take == capacity)
            {
                wraps++;
            }
            pipe.release(take);
            position += take;
        }
        producerThread.join();
        assertNull(failure.get());
        assertEquals(GIGABYTE, position);
        assertEquals(GIGABYTE, pipe.tailVolatile());
        assertTrue(wraps >= GIGABYTE / capacity - 1, "wraps " + wraps);
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void byteExactAcrossTwoProcesses(@TempDir final Path dir) throws Exception
    {
        final int capacity = 256 * 1024;
        final long total = GIGABYTE;
        final long seed = 20240607L;
        final File file = dir.resolve("pipe.shm").toFile();
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw"))
        {
            raf.setLength(PipeDescriptor.length(capacity));
        }

        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        final List<String> command = new ArrayList<>(List.of(
            java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m", "-cp", classpath,
            PipeProducerMain.class.getName(), file.getPath(), Integer.toString(capacity), Long.toString(total),
            Long.toString(seed)));
        final Process child = new ProcessBuilder(command).redirectErrorStream(true).start();

        final MappedByteBuffer mapped = org.agrona.IoUtil.mapExistingFile(file, "pipe");
        try
        {
            final StreamPattern pattern = new StreamPattern(seed);
            final Pipe pipe = new Pipe().wrap(new UnsafeBuffer(mapped));
            final byte[] scratch = new byte[capacity];
            final CRC32C crc = new CRC32C();
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(150);
            long position = 0;
            while (position < total)
            {
                final int span = pipe.peek();
                if (span == 0)
                {
                    if (!child.isAlive() && pipe.peek() == 0)
                    {
                        fail("producer exited at " + position + ": " + new String(child.getInputStream().readAllBytes(),
                            StandardCharsets.UTF_8));
                    }
                    assertTrue(System.nanoTime() < deadline, "stalled at " + position);
                    Thread.onSpinWait();
                    continue;
                }
                pipe.buffer().getBytes(pipe.peekIndex(), scratch, 0, span);
                final int from = StreamPattern.offset(position);
                if (!Arrays.equals(scratch, 0, span, pattern.bytes, from, from + span))
                {
                    fail("mismatch in [" + position + ", " + (position + span) + ")");
                }
                crc.update(scratch, 0, span);
                pipe.release(span);
                position += span;
            }
            assertTrue(child.waitFor(30, TimeUnit.SECONDS), "producer did not exit");
            final String output;
            try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8)))
            {
                output = reader.lines().reduce("", (a, b) -> a + b + "\n");
            }
            assertEquals(0, child.exitValue(), output);
            assertTrue(
                output.contains("CRC32C " + Long.toHexString(crc.getValue()) + " " + total),
                "child said " + output + ", consumer computed " + Long.toHexString(crc.getValue()));
        }
        finally
        {
            child.destroyForcibly();
            org.agrona.IoUtil.unmap(mapped);
            Files.deleteIfExists(file.toPath());
        }
    }

    /**
     * Enso's reactive pacing: the producer (the daemon) sends NOTIFY for a pipe only once the consumer has consumed up
     * to the tail of the previous one. The consumer here learns tails ONLY from notifications, so the test also proves
     * that pacing never strands data; and with a consumer that does per-byte work, one notification covers many
     * segments.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void pacedNotificationsAreFarFewerThanSegmentsUnderLoad() throws Exception
    {
        final int pipes = 4;
        final int capacity = 64 * 1024;
        final long perPipe = 32L << 20;
        final int pipeLength = PipeDescriptor.length(capacity);
        final int ringLength = 4096 + RingBufferDescriptor.TRAILER_LENGTH;
        final UnsafeBuffer shared = new UnsafeBuffer(ByteBuffer.allocateDirect(pipes * pipeLength + ringLength));
        final OneToOneRingBuffer daemonRing = new OneToOneRingBuffer(
            new UnsafeBuffer(shared, pipes * pipeLength, ringLength));
        final OneToOneRingBuffer appRing = new OneToOneRingBuffer(new UnsafeBuffer(shared, pipes * pipeLength, ringLength));
        final StreamPattern pattern = new StreamPattern(99);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final long[] segments = new long[1];

        final Thread daemon = new Thread(() ->
        {
            try
            {
                final Pipe[] rx = new Pipe[pipes];
                for (int i = 0; i < pipes; i++)
                {
                    rx[i] = new Pipe().wrap(shared, i * pipeLength, capacity);
                }
                final NotificationPacer pacer = new NotificationPacer(pipes);
                final UnsafeBuffer notify = new UnsafeBuffer(new byte[Protocol.NOTIFY_LENGTH]);
                final SplittableRandom random = new SplittableRandom(3);
                long done = 0;
                while (done < pipes && failure.get() == null)
                {
                    done = 0;
                    for (int i = 0; i < pipes; i++)
                    {
                        final Pipe pipe = rx[i];
                        final long tail = pipe.tail();
                        if (tail < perPipe)
                        {
                            // One TCP segment's payload, placed and published like the RX path does it.
                            final int length = (int)Math.min(perPipe - tail, 64 + random.nextInt(1397));
                            if (pipe.free() >= length)
                            {
                                pipe.writeAt(tail, new UnsafeBuffer(pattern.bytes), StreamPattern.offset(tail), length);
                                pipe.publishTail(tail + length);
                                segments[0]++;
                            }
                        }
                        else if (!pacer.isPending(i, tail))
                        {
                            done++;
                        }
                        // Paced: after a publish, and again each pass for tails published while one was outstanding.
                        final long published = pipe.tail();
                        if (pacer.isPending(i, published) &&
                            pacer.shouldNotify(i, published, pipe.headVolatile()))
                        {
                            notify.putLong(0, Protocol.connectionId(i, 1));
                            notify.putLong(8, published);
                            while (!daemonRing.write(Protocol.NOTIFY, notify, 0, Protocol.NOTIFY_LENGTH))
                            {
                                Thread.onSpinWait();
                            }
                        }
                    }
                }
            }
            catch (final Throwable ex)
            {
                failure.compareAndSet(null, ex);
            }
        }, "fake-daemon-rx");
        daemon.start();

        final Pipe[] rx = new Pipe[pipes];
        for (int i = 0; i < pipes; i++)
        {
            rx[i] = new Pipe().wrap(shared, i * pipeLength, capacity);
        }
        final long[] knownTail = new long[pipes];
        final long[] notifications = new long[1];
        final MessageHandler onNotify = (type, buffer, index, length) ->
        {
            assertEquals(Protocol.NOTIFY, type);
            final int pipe = Protocol.slotOf(buffer.getLong(index));
            knownTail[pipe] = Math.max(knownTail[pipe], buffer.getLong(index + 8));
            notifications[0]++;
        };
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(100);
        long consumed = 0;
        int checksum = 0;
        while (consumed < pipes * perPipe && failure.get() == null)
        {
            if (appRing.read(onNotify) == 0)
            {
                assertTrue(System.nanoTime() < deadline, "stranded at " + consumed + " bytes");
                Thread.onSpinWait();
                continue;
            }
            for (int i = 0; i < pipes; i++)
            {
                final Pipe pipe = rx[i];
                // Batch: consume up to the notified tail, checking each byte (the app's work per byte).
                while (pipe.head() < knownTail[i])
                {
                    final long head = pipe.head();
                    final int span = (int)Math.min(knownTail[i] - head, pipe.peek());
                    final MutableDirectBuffer data = pipe.buffer();
                    final int index = pipe.peekIndex();
                    int from = StreamPattern.offset(head);
                    for (int b = 0; b < span; b++)
                    {
                        final byte value = data.getByte(index + b);
                        if (value != pattern.bytes[from++])
                        {
                            fail("pipe " + i + " mismatch at " + (head + b));
                        }
                        checksum = 31 * checksum + value;
                    }
                    pipe.release(span);
                    consumed += span;
                }
            }
        }
        daemon.join();
        assertNull(failure.get());
        assertEquals(pipes * perPipe, consumed);
        System.out.printf(
            "pacing: %d segments, %d notifications (%.1f segments per notification), checksum %08x%n",
            segments[0], notifications[0], (double)segments[0] / notifications[0], checksum);
        assertTrue(notifications[0] * 4 < segments[0], notifications[0] + " notifications for " + segments[0] + " segments");
    }
}
