package io.nicstack.nic.tap;

import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.IntPredicate;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Transmit bursts joined into superframes: what is joined is cut back by the kernel's rules ({@link
 * TcpSuperframeSplitter} follows {@code tcp_gso_segment}) into exactly the frames it was joined from, and a run ends at
 * the first frame that would not come back the same.
 */
class TcpSuperframeJoinerTest
{
    private static final int VNET = VirtioNetHeader.LENGTH;
    private static final int ETH = 14;
    private static final int IP = ETH;
    private static final int TCP = ETH + 20;
    private static final int FIN = 0x01;
    private static final int SYN = 0x02;
    private static final int RST = 0x04;
    private static final int PSH = 0x08;
    private static final int ACK = 0x10;
    private static final int ECE = 0x40;
    private static final int CWR = 0x80;
    private static final byte[] MAC_A = { 0x02, 0, 0x5e, 0x12, 0, 1 };
    private static final byte[] MAC_B = { 0x02, 0, 0x5e, 0x12, 0, 2 };
    private static final byte[] TIMESTAMPS = { 1, 1, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0x56, 0x78 };
    private static final byte[] PAYLOAD = new byte[16_384];

    static
    {
        new SplittableRandom(7).nextBytes(PAYLOAD);
    }

    private final TcpSuperframeJoiner joiner = new TcpSuperframeJoiner();

    /** A burst of one flow's segments as a stack would commit them: consecutive IPv4 ids, contiguous sequence numbers. */
    private static final class Burst
    {
        final int maxFrame;
        final UnsafeBuffer[] frames;
        final int[] lengths;
        final boolean[] needsChecksum;
        final byte[][] originals;
        final int headers;

        /**
         * @param payloads each frame's payload length.
         * @param flags    each frame's TCP flags.
         */
        Burst(final int maxFrame, final byte[] options, final int[] payloads, final int[] flags)
        {
            this.maxFrame = maxFrame;
            final int n = payloads.length;
            frames = new UnsafeBuffer[n];
            lengths = new int[n];
            needsChecksum = new boolean[n];
            originals = new byte[n][];
            headers = TCP + 20 + options.length;
            int seq = 0x7FFF_FF00;
            int offset = 0;
            for (int i = 0; i < n; i++)
            {
                frames[i] = new UnsafeBuffer(new byte[maxFrame]);
                lengths[i] = Frames.tcp(frames[i], MAC_A, MAC_B, 0xC6120002, 0xC6130002, 0xFFF0 + i, 40_000, 5001,
                    seq, 0x01020304, flags[i], 0x2000, options, PAYLOAD, offset % 4096, payloads[i]);
                needsChecksum[i] = true;
                seq += payloads[i];
                offset += payloads[i];
            }
            snapshot();
        }

        void snapshot()
        {
            for (int i = 0; i < frames.length; i++)
            {
                originals[i] = Arrays.copyOf(frames[i].byteArray(), lengths[i]);
            }
        }

        int join(final TcpSuperframeJoiner joiner)
        {
            return joiner.join(frames, lengths, needsChecksum, 0, frames.length);
        }

        /** The bytes a superframe write sends: the first frame whole, then each joined frame's payload. */
        UnsafeBuffer superframe(final int n, final int headerLength)
        {
            int length = lengths[0];
            for (int i = 1; i < n; i++)
            {
                length += lengths[i] - headerLength;
            }
            final UnsafeBuffer b = new UnsafeBuffer(new byte[VNET + length]);
            int at = VNET;
            b.putBytes(at, frames[0], 0, lengths[0]);
            at += lengths[0];
            for (int i = 1; i < n; i++)
            {
                b.putBytes(at, frames[i], headerLength, lengths[i] - headerLength);
                at += lengths[i] - headerLength;
            }
            return b;
        }

        void mutate(final int frame, final int offset, final int xor)
        {
            frames[frame].putByte(offset, (byte)(frames[frame].getByte(offset) ^ xor));
        }
    }

    /** The superframe cut by the kernel's rules, each frame compared with its original except at {@code skip}. */
    private static void assertCutBackExactly(final Burst burst, final int n, final TcpSuperframeJoiner joiner,
        final IntPredicate skip, final String where)
    {
        final UnsafeBuffer sf = burst.superframe(n, joiner.headerLength());
        final TcpSuperframeSplitter splitter = new TcpSuperframeSplitter();
        assertTrue(splitter.start(sf, VNET, sf.capacity() - VNET, joiner.gsoSize(), burst.maxFrame), where);
        assertEquals(n, splitter.frames(), where);
        for (int i = 0; i < n; i++)
        {
            final int offset = splitter.next();
            assertEquals(burst.originals[i].length, splitter.length(), where + " frame " + i);
            for (int k = 0; k < splitter.length(); k++)
            {
                if (!skip.test(k) && burst.originals[i][k] != sf.getByte(offset + k))
                {
                    fail(where + " frame " + i + " byte " + k + ": " + burst.originals[i][k] + " came back as " +
                        sf.getByte(offset + k));
                }
            }
        }
    }

    @Test
    void joinedFramesAreCutBackIntoExactlyTheFramesTheyWereJoinedFrom()
    {
        final long seed = System.nanoTime();
        final SplittableRandom r = new SplittableRandom(seed);
        for (int run = 0; run < 500; run++)
        {
            final byte[] options = r.nextBoolean() ? TIMESTAMPS : randomOptions(r);
            final int maxFrame = r.nextInt(4) == 0 ? 9014 : 1514;
            final int headers = TCP + 20 + options.length;
            final int segment = r.nextBoolean() ? maxFrame - headers : 1 + r.nextInt(maxFrame - headers);
            final int count = 2 + r.nextInt(Math.min(31, (65_535 - headers + ETH) / segment - 1));
            final int[] payloads = new int[count];
            final int[] flags = new int[count];
            Arrays.fill(payloads, segment);
            Arrays.fill(flags, ACK | (r.nextInt(8) == 0 ? ECE : 0));
            payloads[count - 1] = r.nextBoolean() ? segment : 1 + r.nextInt(segment);
            flags[count - 1] |= (r.nextBoolean() ? PSH : 0) | (r.nextInt(4) == 0 ? FIN : 0);
            final Burst burst = new Burst(maxFrame, options, payloads, flags);
            final String where = "seed " + seed + " run " + run + " count " + count + " segment " + segment;

            assertEquals(count, burst.join(joiner), where);
            assertEquals(headers, joiner.headerLength(), where);
            assertEquals(segment, joiner.gsoSize(), where);
            final int total = burst.superframe(count, headers).capacity() - VNET - ETH;
            assertEquals(total, burst.frames[0].getShort(IP + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF, where);
            assertEquals(0xFFFF, Frames.fold(Frames.sum(burst.frames[0], IP, 20)), where + ": IPv4 header checksum");
            assertEquals(flags[0] | flags[count - 1] & (PSH | FIN), burst.frames[0].getByte(TCP + 13) & 0xFF, where);
            assertEquals(Frames.pseudoHeaderSum(burst.frames[0], 0), Frames.checksumField(burst.frames[0], 0),
                where + ": the pseudo-header sum over the superframe's TCP length");

            assertCutBackExactly(burst, count, joiner, (k) -> false, where);

            // Refused by the kernel: the first frame is put back as it was committed, and the others were never changed.
            joiner.restore(burst.frames[0]);
            for (int i = 0; i < count; i++)
            {
                assertArrayEquals(burst.originals[i], Arrays.copyOf(burst.frames[i].byteArray(), burst.lengths[i]),
                    where + ": frame " + i + " as committed after restore");
            }
        }
    }

    @Test
    void aRunEndsBeforeTheFirstFrameThatWouldNotComeBackTheSame()
    {
        final int at = 5;
        assertJoined(at, "another port", (b) -> b.mutate(at, TCP + 3, 1));
        assertJoined(at, "another address", (b) -> b.mutate(at, IP + 19, 1));
        assertJoined(at, "another MAC", (b) -> b.mutate(at, 5, 1));
        assertJoined(at, "another TTL", (b) -> b.mutate(at, IP + 8, 1));
        assertJoined(at, "another DSCP", (b) -> b.mutate(at, IP + 1, 4));
        assertJoined(at, "a sequence gap", (b) -> b.mutate(at, TCP + 7, 1));
        assertJoined(at, "another acknowledgment", (b) -> b.mutate(at, TCP + 11, 1));
        assertJoined(at, "another window", (b) -> b.mutate(at, TCP + 15, 1));
        assertJoined(at, "another timestamp", (b) -> b.mutate(at, TCP + 20 + 5, 1));
        assertJoined(at, "SYN", (b) -> b.mutate(at, TCP + 13, SYN));
        assertJoined(at, "RST", (b) -> b.mutate(at, TCP + 13, RST));
        assertJoined(at, "CWR after the first", (b) -> b.mutate(at, TCP + 13, CWR));
        assertJoined(at, "no partial checksum asked for", (b) -> b.needsChecksum[at] = false);
        assertJoined(at, "an IPv4 total length that disagrees", (b) -> b.mutate(at, IP + 3, 1));
        assertJoined(at, "a frame longer than its IPv4 total length", (b) -> b.lengths[at] += 1);
        assertJoined(at, "a longer payload", (p, f) -> p[at] = 1401);
        assertJoined(at, "no payload", (p, f) -> p[at] = 0);
        assertJoined(at + 1, "a shorter payload ends the run", (p, f) -> p[at] = 1000);
        assertJoined(at + 1, "PSH ends the run", (p, f) -> f[at] |= PSH);
        assertJoined(at + 1, "FIN ends the run", (p, f) -> f[at] |= FIN);
        assertJoined(8, "PSH and FIN on the last", (p, f) -> f[7] |= PSH | FIN);
        assertJoined(8, "ECE on all", (p, f) -> Arrays.setAll(f, (i) -> f[i] | ECE));

        assertJoined(1, "PSH on the first", (b) -> b.mutate(0, TCP + 13, PSH));
        assertJoined(1, "no ACK on the first", (b) -> b.mutate(0, TCP + 13, ACK));
        assertJoined(1, "URG on the first", (b) -> b.mutate(0, TCP + 13, 0x20));
        assertJoined(1, "a first frame without payload", (p, f) -> p[0] = 0);
        assertJoined(1, "an IPv4 fragment", (b) -> b.mutate(0, IP + 7, 1));
        assertJoined(1, "UDP", (b) -> b.mutate(0, IP + 9, 6 ^ 17));
        assertJoined(1, "not IPv4", (b) -> b.mutate(0, 12, 0x86));
        assertJoined(1, "no partial checksum on the first", (b) -> b.needsChecksum[0] = false);
    }

    /** Builds a burst of 8 segments of 1400 bytes, changes it, and expects the first {@code expected} frames joined. */
    private void assertJoined(final int expected, final String change, final Consumer<Burst> mutation)
    {
        assertJoined(expected, change, (p, f) -> { }, mutation);
    }

    /** As {@link #assertJoined(int, String, Consumer)}, changing the burst's payload lengths and flags before. */
    private void assertJoined(final int expected, final String change, final BiConsumer<int[], int[]> shape)
    {
        assertJoined(expected, change, shape, (b) -> { });
    }

    private void assertJoined(final int expected, final String change, final BiConsumer<int[], int[]> shape,
        final Consumer<Burst> mutation)
    {
        final int[] payloads = new int[8];
        final int[] flags = new int[8];
        Arrays.fill(payloads, 1400);
        Arrays.fill(flags, ACK);
        shape.accept(payloads, flags);
        final Burst burst = new Burst(1514, TIMESTAMPS, payloads, flags);
        mutation.accept(burst);
        burst.snapshot();
        assertEquals(expected, burst.join(joiner), change);
        if (expected == 1)
        {
            assertArrayEquals(burst.originals[0], Arrays.copyOf(burst.frames[0].byteArray(), burst.lengths[0]),
                change + ": a frame sent alone is sent as it was given");
        }
        else
        {
            assertCutBackExactly(burst, expected, joiner, (k) -> false, change);
        }
    }

    /**
     * A superframe whose first segment carries CWR must say {@code VIRTIO_NET_HDR_GSO_ECN} ("TCP has ECN set", the
     * virtio-net spec's packet transmission), which the tap never writes: a segment with CWR goes alone, and the
     * segments after it are joined on.
     */
    @Test
    void aSegmentCarryingCwrIsSentAlone()
    {
        final int[] payloads = new int[8];
        final int[] flags = new int[8];
        Arrays.fill(payloads, 1400);
        Arrays.fill(flags, ACK | ECE);
        flags[0] |= CWR;
        final Burst burst = new Burst(1514, TIMESTAMPS, payloads, flags);
        assertEquals(1, burst.join(joiner), "CWR on the first");
        assertArrayEquals(burst.originals[0], Arrays.copyOf(burst.frames[0].byteArray(), burst.lengths[0]),
            "the CWR segment is sent as it was given");
        assertEquals(7, joiner.join(burst.frames, burst.lengths, burst.needsChecksum, 1, 8), "the rest joins on");
    }

    @Test
    void theIpv4IdentificationIsTheKernelsToRenumber()
    {
        final int[] payloads = { 1448, 1448, 1448 };
        final int[] flags = { ACK, ACK, ACK | PSH };
        final Burst burst = new Burst(1514, TIMESTAMPS, payloads, flags);
        burst.mutate(2, IP + 5, 0x55);
        burst.snapshot();
        assertEquals(3, burst.join(joiner), "the identification is not compared");
        assertCutBackExactly(burst, 3, joiner, (k) -> k == IP + 4 || k == IP + 5 || k == IP + 10 || k == IP + 11,
            "all but the identification and the header checksum");
    }

    @Test
    void aSuperframeStaysWithinTheIpv4TotalLength()
    {
        final int[] payloads = new int[9];
        final int[] flags = new int[9];
        Arrays.fill(payloads, 8948);
        Arrays.fill(flags, ACK);
        final Burst burst = new Burst(9014, TIMESTAMPS, payloads, flags);
        final int joined = burst.join(joiner);
        assertEquals(7, joined, "7 * 8948 + 52 fits in 65535, 8 * 8948 does not");
        assertEquals(20 + 32 + 7 * 8948, burst.frames[0].getShort(IP + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF);
        assertCutBackExactly(burst, 7, joiner, (k) -> false, "jumbo");
        assertEquals(2, joiner.join(burst.frames, burst.lengths, burst.needsChecksum, 7, 9), "the rest joins on");
    }

    @Test
    void randomAndMutatedBurstsNeverThrowAndWhatIsJoinedComesBack()
    {
        final long seed = System.nanoTime();
        final SplittableRandom r = new SplittableRandom(seed);
        int joinedRuns = 0;
        for (int run = 0; run < 20_000; run++)
        {
            final int count = 1 + r.nextInt(8);
            final int[] payloads = new int[count];
            final int[] flags = new int[count];
            final byte[] options = r.nextBoolean() ? TIMESTAMPS : randomOptions(r);
            final int segment = 1 + r.nextInt(1514 - TCP - 20 - options.length);
            for (int i = 0; i < count; i++)
            {
                payloads[i] = r.nextInt(4) == 0 ? r.nextInt(segment + 1) : segment;
                flags[i] = r.nextInt(8) == 0 ? r.nextInt(256) : ACK;
            }
            final Burst burst = new Burst(1514, options, payloads, flags);
            for (int m = r.nextInt(6); m > 0; m--)
            {
                final int frame = r.nextInt(count);
                if (r.nextInt(10) == 0)
                {
                    burst.lengths[frame] = r.nextInt(1515);
                }
                else if (r.nextInt(10) == 0)
                {
                    new SplittableRandom(r.nextLong()).nextBytes(burst.frames[frame].byteArray());
                }
                else
                {
                    burst.mutate(frame, r.nextInt(burst.headers + 4), 1 << r.nextInt(8));
                }
            }
            burst.snapshot();
            final String where = "seed " + seed + " run " + run;

            final int n = burst.join(joiner);
            assertTrue(n >= 1 && n <= count, where);
            if (n > 1)
            {
                joinedRuns++;
                assertCutBackExactly(burst, n, joiner,
                    (k) -> k == IP + 4 || k == IP + 5 || k == IP + 10 || k == IP + 11 || k == TCP + 16 || k == TCP + 17,
                    where);
            }
        }
        assertTrue(joinedRuns > 1_000, "the mutations left too few runs to join: " + joinedRuns);
    }

    private static byte[] randomOptions(final SplittableRandom r)
    {
        final byte[] options = new byte[4 * r.nextInt(11)];
        r.nextBytes(options);
        return options;
    }
}
