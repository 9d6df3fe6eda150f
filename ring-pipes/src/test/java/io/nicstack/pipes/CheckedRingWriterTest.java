package io.nicstack.pipes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;

/**
 * The checked producer: what it writes is what Agrona's producer writes, byte for byte, and reads back through
 * {@link CheckedRingReader} (the client's reader) and Agrona's own reader across many wraps; and whatever the consumer
 * writes into the ring's trailer, every store it makes is aligned and inside the ring ({@link StoreCheckingBuffer}).
 * Seeds are printed in failures; {@code -Dnicstack.fuzz.seed=S} repeats a run.
 */
class CheckedRingWriterTest
{
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    private static final String REPLAY = "seed " + SEED + " (-Dnicstack.fuzz.seed=" + SEED + " repeats it)";
    private static final int CAPACITY = 1024;
    private static final int LENGTH = CAPACITY + RingBufferDescriptor.TRAILER_LENGTH;
    private static final int TAIL_AT = CAPACITY + RingBufferDescriptor.TAIL_POSITION_OFFSET;
    private static final int HEAD_AT = CAPACITY + RingBufferDescriptor.HEAD_POSITION_OFFSET;
    private static final int HEAD_CACHE_AT = CAPACITY + RingBufferDescriptor.HEAD_CACHE_POSITION_OFFSET;

    /** The ring's memory as the app sees it: plain, unchecked. */
    private final ByteBuffer memory = ByteBuffer.allocateDirect(LENGTH);
    private final UnsafeBuffer app = new UnsafeBuffer(memory);
    /** The same memory as the daemon's producer sees it: every store checked. */
    private final StoreCheckingBuffer daemon = new StoreCheckingBuffer(memory, CAPACITY);

    /**
     * An {@link UnsafeBuffer} that fails on any store that is not aligned to its size, or that falls outside the data
     * area and the one trailer word a producer owns (its tail; Agrona's producer also its head cache): on aarch64 a
     * misaligned ordered store is a SIGBUS, and a store outside is into the app's other memory.
     */
    static final class StoreCheckingBuffer extends UnsafeBuffer
    {
        private final int capacity;
        boolean headCacheAllowed;
        /** Stores checked so far. */
        long stores;

        StoreCheckingBuffer(final ByteBuffer memory, final int capacity)
        {
            super(memory);
            this.capacity = capacity;
        }

        private void check(final int index, final int length, final int alignment)
        {
            stores++;
            if (index % alignment != 0)
            {
                throw new AssertionError("misaligned store of " + length + " bytes at " + index);
            }
            final boolean inData = index >= 0 && index <= capacity - length;
            final boolean ownWord = length == 8 && (index == capacity + RingBufferDescriptor.TAIL_POSITION_OFFSET
                || headCacheAllowed && index == capacity + RingBufferDescriptor.HEAD_CACHE_POSITION_OFFSET);
            if (!inData && !ownWord)
            {
                throw new AssertionError("store of " + length + " bytes at " + index + ", outside the ring's data ["
                    + 0 + ", " + capacity + ") and the producer's trailer words");
            }
        }

        @Override
        public void putLong(final int index, final long value)
        {
            check(index, 8, 8);
            super.putLong(index, value);
        }

        @Override
        public void putLongOrdered(final int index, final long value)
        {
            check(index, 8, 8);
            super.putLongOrdered(index, value);
        }

        @Override
        public void putLongRelease(final int index, final long value)
        {
            check(index, 8, 8);
            super.putLongRelease(index, value);
        }

        @Override
        public void putLongVolatile(final int index, final long value)
        {
            check(index, 8, 8);
            super.putLongVolatile(index, value);
        }

        @Override
        public void putInt(final int index, final int value)
        {
            check(index, 4, 4);
            super.putInt(index, value);
        }

        @Override
        public void putIntOrdered(final int index, final int value)
        {
            check(index, 4, 4);
            super.putIntOrdered(index, value);
        }

        @Override
        public void putIntRelease(final int index, final int value)
        {
            check(index, 4, 4);
            super.putIntRelease(index, value);
        }

        @Override
        public void putIntVolatile(final int index, final int value)
        {
            check(index, 4, 4);
            super.putIntVolatile(index, value);
        }

        @Override
        public void putBytes(final int index, final org.agrona.DirectBuffer source, final int offset, final int length)
        {
            check(index, length, 1);
            super.putBytes(index, source, offset, length);
        }

        @Override
        public void putBytes(final int index, final byte[] source, final int offset, final int length)
        {
            check(index, length, 1);
            super.putBytes(index, source, offset, length);
        }

        @Override
        public void putByte(final int index, final byte value)
        {
            check(index, 1, 1);
            super.putByte(index, value);
        }

        @Override
        public void setMemory(final int index, final int length, final byte value)
        {
            check(index, length, 1);
            super.setMemory(index, length, value);
        }
    }

    /**
     * The instrument can fail: Agrona's producer, once the app has stored an odd tail, stores the record's length at an
     * odd index (on aarch64, the SIGBUS that would take the daemon down).
     */
    @Test
    void theStoreCheckCatchesAgronasProducerAtAnOddTail()
    {
        daemon.headCacheAllowed = true;
        final OneToOneRingBuffer agrona = new OneToOneRingBuffer(daemon);
        final UnsafeBuffer message = new UnsafeBuffer(new byte[16]);
        assertTrue(agrona.write(1, message, 0, 16));
        app.putLongRelease(TAIL_AT, app.getLong(TAIL_AT) + 3);
        final AssertionError e = assertThrows(AssertionError.class, () -> agrona.write(1, message, 0, 16));
        assertTrue(e.getMessage().startsWith("misaligned"), e.getMessage());
    }

    /**
     * Records of seeded random sizes written by this producer and by Agrona's into two rings in lockstep, each drained
     * by a {@link CheckedRingReader} with the same random limits, leave the same bytes in both rings (all but Agrona's
     * head cache word, which this producer does not keep in the ring), the same answers, and read back identically, in
     * order, across hundreds of wraps; from a stream position near 0 and one near 2^62.
     */
    @Test
    void writesWhatAgronasProducerWritesAndReadsBackIdenticallyAcrossManyWraps()
    {
        for (final long start : new long[] {0, (1L << 62) - 3 * CAPACITY - 56})
        {
            final String where = "start " + start + ", " + REPLAY;
            final SplittableRandom random = new SplittableRandom(SEED ^ start);
            final UnsafeBuffer theirs = new UnsafeBuffer(ByteBuffer.allocateDirect(LENGTH));
            for (final UnsafeBuffer ring : new UnsafeBuffer[] {app, theirs})
            {
                ring.setMemory(0, LENGTH, (byte)0);
                ring.putLong(TAIL_AT, start);
                ring.putLong(HEAD_AT, start);
                ring.putLong(HEAD_CACHE_AT, start);
            }
            final CheckedRingWriter writer = new CheckedRingWriter(daemon);
            final OneToOneRingBuffer agrona = new OneToOneRingBuffer(theirs);
            final CheckedRingReader reader = new CheckedRingReader(app);
            final CheckedRingReader theirReader = new CheckedRingReader(theirs);
            final ArrayDeque<byte[]> expected = new ArrayDeque<>();
            final ArrayDeque<byte[]> theirExpected = new ArrayDeque<>();
            final UnsafeBuffer message = new UnsafeBuffer(new byte[writer.maxMessageLength()]);
            long written = 0;
            long full = 0;
            for (int i = 0; i < 100_000; i++)
            {
                if (random.nextInt(3) != 0)
                {
                    final int length = random.nextInt(writer.maxMessageLength() + 1);
                    final int type = 1 + random.nextInt(1000);
                    final byte[] bytes = new byte[length + 4];
                    random.nextBytes(bytes);
                    bytes[0] = (byte)(type >> 24);
                    bytes[1] = (byte)(type >> 16);
                    bytes[2] = (byte)(type >> 8);
                    bytes[3] = (byte)type;
                    message.putBytes(0, bytes, 4, length);
                    final int result = writer.write(type, message, 0, length);
                    assertEquals(agrona.write(type, message, 0, length), result == CheckedRingWriter.WRITTEN,
                        "write " + i + ", " + where);
                    if (result == CheckedRingWriter.WRITTEN)
                    {
                        expected.add(bytes);
                        theirExpected.add(bytes);
                        written++;
                    }
                    else
                    {
                        assertEquals(CheckedRingWriter.FULL, result, where);
                        full++;
                    }
                }
                else
                {
                    final int limit = 1 + random.nextInt(4);
                    final int ours = reader.read(recordsFrom(expected, where), limit);
                    assertEquals(theirReader.read(recordsFrom(theirExpected, where), limit), ours, where);
                    assertTrue(ours >= 0, where);
                }
                assertSameBytes(theirs, i, where);
            }
            while (reader.read(recordsFrom(expected, where), 64) > 0)
            {
                // The rest.
            }
            assertTrue(expected.isEmpty(), where);
            assertEquals(writer.position(), reader.position(), where);
            assertEquals(writer.position(), app.getLong(TAIL_AT), where);
            assertTrue(writer.position() - start > 200L * CAPACITY, "wrapped " + (writer.position() - start) / CAPACITY
                + " times, " + where);
            assertTrue(written > 0 && full > 0, written + " written, " + full + " full, " + where);
            assertFalse(writer.corrupt());
        }
    }

    /** Agrona's own consumer (the daemon's tests read events with it) reads the same records, across wraps. */
    @Test
    void agronasConsumerReadsWhatItWrites()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        final CheckedRingWriter writer = new CheckedRingWriter(daemon);
        final OneToOneRingBuffer consumer = new OneToOneRingBuffer(app);
        final ArrayDeque<byte[]> expected = new ArrayDeque<>();
        final UnsafeBuffer message = new UnsafeBuffer(new byte[writer.maxMessageLength()]);
        for (int i = 0; i < 50_000; i++)
        {
            final int length = random.nextInt(writer.maxMessageLength() + 1);
            final byte[] bytes = new byte[length + 4];
            random.nextBytes(bytes);
            bytes[0] = 0;
            bytes[1] = 0;
            bytes[2] = 0;
            bytes[3] = 7;
            message.putBytes(0, bytes, 4, length);
            if (writer.write(7, message, 0, length) == CheckedRingWriter.WRITTEN)
            {
                expected.add(bytes);
            }
            if (random.nextInt(3) == 0)
            {
                consumer.read(recordsFrom(expected, REPLAY), 1 + random.nextInt(4));
            }
        }
        while (consumer.consumerPosition() != writer.position())
        {
            consumer.read(recordsFrom(expected, REPLAY));
        }
        assertTrue(expected.isEmpty(), REPLAY);
        assertEquals(writer.position(), consumer.consumerPosition(), REPLAY);
    }

    /**
     * The app scribbles on the ring between writes: the tail word (odd values, anything, near the real one), the head
     * cache word, the body, and the head (anything, or an aligned value in the window). Every store the producer makes
     * is aligned and inside the ring; once it answers {@link CheckedRingWriter#CORRUPT} it stores nothing more, and it
     * answers so only for a head or tail word the app broke; a head it broke is never taken as room ({@code FULL} is
     * answered only after a head that passed the check), so a bad head ends in {@code CORRUPT}.
     */
    @Test
    void scribbledPositionsNeverMisplaceAStoreAndABadHeadIsCorrupt()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        final UnsafeBuffer message = new UnsafeBuffer(new byte[CAPACITY / 8]);
        long corrupt = 0;
        for (int ring = 0; ring < 20_000; ring++)
        {
            final String where = "ring " + ring + ", " + REPLAY;
            final long start = (random.nextInt(4) == 0 ? random.nextLong() : random.nextInt(8 * CAPACITY)) & ~7L;
            app.setMemory(0, LENGTH, (byte)0);
            app.putLong(TAIL_AT, start);
            app.putLong(HEAD_AT, start);
            final CheckedRingWriter writer = new CheckedRingWriter(daemon);
            for (int step = 0; step < 40 && !writer.corrupt(); step++)
            {
                final long tail = writer.position();
                switch (random.nextInt(8))
                {
                    case 0 ->
                    {
                        final long[] tails = {tail + 1 + random.nextInt(7), random.nextLong(), tail + 8 * random.nextInt(-200, 200),
                            tail ^ (1L << random.nextInt(64)), tail};
                        app.putLongRelease(TAIL_AT, tails[random.nextInt(tails.length)]);
                    }
                    case 1 -> app.putLong(HEAD_CACHE_AT, random.nextLong());
                    case 2 -> app.putLong(random.nextInt(CAPACITY / 8) * 8, random.nextLong());
                    case 3 ->
                    {
                        final long[] heads = {random.nextLong(), tail + 1 + random.nextInt(7), tail + 8, tail - CAPACITY - 8,
                            tail - 8 * random.nextInt(CAPACITY / 8 + 1), tail - CAPACITY};
                        app.putLongRelease(HEAD_AT, heads[random.nextInt(heads.length)]);
                    }
                    default ->
                    {
                        // The consumer moves its head on, honestly: anywhere aligned between it and the tail.
                        final long head = app.getLong(HEAD_AT);
                        if (!badHead(head, tail) && tail - head > 0)
                        {
                            app.putLongRelease(HEAD_AT, head + 8 * random.nextLong((tail - head) / 8 + 1));
                        }
                    }
                }
                corrupt += checkedWrite(writer, message, random.nextInt(message.capacity() + 1), random, where);
            }
            // Until it needs room the producer need not look at the head; once it does, a bad one is corrupt.
            for (int k = 0; k < 1000 && !writer.corrupt() && badHead(app.getLong(HEAD_AT), writer.position()); k++)
            {
                corrupt += checkedWrite(writer, message, message.capacity(), random, where);
            }
            assertTrue(writer.corrupt() || !badHead(app.getLong(HEAD_AT), writer.position()), "a bad head, " + where);
        }
        assertTrue(corrupt > 1000, corrupt + " rings corrupt, " + REPLAY);
    }

    /** A tail or head that no producer and consumer could have left at the attach makes the ring corrupt from the start. */
    @Test
    void badPositionsAtTheAttachAreCorruptFromTheStart()
    {
        final UnsafeBuffer message = new UnsafeBuffer(new byte[8]);
        final long[][] tailAndHead = {{3, 0}, {16, 8 + 4}, {16, 24}, {CAPACITY + 16, 8}, {Long.MIN_VALUE + 8, Long.MAX_VALUE - 7 - 2 * CAPACITY}};
        for (final long[] positions : tailAndHead)
        {
            app.setMemory(0, LENGTH, (byte)0);
            app.putLong(TAIL_AT, positions[0]);
            app.putLong(HEAD_AT, positions[1]);
            final CheckedRingWriter writer = new CheckedRingWriter(daemon);
            assertTrue(writer.corrupt(), "tail " + positions[0] + ", head " + positions[1]);
            final long stores = daemon.stores;
            assertEquals(CheckedRingWriter.CORRUPT, writer.write(1, message, 0, 8));
            assertEquals(stores, daemon.stores);
        }
        // Positions that wrap past 2^63 are fine: a full ring there.
        app.setMemory(0, LENGTH, (byte)0);
        app.putLong(TAIL_AT, Long.MIN_VALUE + 8);
        app.putLong(HEAD_AT, Long.MIN_VALUE + 8 - CAPACITY);
        final CheckedRingWriter writer = new CheckedRingWriter(daemon);
        assertFalse(writer.corrupt());
        assertEquals(CheckedRingWriter.FULL, writer.write(1, message, 0, 8));
    }

    /** Each head a consumer cannot have stored, found when the producer needs room: odd, past the tail, too far behind. */
    @Test
    void aHeadThatIsMisalignedPastTheTailOrTooFarBehindIsCorrupt()
    {
        final UnsafeBuffer message = new UnsafeBuffer(new byte[CAPACITY / 8]);
        for (final int shift : new int[] {1, 4, 8, 8 + CAPACITY, -CAPACITY - 8, -CAPACITY - 1})
        {
            app.setMemory(0, LENGTH, (byte)0);
            final CheckedRingWriter writer = new CheckedRingWriter(daemon);
            while (writer.write(1, message, 0, message.capacity()) == CheckedRingWriter.WRITTEN)
            {
                // Until it is full.
            }
            app.putLongRelease(HEAD_AT, writer.position() + shift);
            final long stores = daemon.stores;
            assertEquals(CheckedRingWriter.CORRUPT, writer.write(1, message, 0, message.capacity()), "head at tail + " + shift);
            assertEquals(stores, daemon.stores, "head at tail + " + shift);
        }
    }

    /** The ring's bytes are {@code theirs}, all but the head cache word (Agrona's producer's, not this one's). */
    private void assertSameBytes(final UnsafeBuffer theirs, final int step, final String where)
    {
        for (int i = 0; i < LENGTH; i += 8)
        {
            if (i != HEAD_CACHE_AT && app.getLong(i) != theirs.getLong(i))
            {
                throw new AssertionError("after step " + step + " the rings differ at " + i + ": " + app.getLong(i)
                    + ", Agrona's " + theirs.getLong(i) + ", " + where);
            }
        }
    }

    private static boolean badHead(final long head, final long tail)
    {
        return (head & 7) != 0 || tail - head < 0 || tail - head > CAPACITY;
    }

    /**
     * One write, its answer checked against the positions the app left: {@code CORRUPT} only for a bad tail or head
     * word, and no store made then or after; {@code FULL} only for good ones; written, only behind a good tail.
     */
    private int checkedWrite(final CheckedRingWriter writer, final UnsafeBuffer message, final int length,
        final SplittableRandom random, final String where)
    {
        final long tail = writer.position();
        final boolean tailBad = app.getLong(TAIL_AT) != tail;
        final boolean headBad = badHead(app.getLong(HEAD_AT), tail);
        final long storesBefore = daemon.stores;
        final int result = writer.write(1 + random.nextInt(9), message, 0, length);
        if (result == CheckedRingWriter.CORRUPT)
        {
            assertTrue(tailBad || headBad, "corrupt with positions the app did not break, " + where);
            assertEquals(storesBefore, daemon.stores, "stores made by a corrupt write, " + where);
            assertEquals(CheckedRingWriter.CORRUPT, writer.write(1, message, 0, 0), where);
            assertEquals(storesBefore, daemon.stores, "stores made after the ring was corrupt, " + where);
            return 1;
        }
        assertFalse(tailBad, "not corrupt behind a tail the app broke, " + where);
        if (result == CheckedRingWriter.FULL)
        {
            assertFalse(headBad, "full with a head the app broke, " + where);
        }
        assertEquals(0, writer.position() & 7, where);
        assertEquals(writer.position(), app.getLong(TAIL_AT), where);
        return 0;
    }

    /** Records are taken off the front of {@code expected}: type (its first four bytes, big-endian) and payload. */
    private static CheckedRingReader.Handler recordsFrom(final ArrayDeque<byte[]> expected, final String where)
    {
        return (type, buffer, index, length) ->
        {
            assertFalse(expected.isEmpty(), "a record nobody wrote, " + where);
            final byte[] bytes = expected.poll();
            final int wanted = (bytes[0] & 0xFF) << 24 | (bytes[1] & 0xFF) << 16 | (bytes[2] & 0xFF) << 8 | bytes[3] & 0xFF;
            assertEquals(wanted, type, where);
            final byte[] got = new byte[length];
            buffer.getBytes(index, got);
            final byte[] payload = new byte[bytes.length - 4];
            System.arraycopy(bytes, 4, payload, 0, payload.length);
            assertArrayEquals(payload, got, where);
            assertTrue(index >= RecordDescriptor.HEADER_LENGTH && index + length <= CAPACITY, where);
        };
    }
}
