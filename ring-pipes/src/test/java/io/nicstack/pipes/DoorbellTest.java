package io.nicstack.pipes;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The doorbell bitmap of {@link AppFileDescriptor} and the bells a {@link Pipe} rings there. */
class DoorbellTest
{
    private static final int CAPACITY = 4096;
    /** A word of bells, then a pipe. */
    private static final int WORD = 0;
    private static final int PIPE_AT = 64;

    private final UnsafeBuffer region = new UnsafeBuffer(ByteBuffer.allocateDirect(PIPE_AT + PipeDescriptor.length(CAPACITY)));

    @Test
    void bitmapLiesBetweenTheRingsAndTheSlotsAndHoldsEverySlot()
    {
        for (final int ring : new int[] {AppFile.MIN_RING_CAPACITY, 1 << 16})
        {
            final int rings = AppFileDescriptor.notificationRingOffset(ring) + AppFileDescriptor.ringLength(ring);
            final int bells = AppFileDescriptor.doorbellsOffset(ring);
            assertTrue(bells >= rings && bells % 4096 == 0, "page aligned after the rings: " + bells);
            assertEquals(bells + AppFileDescriptor.DOORBELLS_LENGTH, AppFileDescriptor.slotsOffset(ring));
            assertEquals(AppFileDescriptor.slotsOffset(ring), AppFileDescriptor.slotOffset(ring, CAPACITY, 0));
            assertEquals(AppFile.MAX_CONNECTIONS, AppFileDescriptor.DOORBELLS_LENGTH * Byte.SIZE, "a bit for every slot");
            assertEquals(bells, AppFileDescriptor.doorbellOffset(ring, 0));
            assertEquals(bells + 8, AppFileDescriptor.doorbellOffset(ring, 64));
            assertEquals(bells + AppFileDescriptor.DOORBELLS_LENGTH - 8,
                AppFileDescriptor.doorbellOffset(ring, AppFile.MAX_CONNECTIONS - 1));
        }
        assertEquals(1L, AppFileDescriptor.doorbellBit(0));
        assertEquals(1L << 63, AppFileDescriptor.doorbellBit(63));
        assertEquals(1L << 1, AppFileDescriptor.doorbellBit(65));
        assertEquals(4, AppFileDescriptor.VERSION, "the layout changed: another version");
    }

    @Test
    void everyPublishedPositionRingsAndOtherBitsStay()
    {
        final Pipe producer = new Pipe().wrap(region, PIPE_AT, CAPACITY).doorbell(WORD, 1L << 5);
        final Pipe consumer = new Pipe().wrap(region, PIPE_AT, CAPACITY).doorbell(WORD, 1L << 9);
        region.putLong(WORD, 1L << 40); // another slot's bell, rung before

        producer.write(new byte[10], 0, 10);
        assertEquals((1L << 40) | (1L << 5), region.getLong(WORD));
        region.putLong(WORD, 0); // the daemon took them
        assertEquals(4, producer.claim(4));
        producer.commit(4);
        assertEquals(1L << 5, region.getLong(WORD));
        region.putLong(WORD, 0);
        producer.write(new UnsafeBuffer(new byte[3]), 0, 3);
        assertEquals(1L << 5, region.getLong(WORD));

        region.putLong(WORD, 0);
        consumer.release(2);
        assertEquals(1L << 9, region.getLong(WORD));
        region.putLong(WORD, 0);
        consumer.read(new byte[5], 0, 5);
        assertEquals(1L << 9, region.getLong(WORD));
        region.putLong(WORD, 0);
        consumer.releaseTo(10);
        assertEquals(1L << 9, region.getLong(WORD));
        assertEquals(10, region.getLong(PIPE_AT + PipeDescriptor.HEAD_OFFSET));
        assertEquals(17, region.getLong(PIPE_AT + PipeDescriptor.TAIL_OFFSET));
    }

    @Test
    void withoutADoorbellOrAfterAWrapNothingRings()
    {
        final Pipe plain = new Pipe().wrap(region, PIPE_AT, CAPACITY);
        plain.write(new byte[10], 0, 10);
        final Pipe rewrapped = new Pipe().wrap(region, PIPE_AT, CAPACITY).doorbell(WORD, 1L);
        rewrapped.wrap(region, PIPE_AT, CAPACITY);
        rewrapped.write(new byte[10], 0, 10);
        assertEquals(0, region.getLong(WORD));
    }

    @Test
    void doorbellOutsideTheBufferOrMisalignedIsRefused()
    {
        final Pipe pipe = new Pipe().wrap(region, PIPE_AT, CAPACITY);
        assertThrows(IllegalArgumentException.class, () -> pipe.doorbell(-8, 1L));
        assertThrows(IllegalArgumentException.class, () -> pipe.doorbell(4, 1L));
        assertThrows(IllegalArgumentException.class, () -> pipe.doorbell(region.capacity() - 4, 1L));
        assertThrows(IllegalArgumentException.class, () -> pipe.doorbell(0, 0L));
    }

    /**
     * The lost wake-up, raced for real: the app commits one byte, rings, and waits until the daemon has read that tail;
     * the daemon swaps the word to 0 and only then reads the tail of a bell it found, doing some work of a round between
     * takes. A bell cleared with its tail unread (a daemon that read first and cleared after, or an app that rang before
     * its store) would leave the app waiting for ever with its bit clear: such a wait is bounded in spins and counted
     * as a loss.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void noBellIsLostBetweenTheAppAndADaemonThatSwapsBeforeItReads() throws InterruptedException
    {
        final long bit = 1L << 17;
        final int commits = 50_000;
        final Pipe app = new Pipe().wrap(region, PIPE_AT, CAPACITY).doorbell(WORD, bit);
        final AtomicLong seen = new AtomicLong();
        final AtomicLong lost = new AtomicLong();
        final Thread daemon = new Thread(() ->
        {
            final Pipe tx = new Pipe().wrap(region, PIPE_AT, CAPACITY);
            long sink = 0;
            while (seen.get() < commits && lost.get() == 0)
            {
                final long rung = region.getLongVolatile(WORD) != 0 ? region.getAndSetLong(WORD, 0) : 0;
                if ((rung & bit) != 0)
                {
                    final long tail = tx.tailVolatile();
                    tx.releaseTo(tail); // the daemon's own head: no bell (its flyweight has none)
                    seen.set(tail);
                }
                for (int i = 0; i < 200; i++)
                {
                    sink += i * tail(region); // the rest of a round
                }
            }
            region.putLong(PIPE_AT + 8, sink); // keep the work (a byte of the tail's padding line)
        }, "daemon");
        daemon.start();
        try
        {
            for (int i = 1; i <= commits && lost.get() == 0; i++)
            {
                app.claim(1);
                app.commit(1);
                long spins = 0;
                while (seen.get() < i)
                {
                    if (++spins == 20_000_000L)
                    {
                        if ((region.getLongVolatile(WORD) & bit) != 0)
                        {
                            spins = 0; // rung and not taken yet: the daemon is slow (descheduled), not wrong
                            continue;
                        }
                        lost.incrementAndGet(); // taken long ago, and its tail never read
                        break;
                    }
                    Thread.onSpinWait();
                }
            }
        }
        finally
        {
            lost.compareAndSet(0, seen.get() < commits ? 1 : 0);
            daemon.join();
        }
        assertEquals(0, lost.get(), "bells lost; the daemon saw the tail up to " + seen.get());
        assertEquals(commits, seen.get());
    }

    private static long tail(final UnsafeBuffer region)
    {
        return region.getLong(PIPE_AT + PipeDescriptor.TAIL_OFFSET);
    }
}
