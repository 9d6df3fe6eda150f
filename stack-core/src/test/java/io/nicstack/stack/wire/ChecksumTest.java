package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteOrder;
import java.util.Random;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class ChecksumTest
{
    private static final long SEED = 0x1071_1624L;

    /** RFC 1071 section 3: the one's complement sum of 0001 f203 f4f5 f6f7 is ddf2. */
    @Test
    void rfc1071Example()
    {
        final UnsafeBuffer buffer = Fixtures.buffer("00 01 f2 03 f4 f5 f6 f7");

        assertEquals(0xddf2, ~Checksum.finish(Checksum.partial(buffer, 0, 8, 0)) & 0xFFFF);
        assertEquals(~0xddf2 & 0xFFFF, Checksum.compute(buffer, 0, 8));
        assertEquals(0x220d, Checksum.compute(buffer, 0, 8));
    }

    /** The IPv4 header example of RFC 791 fame (checksum b861) verifies and recomputes. */
    @Test
    void ipv4HeaderVerifiesToZero()
    {
        final UnsafeBuffer buffer = Fixtures.buffer("45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7");

        assertEquals(0, Checksum.compute(buffer, 0, 20));
        buffer.putShort(10, (short)0);
        assertEquals(0xb861, Checksum.compute(buffer, 0, 20));
    }

    @Test
    void oddLengthPadsTheLastByteOnTheRight()
    {
        final UnsafeBuffer buffer = Fixtures.buffer("01 02 03");

        assertEquals(~0x0100 & 0xFFFF, Checksum.compute(buffer, 0, 1));
        assertEquals(~0x0300 & 0xFFFF, Checksum.compute(buffer, 2, 1));
        assertEquals(~(0x0102 + 0x0300) & 0xFFFF, Checksum.compute(buffer, 0, 3));
        assertEquals(0L, Checksum.partial(buffer, 1, 0, 0));
        assertEquals(0xFFFF, Checksum.compute(buffer, 1, 0));
    }

    @Test
    void everyAlignmentGivesTheSameSum()
    {
        final Random random = new Random(SEED);
        for (int length = 0; length < 70; length++)
        {
            final byte[] data = new byte[length];
            random.nextBytes(data);
            final int expected = naive(data, 0, length);
            for (int alignment = 0; alignment < 8; alignment++)
            {
                final UnsafeBuffer buffer = new UnsafeBuffer(new byte[alignment + length]);
                buffer.putBytes(alignment, data);
                assertEquals(expected, Checksum.compute(buffer, alignment, length),
                    "length " + length + " alignment " + alignment);
            }
        }
    }

    @Test
    void randomBuffersMatchTheNaiveReference()
    {
        final Random random = new Random(SEED + 1);
        for (int i = 0; i < 5_000; i++)
        {
            final int length = random.nextInt(1600);
            final int offset = random.nextInt(16);
            final byte[] data = new byte[offset + length + random.nextInt(8)];
            // Mostly random, sometimes all 0xFF or all zero to reach the folding corners.
            final int kind = random.nextInt(10);
            if (kind == 0)
            {
                java.util.Arrays.fill(data, (byte)0xFF);
            }
            else if (kind != 1)
            {
                random.nextBytes(data);
            }
            final UnsafeBuffer buffer = new UnsafeBuffer(data);
            assertEquals(naive(data, offset, length), Checksum.compute(buffer, offset, length),
                "seed " + (SEED + 1) + " iteration " + i);
        }
    }

    /** Direct (off-heap) buffers take the same raw-load path; lengths up to jumbo frames cross every loop of it. */
    @Test
    void directBuffersAndLongRegionsMatchTheNaiveReference()
    {
        final Random random = new Random(SEED + 3);
        final UnsafeBuffer buffer = new UnsafeBuffer(java.nio.ByteBuffer.allocateDirect(9_100));
        final byte[] data = new byte[buffer.capacity()];
        for (int i = 0; i < 2_000; i++)
        {
            random.nextBytes(data);
            if (i % 7 == 0)
            {
                java.util.Arrays.fill(data, (byte)0xFF);
            }
            buffer.putBytes(0, data);
            final int offset = random.nextInt(64);
            final int length = random.nextInt(buffer.capacity() - offset + 1);
            assertEquals(naive(data, offset, length), Checksum.compute(buffer, offset, length),
                "seed " + (SEED + 3) + " iteration " + i + " offset " + offset + " length " + length);
        }
    }

    /** The range is checked once up front, also when per-access bounds checks are disabled. */
    @Test
    void aRegionPastTheEndIsRefused()
    {
        final UnsafeBuffer heap = new UnsafeBuffer(new byte[100]);
        final UnsafeBuffer direct = new UnsafeBuffer(java.nio.ByteBuffer.allocateDirect(100));
        for (final UnsafeBuffer b : new UnsafeBuffer[] {heap, direct})
        {
            org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class, () -> Checksum.partial(b, 0, 101, 0));
            org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class, () -> Checksum.partial(b, 68, 33, 0));
            org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class, () -> Checksum.partial(b, -8, 16, 0));
            assertEquals(0xFFFF, Checksum.compute(b, 0, 100), "zeros sum to zero");
        }
    }

    @Test
    void partialsChainOverEvenLengthRegions()
    {
        final Random random = new Random(SEED + 2);
        final byte[] data = new byte[1001];
        random.nextBytes(data);
        final UnsafeBuffer buffer = new UnsafeBuffer(data);

        long sum = Checksum.partial(buffer, 0, 14, 0);
        sum = Checksum.partial(buffer, 14, 500, sum);
        sum = Checksum.partial(buffer, 514, 487, sum);
        assertEquals(naive(data, 0, data.length), Checksum.finish(sum));
    }

    @Test
    void pseudoHeaderMatchesItsBytes()
    {
        final Random random = new Random(SEED + 3);
        for (int i = 0; i < 1_000; i++)
        {
            final int source = random.nextInt();
            final int destination = random.nextInt();
            final int protocol = random.nextInt(256);
            final int length = random.nextInt(65536);
            final UnsafeBuffer pseudo = new UnsafeBuffer(new byte[12]);
            pseudo.putInt(0, source, ByteOrder.BIG_ENDIAN);
            pseudo.putInt(4, destination, ByteOrder.BIG_ENDIAN);
            pseudo.putByte(8, (byte)0);
            pseudo.putByte(9, (byte)protocol);
            pseudo.putShort(10, (short)length, ByteOrder.BIG_ENDIAN);

            assertEquals(Checksum.compute(pseudo, 0, 12),
                Checksum.finish(Checksum.pseudoHeaderIpv4(source, destination, protocol, length)));
        }
    }

    @Test
    void finishFoldsEveryCarry()
    {
        assertEquals(0xFFFF, Checksum.finish(0));
        assertEquals(0, Checksum.finish(0xFFFF));
        assertEquals(0, Checksum.finish(0x1_FFFEL));
        assertEquals(0xFFFE, Checksum.finish(0xFFFF_FFFF_0001L));
    }

    @Test
    void update16EqualsRecompute()
    {
        final Random random = new Random(SEED + 4);
        for (int i = 0; i < 10_000; i++)
        {
            final int length = 2 * (2 + random.nextInt(40));
            final UnsafeBuffer buffer = randomNonZero(random, length);
            final int checksum = Checksum.compute(buffer, 0, length);
            final int index = 2 * random.nextInt(length / 2);
            final int oldValue = buffer.getShort(index, ByteOrder.BIG_ENDIAN) & 0xFFFF;
            final int newValue = random.nextInt(8) == 0 ? 0 : random.nextInt(65536);
            buffer.putShort(index, (short)newValue, ByteOrder.BIG_ENDIAN);

            assertEquals(Checksum.compute(buffer, 0, length), Checksum.update16(checksum, oldValue, newValue),
                "seed " + (SEED + 4) + " iteration " + i);
        }
    }

    @Test
    void update32EqualsRecompute()
    {
        final Random random = new Random(SEED + 5);
        for (int i = 0; i < 10_000; i++)
        {
            final int length = 4 * (2 + random.nextInt(20));
            final UnsafeBuffer buffer = randomNonZero(random, length);
            final int checksum = Checksum.compute(buffer, 0, length);
            final int index = 2 * random.nextInt(length / 2 - 1);
            final int oldValue = buffer.getInt(index, ByteOrder.BIG_ENDIAN);
            final int newValue = random.nextInt();
            buffer.putInt(index, newValue, ByteOrder.BIG_ENDIAN);

            assertEquals(Checksum.compute(buffer, 0, length), Checksum.update32(checksum, oldValue, newValue),
                "seed " + (SEED + 5) + " iteration " + i);
        }
    }

    /** TTL decrement in a real IPv4 header, the classic RFC 1624 use. */
    @Test
    void ttlDecrementKeepsTheHeaderValid()
    {
        final UnsafeBuffer buffer = Fixtures.buffer("45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7");
        final int oldWord = buffer.getShort(8, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        final int newWord = oldWord - 0x0100;
        buffer.putShort(8, (short)newWord, ByteOrder.BIG_ENDIAN);
        buffer.putShort(10, (short)Checksum.update16(0xb861, oldWord, newWord), ByteOrder.BIG_ENDIAN);

        assertEquals(0, Checksum.compute(buffer, 0, 20));
        assertEquals(0xb961, buffer.getShort(10, ByteOrder.BIG_ENDIAN) & 0xFFFF);
    }

    /** A buffer whose words are not all zero: a zero region has checksum 0xFFFF, not the -0 eqn. 3 gives. */
    private static UnsafeBuffer randomNonZero(final Random random, final int length)
    {
        final byte[] data = new byte[length];
        random.nextBytes(data);
        data[length - 1] |= 1;
        return new UnsafeBuffer(data);
    }

    /** RFC 1071 section 4.1, word by word with an end-around carry after every addition. */
    static int naive(final byte[] data, final int offset, final int length)
    {
        int sum = 0;
        for (int i = 0; i < length; i += 2)
        {
            final int hi = data[offset + i] & 0xFF;
            final int lo = i + 1 < length ? data[offset + i + 1] & 0xFF : 0;
            sum += (hi << 8) | lo;
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~sum & 0xFFFF;
    }
}
