package io.nicstack.nic.mem;

import io.nicstack.nic.FrameHandler;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FrameRingTest
{
    private static final int FRAMES = 500_000;

    @Test
    void claimReturnsNullWhenEverySlotIsTaken()
    {
        final FrameRing ring = new FrameRing(3, 100);
        for (int i = 0; i < 3; i++)
        {
            assertNotNull(ring.producer().tryClaim());
            ring.producer().commit(10);
        }
        assertNull(ring.producer().tryClaim());
        assertTrue(ring.consumer().isEmpty(), "nothing is visible before publish");

        assertEquals(3, ring.producer().publish());
        assertEquals(2, ring.consumer().read((buffer, offset, length) -> assertEquals(10, length), 2));
        assertNotNull(ring.producer().tryClaim(), "consumed slots are free again");
    }

    @Test
    void aCommitWithoutAClaimedSlotIsRefused()
    {
        // A commit must follow a successful claim: one after a failed claim (ring full) would overwrite a frame the
        // consumer has not read, and a second commit for one claim would publish a slot nobody wrote.
        final FrameRing ring = new FrameRing(2, 100);
        final FrameRing.Producer producer = ring.producer();
        assertThrows(IllegalStateException.class, () -> producer.commit(10), "no claim at all");
        for (int i = 0; i < 2; i++)
        {
            producer.tryClaim().putByte(0, (byte)(i + 1));
            producer.commit(1);
        }
        assertThrows(IllegalStateException.class, () -> producer.commit(1), "a second commit for one claim");
        assertNull(producer.tryClaim());
        assertThrows(IllegalStateException.class, () -> producer.commit(1), "a commit after a failed claim");
        assertEquals(2, producer.publish());
        final byte[] seen = new byte[2];
        final int[] n = {0};
        assertEquals(2, ring.consumer().read((buffer, offset, length) -> seen[n[0]++] = buffer.getByte(offset), 4));
        assertEquals(1, seen[0], "the unread frames were left alone");
        assertEquals(2, seen[1]);
    }

    @Test
    void handlerThatThrowsConsumesItsFrame()
    {
        final FrameRing ring = new FrameRing(4, 100);
        for (int i = 0; i < 2; i++)
        {
            ring.producer().tryClaim().putInt(0, i);
            ring.producer().commit(4);
        }
        ring.producer().publish();

        assertThrows(IllegalStateException.class, () -> ring.consumer().read(
            (buffer, offset, length) ->
            {
                throw new IllegalStateException();
            },
            1));
        final int[] seen = new int[1];
        assertEquals(1, ring.consumer().read((buffer, offset, length) -> seen[0] = buffer.getInt(offset), 4));
        assertEquals(1, seen[0]);
    }

    /** Two threads race through a small ring; every frame must arrive once, in order, with its own bytes. */
    @Test
    void producerAndConsumerThreadsRace() throws InterruptedException
    {
        final FrameRing ring = new FrameRing(8, 1514);
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        final Thread producer = new Thread(() ->
        {
            final FrameRing.Producer tx = ring.producer();
            for (int seq = 0; seq < FRAMES; )
            {
                final MutableDirectBuffer frame = tx.tryClaim();
                if (null == frame)
                {
                    tx.publish();
                    Thread.yield(); // the build machine may have fewer free cores than threads spinning
                    continue;
                }
                final int length = lengthOf(seq);
                frame.putInt(0, seq);
                frame.setMemory(4, length - 4, (byte)seq);
                tx.commit(length);
                if ((++seq & 3) == 0)
                {
                    tx.publish();
                }
            }
            tx.publish();
        }, "ring-producer");
        producer.setUncaughtExceptionHandler((t, ex) -> failure.set(ex));

        final Checker checker = new Checker();
        producer.start();
        final long deadline = System.nanoTime() + 60_000_000_000L;
        while (checker.next < FRAMES && System.nanoTime() < deadline && null == failure.get())
        {
            if (ring.consumer().read(checker, 5) == 0)
            {
                Thread.yield();
            }
        }
        producer.join();

        assertNull(failure.get());
        assertEquals(FRAMES, checker.next);
        assertTrue(ring.consumer().isEmpty());
    }

    private static int lengthOf(final int seq)
    {
        return 5 + seq % 1500;
    }

    private static final class Checker implements FrameHandler
    {
        int next;

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            final int seq = buffer.getInt(offset);
            if (seq != next || length != lengthOf(seq) ||
                buffer.getByte(offset + 4) != (byte)seq || buffer.getByte(offset + length - 1) != (byte)seq)
            {
                throw new AssertionError("frame " + next + " expected, got seq " + seq + " length " + length);
            }
            next++;
        }
    }
}
