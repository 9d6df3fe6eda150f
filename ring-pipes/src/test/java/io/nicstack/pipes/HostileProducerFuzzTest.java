package io.nicstack.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.function.Supplier;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;

/**
 * The two consumers of shared memory that another process produces, against a producer that writes what it likes.
 *
 * <p>{@link CheckedRingReader}: a ring starting anywhere in its stream (positions near 0 or near 2^62) gets up to five
 * records from Agrona's producer, then up to three scribbles: a length word (any value, or one near the ring's size),
 * -1 over a length or type word, the tail (anywhere, or near the head), a byte anywhere, the head word. It is read
 * with a random limit until it is empty, corrupt or 50 reads have passed. Every message handed out lies in the data
 * area and below the producer's tail; a read returns at most its limit; the position only moves forward; once
 * {@link CheckedRingReader#CORRUPT}, a read again is corrupt and moves nothing; a ring nobody scribbled on is drained
 * byte-exact, in order, to the producer's position.
 *
 * <p>{@link Pipe}: an honest producer writes a {@link StreamPattern} stream while the consumer reads (with
 * {@link Pipe#read} or {@link Pipe#peek}/{@link Pipe#release}) until the producer lies: a tail anywhere or near what it
 * published, or the consumer's head word overwritten; then the consumer reads on, and the producer may lie again. No
 * read throws or returns more than asked or than {@code capacity}, or a span outside the data area; every byte read
 * below what was honestly published is the stream's; the consumer never reads past a tail the producer stored; a tail
 * below the consumer's head or more than {@code capacity} past it makes the pipe corrupt, and a corrupt pipe reads
 * nothing more.
 *
 * <p>Adopted from the fuzz review's probe. The seed is printed in every failure; {@code -Dnicstack.fuzz.seed=S} repeats
 * a run, {@code -Dnicstack.fuzz.rings=N} sizes it (N rings, N / 4 pipes; 200,000 by default: 1 to 3 s here). A long
 * run: {@code mvn -q -B -o -pl ring-pipes -am test -Dtest=HostileProducerFuzzTest
 * -Dsurefire.failIfNoSpecifiedTests=false -Dnicstack.fuzz.rings=2000000}.
 */
class HostileProducerFuzzTest
{
    private static final int RINGS = Integer.getInteger("nicstack.fuzz.rings", 200_000);
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    private static final String REPLAY = "seed " + SEED + " (-Dnicstack.fuzz.seed=" + SEED + " repeats it)";
    private static final int RING_CAPACITY = 1024;
    private static final int TAIL_AT = RING_CAPACITY + RingBufferDescriptor.TAIL_POSITION_OFFSET;
    private static final int HEAD_AT = RING_CAPACITY + RingBufferDescriptor.HEAD_POSITION_OFFSET;
    private static final int PIPE_CAPACITY = 4096;

    @Test
    void checkedRingReaderTakesOnlyClaimedRecordsOfAScribbledRing()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        final UnsafeBuffer ring =
            new UnsafeBuffer(ByteBuffer.allocateDirect(RING_CAPACITY + RingBufferDescriptor.TRAILER_LENGTH));
        long delivered = 0;
        long corrupt = 0;
        for (int i = 0; i < RINGS; i++)
        {
            final String where = "ring " + i + ", " + REPLAY;
            ring.setMemory(0, ring.capacity(), (byte)0);
            // Somewhere in the stream, as a long-lived ring would be (head = tail).
            final long start =
                (random.nextInt(4) == 0 ? random.nextLong(Long.MAX_VALUE / 2) : random.nextInt(4 * RING_CAPACITY)) & ~7L;
            ring.putLong(HEAD_AT, start);
            ring.putLong(RING_CAPACITY + RingBufferDescriptor.HEAD_CACHE_POSITION_OFFSET, start);
            ring.putLong(TAIL_AT, start);
            final OneToOneRingBuffer producer = new OneToOneRingBuffer(ring);
            final CheckedRingReader reader = new CheckedRingReader(ring);
            final int[] lengths = new int[random.nextInt(6)];
            int written = 0;
            while (written < lengths.length)
            {
                final int length = random.nextInt(producer.maxMsgLength() + 1);
                final UnsafeBuffer message = new UnsafeBuffer(new byte[length]);
                for (int b = 0; b < length; b++)
                {
                    message.putByte(b, recordByte(written, b));
                }
                if (!producer.write(1 + written, message, 0, length))
                {
                    break;
                }
                lengths[written++] = length;
            }
            final int honest = written;
            final int scribbles = random.nextInt(4);
            for (int k = 0; k < scribbles; k++)
            {
                scribble(ring, start, random);
            }

            final long tail = ring.getLongVolatile(TAIL_AT);
            final int[] seen = {0};
            final boolean[] exact = {true};
            final long[] end = {start};
            final CheckedRingReader.Handler handler = (type, buffer, index, length) ->
            {
                assertTrue(index >= RecordDescriptor.HEADER_LENGTH && length >= 0 && index + length <= RING_CAPACITY,
                    () -> "message at " + index + " of " + length + " bytes outside the data area, " + where);
                final long position = reader.messagePosition();
                final long messageEnd = position + RecordDescriptor.HEADER_LENGTH + length;
                assertTrue(position - end[0] >= 0 && messageEnd - tail <= 0, () -> "message at position " + position + " of "
                    + length + " bytes, before the last one's end " + end[0] + " or past the tail " + tail + ", " + where);
                end[0] = messageEnd;
                final int k = seen[0]++;
                exact[0] &= k < honest && type == 1 + k && length == lengths[k];
                for (int b = 0; b < length && exact[0]; b++)
                {
                    exact[0] = buffer.getByte(index + b) == recordByte(k, b);
                }
            };
            int got = 0;
            for (int read = 0; read < 50; read++)
            {
                final int limit = 1 + random.nextInt(8);
                final long before = reader.position();
                final int n = read(reader, handler, limit, where);
                assertTrue(n <= limit && reader.position() - before >= 0, () -> "read " + n + " of " + limit + ", position "
                    + before + " to " + reader.position() + ", " + where);
                got = n;
                if (got == CheckedRingReader.CORRUPT)
                {
                    final int seenBefore = seen[0];
                    final long at = reader.position();
                    assertEquals(CheckedRingReader.CORRUPT, read(reader, handler, 8, where),
                        "corrupt once, corrupt again, " + where);
                    assertEquals(at, reader.position(), "a corrupt ring moves nothing, " + where);
                    assertEquals(seenBefore, seen[0], "a corrupt ring delivers nothing, " + where);
                    corrupt++;
                    break;
                }
                if (got == 0)
                {
                    break;
                }
                delivered += got;
            }
            if (scribbles == 0)
            {
                assertEquals(0, got, "an honest ring drained, " + where);
                assertTrue(exact[0] && seen[0] == written,
                    seen[0] + " of " + written + " honest records, each byte-exact, " + where);
                assertEquals(producer.producerPosition(), reader.position(), where);
            }
        }
        assertTrue(delivered > RINGS && corrupt > RINGS / 10, delivered + " delivered, " + corrupt + " corrupt: the scribbles "
            + "hardly reach the reader, " + REPLAY);
    }

    private static int read(final CheckedRingReader reader, final CheckedRingReader.Handler handler, final int limit,
        final String where)
    {
        try
        {
            return reader.read(handler, limit);
        }
        catch (final RuntimeException e)
        {
            throw new AssertionError("read threw, " + where, e);
        }
    }

    /** Byte {@code b} of the {@code k}th record. */
    private static byte recordByte(final int k, final int b)
    {
        return (byte)(k * 31 + b);
    }

    /** One scribble of a hostile producer on a ring whose stream started at {@code start}. */
    private static void scribble(final UnsafeBuffer ring, final long start, final SplittableRandom random)
    {
        switch (random.nextInt(5))
        {
            case 0 -> ring.putInt(random.nextInt(RING_CAPACITY / 4) * 4,
                random.nextInt(3) == 0 ? random.nextInt() : random.nextInt(-64, RING_CAPACITY + 64));
            case 1 -> ring.putInt(random.nextInt(RING_CAPACITY / 8) * 8, -1); // a padding type, or a negative length
            case 2 -> ring.putLong(TAIL_AT, random.nextBoolean() ? random.nextLong()
                : start + random.nextInt(-RING_CAPACITY, 3 * RING_CAPACITY));
            case 3 -> ring.putByte(random.nextInt(RING_CAPACITY), (byte)random.nextInt());
            default -> ring.putLong(HEAD_AT, random.nextBoolean() ? start : random.nextLong());
        }
    }

    @Test
    void pipeConsumerReadsOnlyPublishedBytesWhateverTheProducerWrites()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        final StreamPattern pattern = new StreamPattern(SEED);
        final UnsafeBuffer region = new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(PIPE_CAPACITY)));
        final Pipe producer = new Pipe();
        final Pipe consumer = new Pipe();
        final byte[] out = new byte[2 * PIPE_CAPACITY];
        long corruptPipes = 0;
        long streamBytes = 0;
        for (int i = 0; i < RINGS / 4; i++)
        {
            final String where = "pipe " + i + ", " + REPLAY;
            region.setMemory(0, region.capacity(), (byte)0);
            producer.wrap(region, 0, PIPE_CAPACITY);
            consumer.wrap(region, 0, PIPE_CAPACITY);
            long published = 0; // honestly
            long highestTail = 0; // any tail stored, honest or not
            boolean lied = false;
            for (int step = 0; step < 20; step++)
            {
                final int what = random.nextInt(6);
                if (what <= 2 && !lied)
                {
                    final int length = random.nextInt(1, 3000);
                    published += producer.write(pattern.bytes, StreamPattern.offset(published), length);
                    highestTail = published;
                }
                else if (what == 3)
                {
                    final long tail = random.nextBoolean() ? random.nextLong()
                        : published + random.nextInt(-2 * PIPE_CAPACITY, 2 * PIPE_CAPACITY);
                    producer.publishTail(tail);
                    highestTail = Math.max(highestTail, tail);
                    lied = true;
                }
                else if (what == 4 && random.nextInt(4) == 0)
                {
                    region.putLongRelease(PipeDescriptor.HEAD_OFFSET, random.nextLong()); // the consumer's word
                    lied = true;
                }
                final long tailNow = region.getLongVolatile(PipeDescriptor.TAIL_OFFSET);
                final boolean wasCorrupt = consumer.isCorrupt(0);
                final long head = consumer.head();
                final int got;
                try
                {
                    got = take(consumer, out, random, where);
                }
                catch (final RuntimeException e)
                {
                    throw new AssertionError("read threw, " + where, e);
                }
                final long honestly = published;
                final Supplier<String> read = () -> "read " + got + " at " + head + " with tail " + tailNow + ", published "
                    + honestly + ", " + where;
                assertTrue(got >= 0 && got <= PIPE_CAPACITY && head + got <= highestTail, read);
                assertEquals(head + got, consumer.head(), read);
                for (int b = 0; b < got && head + b < published; b++, streamBytes++)
                {
                    if (pattern.bytes[StreamPattern.offset(head + b)] != out[b])
                    {
                        fail("byte " + (head + b) + " is not the stream's, " + read.get());
                    }
                }
                if (tailNow < head || tailNow - head > PIPE_CAPACITY)
                {
                    assertTrue(consumer.isCorrupt(0), () -> "a tail off [head, head + capacity] is corrupt, " + read.get());
                }
                if (wasCorrupt)
                {
                    assertTrue(got == 0 && consumer.isCorrupt(0),
                        () -> "a corrupt pipe stays so and reads nothing, " + read.get());
                }
                if (!lied)
                {
                    assertTrue(!consumer.isCorrupt(published), () -> "an honest pipe is not corrupt, " + read.get());
                }
            }
            corruptPipes += consumer.isCorrupt(0) ? 1 : 0;
        }
        assertTrue(corruptPipes > RINGS / 8 && streamBytes > RINGS * 100L, corruptPipes + " corrupt pipes of " + RINGS / 4
            + ", " + streamBytes + " bytes of the stream read: the lies or the stream hardly reach the consumer, " + REPLAY);
    }

    /** A read of a random size into {@code out}: by copy, or by peek, get and release (as the daemon does). */
    private static int take(final Pipe consumer, final byte[] out, final SplittableRandom random, final String where)
    {
        final int wanted = random.nextInt(1, out.length);
        if (random.nextBoolean())
        {
            return consumer.read(out, 0, wanted);
        }
        final int n = Math.min(consumer.peek(), wanted);
        final int index = consumer.peekIndex();
        assertTrue(index >= PipeDescriptor.DATA_OFFSET && index + n <= PipeDescriptor.DATA_OFFSET + PIPE_CAPACITY,
            () -> "peeked " + n + " bytes at " + index + ", " + where);
        consumer.buffer().getBytes(index, out, 0, n);
        consumer.release(n);
        return n;
    }
}
