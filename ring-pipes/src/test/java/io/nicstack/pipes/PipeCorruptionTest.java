package io.nicstack.pipes;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The consumer of a pipe whose producer (another process, not trusted) moves the positions the wrong way, or writes
 * the consumer's head.
 */
class PipeCorruptionTest
{
    private static final int CAPACITY = 4096;
    private static final int AT = 64;

    private final UnsafeBuffer region =
        new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(CAPACITY) + AT));
    private final Pipe producer = new Pipe();
    private final Pipe consumer = new Pipe();

    @BeforeEach
    void setUp()
    {
        producer.wrap(region, AT, CAPACITY);
        consumer.wrap(region, AT, CAPACITY);
    }

    @Test
    void aTailThatGoesBackIsCorruptAndNothingMoreIsRead()
    {
        producer.write(new byte[1000], 0, 1000);
        assertEquals(1000, consumer.peek());
        consumer.release(300);
        producer.publishTail(600);

        assertEquals(0, consumer.peek(), "bytes read below a tail that went back");
        assertTrue(consumer.isCorrupt(0));
        producer.publishTail(1000);
        assertEquals(0, consumer.readable(), "a corrupt pipe stays corrupt");
        assertTrue(consumer.isCorrupt(0));
    }

    @Test
    void aHeadPastTheTailAtTheWrapIsCorrupt()
    {
        producer.write(new byte[1000], 0, 1000);
        region.putLongRelease(AT + PipeDescriptor.HEAD_OFFSET, 2000); // the producer wrote the consumer's field
        consumer.wrap(region, AT, CAPACITY); // the one time the consumer reads its head from the pipe

        assertEquals(0, consumer.peek());
        assertTrue(consumer.isCorrupt(0));
    }

    @Test
    void theProducerWritingTheHeadChangesNothingTheConsumerReads()
    {
        final byte[] stream = new byte[3000];
        for (int i = 0; i < stream.length; i++)
        {
            stream[i] = (byte)(i * 7 + i / 256);
        }
        producer.write(stream, 0, stream.length);
        final byte[] out = new byte[stream.length];
        assertEquals(1000, consumer.read(out, 0, 1000));

        region.putLongRelease(AT + PipeDescriptor.HEAD_OFFSET, 0); // back: the consumer would read bytes again
        assertEquals(2000, consumer.peek());
        assertEquals(1000, consumer.read(out, 1000, 1000));
        region.putLongRelease(AT + PipeDescriptor.HEAD_OFFSET, 2900); // forward: it would skip bytes
        assertEquals(1000, consumer.readable());
        assertEquals(AT + PipeDescriptor.DATA_OFFSET + 2000, consumer.peekIndex());
        consumer.buffer().getBytes(consumer.peekIndex(), out, 2000, 500);
        consumer.release(500);
        region.putLongRelease(AT + PipeDescriptor.HEAD_OFFSET, 9000); // past the tail
        assertEquals(500, consumer.read(out, 2500, 1000));

        assertArrayEquals(stream, out);
        assertEquals(3000, consumer.head());
        assertEquals(3000, region.getLongVolatile(AT + PipeDescriptor.HEAD_OFFSET), "the consumer's head, published");
        assertEquals(0, consumer.peek());
        assertFalse(consumer.isCorrupt(3000));
    }

    @Test
    void aTailMoreThanACapacityPastTheHeadIsCorruptNotAFullPipe()
    {
        producer.write(new byte[1000], 0, 1000);
        consumer.read(new byte[1000], 0, 1000);
        producer.write(new byte[CAPACITY], 0, CAPACITY);
        assertEquals(CAPACITY, consumer.readable(), "a full pipe is honest");
        assertFalse(consumer.isCorrupt(1000 + CAPACITY));

        producer.publishTail(1000 + CAPACITY + 1); // the producer may write only below head + capacity

        assertEquals(0, consumer.readable(), "stale ring bytes read as the stream");
        assertEquals(0, consumer.peek());
        assertTrue(consumer.isCorrupt(0));
        producer.publishTail(1000 + CAPACITY);
        assertEquals(0, consumer.readable(), "a corrupt pipe stays corrupt");
    }

    @Test
    void aTailFarPastTheHeadIsCorrupt()
    {
        producer.publishTail(Long.MAX_VALUE / 2);

        assertEquals(0, consumer.peek());
        assertTrue(consumer.isCorrupt(0));
    }

    @Test
    void aTailBelowOneThePublisherNamedIsCorrupt()
    {
        producer.write(new byte[1000], 0, 1000);
        assertEquals(1000, consumer.peek());
        assertFalse(consumer.isCorrupt(1000));
        assertTrue(consumer.isCorrupt(1001));
    }

    @Test
    void anHonestStreamAcrossManyWrapsIsNeverCorrupt()
    {
        final byte[] chunk = new byte[1500];
        final byte[] sink = new byte[1000];
        long published = 0;
        for (int round = 0; round < 100; round++)
        {
            published += producer.write(chunk, 0, chunk.length);
            while (consumer.read(sink, 0, sink.length) > 0)
            {
                assertFalse(consumer.isCorrupt(published));
            }
            assertEquals(0, consumer.peek());
            assertFalse(consumer.isCorrupt(published));
        }
        assertEquals(published, consumer.head());
    }

    @Test
    void aResetOrAWrapStartsClean()
    {
        producer.write(new byte[1000], 0, 1000);
        assertEquals(1000, consumer.peek());
        producer.publishTail(10);
        assertEquals(0, consumer.peek());
        assertTrue(consumer.isCorrupt(0));

        consumer.reset();
        assertFalse(consumer.isCorrupt(0));
        producer.publishTail(10);
        assertEquals(10, consumer.peek());
        producer.publishTail(0);
        consumer.wrap(region, AT, CAPACITY);
        assertFalse(consumer.isCorrupt(0));
    }
}
