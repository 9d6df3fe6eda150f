package io.nicstack.stack.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class RingSendBufferTest
{
    private static final int CAPACITY = 64;

    private final RingSendBuffer buffer = new RingSendBuffer(CAPACITY);

    @Test
    void startsEmpty()
    {
        assertEquals(0, buffer.start());
        assertEquals(0, buffer.end());
        assertEquals(CAPACITY, buffer.capacity());
        assertEquals(CAPACITY, buffer.free());
    }

    @Test
    void appendsOnlyWhatFits()
    {
        final byte[] data = stream(0, 100);

        assertEquals(40, buffer.append(new UnsafeBuffer(data), 0, 40));
        assertEquals(24, buffer.free());
        assertEquals(24, buffer.append(new UnsafeBuffer(data), 40, 60));
        assertEquals(0, buffer.free());
        assertEquals(0, buffer.append(new UnsafeBuffer(data), 64, 36));
        assertEquals(64, buffer.end());

        assertArrayEquals(Arrays.copyOfRange(data, 0, 64), read(0, 64));
    }

    @Test
    void inOrderAppendReadReleaseWrapsManyTimes()
    {
        final UnsafeBuffer source = new UnsafeBuffer(new byte[CAPACITY]);
        long appended = 0;
        for (int round = 0; round < 1000; round++)
        {
            // Odd sizes so the wrap point moves through every index of the ring.
            final int length = 1 + (round * 7) % CAPACITY;
            final int count = Math.min(length, buffer.free());
            source.putBytes(0, stream(appended, count));

            assertEquals(count, buffer.append(source, 0, count));
            appended += count;

            final int toRelease = (int)Math.min(buffer.end() - buffer.start(), 1 + (round * 13) % CAPACITY);
            assertArrayEquals(stream(buffer.start(), toRelease), read(buffer.start(), toRelease));
            buffer.release(buffer.start() + toRelease);
        }
        assertEquals(appended, buffer.end());
    }

    @Test
    void retransmissionReadsArbitrarySubRangesAcrossTheWrap()
    {
        final SplittableRandom random = new SplittableRandom(7);
        final UnsafeBuffer source = new UnsafeBuffer(new byte[CAPACITY]);
        for (int round = 0; round < 2000; round++)
        {
            final int count = buffer.free();
            source.putBytes(0, stream(buffer.end(), count));
            buffer.append(source, 0, count);

            for (int i = 0; i < 8; i++)
            {
                final long from = buffer.start() + random.nextInt((int)(buffer.end() - buffer.start()));
                final int length = random.nextInt((int)(buffer.end() - from) + 1);
                assertArrayEquals(stream(from, length), read(from, length), "read at " + from + " len " + length);
            }

            buffer.release(buffer.start() + random.nextInt((int)(buffer.end() - buffer.start()) + 1));
        }
    }

    @Test
    void readsIntoDestinationIndex()
    {
        buffer.append(new UnsafeBuffer(stream(0, 10)), 0, 10);
        final UnsafeBuffer destination = new UnsafeBuffer(new byte[16]);
        destination.setMemory(0, 16, (byte)0xA5);

        buffer.read(3, destination, 5, 4);

        final byte[] expected = new byte[16];
        Arrays.fill(expected, (byte)0xA5);
        System.arraycopy(stream(3, 4), 0, expected, 5, 4);
        assertArrayEquals(expected, destination.byteArray());
    }

    @Test
    void releaseFreesSpace()
    {
        buffer.append(new UnsafeBuffer(new byte[CAPACITY]), 0, CAPACITY);
        buffer.release(10);
        assertEquals(10, buffer.start());
        assertEquals(10, buffer.free());
        buffer.release(10);
        buffer.release(CAPACITY);
        assertEquals(CAPACITY, buffer.free());
    }

    @Test
    void readOutsideHeldBytesIsRejected()
    {
        buffer.append(new UnsafeBuffer(new byte[40]), 0, 40);
        buffer.release(10);
        final UnsafeBuffer destination = new UnsafeBuffer(new byte[CAPACITY]);

        assertThrows(IllegalArgumentException.class, () -> buffer.read(9, destination, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(40, destination, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(41, destination, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(30, destination, 0, 11));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(10, destination, 0, -1));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(Long.MIN_VALUE, destination, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> buffer.read(Long.MAX_VALUE, destination, 0, 1));

        buffer.read(10, destination, 0, 30);
        buffer.read(39, destination, 0, 1);
        buffer.read(40, destination, 0, 0);
    }

    @Test
    void releaseOutsideHeldBytesIsRejected()
    {
        buffer.append(new UnsafeBuffer(new byte[40]), 0, 40);
        buffer.release(10);

        assertThrows(IllegalArgumentException.class, () -> buffer.release(9));
        assertThrows(IllegalArgumentException.class, () -> buffer.release(41));
        assertEquals(10, buffer.start());
    }

    @Test
    void negativeAppendIsRejected()
    {
        assertThrows(IllegalArgumentException.class, () -> buffer.append(new UnsafeBuffer(new byte[1]), 0, -1));
    }

    @Test
    void capacityMustBeAPowerOfTwo()
    {
        for (final int bad : new int[] {0, -1, 3, 100, 1000, (1 << 30) + 1, Integer.MAX_VALUE, Integer.MIN_VALUE})
        {
            assertThrows(IllegalArgumentException.class, () -> new RingSendBuffer(bad), "capacity " + bad);
        }
        assertThrows(IllegalArgumentException.class, () -> new RingSendBuffer(new UnsafeBuffer(new byte[48])));
        assertEquals(1, new RingSendBuffer(1).capacity());
        assertEquals(32, new RingSendBuffer(new UnsafeBuffer(new byte[32])).capacity());
    }

    @Test
    void callerSuppliedMemoryHoldsTheBytes()
    {
        final UnsafeBuffer memory = new UnsafeBuffer(new byte[8]);
        final RingSendBuffer ring = new RingSendBuffer(memory);
        ring.append(new UnsafeBuffer(stream(0, 6)), 0, 6);
        ring.release(6);
        ring.append(new UnsafeBuffer(stream(6, 4)), 0, 4);

        assertArrayEquals(new byte[] {stream(8, 1)[0], stream(9, 1)[0]}, Arrays.copyOfRange(memory.byteArray(), 0, 2));
        assertArrayEquals(stream(6, 2), Arrays.copyOfRange(memory.byteArray(), 6, 8));
    }

    @Test
    void resetRestartsTheStream()
    {
        buffer.append(new UnsafeBuffer(new byte[10]), 0, 10);
        buffer.reset();
        assertEquals(0, buffer.start());
        assertEquals(0, buffer.end());
        assertEquals(CAPACITY, buffer.free());
    }

    private byte[] read(final long offset, final int length)
    {
        final UnsafeBuffer destination = new UnsafeBuffer(new byte[length]);
        buffer.read(offset, destination, 0, length);
        return destination.byteArray();
    }

    /** The stream's content: byte at offset {@code n} is a hash of {@code n}, so misplaced bytes show. */
    static byte[] stream(final long offset, final int length)
    {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = streamByte(offset + i);
        }
        return bytes;
    }

    static byte streamByte(final long offset)
    {
        final long h = offset * 0x9E37_79B9_7F4A_7C15L;
        return (byte)(h >>> 56);
    }
}
