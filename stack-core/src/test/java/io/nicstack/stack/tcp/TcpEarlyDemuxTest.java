package io.nicstack.stack.tcp;

import java.util.List;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.nicstack.nic.FrameHandler;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.TcpHeader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.nicstack.stack.tcp.TcpTestHarness.bytes;

/**
 * Early demultiplexing ({@code Tcp.onFrame}) hands a segment to its connection past the Ethernet and IPv4 layers; it
 * must change how fast a frame is taken, never what happens to it. Whole transfers over faulty wires (with corrupted
 * frames, which must fall back to the layers and be dropped there by reason) run with it on and off and must send the
 * same frames and count the same ({@link FastPathRuns}). Then hostile frames: the same randomly mutated frames go to
 * two stacks with the same secrets, one with early demultiplexing off, and after every frame both must have sent the
 * same bytes, counted the same and kept their connections in the same state.
 */
class TcpEarlyDemuxTest
{
    private static final long[] SECRETS = {0x0123_4567_89AB_CDEFL, 0x0FED_CBA9_8765_4321L, 0x1111_2222_3333_4444L, 0x5555_6666_7777_8888L};
    private static final int FRAMES = Integer.getInteger("nicstack.fuzz.frames", 1_000_000) / 10;
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "clean wire                    | seed=1                                          | default | 0.90",
        "loss, reorder, dup            | loss=0.03,reorder=0.03,dup=0.02,seed=21         | default | 0.50",
        "1% of frames with a bit flipped | corrupt=0.01,seed=22                          | default | 0.80",
        "corruption and loss           | loss=0.02,reorder=0.02,dup=0.01,corrupt=0.05,seed=23 | default | 0.40",
        "no timestamps, no SACK        | loss=0.01,corrupt=0.02,seed=24                  | bare    | 0.50",
    })
    void earlyDemuxSendsWhatTheLayersSend(final String name, final String faults, final String profile,
        final double minShare) throws Exception
    {
        // On is the stack's own choice (it is off for an address that is also a broadcast address).
        final FastPathRuns.Run run = FastPathRuns.assertFastPathChangesNothing(name, faults, profile,
            (tcp, on) -> tcp.earlyDemux &= on, StackCounter.TCP_EARLY_DEMUX, minShare);
        assertOnlySynsToTheListenerWentTheLongWay(run, 1);
    }

    /**
     * Concurrent connections whose segments interleave on the wire: a segment of another connection than the last
     * one's is found in the connection table and still goes early. (Trying only the last segment's connection, 124 of
     * the 2,127 segments of the clean 4-flow run went through the layers, 970 of 2,704 with 16 flows.)
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "4 flows, clean wire           | 4  | seed=31                                  | 0.90",
        "8 flows, loss, reorder, dup   | 8  | loss=0.03,reorder=0.03,dup=0.02,seed=32  | 0.50",
        "16 flows, corruption and loss | 16 | loss=0.02,corrupt=0.03,seed=33           | 0.50",
    })
    void interleavedFlowsGoEarlyAndSendWhatTheLayersSend(final String name, final int flows, final String faults,
        final double minShare) throws Exception
    {
        final FastPathRuns.Run run = FastPathRuns.assertFastPathChangesNothing(name, faults, "default", flows,
            (tcp, on) -> tcp.earlyDemux &= on, StackCounter.TCP_EARLY_DEMUX, minShare);
        assertOnlySynsToTheListenerWentTheLongWay(run, flows);
    }

    /**
     * A segment for a connection, handshake included, that is clean (corrupted frames are dropped before they count as
     * segments in) goes early; only the SYNs that find no connection but the listener take the layers. With these
     * seeds, one SYN per flow; the bound leaves room for a retransmitted one.
     */
    private static void assertOnlySynsToTheListenerWentTheLongWay(final FastPathRuns.Run run, final int flows)
    {
        assertTrue(run.notTaken() <= 2L * flows, run.notTaken() + " segments in of " + (run.segmentsInA()
            + run.segmentsInB()) + " went through the layers; only the " + flows + " flows' SYNs to the listener should");
    }

    /** A frame for another address, port or protocol, or one IPv4 would drop, is the layers' to count. */
    @Test
    void framesOfAnotherShapeGoToTheLayersAndAreCountedThere()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        t.send(t.in().payload(bytes(100, 1)));
        final long early = t.counter(StackCounter.TCP_EARLY_DEMUX);
        assertTrue(early > 0, "the handshake's ACK made the connection the last one, so in-order data goes early");

        final byte[] fragment = t.frame(t.in().seq(t.irs + 101).payload(bytes(16, 3))); // 48 bytes: 8-byte units
        fragment[14 + 6] = 0x20; // more fragments (and DF clear), offset 0
        refreshIpChecksum(fragment);
        t.device.inject(fragment);
        t.poll();
        assertEquals(1, t.counter(StackCounter.IPV4_FRAGMENTS_QUEUED), "a fragment waits for reassembly");
        t.send(t.in().seq(t.irs + 101).payload(bytes(10, 4)).ipOptions(1, 1, 1, 0));
        final byte[] badTcp = t.frame(t.in().seq(t.irs + 111).payload(bytes(10, 5)));
        badTcp[badTcp.length - 1] ^= 1;
        t.device.inject(badTcp);
        t.poll();
        assertEquals(1, t.counter(StackCounter.TCP_DROP_BAD_CHECKSUM), "a bad TCP checksum: dropped by TCP");
        assertEquals(early, t.counter(StackCounter.TCP_EARLY_DEMUX), "none of these went early");
        assertEquals(110, t.read().length, "the segment with IPv4 options went the long way and was delivered");

        t.send(t.in().seq(t.irs + 111).payload(bytes(10, 6)));
        assertEquals(early + 1, t.counter(StackCounter.TCP_EARLY_DEMUX), "the next clean segment goes early again");
        assertEquals(10, t.read().length);

        // TTL 0 is no other shape: taken like any other datagram (RFC 1122 §3.2.1.7), early too.
        final TcpTestHarness.Seg ttl0 = t.in().seq(t.irs + 121).payload(bytes(10, 7));
        ttl0.ttl = 0;
        t.send(ttl0);
        assertEquals(early + 2, t.counter(StackCounter.TCP_EARLY_DEMUX), "a segment with TTL 0 goes early");
        assertEquals(10, t.read().length);
    }

    /**
     * Mutated frames of two established connections (bit flips in the headers, fields rewritten with random values and
     * the checksums sometimes made right again so deeper checks are reached, truncation, padding), into two stacks
     * that differ only in early demultiplexing. The two connections' peer ports are neighbours, so a rewritten port
     * often names the other connection, and their frames interleave, so both the last segment's connection and the
     * table lookup are exercised. The seed is printed on failure; {@code -Dnicstack.fuzz.seed} repeats.
     */
    @Test
    void mutatedFramesMeetTheSameFateWithAndWithoutEarlyDemux()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        final String seed = " (seed " + SEED + ", -Dnicstack.fuzz.seed=" + SEED + " repeats it)";
        long frames = 0;
        long early = 0;
        while (frames < FRAMES)
        {
            final TcpTestHarness fast = new TcpTestHarness(1500, false, SECRETS).peerOffersAll();
            final TcpTestHarness layers = new TcpTestHarness(1500, false, SECRETS).peerOffersAll();
            layers.stack.tcp().earlyDemux = false;
            final int flags = random.nextBoolean() ? FrameHandler.RX_L4_CHECKSUM_TRUSTED : 0;
            fast.device.rxFlags(flags);
            layers.device.rxFlags(flags);
            final Flow[] flows = {Flow.open(fast, layers, TcpTestHarness.PEER_PORT, TcpTestHarness.REMOTE_ISS),
                Flow.open(fast, layers, TcpTestHarness.PEER_PORT + 1, 0x2000_0000)};
            assertSameSoFar(fast, layers, flows, "after the handshakes" + seed);
            while (frames < FRAMES && (flows[0].open() || flows[1].open()))
            {
                // Frames go to the connections still open (a mutation may have reset one).
                final Flow flow = flows[1].open() && (!flows[0].open() || random.nextBoolean()) ? flows[1] : flows[0];
                flow.select(fast);
                fast.peerTsVal += random.nextInt(3);
                final int length = random.nextInt(8) == 0 ? 0 : 1 + random.nextInt(1448);
                final byte[] frame = mutate(fast.frame(fast.in().seq(flow.fast.rcvNxt).payload(bytes(length, (int)frames))),
                    random);
                frames++;
                fast.device.inject(frame);
                layers.device.inject(frame);
                fast.poll();
                layers.poll();
                assertSameSoFar(fast, layers, flows, "frame " + frames + seed);
                if (random.nextInt(16) == 0)
                {
                    for (final Flow f : flows)
                    {
                        assertArrayEquals(TcpTestHarness.read(f.layers), TcpTestHarness.read(f.fast), "data read" + seed);
                    }
                }
            }
            early += fast.counter(StackCounter.TCP_EARLY_DEMUX);
            assertEquals(0, layers.counter(StackCounter.TCP_EARLY_DEMUX), "early demux while off" + seed);
        }
        // Both ways were taken: a good share of the frames early, and the mutated rest by the layers.
        assertTrue(early > frames / 5, early + " of " + frames + " frames went early" + seed);
        assertTrue(early < frames * 4 / 5, early + " of " + frames + " frames went early: too few mutations" + seed);
    }

    /** One of the two connections each stack of the mutation test has, and what the peer's segments on it carry. */
    private record Flow(TcpConnection fast, TcpConnection layers, int peerPort, int irs, int iss)
    {
        /** The handshake of a connection from {@code peerPort} with the peer's ISN {@code irs}, in both stacks. */
        static Flow open(final TcpTestHarness fast, final TcpTestHarness layers, final int peerPort, final int irs)
        {
            for (final TcpTestHarness t : new TcpTestHarness[] {fast, layers})
            {
                t.peerPort = peerPort;
                t.irs = irs;
                t.passiveOpen();
            }
            assertEquals(fast.iss, layers.iss, "the same secrets give the same ISN");
            return new Flow(fast.conn, layers.conn, peerPort, irs, fast.iss);
        }

        /** Make {@code t}'s segment template ({@code in()}) this connection's. */
        void select(final TcpTestHarness t)
        {
            t.peerPort = peerPort;
            t.irs = irs;
            t.iss = iss;
        }

        boolean open()
        {
            return fast.state() != TcpState.CLOSED;
        }
    }

    private static void assertSameSoFar(final TcpTestHarness fast, final TcpTestHarness layers, final Flow[] flows,
        final String what)
    {
        final List<byte[]> a = fast.device.takeSent();
        final List<byte[]> b = layers.device.takeSent();
        FastPathRuns.assertSameFrames(b, a, what);
        assertEquals(FastPathRuns.countersBut(layers.stack, StackCounter.TCP_EARLY_DEMUX),
            FastPathRuns.countersBut(fast.stack, StackCounter.TCP_EARLY_DEMUX), what + ": counters");
        for (final Flow f : flows)
        {
            assertEquals(f.layers.state(), f.fast.state(), what + ": state, peer port " + f.peerPort);
            assertEquals(f.layers.bytesReceived(), f.fast.bytesReceived(), what + ": bytes received, peer port " + f.peerPort);
        }
    }

    /** Where the fields a mutation rewrites sit in a frame: Ethernet, IPv4 (no options) and TCP header offsets. */
    private static final int[][] FIELDS = {
        {0, 6}, {12, 2},                                                  // destination MAC, EtherType
        {14, 1}, {16, 2}, {20, 2}, {22, 1}, {23, 1}, {26, 4}, {30, 4},    // version/IHL, total length, flags/offset,
                                                                          // TTL, protocol, source, destination
        {34, 2}, {36, 2}, {38, 4}, {42, 4}, {46, 1}, {47, 1}, {48, 2}, {54, 4}, // ports, seq, ack, data offset,
                                                                          // flags, window, first option word
    };

    /** One random mutation, or none (a quarter of the frames stay as they were). */
    private static byte[] mutate(final byte[] frame, final SplittableRandom random)
    {
        switch (random.nextInt(8))
        {
            case 0, 1:
                return frame;
            case 2:
            {
                for (int flips = 1 + random.nextInt(3); flips > 0; flips--)
                {
                    final int bit = random.nextInt(Math.min(frame.length, 70) * 8);
                    frame[bit >>> 3] ^= (byte)(1 << (bit & 7));
                }
                return frame;
            }
            case 3:
                return java.util.Arrays.copyOf(frame, random.nextInt(frame.length));
            case 4:
            {
                final byte[] padded = java.util.Arrays.copyOf(frame, frame.length + 1 + random.nextInt(64));
                padded[padded.length - 1] = (byte)random.nextInt();
                return padded;
            }
            default:
            {
                final int[] field = FIELDS[random.nextInt(FIELDS.length)];
                for (int i = 0; i < field[1]; i++)
                {
                    // Mostly small changes, so that values near the valid ones (IHL 5 or 6, TTL 1) come up often.
                    frame[field[0] + i] = (byte)(random.nextBoolean() ? frame[field[0] + i] + random.nextInt(-2, 3)
                        : random.nextInt());
                }
                if (random.nextBoolean())
                {
                    refreshIpChecksum(frame);
                }
                if (random.nextBoolean())
                {
                    refreshTcpChecksum(frame);
                }
                return frame;
            }
        }
    }

    private static void refreshIpChecksum(final byte[] frame)
    {
        final int headerLength = (frame[14] & 0x0F) * 4;
        if (headerLength >= 20 && 14 + headerLength <= frame.length)
        {
            new Ipv4Header().wrap(new UnsafeBuffer(frame), 14, headerLength).updateChecksum();
        }
    }

    private static void refreshTcpChecksum(final byte[] frame)
    {
        if (frame.length < 34)
        {
            return;
        }
        final UnsafeBuffer b = new UnsafeBuffer(frame);
        final Ipv4Header ip = new Ipv4Header().wrap(b, 14, frame.length - 14);
        final int tcpAt = 14 + (frame[14] & 0x0F) * 4;
        final int tcpLength = ip.totalLength() - (tcpAt - 14);
        if (tcpLength >= 20 && tcpAt + tcpLength <= frame.length)
        {
            new TcpHeader().wrap(b, tcpAt, tcpLength).updateChecksum(ip.source(), ip.destination());
        }
    }
}
