package io.nicstack.pipes;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The consumer of a pipe whose producer (another process, not trusted) moves the positions the wrong way. */
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
    void aHeadPastTheTailIsCorrupt()
    {
        producer.write(new byte[1000], 0, 1000);
        region.putLongRelease(AT + PipeDescriptor.HEAD_OFFSET, 2000); // the producer wrote the consumer's field

        assertEquals(0, consumer.peek());
        assertTrue(consumer.isCorrupt(0));
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
