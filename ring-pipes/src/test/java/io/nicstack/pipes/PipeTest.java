package io.nicstack.pipes;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PipeTest
{
    private static final int CAPACITY = 4096;

    private final UnsafeBuffer region = new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(CAPACITY) + 64));
    private final Pipe producer = new Pipe();
    private final Pipe consumer = new Pipe();

    @BeforeEach
    void setUp()
    {
        producer.wrap(region, 64, CAPACITY);
        consumer.wrap(region, 64, CAPACITY);
    }

    @Test
    void fieldsSitWhereTheDescriptorSays()
    {
        producer.write(new byte[] {1, 2, 3}, 0, 3);
        assertEquals(3, region.getLong(64 + PipeDescriptor.TAIL_OFFSET));
        assertEquals(2, region.getByte(64 + PipeDescriptor.DATA_OFFSET + 1));
        consumer.release(2);
        assertEquals(2, region.getLong(64 + PipeDescriptor.HEAD_OFFSET));
        assertEquals(64 + PipeDescriptor.DATA_OFFSET + 2, consumer.peekIndex());
    }

    @Test
    void claimStopsAtTheWrapAndAtTheHead()
    {
        assertEquals(CAPACITY, producer.claim(Integer.MAX_VALUE));
        producer.commit(CAPACITY - 100);
        assertEquals(100, producer.claim(1000));
        assertEquals(0, producer.free() - 100);
        consumer.release(CAPACITY - 200);
        // 100 bytes to the end of the data region, then 3900 more free after the wrap.
        assertEquals(100, producer.claim(1000));
        producer.commit(100);
        assertEquals(64 + PipeDescriptor.DATA_OFFSET, producer.claimIndex());
        assertEquals(CAPACITY - 200, producer.claim(Integer.MAX_VALUE));
        assertEquals(200, consumer.peek());
        assertThrows(IllegalArgumentException.class, () -> producer.commit(CAPACITY));
        assertThrows(IllegalArgumentException.class, () -> consumer.release(201));
        assertEquals(0, producer.claim(-5));
    }

    @Test
    void writeAndReadAcrossTheWrap()
    {
        final byte[] junk = new byte[CAPACITY - 10];
        producer.write(junk, 0, junk.length);
        consumer.read(new byte[junk.length], 0, junk.length);

        final byte[] data = new byte[100];
        for (int i = 0; i < data.length; i++)
        {
            data[i] = (byte)i;
        }
        assertEquals(100, producer.write(data, 0, data.length));
        assertEquals(10, consumer.peek());
        assertEquals(100, consumer.readable());
        final byte[] out = new byte[100];
        assertEquals(100, consumer.read(out, 0, 100));
        assertArrayEquals(data, out);
        assertEquals(0, consumer.peek());
    }

    @Test
    void writeTakesOnlyWhatFits()
    {
        assertEquals(CAPACITY, producer.write(new byte[CAPACITY + 10], 0, CAPACITY + 10));
        assertEquals(0, producer.write(new byte[1], 0, 1));
        assertEquals(0, producer.free());
    }

    @Test
    void outOfOrderPlacementBecomesVisibleOnlyWhenPublished()
    {
        final UnsafeBuffer segment = new UnsafeBuffer(new byte[] {'w', 'o', 'r', 'l', 'd'});
        final UnsafeBuffer first = new UnsafeBuffer(new byte[] {'h', 'e', 'l', 'l', 'o', ' '});
        producer.writeAt(6, segment, 0, 5);
        assertEquals(0, consumer.readable());
        producer.writeAt(0, first, 0, 6);
        producer.publishTail(11);
        final byte[] out = new byte[11];
        consumer.read(out, 0, 11);
        assertEquals("hello world", new String(out, java.nio.charset.StandardCharsets.US_ASCII));

        assertThrows(IllegalArgumentException.class, () -> producer.writeAt(11 + CAPACITY - 2, segment, 0, 5));
        assertThrows(IllegalArgumentException.class, () -> producer.writeAt(10, segment, 0, 1));
    }

    @Test
    void daemonReadsTxBytesAgainUntilAcknowledged()
    {
        final byte[] data = new byte[3000];
        for (int i = 0; i < data.length; i++)
        {
            data[i] = (byte)(i * 7);
        }
        producer.write(new byte[CAPACITY - 1000], 0, CAPACITY - 1000);
        consumer.releaseTo(CAPACITY - 1000);
        producer.write(data, 0, data.length);

        final UnsafeBuffer frame = new UnsafeBuffer(new byte[3000]);
        consumer.getBytes(CAPACITY - 1000, frame, 0, 3000);
        consumer.getBytes(CAPACITY - 1000, frame, 0, 3000); // a retransmission reads the same bytes
        final byte[] copy = new byte[3000];
        frame.getBytes(0, copy);
        assertArrayEquals(data, copy);
        consumer.releaseTo(CAPACITY + 2000);
        assertEquals(0, consumer.readable());
        assertThrows(IllegalArgumentException.class, () -> consumer.releaseTo(CAPACITY + 2001));
    }

    @Test
    void hostilePositionsNeverGiveASpanOutsideThePipe()
    {
        producer.write(new byte[4000], 0, 4000);
        consumer.release(4000);
        region.putLongRelease(64 + PipeDescriptor.TAIL_OFFSET, Long.MAX_VALUE / 2);
        assertEquals(0, consumer.peek()); // corrupt (PipeCorruptionTest): a tail past head + capacity
        assertEquals(0, consumer.readable());
        region.putLongRelease(64 + PipeDescriptor.TAIL_OFFSET, -7);
        assertEquals(0, consumer.peek());
        assertEquals(CAPACITY, producer.free());
    }

    /**
     * A tail the consumer found corrupt is not handed out: tailVolatile gives the last good one, so releaseTo cannot
     * move the head to a position the producer never wrote. Before, the raw tail came back and the head went to it.
     */
    @Test
    void aCorruptTailIsNotHandedOut()
    {
        producer.write(new byte[1000], 0, 1000);
        assertEquals(1000, consumer.tailVolatile());
        region.putLongRelease(64 + PipeDescriptor.TAIL_OFFSET, 1000 + 2L * CAPACITY);
        assertEquals(1000, consumer.tailVolatile(), "the last good tail");
        assertThrows(IllegalArgumentException.class, () -> consumer.releaseTo(1000 + CAPACITY + 1));
        assertEquals(0, consumer.head());
        assertEquals(0, consumer.readable(), "still corrupt");
    }

    @Test
    void wrapRejectsBadGeometry()
    {
        assertThrows(IllegalArgumentException.class, () -> new Pipe().wrap(region, 0, 3000));
        assertThrows(IllegalArgumentException.class, () -> new Pipe().wrap(region, 4, CAPACITY));
        assertThrows(IllegalArgumentException.class, () -> new Pipe().wrap(region, 128, CAPACITY));
    }
}
