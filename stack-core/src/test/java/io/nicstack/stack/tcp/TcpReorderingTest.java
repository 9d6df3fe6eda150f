package io.nicstack.stack.tcp;

import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.TreeMap;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.tcp.cc.CongestionControls;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * Reordering with SACK: a fast recovery proven spurious by D-SACK is undone (RFC 2883 §4, RFC 3708, RFC 9438 §4.9),
 * and the reordering seen raises DupThresh (RFC 6675 §2's DupThresh, adapted as Linux's tp->reordering).
 */
class TcpReorderingTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    private int open(final String congestionControl)
    {
        t.peerWindowScale = 7;
        t.peerSackPermitted = true;
        t.settings().congestionControl = congestionControl;
        t.settings().noDelay = true;
        t.settings().tailLossProbe = false;
        t.passiveOpen();
        return t.conn.sendMss();
    }

    /**
     * Six segments; S0 is overtaken by the five others: a fast retransmit once S1-S3 are SACKed, then S0's original
     * arrives (the ACK covers all six, the recovery ends), then its resend, which the peer reports as a D-SACK.
     */
    private void spuriousFastRetransmitOfFive(final int m)
    {
        final int s = t.iss + 1;
        t.write(bytes(6 * m, 1));
        assertEquals(6, t.recv().size());
        for (int i = 2; i <= 4; i++)
        {
            t.send(t.in().sack(s + m, s + i * m));
        }
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertEquals(s, t.recv().get(0).r.seq, "S0 sent again");
        t.send(t.in().sack(s + m, s + 5 * m));
        t.send(t.in().sack(s + m, s + 6 * m));
        t.send(t.in().ack(s + 6 * m));
        assertFalse(t.conn.inRecovery);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc3708_aDsackOfTheOnlyRetransmissionOfARecoveryRestoresCwndAndSsthresh(final String congestionControl)
    {
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        final long cwndBefore = t.conn.cwnd();
        final long ssthreshBefore = t.conn.ssthresh();
        assertEquals(CongestionControls.INITIAL_SSTHRESH, ssthreshBefore, "still in the first slow start");
        spuriousFastRetransmitOfFive(m);
        assertTrue(t.conn.cwnd() < cwndBefore, "the recovery reduced cwnd: " + t.conn.cwnd());
        assertTrue(t.conn.ssthresh() < ssthreshBefore);
        // The resend arrives: received twice, reported in a D-SACK (RFC 2883 §4: below the cumulative ACK).
        t.send(t.in().ack(s + 6 * m).sack(s, s + m));
        assertEquals(1, t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE));
        assertEquals(cwndBefore, t.conn.cwnd(), "cwnd as before the recovery");
        assertEquals(ssthreshBefore, t.conn.ssthresh(), "ssthresh as before the recovery: slow start goes on");
        // Another copy of that D-SACK (the network duplicated the ACK) undoes nothing more.
        t.send(t.in().ack(s + 6 * m).sack(s, s + m));
        assertEquals(1, t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc3708_aRecoveryWithARetransmissionNotDsackedIsNotUndone(final String congestionControl)
    {
        // S0 and S3 lost, both sent again; only S0's resend is D-SACKed (its original was late, not lost): S3's was
        // needed, the reduction stands.
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        t.write(bytes(8 * m, 1));
        assertEquals(8, t.recv().size());
        t.send(t.in().sack(s + m, s + 3 * m));
        t.send(t.in().sack(s + 4 * m, s + 5 * m).sack(s + m, s + 3 * m));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        t.send(t.in().sack(s + 4 * m, s + 8 * m).sack(s + m, s + 3 * m));
        t.recv();
        final long reduced = t.conn.ssthresh();
        t.send(t.in().ack(s + 3 * m).sack(s + 4 * m, s + 8 * m));
        t.send(t.in().ack(s + 8 * m));
        assertFalse(t.conn.inRecovery);
        t.send(t.in().ack(s + 8 * m).sack(s, s + m));
        assertEquals(0, t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE));
        assertEquals(reduced, t.conn.ssthresh());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc3708_aDsackOfANetworkDuplicateOfAnOriginalNeverSentAgainDoesNotUndoARealLoss(final String congestionControl)
    {
        // S0 really lost (its resend fills it, never D-SACKed); S2 late, and S7 sent again as the rescue: both resends
        // D-SACKed. Then the network duplicates S1's original, never sent again: its D-SACK lies between the episode's
        // first and highest resend, but is no retransmission's (Linux counts only TCPCB_RETRANS segments down).
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        t.write(bytes(8 * m, 1));
        assertEquals(8, t.recv().size());
        t.send(t.in().sack(s + m, s + 2 * m));
        t.send(t.in().sack(s + 3 * m, s + 4 * m).sack(s + m, s + 2 * m));
        t.send(t.in().sack(s + 3 * m, s + 5 * m).sack(s + m, s + 2 * m));
        t.send(t.in().sack(s + 3 * m, s + 6 * m).sack(s + m, s + 2 * m));
        final List<Seg> sent = t.recv();
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertTrue(sent.stream().anyMatch(g -> g.r.seq == s), "S0 sent again: " + sent);
        assertTrue(sent.stream().anyMatch(g -> g.r.seq == s + 2 * m), "S2 sent again: " + sent);
        final long reduced = t.conn.ssthresh();
        t.send(t.in().ack(s + 2 * m).sack(s + 3 * m, s + 6 * m));
        final List<Seg> rescue = t.recv();
        assertEquals(1, rescue.size(), "S7 sent again as the rescue: " + rescue);
        assertEquals(s + 7 * m, rescue.get(0).r.seq);
        t.send(t.in().ack(s + 6 * m));
        t.send(t.in().ack(s + 8 * m));
        assertFalse(t.conn.inRecovery);
        t.send(t.in().ack(s + 8 * m).sack(s + 2 * m, s + 3 * m));
        t.send(t.in().ack(s + 8 * m).sack(s + 7 * m, s + 8 * m));
        assertEquals(0, t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE), "S0's resend not D-SACKed");
        t.send(t.in().ack(s + 8 * m).sack(s + m, s + 2 * m));
        assertEquals(0, t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE), "S0 was lost: the reduction stands");
        assertEquals(reduced, t.conn.ssthresh());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc3708_aRecoveryThatFindsSndUnasResendInFlightIsNotUndoneByTheDsackOfItsOtherResends(final String congestionControl)
    {
        // The first recovery resends S<R> (sent after its recovery point R) and ends; S<R+3> SACKed next starts a second
        // recovery, which reduces cwnd without resending S<R>: its resend is still on its way (TcpExtensionsTest's
        // recovery right after another). That resend belongs to the second episode too (Linux's tcp_init_undo counts
        // retrans_out in): when it fills the hole undetected, a D-SACK of the episode's other resend alone must not
        // undo the reduction.
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        t.write(bytes(60 * m, 3));
        assertEquals(10, t.recv().size());
        for (int i = 2; i <= 4; i++)
        {
            t.send(t.in().sack(s + m, s + i * m));
        }
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        t.recv();
        final int r = (t.conn.recoveryPoint - s) / m;
        for (int i = 5; i <= r; i++)
        {
            t.send(t.in().sack(s + m, s + i * m));
        }
        t.recv();
        t.send(t.in().sack(s + (r + 1) * m, s + (r + 3) * m).sack(s + m, s + r * m));
        t.recv();
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, s + (r + 3) * m));
        t.recv();
        assertFalse(t.conn.inRecovery, "the first recovery is over");
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, s + (r + 4) * m));
        assertEquals(2, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "a second recovery");
        final long retransmissions = t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS);
        assertTrue(t.recv().stream().noneMatch(g -> g.r.seq == s + r * m), "S" + r + "'s resend is on its way");
        final long reduced = t.conn.ssthresh();
        // S<R+5> lost too: S<R+4> SACKed, then S<R+6> up to SND.MAX.
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, s + (r + 5) * m));
        t.recv();
        final int top = (t.conn.sndMax - s) / m;
        t.send(t.in().ack(s + r * m).sack(s + (r + 6) * m, s + top * m).sack(s + (r + 1) * m, s + (r + 5) * m));
        final List<Seg> sent = t.recv();
        assertTrue(sent.stream().anyMatch(g -> g.r.seq == s + (r + 5) * m), "S" + (r + 5) + " sent again: " + sent);
        assertEquals(retransmissions + 1, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS), "the episode's only resend");
        t.send(t.in().ack(t.conn.sndMax));
        assertFalse(t.conn.inRecovery);
        // S<R+5>'s original was late: its resend is D-SACKed. S<R>'s resend, the episode's too, filled its hole.
        t.send(t.in().ack(t.conn.sndUna).sack(s + (r + 5) * m, s + (r + 6) * m));
        assertEquals(0, t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE), "S" + r + " was lost: the reduction stands");
        assertEquals(reduced, t.conn.ssthresh());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc6675_afterAReorderingOfFiveSegmentsAReorderingOfFourStartsNoRecovery(final String congestionControl)
    {
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        spuriousFastRetransmitOfFive(m);
        t.send(t.in().ack(s + 6 * m).sack(s, s + m));
        assertEquals(6, t.conn.dupThresh, "five segments overtook S0: DupThresh six");
        // S6 is overtaken by S7-S10.
        t.write(bytes(10 * m, 2));
        assertEquals(10, t.recv().size());
        final int s6 = s + 6 * m;
        for (int i = 2; i <= 5; i++)
        {
            t.send(t.in().ack(s6).sack(s6 + m, s6 + i * m));
        }
        t.send(t.in().ack(s6 + 5 * m));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "no fast retransmit for a reordering of four");
        assertFalse(t.recv().stream().anyMatch(g -> g.r.seq == s6), "S6 not sent again");
        assertEquals(6, t.conn.dupThresh);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void aTimeoutWithAtLeastThreeSegmentsSackedOutsideRecoveryLowersDupThreshToThree(final String congestionControl)
    {
        // DupThresh raised to six; then S6 really lost, S7-S10 SACKed: four segments, too few for a recovery at six.
        // The timeout that repairs S6 says the reordering was over-estimated: DupThresh back to three (Linux's
        // tcp_enter_loss, when sacked_out >= sysctl_tcp_reordering outside recovery).
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        spuriousFastRetransmitOfFive(m);
        t.send(t.in().ack(s + 6 * m).sack(s, s + m));
        assertEquals(6, t.conn.dupThresh);
        t.recv();
        final int s6 = s + 6 * m;
        t.write(bytes(5 * m, 2));
        assertEquals(5, t.recv().size());
        for (int i = 2; i <= 5; i++)
        {
            t.send(t.in().ack(s6).sack(s6 + m, s6 + i * m));
        }
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "no recovery with four segments SACKed");
        assertEquals(6, t.conn.dupThresh);
        t.advanceMs(3_000);
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertEquals(3, t.conn.dupThresh, "a timeout with four segments SACKed: the reordering was over-estimated");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void aTimeoutWithFewerThanThreeSegmentsSackedKeepsDupThresh(final String congestionControl)
    {
        // As above with S7 and S8 SACKed only: too little to say the reordering was over-estimated.
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        spuriousFastRetransmitOfFive(m);
        t.send(t.in().ack(s + 6 * m).sack(s, s + m));
        t.recv();
        final int s6 = s + 6 * m;
        t.write(bytes(5 * m, 2));
        assertEquals(5, t.recv().size());
        t.send(t.in().ack(s6).sack(s6 + m, s6 + 2 * m));
        t.send(t.in().ack(s6).sack(s6 + m, s6 + 3 * m));
        t.advanceMs(3_000);
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertEquals(6, t.conn.dupThresh);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc6675_aHoleFilledByItsOriginalBelowTheHighestSackRaisesDupThresh(final String congestionControl)
    {
        // S0 and S2 late; S1 and S3 SACKed (two segments: no loss by RFC 6675 IsLost). S0 arrives: a hole never sent
        // again, filled with data SACKed four segments above it. DupThresh four: a later reordering of three segments
        // starts no recovery (it would at three).
        final int m = open(congestionControl);
        final int s = t.iss + 1;
        t.write(bytes(4 * m, 1));
        assertEquals(4, t.recv().size());
        t.send(t.in().sack(s + m, s + 2 * m));
        t.send(t.in().sack(s + 3 * m, s + 4 * m).sack(s + m, s + 2 * m));
        t.send(t.in().ack(s + 2 * m).sack(s + 3 * m, s + 4 * m));
        t.send(t.in().ack(s + 4 * m));
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertEquals(4, t.conn.dupThresh);
        t.recv();
        // S4 overtaken by S5-S7.
        t.write(bytes(4 * m, 2));
        assertEquals(4, t.recv().size());
        final int s4 = s + 4 * m;
        for (int i = 2; i <= 4; i++)
        {
            t.send(t.in().ack(s4).sack(s4 + m, s4 + i * m));
        }
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "no fast retransmit for a reordering of three");
        t.send(t.in().ack(s4 + 4 * m));
        assertEquals(s4 + 4 * m, t.conn.sndUna);
    }

    /**
     * A scripted receiver 20 ms away (40 ms RTT) that holds back a share of the segments by 5 ms more and loses none:
     * every retransmission is spurious. It ACKs every segment with SACK (the block holding the arrival first, then the
     * most recent others, three at most) and a D-SACK for what it already had (RFC 2883). Without undo and adaptive
     * DupThresh, each reordering past three segments cost a fast retransmit and a halving: about one retransmission
     * per segment held back, at a few Mbit/s; with them, the first reorderings raise DupThresh and the D-SACKs undo
     * their reductions. Fixed seed, no timing assertion: the counts are deterministic.
     */
    @ParameterizedTest(name = "{0} reorder={1}")
    @CsvSource({"cubic,0.01", "cubic,0.02", "newreno,0.02"})
    void rfc3708_rfc6675_underReorderingFewRetransmissionsAreSpuriousAndReductionsAreUndone(final String congestionControl,
        final double reorder)
    {
        t.peerWindowScale = 7;
        t.settings().sendBufferBytes = 4 * 1024 * 1024;
        final int m = open(congestionControl);
        final ReorderingPeer peer = new ReorderingPeer(t, 20 * MS, 5 * MS, reorder, 7);
        peer.run(20_000 * MS);
        final long retransmissions = t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS);
        System.out.printf("%s reorder=%.2f 20 s: %.1f Mbit/s, segments %d, held back %d, retransmissions %d (all spurious), "
                + "fast retransmits %d, undone %d, DupThresh %d, cwnd %d segments%n",
            congestionControl, reorder, t.conn.bytesAcked() * 8 / 20e6, peer.segments, peer.heldBack, retransmissions,
            t.counter(StackCounter.TCP_FAST_RETRANSMITS), t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE),
            t.conn.dupThresh, t.conn.cwnd() / m);
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertTrue(t.conn.dupThresh > 3, "reordering seen");
        assertTrue(t.counter(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE) > 0, "spurious recoveries undone");
        assertTrue(retransmissions * 10 < peer.heldBack, "retransmissions " + retransmissions + " for " + peer.heldBack
            + " segments held back: under one in ten");
    }

    /** The receiver of {@link #rfc3708_rfc6675_underReorderingFewRetransmissionsAreSpuriousAndReductionsAreUndone}. */
    private static final class ReorderingPeer
    {
        private final TcpTestHarness t;
        private final long oneWay;
        private final long extra;
        private final double reorder;
        private final Random random;
        private final UnsafeBuffer chunk = new UnsafeBuffer(new byte[64 * 1024]);
        /** Events by time, then order: {time, order, kind (0 data arrives, 1 ACK arrives), from/ack, to, D-SACK, blocks...}. */
        private final PriorityQueue<long[]> events =
            new PriorityQueue<>((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
        private final TreeMap<Integer, Integer> held = new TreeMap<>();
        private long order;
        private int s;
        private int cum;
        int segments;
        int heldBack;

        ReorderingPeer(final TcpTestHarness t, final long oneWay, final long extra, final double reorder, final long seed)
        {
            this.t = t;
            this.oneWay = oneWay;
            this.extra = extra;
            this.reorder = reorder;
            this.random = new Random(seed);
        }

        void run(final long duration)
        {
            s = t.iss + 1;
            final long end = t.now + duration;
            fill();
            collect();
            while (t.now < end)
            {
                final long[] e = events.peek();
                final long next = e == null ? end : Math.min(e[0], end);
                if (next > t.now)
                {
                    t.advance(next - t.now);
                    collect();
                }
                if (e == null || e[0] > end)
                {
                    continue;
                }
                events.poll();
                if (e[2] == 0)
                {
                    arrive((int)e[3], (int)e[4]);
                }
                else
                {
                    final Seg a = t.in().ack(s + (int)e[3]);
                    for (int i = 5; i + 1 < e.length; i += 2)
                    {
                        a.sack(s + (int)e[i], s + (int)e[i + 1]);
                    }
                    t.send(a);
                    fill();
                }
                collect();
            }
        }

        private void fill()
        {
            while (t.conn.write(chunk, 0, chunk.capacity()) > 0)
            {
                // the application always has more
            }
            t.poll();
        }

        private void collect()
        {
            for (final Seg g : t.recv())
            {
                final int len = g.r.payloadLength;
                if (len == 0)
                {
                    continue;
                }
                segments++;
                long at = t.now + oneWay;
                if (random.nextDouble() < reorder)
                {
                    at += extra;
                    heldBack++;
                }
                events.add(new long[] {at, order++, 0, g.r.seq - s, g.r.seq - s + len});
            }
        }

        private void arrive(final int from, final int to)
        {
            final boolean duplicate = to <= cum || covered(from, to);
            if (to > cum)
            {
                add(Math.max(from, cum), to);
                final Map.Entry<Integer, Integer> first = held.firstEntry();
                if (first != null && first.getKey() <= cum)
                {
                    cum = Math.max(cum, first.getValue());
                    held.remove(first.getKey());
                }
            }
            // Blocks: a D-SACK first (RFC 2883), then the block holding the arrival, then the most recent others.
            final long[] ack = new long[5 + 2 * 3];
            int n = 0;
            if (duplicate)
            {
                ack[5] = from;
                ack[6] = to;
                n++;
            }
            final Map.Entry<Integer, Integer> mine = held.floorEntry(from);
            if (mine != null && mine.getValue() > from && n < 3)
            {
                ack[5 + 2 * n] = mine.getKey();
                ack[6 + 2 * n] = mine.getValue();
                n++;
            }
            for (final Map.Entry<Integer, Integer> b : held.descendingMap().entrySet())
            {
                if (n >= 3)
                {
                    break;
                }
                if (mine == null || !b.getKey().equals(mine.getKey()))
                {
                    ack[5 + 2 * n] = b.getKey();
                    ack[6 + 2 * n] = b.getValue();
                    n++;
                }
            }
            final long[] e = java.util.Arrays.copyOf(ack, 5 + 2 * n);
            e[0] = t.now + oneWay;
            e[1] = order++;
            e[2] = 1;
            e[3] = cum;
            events.add(e);
        }

        private boolean covered(final int from, final int to)
        {
            final Map.Entry<Integer, Integer> e = held.floorEntry(from);
            return e != null && e.getValue() >= to;
        }

        private void add(final int from, final int to)
        {
            int l = from;
            int r = to;
            final Map.Entry<Integer, Integer> below = held.floorEntry(l);
            if (below != null && below.getValue() >= l)
            {
                l = below.getKey();
                r = Math.max(r, below.getValue());
                held.remove(below.getKey());
            }
            Map.Entry<Integer, Integer> above = held.ceilingEntry(l);
            while (above != null && above.getKey() <= r)
            {
                r = Math.max(r, above.getValue());
                held.remove(above.getKey());
                above = held.ceilingEntry(l);
            }
            held.put(l, r);
        }
    }
}
