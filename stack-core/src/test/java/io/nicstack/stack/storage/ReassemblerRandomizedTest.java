package io.nicstack.stack.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.time.Timers;
import io.nicstack.stack.wire.Ipv4Header;

/**
 * {@link Reassembler} with random datagrams (1 byte to the largest a first fragment's header leaves room for), cut at
 * random multiples of 8, the first fragment carrying 0 to 40 bytes of options and the others fewer, delivered in random
 * order with a duplicate or two: every datagram comes out once, byte for byte, behind its first fragment's header, and
 * what duplicates reopen after it times out. A test of existing behaviour, adopted from a review's probe. Rerun one
 * case with {@code -Dnicstack.reassemblerSeed=<seed>}.
 */
class ReassemblerRandomizedTest
{
    private static final String SEED_PROPERTY = "nicstack.reassemblerSeed";
    private static final int ROUNDS = 3000;
    private static final int SOURCE = 0xC612_0001;
    private static final int DESTINATION = 0xC612_0002;
    private static final long TIMEOUT = 30_000_000_000L;

    @Test
    void randomFragmentsInAnyOrderWithDuplicatesReassembleByteExact()
    {
        final Long fixed = Long.getLong(SEED_PROPERTY);
        if (fixed != null)
        {
            run(fixed);
            return;
        }
        run(1);
        run(System.nanoTime());
    }

    private static void run(final long seed)
    {
        try
        {
            rounds(new Random(seed));
        }
        catch (final Throwable t)
        {
            System.err.println("randomized IPv4 reassembly failed with -D" + SEED_PROPERTY + "=" + seed);
            throw new AssertionError("seed " + seed + ": " + t.getMessage(), t);
        }
    }

    private static void rounds(final Random random)
    {
        final Timers timers = new Timers(0);
        final Reassembler reassembler = new Reassembler(64, 4096, TIMEOUT, timers, (b, o, l, n) -> { }, why -> { });
        final Ipv4Header header = new Ipv4Header();
        long now = 0;
        for (int round = 0; round < ROUNDS; round++)
        {
            final int firstIhl = 5 + random.nextInt(11);
            final int maxData = 65535 - firstIhl * 4;
            final int length = random.nextInt(4) == 0 ? maxData - random.nextInt(16) : 1 + random.nextInt(9000);
            final byte[] data = new byte[length];
            random.nextBytes(data);
            final List<byte[]> fragments = cut(random, round, firstIhl, data);
            if (fragments.size() < 2)
            {
                continue;
            }
            for (int duplicates = random.nextInt(3); duplicates > 0; duplicates--)
            {
                fragments.add(fragments.get(random.nextInt(fragments.size())).clone());
            }
            Collections.shuffle(fragments, random);

            final String what = "round " + round + ", IHL " + firstIhl + ", length " + length;
            int complete = 0;
            for (final byte[] fragment : fragments)
            {
                header.wrap(new UnsafeBuffer(fragment), 0, fragment.length);
                final int result = reassembler.accept(header, header.headerLength(), fragment.length - header.headerLength(), now);
                if (result == Reassembler.COMPLETE)
                {
                    complete++;
                    assertDatagram(reassembler, round, firstIhl, data, what);
                    reassembler.releaseCompleted();
                }
                else
                {
                    // After the datagram completed, only duplicates are left: each opens, or joins, a fresh one.
                    assertTrue(result == Reassembler.QUEUED || result == Reassembler.DROP_DUPLICATE, what + ": result " + result);
                }
            }
            assertTrue(complete >= 1, what + ": never completed");
            // What the duplicates left open times out (RFC 791: the reassembly timer), and leaves nothing held.
            now += TIMEOUT + 1;
            timers.poll(now);
            assertEquals(0, reassembler.active(), what + ": datagrams in progress");
            assertEquals(0, reassembler.bytesHeld(), what + ": bytes held");
        }
    }

    /** {@code data} cut into fragments of datagram {@code id}, in order; none when it is too short to cut. */
    private static List<byte[]> cut(final Random random, final int id, final int firstIhl, final byte[] data)
    {
        final int length = data.length;
        final List<byte[]> fragments = new ArrayList<>();
        int at = 0;
        while (at < length)
        {
            int n = (1 + random.nextInt(Math.max(1, Math.min(length, 4000) / 8))) * 8;
            if (at + n >= length)
            {
                n = length - at;
            }
            if (at == 0 && n == length)
            {
                // A whole datagram is no fragment: cut it once more, or give it up when it is too short to cut.
                if (length <= 8)
                {
                    break;
                }
                n = (length - 1) / 8 * 8;
            }
            final int ihl = at == 0 ? firstIhl : 5 + random.nextInt(firstIhl - 4);
            fragments.add(fragment(ihl, id, at + n < length, at, data, at, at + n));
            at += n;
        }
        return fragments;
    }

    /** One fragment with {@code ihl} words of header, the options all NOPs, carrying {@code data[from, to)}. */
    private static byte[] fragment(
        final int ihl, final int id, final boolean more, final int offset, final byte[] data, final int from, final int to)
    {
        final int headerLength = ihl * 4;
        final byte[] fragment = new byte[headerLength + to - from];
        for (int i = Ipv4Header.MIN_HEADER_LENGTH; i < headerLength; i++)
        {
            fragment[i] = 1;
        }
        new Ipv4Header().wrap(new UnsafeBuffer(fragment), 0, fragment.length).versionAndIhl(ihl).tos(0)
            .totalLength(fragment.length).identification(id).flagsAndFragmentOffset(false, more, offset).ttl(64)
            .protocol(Ipv4Header.PROTOCOL_UDP).source(SOURCE).destination(DESTINATION).updateChecksum();
        System.arraycopy(data, from, fragment, headerLength, to - from);
        return fragment;
    }

    private static void assertDatagram(
        final Reassembler reassembler, final int id, final int firstIhl, final byte[] data, final String what)
    {
        final int length = reassembler.datagramLength();
        final Ipv4Header whole = new Ipv4Header().wrap(reassembler.datagramBuffer(), 0, length);
        assertEquals(firstIhl * 4, whole.headerLength(), what + ": the first fragment's header");
        assertEquals(length, whole.totalLength(), what);
        assertFalse(whole.moreFragments(), what);
        assertEquals(0, whole.fragmentOffset(), what);
        assertEquals(id, whole.identification(), what);
        assertEquals(SOURCE, whole.source(), what);
        assertEquals(DESTINATION, whole.destination(), what);
        assertTrue(whole.checksumValid(), what + ": header checksum");
        final byte[] payload = new byte[length - whole.headerLength()];
        reassembler.datagramBuffer().getBytes(whole.headerLength(), payload);
        assertArrayEquals(data, payload, what);
    }
}
