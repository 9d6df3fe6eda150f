package io.nicstack.stack.tcp;

import static io.nicstack.stack.tcp.TcpTestHarness.PEER_IP;
import static io.nicstack.stack.tcp.TcpTestHarness.PEER_PORT;
import static io.nicstack.stack.tcp.TcpTestHarness.bytes;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static io.nicstack.stack.wire.TcpHeader.SYN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

/**
 * ICMP errors reach the connection that sent the quoted segment (RFC 9293 §3.9.2 MUST-54), which believes only
 * errors quoting a sequence number in flight (RFC 5927 §4.1), ends an opening connection on a hard error (SHLD-26)
 * and otherwise keeps a soft error for the application (MUST-56, SHLD-25; RFC 5461 for hard errors once synchronized).
 */
class IcmpToTcpTest
{
    private static final int PORT_UNREACHABLE = 3;
    private static final int DESTINATION_UNREACHABLE = 3;

    private final TcpTestHarness t = new TcpTestHarness();

    /** Sends the SYN of an active open and returns the connection, ISS and ephemeral port recorded. */
    private TcpConnection synSent()
    {
        t.connect();
        return t.conn;
    }

    @Test
    void rfc9293_must54_shld26_portUnreachableForOurSynRefusesTheConnectionAtOnce()
    {
        final TcpConnection c = synSent();
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, PORT_UNREACHABLE, t.ourSegment(t.iss)));
        t.poll();
        assertEquals(TcpState.CLOSED, c.state());
        assertEquals(TcpConnection.CLOSE_REFUSED, t.events.closedReason);
        assertEquals(1, t.counter(StackCounter.TCP_ICMP_ERRORS));
        t.advanceMs(5_000);
        assertTrue(t.recv().isEmpty(), "no SYN retransmission after the refusal");
    }

    @Test
    void rfc9293_must56_hostUnreachableForOurSynIsSoftTheSynIsRetried()
    {
        final TcpConnection c = synSent();
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 1, t.ourSegment(t.iss)));
        t.poll();
        assertEquals(TcpState.SYN_SENT, c.state());
        assertEquals(DESTINATION_UNREACHABLE << 8 | 1, c.softError());
        assertEquals(-1, t.events.closedReason);
        t.advanceMs(1_100);
        assertTrue(t.recv().stream().anyMatch(s -> s.r.hasFlags(SYN) && s.r.seq == t.iss), "the SYN is retransmitted");
    }

    /** RFC 5927 §4.1: an error whose quoted sequence number was never sent, or already acknowledged, is ignored. */
    @Test
    void errorsQuotingASequenceNumberNotInFlightAreIgnored()
    {
        final TcpConnection c = synSent();
        for (final int seq : new int[] {t.iss + 1, t.iss - 1, t.iss + 100_000, t.iss ^ 0x8000_0000})
        {
            t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, PORT_UNREACHABLE, t.ourSegment(seq)));
            t.poll();
        }
        assertEquals(TcpState.SYN_SENT, c.state());
        assertEquals(0, c.softError());
        assertEquals(4, t.counter(StackCounter.TCP_ICMP_IGNORED));
        assertEquals(0, t.counter(StackCounter.TCP_ICMP_ERRORS));
    }

    /** RFC 5461 §4: once synchronized, a hard error is only a soft one; the data still gets through. */
    @Test
    void aHardErrorOnAnEstablishedConnectionIsSoft()
    {
        t.passiveOpen();
        t.write(bytes(10, 3));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(10, 3)));
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, PORT_UNREACHABLE, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertEquals(DESTINATION_UNREACHABLE << 8 | PORT_UNREACHABLE, t.conn.softError());
        t.send(t.in().ack(t.iss + 11));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    /**
     * A soft error is kept for the application only while nothing gets through: once new data is acknowledged it is
     * stale, and must not be reported when the connection ends much later (Linux's tcp_ack clears sk_err_soft on
     * progress). A duplicate ACK is no progress. The same holds for "fragmentation needed" once the smaller segments
     * are acknowledged.
     */
    @Test
    void rfc1122_aSoftErrorIsForgottenOnceNewDataIsAcknowledged()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(10, 3));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(10, 3)));
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 1, t.ourSegment(t.iss + 1)));
        t.poll();
        t.send(t.in().ack(t.iss + 1));
        assertEquals(DESTINATION_UNREACHABLE << 8 | 1, t.conn.softError(), "a duplicate ACK is no progress");
        t.send(t.in().ack(t.iss + 11));
        assertEquals(0, t.conn.softError());

        t.write(bytes(3000, 4));
        t.recv();
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 1000, t.ourSegment(t.iss + 11)));
        t.poll();
        assertEquals(DESTINATION_UNREACHABLE << 8 | 4, t.conn.softError());
        t.recv();
        t.send(t.in().ack(t.iss + 3011));
        assertEquals(0, t.conn.softError(), "the path MTU step worked");
    }

    /** Our SYN drew a soft error and was sent again; the SYN,ACK that acknowledges it makes that error stale. */
    @Test
    void rfc1122_aSoftErrorForOurSynIsForgottenOnceTheSynIsAcknowledged()
    {
        t.connect();
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 1, t.ourSegment(t.iss)));
        t.poll();
        assertEquals(DESTINATION_UNREACHABLE << 8 | 1, t.conn.softError());
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 1));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertEquals(0, t.conn.softError());
    }

    /** RFC 1122 §4.2.3.9: a soft error with no progress after it is still there when the connection times out. */
    @Test
    void rfc1122_aSoftErrorIsStillReportedWhenTheConnectionThenTimesOut()
    {
        t.passiveOpen();
        t.write(bytes(10, 3));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(10, 3)));
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 1, t.ourSegment(t.iss + 1)));
        t.poll();
        for (int step = 0; step < 7200 && t.conn.state() != TcpState.CLOSED; step++)
        {
            t.advance(TcpTestHarness.SECOND);
            t.recv();
        }
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(DESTINATION_UNREACHABLE << 8 | 1, t.conn.softError());
    }

    /** No connection for the quoted ports, a quote of another host's datagram, or a truncated quote: nothing happens. */
    @Test
    void errorsForNoConnectionOrMalformedQuotesChangeNothing()
    {
        final TcpConnection c = synSent();
        final byte[] otherPorts = t.frame(t.in().ports(t.localPort + 1, PEER_PORT).from(TcpTestHarness.STACK_IP).to(PEER_IP).seq(t.iss));
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, PORT_UNREACHABLE, otherPorts));
        final byte[] notOurs = t.frame(t.in().ports(t.localPort, PEER_PORT).from(PEER_IP).to(PEER_IP).seq(t.iss));
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, PORT_UNREACHABLE, notOurs));
        final byte[] whole = t.icmpError(DESTINATION_UNREACHABLE, PORT_UNREACHABLE, t.ourSegment(t.iss));
        for (int cut = 1; cut <= 12; cut++)
        {
            // Cut into the quoted TCP header and the quoted IPv4 header, keeping the frame's own lengths consistent.
            t.device.inject(truncatedIcmp(whole, cut));
        }
        t.poll();
        assertEquals(TcpState.SYN_SENT, c.state());
        assertEquals(1, t.counter(StackCounter.TCP_ICMP_IGNORED), "only the other-ports error reached TCP");
        assertEquals(0, t.counter(StackCounter.TCP_ICMP_ERRORS));
        assertEquals(0, t.stack.counters().unaccountedFrames(), "every frame ended in a counter");
    }

    /**
     * RFC 1191 path MTU discovery: fragmentation needed with a next-hop MTU of 1000 shrinks the send MSS to 960 and
     * sends what was in flight again at once in segments that fit; the MSS never goes below 552 - 40; a larger
     * report changes nothing.
     */
    @Test
    void fragmentationNeededShrinksTheMssAndResendsWhatIsInFlight()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        assertEquals(1460, t.conn.sendMss());
        final byte[] data = bytes(3000, 9);
        t.write(data);
        final java.util.List<TcpTestHarness.Seg> first = t.recv();
        assertEquals(3, first.size(), "1460 + 1460 + 80");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 1000, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(960, t.conn.sendMss());
        assertEquals(1, t.counter(StackCounter.TCP_PATH_MTU_REDUCTIONS));
        assertResentInSegmentsThatFit(t.recv(), t.iss + 1, 960, data, "all 3000 bytes sent again, in order");
        assertEquals(TcpState.ESTABLISHED, t.conn.state());

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 1200, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(960, t.conn.sendMss(), "a larger MTU is not a reduction");
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 100, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(TcpConnection.MIN_PATH_MTU - 40, t.conn.sendMss(), "floor against forged tiny MTUs");
        t.send(t.in().ack(t.iss + 3001));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    /**
     * A link on the path smaller than the floor (552): the segments are cut to the floor and sent without DF, so the
     * router that has the small link fragments them instead of dropping them (Linux: a path MTU below min_pmtu is
     * locked at it, and its datagrams go without DF). Before any report, and after one at or above the floor, DF is set.
     */
    @Test
    void aPathMtuBelowTheFloorSendsWithoutDontFragment()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final byte[] data = bytes(3000, 5);
        t.write(data);
        final java.util.List<TcpTestHarness.Seg> first = t.recv();
        assertTrue(first.stream().allMatch(seg -> seg.ipDontFragment), "DF on every segment (RFC 1191)");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 600, t.ourSegment(t.iss + 1)));
        t.poll();
        final java.util.List<TcpTestHarness.Seg> at600 = t.recv();
        assertEquals(560, t.conn.sendMss());
        assertTrue(at600.stream().allMatch(seg -> seg.ipDontFragment), "600 is above the floor: still DF");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 296, t.ourSegment(t.iss + 1)));
        t.poll();
        final java.util.List<TcpTestHarness.Seg> below = t.recv();
        assertEquals(TcpConnection.MIN_PATH_MTU - 40, t.conn.sendMss());
        assertResentInSegmentsThatFit(below, t.iss + 1, TcpConnection.MIN_PATH_MTU - 40, data, "sent again at the floor");
        assertTrue(below.stream().noneMatch(seg -> seg.ipDontFragment), "below the floor: no DF");

        // Another report below the floor, already at it: still no DF for new data.
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 296, t.ourSegment(t.iss + 1)));
        t.poll();
        t.recv();
        t.send(t.in().ack(t.iss + 3001));
        t.write(bytes(100, 6));
        final TcpTestHarness.Seg next = t.recv().get(0);
        assertFalse(next.ipDontFragment, "the path stays locked at the floor");
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    /**
     * A report at the floor (552) lowers the MSS to it with DF still set; a later one below the floor changes no MSS but
     * clears DF. The segments in flight went with DF and the small link dropped them: they go again at once without DF,
     * as when the MSS shrinks (RFC 1191 §6.5: a segment too big is no congestion, so cwnd stays), not at the timeout. A
     * repeated report, the path already locked, sends nothing again (a forged stream of them must not force resends).
     */
    @Test
    void rfc1191_aReportBelowTheFloorAfterOneAtTheFloorResendsWhatIsInFlightWithoutDontFragment()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final byte[] data = bytes(3000, 7);
        t.write(data);
        assertEquals(3, t.recv().size());
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, TcpConnection.MIN_PATH_MTU, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(TcpConnection.MIN_PATH_MTU - 40, t.conn.sendMss());
        assertTrue(t.recv().stream().allMatch(seg -> seg.ipDontFragment), "at the floor: still DF");
        final long cwnd = t.conn.cwnd();

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 296, t.ourSegment(t.iss + 1)));
        t.poll();
        final java.util.List<TcpTestHarness.Seg> below = t.recv();
        assertResentInSegmentsThatFit(below, t.iss + 1, TcpConnection.MIN_PATH_MTU - 40, data, "sent again at once");
        assertTrue(below.stream().noneMatch(seg -> seg.ipDontFragment), "without DF");
        assertEquals(cwnd, t.conn.cwnd(), "no congestion response");
        assertEquals(1, t.counter(StackCounter.TCP_PATH_MTU_REDUCTIONS), "the MSS did not change again");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 296, t.ourSegment(t.iss + 1)));
        t.poll();
        t.recvNothing();
        t.send(t.in().ack(t.iss + 3001));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    /**
     * A peer MSS below the floor (500): the first report below the floor changes no MSS, but clears DF, and what is in
     * flight (dropped by the small link) goes again at once without DF; a repeated report sends nothing again.
     */
    @Test
    void rfc1191_aReportBelowTheFloorWithAPeerMssBelowItResendsWhatIsInFlightWithoutDontFragment()
    {
        t.peerMss = 500;
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final byte[] data = bytes(2000, 8);
        t.write(data);
        assertTrue(t.recv().stream().allMatch(seg -> seg.ipDontFragment), "DF on every segment (RFC 1191)");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 296, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(500, t.conn.sendMss());
        final java.util.List<TcpTestHarness.Seg> below = t.recv();
        assertResentInSegmentsThatFit(below, t.iss + 1, 500, data, "sent again at once");
        assertTrue(below.stream().noneMatch(seg -> seg.ipDontFragment), "without DF");
        assertEquals(0, t.counter(StackCounter.TCP_PATH_MTU_REDUCTIONS));

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 296, t.ourSegment(t.iss + 1)));
        t.poll();
        t.recvNothing();
        t.send(t.in().ack(t.iss + 2001));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    /**
     * A router from before RFC 1191 says "fragmentation needed" without the next-hop MTU (0): the MSS steps down RFC
     * 1191 §7's plateaus below the datagram it refused (1500: 1492, then 1006, then 508, which is below the floor: the
     * floor without DF), and a stale report about a datagram larger than those now sent changes nothing. Before, every
     * such report meant 576 with DF kept: on a path smaller than 576 every segment went on being dropped.
     */
    @Test
    void fragmentationNeededWithoutAnMtuStepsDownThePlateausOfRfc1191()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final byte[] data = bytes(3000, 4);
        t.write(data);
        final TcpTestHarness.Seg original = t.recv().get(0);
        assertEquals(1500 + 14, original.frame.length);

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 0, original.frame));
        t.poll();
        assertEquals(1492 - 40, t.conn.sendMss());
        final java.util.List<TcpTestHarness.Seg> at1492 = t.recv();
        assertResentInSegmentsThatFit(at1492, t.iss + 1, 1492 - 40, data, "sent again within the plateau");
        assertTrue(at1492.stream().allMatch(seg -> seg.ipDontFragment), "DF on: still discovering");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 0, original.frame));
        t.poll();
        assertEquals(1492 - 40, t.conn.sendMss(), "a stale report about a 1500-byte datagram changes nothing");
        assertTrue(t.recv().isEmpty());

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 0, at1492.get(0).frame));
        t.poll();
        assertEquals(1006 - 40, t.conn.sendMss());
        final java.util.List<TcpTestHarness.Seg> at1006 = t.recv();
        assertTrue(at1006.stream().allMatch(seg -> seg.ipDontFragment));

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 0, at1006.get(0).frame));
        t.poll();
        assertEquals(TcpConnection.MIN_PATH_MTU - 40, t.conn.sendMss(), "508 is below the floor");
        final java.util.List<TcpTestHarness.Seg> atFloor = t.recv();
        assertResentInSegmentsThatFit(atFloor, t.iss + 1, TcpConnection.MIN_PATH_MTU - 40, data, "sent again at the floor");
        assertTrue(atFloor.stream().noneMatch(seg -> seg.ipDontFragment), "without DF: the small link's router fragments");
        assertEquals(3, t.counter(StackCounter.TCP_PATH_MTU_REDUCTIONS));
    }

    /**
     * RFC 1191 §6.3: a lowered path MTU is tried at its old size again after 10 minutes, not before; if the path is still
     * small, the next "fragmentation needed" lowers it again.
     */
    @Test
    void aLoweredPathMtuIsTriedAgainAfterTenMinutes()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(1460, 1));
        assertEquals(1, t.recv().size());
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 1000, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(960, t.conn.sendMss());
        t.recv(); // the 1460 bytes again, in two segments
        t.send(t.in().ack(t.iss + 1461));

        t.advance(TcpConnection.PATH_MTU_RAISE_NANOS - 1_000_000_000L);
        t.write(bytes(3000, 2));
        assertTrue(t.recv().stream().allMatch(g -> g.payload.length <= 960), "still the lowered size before 10 minutes");
        t.send(t.in().ack(t.iss + 4461));
        assertEquals(0, t.counter(StackCounter.TCP_PATH_MTU_RAISES));

        t.advance(1_000_000_000L);
        t.write(bytes(3000, 3));
        final java.util.List<TcpTestHarness.Seg> tried = t.recv();
        assertEquals(1460, tried.get(0).payload.length, "full-sized again after 10 minutes");
        assertEquals(1460, t.conn.sendMss());
        assertEquals(1, t.counter(StackCounter.TCP_PATH_MTU_RAISES));

        // The path is still small: lowered again, and what is in flight goes again in segments that fit.
        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 1000, t.ourSegment(t.iss + 4461)));
        t.poll();
        assertEquals(960, t.conn.sendMss());
        assertEquals(2, t.counter(StackCounter.TCP_PATH_MTU_REDUCTIONS));
        assertTrue(t.recv().stream().allMatch(g -> g.payload.length <= 960));
    }

    /**
     * A path MTU report in the middle of SACK loss recovery: everything from SND.UNA goes again in smaller segments,
     * recovery and the scoreboard start over, and once the peer acknowledges it all the connection is clean. The
     * connection has first filled its initial window, so that the loss reduces cwnd from a window it used (RFC 9438
     * §4.6) and the whole resend fits in the reduced window.
     */
    @Test
    void fragmentationNeededDuringSackRecoveryResendsEverythingAndRecovers()
    {
        final TcpTestHarness s = new TcpTestHarness();
        s.peerSackPermitted = true;
        s.passiveOpen();
        s.conn.settings().noDelay = true;
        s.write(bytes(10 * 1460, 10));
        assertEquals(10, s.recv().size());
        s.send(s.in().ack(s.conn.sndMax));
        final int una = s.conn.sndUna;
        final byte[] data = bytes(5 * 1460, 11);
        s.write(data);
        assertEquals(5, s.recv().size());
        // The first segment is lost; the peer SACKs the other four with three duplicate ACKs (recovery starts).
        for (int i = 2; i <= 4; i++)
        {
            s.send(s.in().ack(una).sack(una + 1460, una + i * 1460));
        }
        final java.util.List<TcpTestHarness.Seg> fastRetransmit = s.recv();
        assertTrue(fastRetransmit.stream().anyMatch(g -> g.r.seq == una), "fast retransmit of the hole");

        s.device.inject(s.icmpError(DESTINATION_UNREACHABLE, 4, 1000, s.ourSegment(una)));
        s.poll();
        assertResentInSegmentsThatFit(s.recv(), una, 960, data, "everything from SND.UNA sent again, in order");
        s.send(s.in().ack(una + data.length));
        assertEquals(TcpState.ESTABLISHED, s.conn.state());
        s.write(bytes(500, 12));
        final java.util.List<TcpTestHarness.Seg> next = s.recv();
        assertEquals(1, next.size());
        assertEquals(una + data.length, next.get(0).r.seq, "new data continues after everything acknowledged");
    }

    /**
     * A path MTU report during NewReno recovery ends the recovery with the go-back, and with it the window inflation
     * (RFC 6582 §3.2 step 3): cwnd falls to ssthresh instead of sending the inflated window's worth at once.
     */
    @Test
    void fragmentationNeededDuringNewRenoRecoveryDeflatesTheWindow()
    {
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(10 * 1460, 13));
        assertEquals(10, t.recv().size());
        // The first segment is lost: eight duplicate ACKs inflate cwnd to ssthresh + 8 segments.
        for (int i = 0; i < 8; i++)
        {
            t.send(t.in());
        }
        t.recv();
        final long ssthresh = t.conn.ssthresh();
        assertTrue(t.conn.cwnd() > ssthresh, "inflated during recovery");

        t.device.inject(t.icmpError(DESTINATION_UNREACHABLE, 4, 1000, t.ourSegment(t.iss + 1)));
        t.poll();
        assertEquals(ssthresh, t.conn.cwnd(), "deflated to ssthresh");
        final long resent = t.recv().stream().mapToLong(g -> g.payload.length).sum();
        assertTrue(resent <= ssthresh, "no more than the deflated window sent at once: " + resent);
    }

    /** The ICMP error frame with its quote shortened by {@code cut} bytes (IPv4 length and ICMP checksum redone). */
    private byte[] truncatedIcmp(final byte[] frame, final int cut)
    {
        final byte[] icmp = Arrays.copyOfRange(frame, 14 + 20, frame.length - cut);
        icmp[2] = 0;
        icmp[3] = 0;
        new io.nicstack.stack.wire.IcmpHeader().wrap(new org.agrona.concurrent.UnsafeBuffer(icmp), 0, icmp.length).updateChecksum();
        return io.nicstack.stack.Frames.fromPeer(t.mac, io.nicstack.stack.Frames.ipv4(PEER_IP, TcpTestHarness.STACK_IP,
            io.nicstack.stack.wire.Ipv4Header.PROTOCOL_ICMP, 500 + cut, false, 0, icmp));
    }

    /** {@code segments} carry {@code data} from {@code sndUna} on, contiguous, none over {@code maxPayload}. */
    private static void assertResentInSegmentsThatFit(final java.util.List<TcpTestHarness.Seg> segments, final int sndUna,
        final int maxPayload, final byte[] data, final String what)
    {
        int seq = sndUna;
        final java.io.ByteArrayOutputStream resent = new java.io.ByteArrayOutputStream();
        for (final TcpTestHarness.Seg g : segments)
        {
            assertEquals(seq, g.r.seq, "contiguous from SND.UNA");
            assertTrue(g.payload.length <= maxPayload, "fits the path: " + g.payload.length);
            resent.writeBytes(g.payload);
            seq += g.payload.length;
        }
        assertTrue(java.util.Arrays.equals(data, resent.toByteArray()), what);
    }
}
