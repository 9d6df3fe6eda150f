package io.nicstack.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;

/** The checked consumer against Agrona's producer, and against records no producer claimed. */
class CheckedRingReaderTest
{
    private static final int CAPACITY = 1024;
    private static final int TAIL_AT = CAPACITY + RingBufferDescriptor.TAIL_POSITION_OFFSET;

    private final UnsafeBuffer ring = new UnsafeBuffer(ByteBuffer.allocateDirect(CAPACITY + RingBufferDescriptor.TRAILER_LENGTH));
    private final List<Integer> taken = new ArrayList<>();
    private final CheckedRingReader.Handler handler = (type, buffer, index, length) -> taken.add(buffer.getInt(index));

    /** Messages written by Agrona's producer across the buffer's end are all taken, in order; the end padding counts. */
    @Test
    void agronasRecordsAcrossTheWrapAreTakenInOrder()
    {
        final OneToOneRingBuffer producer = new OneToOneRingBuffer(ring);
        final CheckedRingReader reader = new CheckedRingReader(ring);
        final UnsafeBuffer message = new UnsafeBuffer(new byte[40]);
        int written = 0;
        int read = 0;
        for (int round = 0; round < 100; round++)
        {
            for (int i = 0; i < 3; i++)
            {
                message.putInt(0, written);
                if (producer.write(1, message, 0, 40))
                {
                    written++;
                }
            }
            final int n = reader.read(handler, 2);
            assertTrue(n >= 0 && n <= 2, "read " + n);
            read += n;
        }
        while (reader.read(handler, 64) > 0)
        {
            // The rest.
        }
        assertEquals(written, taken.size());
        for (int i = 0; i < written; i++)
        {
            assertEquals(i, taken.get(i));
        }
        assertEquals(producer.producerPosition(), reader.position());
        assertTrue(read > 0);
    }

    /**
     * A padding record spanning the whole buffer at its start, and a tail that was never moved: no producer claimed it,
     * so the ring is corrupt. Before, the reader skipped it without counting it and moved its head by the buffer's
     * length; it never zeroes what it took, so it found the same record there on every pass, for ever (a detaching
     * app's drain looped on it, and the daemon's event loop with it).
     */
    @Test
    void aPaddingRecordSpanningTheRingThatNoProducerClaimedIsCorrupt()
    {
        padAll();
        final CheckedRingReader reader = new CheckedRingReader(ring);
        assertEquals(CheckedRingReader.CORRUPT, reader.read(handler, 64));
        assertEquals(0, reader.position(), "the head stays at the bad record");
        assertEquals(0, ring.getLong(CAPACITY + RingBufferDescriptor.HEAD_POSITION_OFFSET));
    }

    /**
     * The same record with a producer position far ahead, as a hostile producer may store: it is taken again on every
     * pass, and counted each time, so a caller's bound on what it takes ends its loop.
     */
    @Test
    void aStaleRecordIsCountedEachTimeItIsTaken()
    {
        padAll();
        ring.putLongRelease(TAIL_AT, 1L << 40);
        final CheckedRingReader reader = new CheckedRingReader(ring);
        for (int pass = 1; pass <= 3; pass++)
        {
            assertEquals(1, reader.read(handler, 64), "pass " + pass);
            assertEquals((long)pass * CAPACITY, reader.position());
        }
        assertEquals(0, taken.size());
    }

    /** A record written at the tail without the tail moved past it is corrupt, and what comes before it is taken. */
    @Test
    void aRecordPastTheProducersPositionIsCorrupt()
    {
        final OneToOneRingBuffer producer = new OneToOneRingBuffer(ring);
        final UnsafeBuffer message = new UnsafeBuffer(new byte[8]);
        message.putInt(0, 42);
        producer.write(1, message, 0, 8);
        final int at = (int)producer.producerPosition();
        ring.putInt(RecordDescriptor.typeOffset(at), 1);
        ring.putIntRelease(RecordDescriptor.lengthOffset(at), RecordDescriptor.HEADER_LENGTH + 8);
        final CheckedRingReader reader = new CheckedRingReader(ring);
        assertEquals(CheckedRingReader.CORRUPT, reader.read(handler, 64));
        assertEquals(List.of(42), taken);
        assertEquals(at, reader.position());
    }

    private void padAll()
    {
        ring.putInt(RecordDescriptor.typeOffset(0), RingBuffer.PADDING_MSG_TYPE_ID);
        ring.putIntRelease(RecordDescriptor.lengthOffset(0), CAPACITY);
    }
}
