package io.nicstack.stack.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.BitSet;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * A random stream cut into random segments, delivered reordered, duplicated and overlapping while a
 * reader drains at random; checked byte for byte and against a bitmap model of received bytes.
 * Shared by every {@link ReceiveBuffer}'s randomized test (stack-core's ring, the daemon's RX pipe,
 * through stack-core's test jar).
 */
public final class RandomizedReassembly
{
    private static final int STREAM_LENGTH = 6 << 20;
    private static final int CAPACITY = 1 << 15;
    private static final int MAX_SEGMENT = 1460;

    /** A buffer under test and what its memory must show besides. */
    @FunctionalInterface
    public interface Subject
    {
        ReceiveBuffer buffer();

        /** Checked after every write and read, e.g. that the positions published to shared memory are the buffer's. */
        default void checkPublished()
        {
        }
    }

    /** Makes a fresh, empty buffer of {@code capacity} bytes remembering at most {@code maxRanges} ranges. */
    @FunctionalInterface
    public interface Factory
    {
        Subject create(int capacity, int maxRanges);
    }

    private RandomizedReassembly()
    {
    }

    /**
     * Run the fixed seeds and one fresh one, or only the seed in system property {@code seedProperty}
     * (rerun one case with {@code -D<seedProperty>=<seed>}).
     */
    public static void run(final String seedProperty, final Factory factory)
    {
        final Long fixed = Long.getLong(seedProperty);
        if (fixed != null)
        {
            run(seedProperty, factory, fixed, 4);
            return;
        }
        run(seedProperty, factory, 1, 4);
        run(seedProperty, factory, 2, 16);
        run(seedProperty, factory, System.nanoTime(), 8);
    }

    private static void run(final String seedProperty, final Factory factory, final long seed, final int maxRanges)
    {
        try
        {
            new Case(factory.create(CAPACITY, maxRanges), seed, maxRanges).run();
        }
        catch (final Throwable t)
        {
            System.err.println("randomized reassembly failed with -D" + seedProperty + "=" + seed + ", maxRanges " + maxRanges);
            throw new AssertionError("seed " + seed + ", maxRanges " + maxRanges + ": " + t.getMessage(), t);
        }
    }

    private static final class Case
    {
        private final SplittableRandom random;
        private final byte[] source = new byte[STREAM_LENGTH];
        private final BitSet received = new BitSet(STREAM_LENGTH);
        private final UnsafeBuffer segment = new UnsafeBuffer(new byte[CAPACITY + 16]);
        private final UnsafeBuffer destination = new UnsafeBuffer(new byte[3 * MAX_SEGMENT + 16]);
        private final Subject subject;
        private final ReceiveBuffer buffer;
        private final int maxRanges;
        private int rejected;
        private int absorbing;

        Case(final Subject subject, final long seed, final int maxRanges)
        {
            random = new SplittableRandom(seed);
            random.nextBytes(source);
            this.subject = subject;
            this.buffer = subject.buffer();
            this.maxRanges = maxRanges;
        }

        void run()
        {
            while (buffer.readPosition() < STREAM_LENGTH)
            {
                if (random.nextInt(5) == 0)
                {
                    read();
                }
                else
                {
                    write();
                }
                subject.checkPublished();
            }
            assertEquals(STREAM_LENGTH, buffer.contiguousEnd());
            assertEquals(0, buffer.outOfOrderRanges());
            assertTrue(rejected > 0, "never hit the range limit");
            assertTrue(absorbing > 0, "never filled a hole");
        }

        private void write()
        {
            final long contiguousEnd = buffer.contiguousEnd();
            final long windowEnd = buffer.readPosition() + CAPACITY;
            final long offset;
            if (random.nextInt(4) == 0)
            {
                // The next expected segment, often starting a little early (overlapping a retransmission).
                offset = contiguousEnd - random.nextInt((int)Math.min(contiguousEnd, 2 * MAX_SEGMENT) + 1);
            }
            else
            {
                // Anywhere from old duplicates to past the window.
                offset = Math.max(0, contiguousEnd - 2 * MAX_SEGMENT + random.nextInt(CAPACITY + 4 * MAX_SEGMENT));
            }
            final int wanted = random.nextInt(50) == 0 ? random.nextInt(CAPACITY) : random.nextInt(MAX_SEGMENT + 1);
            final int length = (int)Math.min(wanted, STREAM_LENGTH - offset);
            if (length < 0)
            {
                return;
            }
            final int index = random.nextInt(16);
            segment.putBytes(index, source, (int)offset, length);

            final int rangesBefore = buffer.outOfOrderRanges();
            final long outOfOrderBefore = buffer.outOfOrderBytes();
            final long from = Math.max(offset, contiguousEnd);
            final long to = Math.min(offset + length, windowEnd);

            final int result = buffer.write(offset, segment, index, length);

            if (result == ReceiveBuffer.REJECTED)
            {
                rejected++;
                assertTrue(from > contiguousEnd && from < to, "rejected in-order or empty segment");
                assertEquals(maxRanges, rangesBefore, "rejected below the range limit");
                final int touching = received.nextSetBit((int)from - 1);
                assertTrue(touching < 0 || touching > to, "rejected a segment touching a held range");
                assertEquals(contiguousEnd, buffer.contiguousEnd());
                assertEquals(outOfOrderBefore, buffer.outOfOrderBytes());
                return;
            }

            if (from < to)
            {
                received.set((int)from, (int)to);
            }
            final long expectedEnd = received.nextClearBit((int)contiguousEnd);
            assertEquals(expectedEnd - contiguousEnd, result, "bytes made contiguous");
            assertEquals(expectedEnd, buffer.contiguousEnd(), "contiguousEnd must stop at the first hole");
            if (result > to - from)
            {
                absorbing++;
            }
            if (from < to && from > contiguousEnd)
            {
                assertTrue(buffer.outOfOrderStart(0) <= from && to <= buffer.outOfOrderEnd(0),
                    "first range must hold the newest segment (RFC 2018 §4)");
            }
            checkRanges(windowEnd);
        }

        /** Each range is exactly one maximal run of received bytes past the hole; together, all of them. */
        private void checkRanges(final long windowEnd)
        {
            final long contiguousEnd = buffer.contiguousEnd();
            long total = 0;
            int runs = 0;
            for (int i = received.nextSetBit((int)contiguousEnd); i >= 0 && i < windowEnd; )
            {
                final int end = received.nextClearBit(i);
                total += end - i;
                runs++;
                i = received.nextSetBit(end);
            }
            assertEquals(runs, buffer.outOfOrderRanges(), "range count");
            assertEquals(total, buffer.outOfOrderBytes(), "out-of-order bytes");

            long sum = 0;
            for (int i = 0; i < buffer.outOfOrderRanges(); i++)
            {
                final long start = buffer.outOfOrderStart(i);
                final long end = buffer.outOfOrderEnd(i);
                assertTrue(contiguousEnd < start && start < end && end <= windowEnd, "range out of place");
                assertTrue(!received.get((int)start - 1) && received.nextClearBit((int)start) == end,
                    "range is not a maximal run of received bytes");
                for (int j = 0; j < i; j++)
                {
                    if (buffer.outOfOrderStart(j) == start)
                    {
                        fail("duplicate range at " + start);
                    }
                }
                sum += end - start;
            }
            assertEquals(total, sum, "range lengths");
        }

        private void read()
        {
            final long position = buffer.readPosition();
            final int wanted = random.nextInt(3 * MAX_SEGMENT);
            final int index = random.nextInt(16);
            final int expected = (int)Math.min(wanted, buffer.contiguousEnd() - position);

            final int count = buffer.read(destination, index, wanted);

            assertEquals(expected, count, "read count");
            assertEquals(position + count, buffer.readPosition());
            for (int i = 0; i < count; i++)
            {
                if (destination.getByte(index + i) != source[(int)position + i])
                {
                    fail("byte at stream offset " + (position + i) + " differs");
                }
            }
        }
    }
}
