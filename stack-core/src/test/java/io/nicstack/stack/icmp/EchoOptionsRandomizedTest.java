package io.nicstack.stack.icmp;

import java.nio.ByteOrder;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@link EchoOptions} reads options from the wire. Random option lists, shaped as {@code Ipv4} lets them through (every
 * length fits; kinds, pointers, flags and contents random, Record Route and Timestamp frequent): the reply's options are
 * a multiple of 4 and at most 40 bytes, hold only Record Route and Timestamp options of the request's lengths, each
 * pointer moved forward by nothing or one entry and never past its option, and no request byte outside the entry
 * written changed. A pointer already past its option (full) is reflected unchanged.
 */
class EchoOptionsRandomizedTest
{
    private static final int US = 0xC612_0002;
    private static final int ROUNDS = 200_000;

    @Test
    void randomOptionListsGiveWellFormedReplyOptions()
    {
        final long seed = System.nanoTime();
        final SplittableRandom random = new SplittableRandom(seed);
        final UnsafeBuffer in = new UnsafeBuffer(new byte[40]);
        final UnsafeBuffer out = new UnsafeBuffer(new byte[EchoOptions.MAX_LENGTH]);
        int reflected = 0;
        for (int round = 0; round < ROUNDS; round++)
        {
            final int length = 4 * (1 + random.nextInt(10));
            fill(random, in, length);
            final int n;
            try
            {
                n = EchoOptions.reflect(in, 0, length, US, random.nextLong(1L << 50), out);
            }
            catch (final RuntimeException e)
            {
                throw new AssertionError("seed " + seed + " round " + round + ": " + hex(in, length), e);
            }
            final String where = "seed " + seed + " round " + round + " request " + hex(in, length) + " reply " + hex(out, n);
            assertTrue(n % 4 == 0 && n <= length, where);
            reflected += n > 0 ? 1 : 0;
            checkReply(in, length, out, n, where);
        }
        assertTrue(reflected > ROUNDS / 4, "most rounds reflect something: " + reflected);
    }

    /** A list Ipv4 would accept: NOPs, an EOL now and then, options whose lengths fit; RR and TS often. */
    private static void fill(final SplittableRandom random, final UnsafeBuffer in, final int length)
    {
        int i = 0;
        while (i < length)
        {
            final int left = length - i;
            final int pick = random.nextInt(10);
            if (pick == 0 || left < 2)
            {
                in.putByte(i++, (byte)(random.nextInt(8) == 0 ? 0 : 1));
                continue;
            }
            final int kind = pick < 5 ? 7 : pick < 9 ? 68 : 2 + random.nextInt(250);
            final int optionLength = 2 + random.nextInt(left - 1);
            in.putByte(i, (byte)kind);
            in.putByte(i + 1, (byte)optionLength);
            for (int j = 2; j < optionLength; j++)
            {
                in.putByte(i + j, (byte)random.nextInt(256));
            }
            if (optionLength > 2 && random.nextBoolean())
            {
                in.putByte(i + 2, (byte)(kind == 7 ? 4 : 5 + 4 * random.nextInt(3))); // a plausible pointer
            }
            if (kind == 68 && optionLength > 3 && random.nextBoolean())
            {
                in.putByte(i + 3, (byte)(random.nextInt(16) << 4 | random.nextInt(4)));
            }
            i += optionLength;
        }
    }

    /** Each reply option must be a request option, in order, updated as {@link #isUpdateOf} allows. */
    private static void checkReply(final UnsafeBuffer in, final int inLength, final UnsafeBuffer out, final int n, final String where)
    {
        int o = 0;
        int i = 0;
        while (o < n)
        {
            final int kind = out.getByte(o) & 0xFF;
            if (kind == 0)
            {
                for (int p = o; p < n; p++)
                {
                    assertEquals(0, out.getByte(p), "padding is end-of-list: " + where);
                }
                return;
            }
            assertTrue(kind == 7 || kind == 68, "only RR and TS reflected: " + where);
            final int length = out.getByte(o + 1) & 0xFF;
            assertTrue(o + length <= n, "option within the reply: " + where);
            while (true)
            {
                assertTrue(i < inLength, "reply option at " + o + " is no update of a request option: " + where);
                final int k = in.getByte(i) & 0xFF;
                if (k == 0)
                {
                    i = inLength;
                    continue;
                }
                final int step = k == 1 ? 1 : in.getByte(i + 1) & 0xFF;
                final boolean match = k != 1 && isUpdateOf(in, i, out, o);
                i += step;
                if (match)
                {
                    break;
                }
            }
            o += length;
        }
    }

    /**
     * Whether the reply's option at {@code o} is the request's at {@code i} updated: same kind and length, the pointer
     * the same or one entry on (and then within the option, the entry holding our address for Record Route), every other
     * octet the same but a Timestamp's overflow/flags octet.
     */
    private static boolean isUpdateOf(final UnsafeBuffer in, final int i, final UnsafeBuffer out, final int o)
    {
        final int kind = in.getByte(i) & 0xFF;
        final int length = in.getByte(i + 1) & 0xFF;
        if (kind != (out.getByte(o) & 0xFF) || length != (out.getByte(o + 1) & 0xFF) || length < 3)
        {
            return false;
        }
        final int before = in.getByte(i + 2) & 0xFF;
        final int after = out.getByte(o + 2) & 0xFF;
        final int entry = kind == 7 ? 4 : (in.getByte(i + 3) & 0x0F) == 0 ? 4 : 8;
        if (after != before && (after != before + entry || after > length + 1))
        {
            return false;
        }
        for (int b = 3; b < length; b++)
        {
            final boolean written = after != before && b >= before - 1 && b < before - 1 + entry;
            final boolean flags = kind == 68 && b == 3;
            if (!written && !flags && in.getByte(i + b) != out.getByte(o + b))
            {
                return false;
            }
        }
        return kind != 7 || after == before || before >= 4 && out.getInt(o + before - 1, ByteOrder.BIG_ENDIAN) == US;
    }

    private static String hex(final UnsafeBuffer b, final int length)
    {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < length; i++)
        {
            sb.append(String.format("%02x", b.getByte(i) & 0xFF));
        }
        return sb.toString();
    }
}
