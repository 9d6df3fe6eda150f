package io.nicstack.stack.storage;

import static io.nicstack.stack.storage.RingSendBufferTest.stream;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class RingReceiveBufferTest
{
    private static final int CAPACITY = 64;
    private static final int MAX_RANGES = 3;

    private final RingReceiveBuffer buffer = new RingReceiveBuffer(CAPACITY, MAX_RANGES);

    @Test
    void startsEmpty()
    {
        assertEquals(0, buffer.readPosition());
        assertEquals(0, buffer.contiguousEnd());
        assertEquals(CAPACITY, buffer.capacity());
        assertEquals(CAPACITY, buffer.window());
        assertEquals(0, buffer.readable());
        assertEquals(0, buffer.outOfOrderRanges());
        assertEquals(0, buffer.outOfOrderBytes());
        assertEquals(MAX_RANGES, buffer.maxRanges());
    }

    @Test
    void inOrderWriteAndReadWrapManyTimes()
    {
        long written = 0;
        for (int round = 0; round < 1000; round++)
        {
            final int length = Math.min(1 + (round * 7) % CAPACITY, buffer.window());
            assertEquals(length, segment(written, length));
            written += length;

            final int want = 1 + (round * 13) % CAPACITY;
            final int expected = Math.min(want, buffer.readable());
            assertArrayEquals(stream(buffer.readPosition(), expected), read(want));
        }
        assertEquals(written, buffer.contiguousEnd());
    }

    @Test
    void outOfOrderSegmentsAreDeliveredWhenTheHoleFills()
    {
        assertEquals(0, segment(20, 10));
        assertEquals(0, segment(40, 5));
        assertEquals(0, buffer.contiguousEnd());
        assertEquals(0, buffer.readable());
        assertEquals(15, buffer.outOfOrderBytes());

        assertEquals(10, segment(0, 10));
        assertEquals(10, buffer.contiguousEnd());
        assertRanges(40, 45, 20, 30);

        // Filling [10, 20) absorbs [20, 30) but not [40, 45).
        assertEquals(20, segment(10, 10));
        assertEquals(30, buffer.contiguousEnd());
        assertRanges(40, 45);
        assertEquals(5, buffer.outOfOrderBytes());

        // Filling [30, 40) absorbs the last one.
        assertEquals(15, segment(30, 10));
        assertRanges();
        assertEquals(0, buffer.outOfOrderBytes());
        assertArrayEquals(stream(0, 45), read(100));
    }

    @Test
    void inOrderSegmentReachingPastSeveralRangesAbsorbsThemAll()
    {
        segment(10, 5);
        segment(20, 5);
        segment(30, 5);

        assertEquals(40, segment(0, 40));
        assertRanges();
        assertEquals(0, buffer.outOfOrderBytes());
        assertArrayEquals(stream(0, 40), read(100));
    }

    @Test
    void rangesAreReportedMostRecentlyUpdatedFirst()
    {
        segment(10, 5);
        segment(30, 5);
        segment(50, 5);
        assertRanges(50, 55, 30, 35, 10, 15);

        // RFC 2018 §4: a segment extending an older block makes that block the first.
        segment(15, 3);
        assertRanges(10, 18, 50, 55, 30, 35);

        // A duplicate inside a block also moves it first: it is the block holding the triggering segment.
        segment(31, 2);
        assertRanges(30, 35, 10, 18, 50, 55);
        assertEquals(18, buffer.outOfOrderBytes());
    }

    @Test
    void adjacentAndOverlappingRangesMerge()
    {
        segment(10, 5);
        segment(20, 5);
        segment(40, 5);

        // Exactly adjacent on the left [15, 20) bridges [10, 15) and [20, 25).
        segment(15, 5);
        assertRanges(10, 25, 40, 45);
        assertEquals(20, buffer.outOfOrderBytes());

        // Overlapping both ends [5, 30) swallows [10, 25).
        segment(5, 25);
        assertRanges(5, 30, 40, 45);
        assertEquals(30, buffer.outOfOrderBytes());

        // Touching on the right end [30, 40) bridges to [40, 45).
        segment(30, 10);
        assertRanges(5, 45);
        assertEquals(40, buffer.outOfOrderBytes());

        assertEquals(45, segment(0, 5));
        assertArrayEquals(stream(0, 45), read(100));
    }

    @Test
    void duplicateAndOverlappingSegmentsCountOnce()
    {
        assertEquals(10, segment(0, 10));
        assertEquals(0, segment(0, 10));
        assertEquals(0, segment(3, 5));
        assertEquals(5, segment(5, 10));
        assertEquals(15, buffer.contiguousEnd());

        segment(20, 10);
        segment(20, 10);
        segment(22, 4);
        assertRanges(20, 30);
        assertEquals(10, buffer.outOfOrderBytes());

        assertEquals(15, segment(10, 20));
        assertEquals(0, buffer.outOfOrderBytes());
        assertArrayEquals(stream(0, 30), read(100));

        // After reading, an old duplicate is still ignored.
        assertEquals(0, segment(0, 30));
        assertEquals(0, buffer.readable());
    }

    /** RFC 2883 §4: each write says which of its bytes an out-of-order range already held (the first such run). */
    @Test
    void aWriteTellsTheFirstRunItFoundAlreadyHeldOutOfOrder()
    {
        segment(0, 10);
        segment(20, 10);
        segment(40, 10);
        assertDuplicate(0, 0);
        segment(22, 4);
        assertDuplicate(22, 26);
        segment(15, 10);
        assertDuplicate(20, 25);
        segment(35, 20);
        assertDuplicate(40, 50);
        // In order, filling [10, 15): the range [15, 30) is absorbed, none of it was written again.
        assertEquals(20, segment(5, 10));
        assertDuplicate(0, 0);
        // In order from 30 (the part below it ignored), reaching into [35, 55): the run held is [35, 45).
        assertEquals(25, segment(25, 20));
        assertDuplicate(35, 45);
        // Below contiguousEnd only: nothing written, no run (the caller sees those bytes itself).
        segment(0, 10);
        assertDuplicate(0, 0);
    }

    private void assertDuplicate(final long start, final long end)
    {
        assertEquals(start, buffer.lastDuplicateStart(), "start");
        assertEquals(end, buffer.lastDuplicateEnd(), "end");
    }

    @Test
    void retransmissionNeverOverwritesReceivedBytes()
    {
        final byte[] first = new byte[10];
        Arrays.fill(first, (byte)'A');
        final byte[] second = new byte[30];
        Arrays.fill(second, (byte)'B');

        buffer.write(0, new UnsafeBuffer(first), 0, 10);
        buffer.write(20, new UnsafeBuffer(first), 0, 10);
        assertEquals(20, buffer.write(0, new UnsafeBuffer(second), 0, 30));

        final byte[] expected = new byte[30];
        Arrays.fill(expected, 0, 10, (byte)'A');
        Arrays.fill(expected, 10, 20, (byte)'B');
        Arrays.fill(expected, 20, 30, (byte)'A');
        assertArrayEquals(expected, read(30));
    }

    @Test
    void dataBeyondTheWindowIsClipped()
    {
        assertEquals(0, segment(60, 10));
        assertRanges(60, 64);
        assertEquals(4, buffer.outOfOrderBytes());

        assertEquals(0, segment(64, 10));
        assertEquals(0, segment(1000, 10));
        assertRanges(60, 64);

        assertEquals(64, segment(0, 100));
        assertEquals(0, buffer.window());
        assertEquals(0, segment(64, 1));

        // Reading opens the window by exactly what was read.
        assertArrayEquals(stream(0, 8), read(8));
        assertEquals(8, buffer.window());
        assertEquals(8, segment(60, 20));
        assertEquals(72, buffer.contiguousEnd());
        assertArrayEquals(stream(8, 64), read(100));
    }

    @Test
    void tooManyRangesIsRejectedWithoutSideEffects()
    {
        segment(10, 2);
        segment(20, 2);
        segment(30, 2);

        assertEquals(ReceiveBuffer.REJECTED, segment(40, 2));
        assertEquals(ReceiveBuffer.REJECTED, segment(5, 2));
        assertRanges(30, 32, 20, 22, 10, 12);
        assertEquals(6, buffer.outOfOrderBytes());

        // Growing or merging existing ranges still works at the limit.
        assertEquals(0, segment(32, 3));
        assertEquals(0, segment(12, 8));
        assertRanges(10, 22, 30, 35);

        // With a slot free again, the new range is accepted.
        assertEquals(0, segment(40, 2));
        assertRanges(40, 42, 10, 22, 30, 35);

        // In-order data is never rejected.
        assertEquals(22, segment(0, 10));
        assertRanges(40, 42, 30, 35);
    }

    @Test
    void zeroRangesDropsAllOutOfOrderData()
    {
        final RingReceiveBuffer strict = new RingReceiveBuffer(16, 0);
        assertEquals(ReceiveBuffer.REJECTED, strict.write(4, new UnsafeBuffer(new byte[4]), 0, 4));
        assertEquals(4, strict.write(0, new UnsafeBuffer(new byte[4]), 0, 4));
        assertEquals(0, strict.outOfOrderRanges());
    }

    @Test
    void windowShrinksAsDataArrivesUnreadAndGrowsOnRead()
    {
        assertEquals(64, buffer.window());
        segment(0, 10);
        assertEquals(54, buffer.window());

        // Out-of-order bytes are not yet in-order data: the window stays (RFC 9293 §3.8.6).
        segment(20, 10);
        assertEquals(54, buffer.window());

        segment(10, 10);
        assertEquals(34, buffer.window());
        read(5);
        assertEquals(39, buffer.window());
        read(100);
        assertEquals(64, buffer.window());
        assertEquals(0, buffer.readable());
    }

    @Test
    void readCopiesIntoDestinationIndexAndOnlyWhatIsReadable()
    {
        segment(0, 6);
        final UnsafeBuffer destination = new UnsafeBuffer(new byte[12]);
        destination.setMemory(0, 12, (byte)0xA5);

        assertEquals(6, buffer.read(destination, 3, 9));

        final byte[] expected = new byte[12];
        Arrays.fill(expected, (byte)0xA5);
        System.arraycopy(stream(0, 6), 0, expected, 3, 6);
        assertArrayEquals(expected, destination.byteArray());
        assertEquals(0, buffer.read(destination, 0, 12));
    }

    @Test
    void sourceIndexIsHonoured()
    {
        final byte[] padded = new byte[20];
        System.arraycopy(stream(0, 10), 0, padded, 7, 10);
        assertEquals(10, buffer.write(0, new UnsafeBuffer(padded), 7, 10));
        assertArrayEquals(stream(0, 10), read(10));
    }

    @Test
    void errorsAreRejected()
    {
        final UnsafeBuffer any = new UnsafeBuffer(new byte[4]);
        assertThrows(IllegalArgumentException.class, () -> buffer.write(0, any, 0, -1));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(any, 0, -1));
        assertThrows(IndexOutOfBoundsException.class, () -> buffer.outOfOrderStart(0));
        assertThrows(IndexOutOfBoundsException.class, () -> buffer.outOfOrderEnd(-1));
        assertThrows(IllegalArgumentException.class, () -> new RingReceiveBuffer(100, 4));
        assertThrows(IllegalArgumentException.class, () -> new RingReceiveBuffer(64, -1));
        assertThrows(IllegalArgumentException.class, () -> new RingReceiveBuffer(new UnsafeBuffer(new byte[24]), 4));
    }

    @Test
    void discardingFromAnOffsetCutsTheRangesPastItAndKeepsTheRestInRecencyOrder()
    {
        segment(10, 5);
        segment(40, 10);
        segment(20, 10);
        assertRanges(20, 30, 40, 50, 10, 15);
        buffer.discardOutOfOrderFrom(25);
        assertRanges(20, 25, 10, 15);
        assertEquals(10, buffer.outOfOrderBytes());
        // Nothing past 25 is left to join the in-order data when the hole fills.
        assertEquals(25, segment(0, 25));
        assertRanges();
        assertEquals(0, buffer.outOfOrderBytes());
        assertArrayEquals(stream(0, 25), read(64));
        assertThrows(IllegalArgumentException.class, () -> buffer.discardOutOfOrderFrom(24));
    }

    @Test
    void resetRestartsTheStream()
    {
        segment(0, 10);
        segment(20, 10);
        buffer.reset();
        assertEquals(0, buffer.readPosition());
        assertEquals(0, buffer.contiguousEnd());
        assertEquals(0, buffer.outOfOrderRanges());
        assertEquals(0, buffer.outOfOrderBytes());
        assertEquals(5, segment(0, 5));
    }

    private int segment(final long offset, final int length)
    {
        return buffer.write(offset, new UnsafeBuffer(stream(offset, length)), 0, length);
    }

    private byte[] read(final int length)
    {
        final UnsafeBuffer destination = new UnsafeBuffer(new byte[length]);
        final int count = buffer.read(destination, 0, length);
        return Arrays.copyOf(destination.byteArray(), count);
    }

    private void assertRanges(final long... startEndPairs)
    {
        final long[] actual = new long[buffer.outOfOrderRanges() * 2];
        for (int i = 0; i < buffer.outOfOrderRanges(); i++)
        {
            actual[2 * i] = buffer.outOfOrderStart(i);
            actual[2 * i + 1] = buffer.outOfOrderEnd(i);
        }
        assertArrayEquals(startEndPairs, actual, () -> "ranges " + Arrays.toString(actual));
    }
}
