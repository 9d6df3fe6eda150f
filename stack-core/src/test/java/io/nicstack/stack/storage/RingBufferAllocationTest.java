package io.nicstack.stack.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.util.Arrays;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** The fast path allocates nothing: measured with the JVM's per-thread allocation counter. */
class RingBufferAllocationTest
{
    private static final int CAPACITY = 1 << 12;
    private static final int CYCLES = 100_000;
    private static final int ROUNDS = 5;

    private final RingSendBuffer send = new RingSendBuffer(CAPACITY);
    private final RingReceiveBuffer receive = new RingReceiveBuffer(CAPACITY, 4);
    private final UnsafeBuffer source = new UnsafeBuffer(new byte[CAPACITY]);
    private final UnsafeBuffer destination = new UnsafeBuffer(new byte[CAPACITY]);

    @Test
    void writeAndReadAllocateNothingAfterWarmUp()
    {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported(), "no per-thread allocation counter");
        threads.setThreadAllocatedMemoryEnabled(true);
        for (int i = 0; i < CAPACITY; i++)
        {
            source.putByte(i, (byte)i);
        }

        long checksum = cycles(CYCLES);

        // The counter's own cost, so a round's figure is exactly what its cycles allocated.
        final long calibrateStart = threads.getCurrentThreadAllocatedBytes();
        final long overhead = threads.getCurrentThreadAllocatedBytes() - calibrateStart;

        // A per-call allocation would cost at least 16 bytes x CYCLES in every round. Now and then the
        // JVM charges a one-off few hundred bytes (JIT and runtime transitions) to this thread, so a
        // round may be repeated, but one must come out at exactly zero.
        final long[] allocated = new long[ROUNDS];
        int rounds = 0;
        while (rounds < ROUNDS)
        {
            final long before = threads.getCurrentThreadAllocatedBytes();
            checksum += cycles(CYCLES);
            allocated[rounds] = threads.getCurrentThreadAllocatedBytes() - before - overhead;
            if (allocated[rounds++] == 0)
            {
                break;
            }
        }

        final int measured = rounds;
        assertEquals(0, allocated[measured - 1],
            () -> "bytes allocated per round of " + CYCLES + " cycles: " + Arrays.toString(allocated));
        assertEquals((1L + measured) * CYCLES * 1100, checksum, "bytes delivered");
    }

    /** Per cycle: append, transmit, retransmit and release 500 bytes; receive 1100 bytes with reordering, loss of a range and reads. */
    private long cycles(final int count)
    {
        long delivered = 0;
        for (int i = 0; i < count; i++)
        {
            final int at = i & 255;

            send.append(source, at, 500);
            send.read(send.start(), destination, 0, 500);
            send.read(send.start() + 100, destination, at, 300);
            send.release(send.end());

            final long next = receive.contiguousEnd();
            receive.write(next + 400, source, at, 100);
            receive.write(next + 600, source, at, 100);
            receive.write(next + 800, source, at, 100);
            receive.write(next + 1000, source, at, 100);
            receive.write(next + 1200, source, at, 100);
            receive.write(next + 450, source, at, 250);
            delivered += receive.write(next, source, at, 500);
            delivered += receive.write(next + 700, source, at, 400);
            while (receive.readable() > 0)
            {
                receive.read(destination, at, 1000);
            }
        }
        return delivered;
    }
}
