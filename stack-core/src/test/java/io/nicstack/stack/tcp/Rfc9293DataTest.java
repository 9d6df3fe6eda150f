package io.nicstack.stack.tcp;

import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.Frames;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * RFC 9293 §3.7.4, §3.8: Nagle, retransmission and connection failures, keep-alives, window
 * management (zero-window probing, SWS avoidance), ACK generation, PUSH, ICMP and IP options
 * (Appendix B "Retransmissions", "Generating ACKs", "Sending Data", "Connection Failures",
 * "Send Keep-alive Packets", "Window", "PUSH flag", "IP Options", "Receiving ICMP Messages").
 */
class Rfc9293DataTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    // ------------------------------------------------------------------------------------------
    // Nagle, PUSH
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_shld7_nagleHoldsASecondSmallSegment()
    {
        t.passiveOpen();
        t.write(bytes(10, 1));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(10, 1)));
        t.write(bytes(10, 2));
        t.recvNothing();
        t.send(t.in().ack(t.iss + 11));
        t.recv(t.out().seq(t.iss + 11).flags(ACK | PSH).payload(bytes(10, 2)));
    }

    /**
     * Nagle as Minshall refined it (Linux's tcp_minshall_check): what it holds back is a second small segment, not a
     * small tail behind full ones. The tail of a 1560-byte write goes with its full segment; before, it waited for the
     * ACK of the lone full segment, which a peer delays (40 ms on Linux, 200 ms on Windows, up to 500 ms).
     */
    @Test
    void nagleMinshall_aSmallTailAfterFullSegmentsIsNotHeldForTheirAck()
    {
        t.passiveOpen();
        t.write(bytes(1560, 5));
        t.recv(t.out().payloadLength(1460), t.out().seq(t.iss + 1461).flags(ACK | PSH).payloadLength(100));
        t.write(bytes(10, 6));
        t.recvNothing(); // the 100 is a small segment unacknowledged
        t.send(t.in().ack(t.iss + 1461));
        t.recvNothing(); // still
        t.send(t.in().ack(t.iss + 1561));
        t.recv(t.out().seq(t.iss + 1561).flags(ACK | PSH).payloadLength(10));
    }

    @Test
    void rfc9293_must17_applicationCanDisableNagle()
    {
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(10, 1));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(10, 1)));
        t.write(bytes(10, 2));
        t.recv(t.out().seq(t.iss + 11).flags(ACK | PSH).payload(bytes(10, 2)));
    }

    @Test
    void rfc9293_must60_must61_pshOnLastSegmentAndNoIndefiniteBuffering()
    {
        // The API has no PUSH flag, so every write is treated as pushed: PSH on the segment that
        // empties the buffer, and a held tail goes as soon as Nagle allows.
        t.passiveOpen();
        t.write(bytes(3000, 3));
        t.recv(t.out().payloadLength(1460), t.out().seq(t.iss + 1461).payloadLength(1460),
            t.out().seq(t.iss + 2921).flags(ACK | PSH).payloadLength(80));
        t.write(bytes(10, 4)); // a small segment (the 80) is unacknowledged: this one waits
        t.recvNothing();
        t.send(t.in().ack(t.iss + 3001));
        t.recv(t.out().seq(t.iss + 3001).flags(ACK | PSH).payloadLength(10));
    }

    // ------------------------------------------------------------------------------------------
    // Retransmission and failures (§3.8.1, §3.8.3)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_must18_karnNoRttSampleFromRetransmittedSegment()
    {
        t.activeOpen();
        final long rtoAfterHandshake = t.conn.rtoNanos();
        final long srttAfterHandshake = t.conn.srttNanos();
        t.write(bytes(100, 4));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        t.advance(rtoAfterHandshake);
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        assertEquals(2 * rtoAfterHandshake, t.conn.rtoNanos());
        // The ACK arrives 100 ms later: ambiguous (original or retransmission?), so no sample and the backoff stays.
        t.advanceMs(100);
        t.send(t.in().ack(t.iss + 101));
        assertEquals(srttAfterHandshake, t.conn.srttNanos());
        assertEquals(2 * rtoAfterHandshake, t.conn.rtoNanos());
        // A fresh segment acknowledged after 50 ms gives a sample (RFC 6298 §5.7: the backoff is cleared by it).
        t.write(bytes(100, 5));
        t.recv(t.out().seq(t.iss + 101).flags(ACK | PSH).payloadLength(100));
        t.advanceMs(50);
        t.send(t.in().ack(t.iss + 201));
        assertNotEquals(srttAfterHandshake, t.conn.srttNanos());
        assertTrue(t.conn.rtoNanos() < 2 * rtoAfterHandshake);
    }

    @Test
    void rfc9293_must19_timeoutShrinksToLossWindowThenSlowStart()
    {
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        t.write(bytes(20 * 1460, 6));
        final List<Seg> flight = t.recv();
        assertEquals(10, flight.size(), "initial window of 10 segments (RFC 6928)");
        // Timeout: only the first segment goes again (cwnd = 1 MSS, RFC 5681 (5)) and the RTO doubles.
        final long rto = t.conn.rtoNanos();
        t.advance(rto);
        t.recv(t.out().payloadLength(1460));
        assertEquals(1460, t.conn.cwnd());
        t.advance(2 * rto - MS);
        t.recvNothing();
        t.advance(MS);
        t.recv(t.out().payloadLength(1460));
        // Its ACK: slow start, two segments.
        t.send(t.in().ack(t.iss + 1461));
        t.recv(t.out().seq(t.iss + 1461).payloadLength(1460), t.out().seq(t.iss + 2921).payloadLength(1460));
    }

    @Test
    void rfc9293_must20_must21_connectionClosedAfterR2RetransmissionsSetPerConnection()
    {
        t.passiveOpen();
        t.conn.settings().r2Retransmits = 3; // this connection only
        final long rto = t.conn.rtoNanos();
        t.write(bytes(100, 7));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        for (int i = 0; i < 3; i++)
        {
            t.advance(rto << i);
            t.recv(t.out().flags(ACK | PSH).payloadLength(100));
            assertEquals(TcpState.ESTABLISHED, t.conn.state());
        }
        // R1 (3 retransmissions) reached: counted as the "negative advice" signal.
        assertEquals(1, t.counter(StackCounter.TCP_R1_REACHED));
        t.advance(rto << 3);
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        t.recvNothing();
        assertEquals(15, t.settings().r2Retransmits, "the default R2 is untouched");
    }

    @Test
    void rfc9293_must20_shld9_atR1IpIsAdvisedAndTheApplicationToldOnce()
    {
        t.passiveOpen();
        t.conn.settings().r1Retransmits = 2;
        t.conn.settings().r2Retransmits = 4;
        final long rto = t.conn.rtoNanos();
        t.write(bytes(100, 7));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        t.advance(rto);
        assertEquals(List.of(), unicastArpPollsOfThePeer(), "one retransmission: no advice yet");
        assertEquals(0, t.events.deliveryProblems);
        t.advance(rto << 1);
        // R1: the application is told once, and IP polls the peer's cached MAC before trusting it further (RFC 1122
        // §2.3.2.1's higher-layer advice); the retransmission still goes to the cached MAC meanwhile.
        assertEquals(1, t.events.deliveryProblems);
        assertEquals(1, unicastArpPollsOfThePeer().size(), "a unicast ARP request to the cached MAC");
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "advice only: the connection lives on");
        t.advance(rto << 2);
        assertEquals(1, t.events.deliveryProblems, "told once per episode, not per retransmission");
        // An answer ends the episode; the next one tells the application again.
        t.send(t.in().ack(t.iss + 101));
        t.write(bytes(10, 8));
        t.recv();
        t.advance(t.conn.rtoNanos());
        t.advance(t.conn.rtoNanos());
        assertEquals(2, t.events.deliveryProblems);
    }

    /** ARP requests the stack sent since the last look, unicast to the peer's MAC (polls of a cached entry). */
    private List<byte[]> unicastArpPollsOfThePeer()
    {
        final List<byte[]> polls = new ArrayList<>();
        for (final byte[] frame : t.device.takeSent())
        {
            final boolean arp = (((frame[12] & 0xFF) << 8) | (frame[13] & 0xFF)) == EthernetFrame.ETHERTYPE_ARP;
            final int operation = ((frame[EthernetFrame.HEADER_LENGTH + 6] & 0xFF) << 8) | (frame[EthernetFrame.HEADER_LENGTH + 7] & 0xFF);
            if (arp && operation == ArpPacket.OP_REQUEST && MacAddress.read(new UnsafeBuffer(frame), 0) == Frames.PEER_MAC)
            {
                polls.add(frame);
            }
        }
        return polls;
    }

    /**
     * A retransmission timeout whose handling throws part way (a bug anywhere under it: Timers catches the exception
     * and the stack counts an internal error) costs that expiry only. The connection's timers stay armed: its data goes
     * again and R2 still ends it (MUST-20). Before, the expiry had cleared the wheel timer, which only the end of the
     * expiry armed again: the deadlines stayed set with no timer behind them, and nothing was retransmitted or timed
     * out ever again (the connection, its table entry and its buffers held for ever).
     */
    @Test
    void rfc9293_must20_r2StillEndsAConnectionWhoseRetransmissionTimeoutFailedOnce()
    {
        t.passiveOpen();
        t.conn.settings().r2Retransmits = 3;
        t.write(bytes(100, 7));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        expireWhileTransmissionsFail(t.conn.rtoNanos());
        assertEquals(1, t.counter(StackCounter.INTERNAL_ERRORS), "the expiry threw");
        final int retransmissions = segmentsUntilClosed(600);
        assertTrue(retransmissions > 0, "the data goes again after the failed expiry");
        assertEquals(TcpState.CLOSED, t.conn.state(), "R2 ends the connection: " + t.conn.describe());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    /**
     * As above, for a SYN whose retransmission throws before the timer's next deadline is set (MUST-20, MUST-23): the
     * SYN still goes again, and the attempt still ends. Before, SYN-SENT had no deadline left at all.
     */
    @Test
    void rfc9293_must20_must23_aSynWhoseRetransmissionFailedOnceIsSentAgainAndStillTimesOut()
    {
        t.connect();
        expireWhileTransmissionsFail(t.conn.rtoNanos());
        assertEquals(1, t.counter(StackCounter.INTERNAL_ERRORS), "the expiry threw");
        assertEquals(TcpState.SYN_SENT, t.conn.state());
        final int syns = segmentsUntilClosed(1000);
        assertTrue(syns > 0, "the SYN goes again after the failed expiry");
        assertEquals(TcpState.CLOSED, t.conn.state(), "the attempt ends: " + t.conn.describe());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    /** Move the clock {@code nanos} on while every transmission throws (a claim left open on the test device). */
    private void expireWhileTransmissionsFail(final long nanos)
    {
        t.device.claim();
        t.now += nanos;
        t.stack.poll(t.now); // without advance()'s ARP refresh: its reply would be the one to throw
        t.device.abort();
        t.recvNothing();
    }

    /** Advance a second at a time, for at most {@code seconds}, until the connection closes; the segments it sent. */
    private int segmentsUntilClosed(final int seconds)
    {
        int sent = 0;
        for (int i = 0; i < seconds && t.conn.state() != TcpState.CLOSED; i++)
        {
            t.advance(SECOND);
            sent += t.recv().size();
        }
        return sent;
    }

    @Test
    void rfc9293_must22_must23_synRetransmittedForAtLeastThreeMinutes()
    {
        final Seg syn = t.connect();
        final long start = t.now;
        final List<Long> sentAt = new ArrayList<>();
        while (t.conn.state() == TcpState.SYN_SENT && t.now - start < 1000 * SECOND)
        {
            t.advance(SECOND);
            for (final Seg s : t.recv())
            {
                assertEquals(SYN, s.r.flags);
                assertEquals(syn.r.seq, s.r.seq, "the same SYN");
                sentAt.add((t.now - start) / SECOND);
            }
        }
        // RFC 6298 backoff from 1 s, capped at the 120 s maximum RTO.
        assertEquals(List.of(1L, 3L, 7L, 15L, 31L, 63L, 127L, 247L), sentAt);
        final long gaveUpAfter = (t.now - start) / SECOND;
        assertEquals(367, gaveUpAfter);
        assertTrue(gaveUpAfter >= 180, "R2 for a SYN is at least 3 minutes");
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
    }

    // ------------------------------------------------------------------------------------------
    // Keep-alives (§3.8.4)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_must24_must25_keepAliveOffByDefault()
    {
        assertFalse(new TcpSettings().keepAlive);
        t.passiveOpen();
        t.advance(3 * 3600 * SECOND);
        t.recvNothing();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc9293_must24_must28_keepAliveRequestedWithDefaultIntervalOfTwoHours()
    {
        assertTrue(new TcpSettings().keepAliveIdleNanos >= 7200 * SECOND);
        t.settings().keepAlive = true;
        t.passiveOpen();
        t.advance(7200 * SECOND - MS);
        t.recvNothing();
        t.advance(2 * MS);
        // SHLD-12: no data, SEG.SEQ = SND.NXT - 1.
        t.recv(t.out().seq(t.iss));
        t.send(t.in());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc9293_must26_keepAliveOnlyAfterIdleInterval()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 100 * SECOND;
        t.passiveOpen();
        // Traffic every 60 s keeps the connection from ever being idle for 100 s.
        for (int i = 1; i <= 5; i++)
        {
            t.advance(60 * SECOND);
            t.send(t.in().seq(t.irs + i).flags(ACK | PSH).payload(bytes(1, i)));
            t.advanceMs(40);
            t.recv(t.out().ack(t.irs + 1 + i));
        }
        t.advance(100 * SECOND - 40 * MS - MS);
        t.recvNothing();
        t.advance(2 * MS);
        t.recv(t.out().seq(t.iss).ack(t.irs + 6));
    }

    @Test
    void rfc9293_must27_keepAliveIntervalConfigurable()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = 2 * SECOND;
        t.passiveOpen();
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss));
        t.advance(2 * SECOND);
        t.recv(t.out().seq(t.iss));
    }

    /**
     * MUST-24: keep-alive is the application's choice, also on an established connection (the daemon's SET_OPTION).
     * Before, turning it on after the handshake armed nothing (an idle connection was never probed), and turning it
     * off left the probes running, so a silent peer still ended the connection as timed out.
     */
    @Test
    void rfc9293_must24_keepAliveTurnedOnOrOffOnAnEstablishedConnectionTakesEffectAtOnce()
    {
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = 2 * SECOND;
        t.settings().keepAliveProbes = 2;
        t.passiveOpen();
        t.advance(5 * SECOND);
        t.conn.keepAlive(true);
        t.advance(10 * SECOND - MS);
        t.recvNothing();
        t.advance(MS);
        t.recv(t.out().seq(t.iss));
        t.conn.keepAlive(false);
        t.advance(3600 * SECOND);
        t.recvNothing();
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "no probes, so no keep-alive timeout");
        // Turned off through the settings alone, a running keep-alive stops too.
        t.conn.keepAlive(true);
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss));
        t.conn.settings().keepAlive = false;
        t.advance(3600 * SECOND);
        t.recvNothing();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    /**
     * The settings an active open is given are copied, as the stack's defaults are: one connection's keep-alive is its
     * own, and the caller's object may be reused for the next connect. Before, the connection kept the caller's
     * object, so keepAlive(true) on one turned it on for every connection opened with the same settings.
     */
    @Test
    void rfc9293_must24_keepAliveOfOneConnectionIsNotAnotherOnesWithTheSameSettings()
    {
        final TcpSettings shared = t.settings().copy();
        final TcpConnection first = t.stack.tcp().connect(PEER_IP, PEER_PORT, new TcpHandler() { }, shared);
        final TcpConnection second = t.stack.tcp().connect(PEER_IP, PEER_PORT + 1, new TcpHandler() { }, shared);
        first.keepAlive(true);
        assertTrue(first.settings().keepAlive);
        assertFalse(second.settings().keepAlive, "the other connection's keep-alive");
        assertFalse(shared.keepAlive, "the caller's settings");
        shared.noDelay = !shared.noDelay;
        assertNotEquals(shared.noDelay, second.settings().noDelay, "a change after connect is not the connection's");
    }

    /**
     * Keep-alive checks an idle connection (RFC 9293 §3.8.4, RFC 1122 §4.2.3.6): with data unacknowledged the
     * retransmission timer and R2 decide when to give up (§3.8.3), and keep-alive sends no probe (as Linux's
     * tcp_keepalive_timer, which only reschedules while packets are out or queued). Before, a short keep-alive (10 s
     * idle, three probes 1 s apart) ended a connection whose data was being retransmitted 13 s after the last ACK,
     * R2 being minutes away, and its probes drew duplicate ACKs from a live peer.
     */
    @Test
    void rfc9293_keepAliveLeavesAConnectionWithDataInFlightToTheRetransmissionTimer()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = SECOND;
        t.settings().keepAliveProbes = 3;
        t.passiveOpen();
        t.advance(5 * SECOND);
        t.write(bytes(100, 1));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        int probes = 0;
        for (int i = 0; i < 600 && t.conn.state() != TcpState.CLOSED; i++)
        {
            t.advance(100 * MS);
            for (final TcpTestHarness.Seg s : t.recv())
            {
                probes += s.r.payloadLength == 0 ? 1 : 0;
            }
        }
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "60 s of retransmissions, R2 not reached");
        assertEquals(0, probes, "no keep-alive probe while data is in flight");

        // Acknowledged, the connection is idle again: probes after the idle interval.
        t.send(t.in().ack(t.iss + 101));
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss + 100));
    }

    /**
     * Keep-alive probes a half-closed connection whose FIN is acknowledged (FIN-WAIT-2, the application still reading,
     * so no FIN-WAIT-2 timeout): nothing is in flight or waiting, the connection is idle, and a peer that vanished is
     * found out as in ESTABLISHED (Linux's tcp_keepalive_timer probes in FIN_WAIT2 too). The probe is
     * SEG.SEQ = SND.NXT - 1 (SHLD-12), here the FIN's sequence number. Before, the idle test took SND.UNA, one past
     * the end of the data once the FIN is acknowledged, for data waiting: no probe ever went, and the connection was
     * held for ever.
     */
    @Test
    void rfc9293_must24_keepAliveProbesAHalfClosedConnectionInFinWait2()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = 2 * SECOND;
        t.settings().keepAliveProbes = 2;
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss + 1));
        // An answer shows the peer alive: the count starts again.
        t.send(t.in().ack(t.iss + 2));
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss + 1));
        t.advance(2 * SECOND);
        t.recv(t.out().seq(t.iss + 1));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        // Only keepAliveProbes unanswered probes in a row end it, with a reset at SND.NXT (past our FIN).
        t.advance(2 * SECOND);
        t.recv(t.out().seq(t.iss + 2).ack(0).flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    @Test
    void rfc9293_must29_keepAliveToleratesLostAcks()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = SECOND;
        t.settings().keepAliveProbes = 3;
        t.passiveOpen();
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss));
        // Two unanswered probes do not kill the connection ...
        t.advance(SECOND);
        t.recv(t.out().seq(t.iss));
        t.advance(SECOND);
        t.recv(t.out().seq(t.iss));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        // ... and an answer starts the count again.
        t.send(t.in());
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss));
        t.advance(SECOND);
        t.recv(t.out().seq(t.iss));
        t.advance(SECOND);
        t.recv(t.out().seq(t.iss));
        // Only keepAliveProbes unanswered probes in a row end it.
        t.advance(SECOND);
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
    }

    /**
     * Keep-alive gives up with a reset, {@code <SEQ=SND.NXT><CTL=RST>}, as Linux's tcp_keepalive_timer does
     * (tcp_send_active_reset before tcp_write_err): unanswered probes need not mean a dead peer (the probes or their
     * answers may have been lost, the path may have healed), and a peer alive after all learns that the connection is
     * gone instead of holding it, or writing into it, until it finds out by itself. The reset counts as sent, the
     * connection as reset from ESTABLISHED (RFC 4022 tcpEstabResets) and as timed out, and the application hears of a
     * timeout as before. Before, the connection ended without a segment.
     */
    @Test
    void rfc9293_must24_keepAliveGivesUpWithAReset()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = SECOND;
        t.settings().keepAliveProbes = 2;
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(5, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 6));
        t.write(bytes(7, 2));
        t.recv(t.out().flags(ACK | PSH).ack(t.irs + 6).payload(bytes(7, 2)));
        t.send(t.in().seq(t.irs + 6).ack(t.iss + 8));
        final long resetsBefore = t.counter(StackCounter.TCP_RESETS_SENT);
        t.advance(10 * SECOND);
        t.recv(t.out().seq(t.iss + 7).ack(t.irs + 6)); // SHLD-12: SEG.SEQ = SND.NXT - 1
        t.advance(SECOND);
        t.recv(t.out().seq(t.iss + 7).ack(t.irs + 6));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        t.advance(SECOND);
        t.recv(t.out().seq(t.iss + 8).ack(0).flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(resetsBefore + 1, t.counter(StackCounter.TCP_RESETS_SENT));
        assertEquals(1, t.counter(StackCounter.TCP_ESTABLISHED_RESETS));
        assertEquals(1, t.counter(StackCounter.TCP_TIMEOUTS));
        assertEquals(0, t.stack.tcp().connectionCount());
        t.advance(3600 * SECOND);
        t.recvNothing();
    }

    @Test
    void rfc9293_must29_onlyAcceptableSegmentsRestartTheKeepAliveIdleInterval()
    {
        // The peer is gone; a blind attacker who knows only the 4-tuple sends every 5 s: a RST outside the window, an
        // ACK outside it, an in-window segment whose ACK acknowledges what was never sent (RFC 5961 §5.2). None shows
        // that the peer is alive: the probes go out and, unanswered, end the connection.
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = SECOND;
        t.settings().keepAliveProbes = 2;
        t.passiveOpen();
        t.recv();
        int probes = 0;
        for (int i = 0; i < 60 && t.conn.state() == TcpState.ESTABLISHED; i++)
        {
            t.advance(SECOND);
            if (i % 5 == 0)
            {
                t.send(t.in().seq(t.irs + 1 + 0x4000_0000).ack(0).flags(RST));
                t.send(t.in().seq(t.irs + 1 + 0x4000_0000).ack(t.iss + 1 + 0x4000_0000));
                t.send(t.in().ack(t.iss + 1 + 1000));
            }
            for (final Seg s : t.recv())
            {
                probes += s.r.seq == t.iss ? 1 : 0; // SEG.SEQ = SND.NXT - 1
            }
        }
        assertEquals(2, probes);
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
    }

    @Test
    void rfc9293_must13_aFinRetransmittedIntoTimeWaitDoesNotStartKeepAlives()
    {
        t.settings().keepAlive = true;
        t.settings().keepAliveIdleNanos = 10 * SECOND;
        t.settings().keepAliveIntervalNanos = 2 * SECOND;
        t.settings().keepAliveProbes = 3;
        t.passiveOpen();
        t.closeIntoTimeWait();
        // The peer's FIN again (our ACK was lost): acknowledged, and nothing else until 2*MSL ends TIME-WAIT.
        t.advance(SECOND);
        t.send(t.in().ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));
        t.advance(t.settings().timeWaitNanos - MS);
        t.recvNothing();
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
        t.advance(2 * MS);
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_NORMAL, t.events.closedReason);
    }

    // ------------------------------------------------------------------------------------------
    // Window management (§3.8.6)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_must35_must36_must37_zeroWindowProbedIndefinitely()
    {
        t.passiveOpen();
        t.send(t.in().window(1460)); // room for one segment: the other 540 bytes wait for the window
        t.write(bytes(2000, 8));
        t.recv(t.out().payloadLength(1460));
        // All acknowledged, window closed, 540 bytes waiting.
        t.send(t.in().ack(t.iss + 1461).window(0));
        t.recvNothing();
        final long rto = t.conn.rtoNanos();
        long interval = rto;
        long previous = t.now;
        int probes = 0;
        while (t.now - previous < 3600 * SECOND && probes < 40)
        {
            t.advance(interval - MS);
            t.recvNothing();
            t.advance(MS);
            // A probe: one new octet beyond the closed window.
            t.recv(t.out().seq(t.iss + 1461).payloadLength(1));
            probes++;
            t.send(t.in().ack(t.iss + 1461).window(0));
            t.recvNothing();
            interval = Math.min(60 * SECOND, interval * 2); // SHLD-30: exponential backoff
        }
        assertEquals(40, probes);
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "probes answered: the connection stays open");
        // The window opens: the rest goes.
        t.send(t.in().ack(t.iss + 1461).window(65535));
        t.recv(t.out().seq(t.iss + 1461).flags(ACK | PSH).payloadLength(540));
    }

    /** 1460 of 2000 octets sent and acknowledged with the window closed; one RTO later the probe's octet goes. */
    private void sendAZeroWindowProbe()
    {
        t.passiveOpen();
        t.send(t.in().window(1460)); // room for one segment: the other 540 bytes wait for the window
        t.write(bytes(2000, 8));
        t.recv(t.out().payloadLength(1460));
        t.send(t.in().ack(t.iss + 1461).window(0));
        t.advance(t.conn.rtoNanos());
        t.recv(t.out().seq(t.iss + 1461).payloadLength(1));
    }

    @Test
    void rfc5961_anAbortAfterAZeroWindowProbeResetsAtThePeersRcvNxt()
    {
        sendAZeroWindowProbe();
        // The probe's octet was not taken: the peer's RCV.NXT is iss + 1461 and its window zero. A reset at SND.MAX
        // (iss + 1462) would be outside it and dropped (RFC 5961 §3.2 takes only SEG.SEQ = RCV.NXT then).
        t.send(t.in().ack(t.iss + 1461).window(0));
        t.conn.abort();
        t.poll();
        t.recv(t.out().seq(t.iss + 1461).flags(RST).ack(0));
        assertEquals(TcpState.CLOSED, t.conn.state());
    }

    /**
     * RFC 6298 §3 (Karn) with RFC 7323 §4.3: the peer takes a zero-window probe's byte but its ACK is lost; the persist
     * timer sends the same byte again much later, and the peer answers the duplicate echoing the first copy's TSval
     * (a duplicate does not update TS.Recent; this stack's receiver does the same). That echo times the persist
     * interval, not the path: like a retransmission's, it gives no RTT sample. Before, it did: one such ACK took SRTT
     * from 0 to 6.4 s and the RTO to 58 s, and in the send review's two-stack runs with a slow reader and 15% loss a
     * later real loss then waited for a 120 s RTO.
     */
    @Test
    void rfc6298_aStaleEchoOfAnEarlierCopyOfAZeroWindowProbeGivesNoRttSample()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        t.write(bytes(1000, 8));
        t.recv(t.out().flags(ACK | PSH).payloadLength(1000));
        t.send(t.in().ack(t.iss + 1001).window(0));
        t.write(bytes(3000, 9));
        t.recvNothing();
        Seg probe = null;
        for (int i = 0; i < 8; i++) // probes until the backoff is long; the peer answers each with a zero window
        {
            t.advance(t.conn.rtoNanos() << Math.min(i, 10));
            final List<Seg> out = t.recv();
            if (!out.isEmpty())
            {
                probe = out.get(0);
                assertEquals(1, probe.r.payloadLength, t.describe(probe));
                if (i < 7)
                {
                    t.send(t.in().ack(t.iss + 1001).window(0).tsEcr(probe.r.tsVal));
                }
            }
        }
        assertNotNull(probe);
        final int firstTsVal = probe.r.tsVal;
        // The last probe's byte was taken, its ACK lost: the next probe sends the same byte again, much later.
        Seg again = null;
        for (int i = 0; i < 200 && again == null; i++)
        {
            t.advanceMs(500);
            final List<Seg> out = t.recv();
            if (!out.isEmpty())
            {
                again = out.get(0);
            }
        }
        assertNotNull(again, "the probe goes again");
        assertEquals(probe.r.seq, again.r.seq, "the same byte");
        final long gap = (again.r.tsVal - firstTsVal) * MS;
        t.send(t.in().ack(t.iss + 1002).window(65535).tsEcr(firstTsVal));
        assertTrue(t.conn.srttNanos() < gap / 8, "SRTT " + t.conn.srttNanos() / MS + " ms after a stale echo " + gap / MS
            + " ms old; RTO now " + t.conn.rtoNanos() / MS + " ms");
    }

    @Test
    void rfc9293_must36_aPeerThatStopsAnsweringZeroWindowProbesIsGivenUpAfterR2Probes()
    {
        // §3.8.6.1: the connection must stay open only "as long as the receiving TCP peer continues to send
        // acknowledgments in response to the probe segments". A peer gone behind a zero window would hold it for ever.
        t.passiveOpen();
        t.send(t.in().window(1460)); // room for one segment: the other 540 bytes wait for the window
        t.write(bytes(2000, 8));
        t.recv(t.out().payloadLength(1460));
        t.send(t.in().ack(t.iss + 1461).window(0));
        int probes = 0;
        for (int step = 0; step < 7200 && t.conn.state() == TcpState.ESTABLISHED; step++)
        {
            t.advance(SECOND);
            for (final Seg s : t.recv())
            {
                assertEquals(t.iss + 1461, s.r.seq, t.describe(s));
                assertEquals(1, s.payload.length, "a zero-window probe");
                probes++;
            }
        }
        assertEquals(TcpState.CLOSED, t.conn.state(), "given up");
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(t.conn.settings().r2Retransmits, probes, "after R2 unanswered probes");
    }

    @Test
    void rfc9293_must34_robustAgainstShrinkingWindow()
    {
        shrinkTheWindowToZeroOnDataInFlight();
        t.recvNothing();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        // Nothing new goes beyond the window; the timers retransmit or probe at SND.UNA, never further.
        final List<Seg> after = new ArrayList<>();
        for (int i = 0; i < 50; i++)
        {
            t.advanceMs(100);
            after.addAll(t.recv());
        }
        assertFalse(after.isEmpty(), "the sender keeps probing");
        for (final Seg s : after)
        {
            assertEquals(t.iss + 1461, s.r.seq, t.describe(s));
        }
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        // The window reopens: the data from SND.UNA on goes again.
        t.send(t.in().ack(t.iss + 1461).window(65535));
        final List<Seg> resumed = t.recv();
        assertFalse(resumed.isEmpty());
        assertEquals(t.iss + 1461, resumed.get(0).r.seq);
    }

    @Test
    void rfc9293_must34_must36_aWindowShrunkToZeroAndProbedForAnHourDoesNotTimeOut()
    {
        // RFC 9293 §3.8.6.1: a receiver may keep its window at zero indefinitely, and the sender MUST NOT give up while
        // its probes are answered. When the window closed on data in flight, the retransmission timer keeps firing
        // against a window nothing can go through: those expiries are probes too, not retries that count toward R2.
        shrinkTheWindowToZeroOnDataInFlight();
        int answered = 0;
        for (int step = 0; step < 3600 && t.conn.state() == TcpState.ESTABLISHED; step++)
        {
            t.advance(SECOND);
            for (final Seg s : t.recv())
            {
                assertEquals(t.iss + 1461, s.r.seq, t.describe(s));
                t.send(t.in().ack(t.iss + 1461).window(0));
                answered++;
            }
        }
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "still open after an hour of answered probes (" + answered + ")");
        assertTrue(answered >= 60, "probed at least once a minute: " + answered);
        t.send(t.in().ack(t.iss + 1461).window(65535));
        assertEquals(t.iss + 1461, t.recv().get(0).r.seq, "the window reopens: the data goes again from SND.UNA");
    }

    @Test
    void rfc9293_must20_aFinUnansweredBehindAZeroWindowStillEndsAfterR2()
    {
        // Only data waits on the persist timer: a FIN alone, sent again and again into a closed window of a peer that
        // no longer answers, counts its retransmissions toward R2 like any other.
        t.closeBehindAZeroWindow(true);
        for (int step = 0; step < 7200 && t.conn.state() != TcpState.CLOSED; step++)
        {
            t.advance(SECOND);
            t.recv();
        }
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
    }

    @Test
    void rfc9293_must36_aFinBehindAZeroWindowLivesWhileThePeerAnswers()
    {
        // §3.8.6.1 (MUST-36, MUST-37), RFC 1122 4.2.2.17: a FIN sent into a closed window probes it. A receiver with
        // RCV.WND = 0 drops the FIN (a segment of length 1) and answers with its ACK: the connection stays open for as
        // long as it does, well past R2 retransmissions. (While the application still owns the connection: an orphan
        // is bounded, TcpOrphanTest.)
        t.closeBehindAZeroWindow(false);
        t.send(t.in().ack(t.iss + 101).window(0));
        int answered = 0;
        for (int step = 0; step < 3600 && t.conn.state() == TcpState.FIN_WAIT_1; step++)
        {
            t.advance(SECOND);
            for (final Seg s : t.recv())
            {
                assertEquals(t.iss + 101, s.r.seq, t.describe(s));
                assertTrue(s.r.hasFlags(FIN), "the FIN sent again: " + t.describe(s));
                t.send(t.in().ack(t.iss + 101).window(0));
                answered++;
            }
        }
        assertEquals(TcpState.FIN_WAIT_1, t.conn.state(), "still open after an hour of answered FINs (" + answered + ")");
        assertTrue(answered > t.conn.settings().r2Retransmits, "more answered than R2: " + answered);
        // The window opens and the peer takes the FIN: the close goes on as usual.
        t.send(t.in().ack(t.iss + 102));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
    }

    @Test
    void aFinBehindAZeroWindowGoesAgainAsSoonAsTheWindowOpens()
    {
        // The FIN sent into the closed window was dropped by the peer, sent again on a timer that backed off while the
        // window stayed closed. The window update that opens it must let the FIN out at once, not at the next expiry
        // (up to a backed-off RTO later): Linux holds a FIN behind the window and sends it on the window update.
        t.closeBehindAZeroWindow(false);
        t.send(t.in().ack(t.iss + 101).window(0));
        for (int step = 0; step < 40; step++)
        {
            t.advance(SECOND);
            for (final Seg s : t.recv())
            {
                assertTrue(s.r.hasFlags(FIN), t.describe(s));
                t.send(t.in().ack(t.iss + 101).window(0));
            }
        }
        t.send(t.in().ack(t.iss + 101).window(65535));
        t.recv(t.out().seq(t.iss + 101).flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 102));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
    }

    @Test
    void aFinPastTheWindowTrimmedByThePeerGoesAgainWhenTheWindowOpens()
    {
        // The window takes the data but not the FIN after it: the peer trims the FIN (RFC 9293 §3.10.7.4) and ACKs
        // the data with its window closed. Its window update lets the FIN out at once.
        t.passiveOpen();
        t.send(t.in().ack(t.iss + 1).window(100));
        t.write(bytes(100, 1));
        t.conn.shutdownOutput();
        t.poll();
        final List<Seg> first = t.recv();
        assertEquals(t.iss + 1, first.get(0).r.seq, t.describe(first.get(0)));
        t.send(t.in().ack(t.iss + 101).window(0));
        t.advance(SECOND / 10);
        t.recv();
        t.send(t.in().ack(t.iss + 101).window(65535));
        t.recv(t.out().seq(t.iss + 101).flags(ACK | FIN));
    }

    @Test
    void rfc9293_must36_probeBytesThePeerTakesAreAnswersToo()
    {
        // A peer may take a probe's byte and still advertise a zero window: the new ACK answers the probe as much as
        // a duplicate does, on whichever path it is processed.
        t.passiveOpen();
        t.write(bytes(1460, 8));
        t.recv(t.out().flags(ACK | PSH).payloadLength(1460));
        t.send(t.in().ack(t.iss + 1461).window(0));
        t.write(bytes(100, 9));
        int taken = 0;
        for (int step = 0; step < 7200 && taken < 40 && t.conn.state() == TcpState.ESTABLISHED; step++)
        {
            t.advance(SECOND);
            for (final Seg s : t.recv())
            {
                assertEquals(1, s.payload.length, "a zero-window probe: " + t.describe(s));
                t.send(t.in().ack(s.r.seq + 1).window(0));
                taken++;
            }
        }
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "every probe answered (" + taken + ")");
        assertEquals(40, taken);
    }

    /** Five segments in flight; the peer acknowledges one and shrinks the window to zero: the right edge moves left. */
    private void shrinkTheWindowToZeroOnDataInFlight()
    {
        t.passiveOpen();
        t.write(bytes(5 * 1460, 9));
        assertEquals(5, t.recv().size());
        t.send(t.in().ack(t.iss + 1461).window(0));
    }

    @Test
    void rfc9293_must38_senderSwsAvoidance()
    {
        t.passiveOpen();
        t.write(bytes(1460, 10));
        t.recv(t.out().flags(ACK | PSH).payloadLength(1460));
        // 10 000 bytes queued, a usable window of 100 bytes: too small to send (< Eff.snd.MSS and < Max(SND.WND)/2).
        t.send(t.in().ack(t.iss + 1461).window(100));
        t.write(bytes(10_000, 11));
        t.recvNothing();
        // A window of one full segment: one full segment.
        t.send(t.in().ack(t.iss + 1461).window(1460));
        t.recv(t.out().seq(t.iss + 1461).payloadLength(1460));
    }

    @Test
    void rfc9293_must39_receiverSwsAvoidance()
    {
        t.settings().receiveBufferBytes = 8192;
        t.passiveOpen();
        final Seg[] fill = new Seg[6];
        for (int i = 0; i < 6; i++)
        {
            final int len = i < 5 ? 1460 : 8192 - 5 * 1460;
            fill[i] = t.in().seq(t.irs + 1 + i * 1460).payload(bytes(len, i));
        }
        t.sendBurst(fill);
        t.recv(t.out().ack(t.irs + 1 + 8192).window(0));
        // The application reads 100 bytes: the window may not open by so little.
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        assertEquals(100, t.conn.read(b, 0, 100));
        t.poll();
        t.recvNothing();
        // 1500 read in all: at least one MSS (min(RCV.BUFF/2, MSS) = 1460): a window update.
        assertEquals(1400, t.conn.read(b, 0, 1400));
        t.poll();
        t.recv(t.out().ack(t.irs + 1 + 8192).window(1500));
    }

    /**
     * When a read earns a window update a segment of its own (as Linux's tcp_cleanup_rbuf): only when the window at
     * least doubles. A read that leaves the advertised window half open or more sends nothing; the next segment
     * carries the wider window. Before, every read of one MSS or more sent a window update: one ACK more per read in
     * a request-response exchange or a bulk transfer read in small pieces.
     */
    @Test
    void aReadSendsAWindowUpdateOfItsOwnOnlyWhenTheWindowAtLeastDoubles()
    {
        t.settings().receiveBufferBytes = 8192;
        t.passiveOpen();
        t.send(t.in().payload(bytes(1460, 1)));
        t.send(t.in().seq(t.irs + 1 + 1460).payload(bytes(1460, 2)));
        t.recv(t.out().ack(t.irs + 1 + 2920).window(8192 - 2920));
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        assertEquals(2920, t.conn.read(b, 0, 8192));
        t.poll();
        t.recvNothing(); // 8192 free, 5272 advertised: not double
        t.write(bytes(10, 3));
        t.recv(t.out().ack(t.irs + 1 + 2920).window(8192).flags(ACK | PSH).payload(bytes(10, 3)));

        final Seg[] four = new Seg[4];
        for (int i = 0; i < 4; i++)
        {
            four[i] = t.in().seq(t.irs + 1 + 2920 + i * 1460).ack(t.iss + 11).payload(bytes(1460, 4 + i));
        }
        t.sendBurst(four);
        t.recv(t.out().seq(t.iss + 11).ack(t.irs + 1 + 2920 + 5840).window(8192 - 5840));
        assertEquals(5840, t.conn.read(b, 0, 8192));
        t.poll();
        t.recv(t.out().seq(t.iss + 11).ack(t.irs + 1 + 2920 + 5840).window(8192)); // 2352 advertised: it more than doubles
    }

    /**
     * The other reason a read sends an ACK at once (Linux's tcp_cleanup_rbuf): one is owed anyway (the delayed-ACK
     * timer runs) for more than one MSS taken since the last ACK. Short segments that are not full-sized (a peer
     * writing 400-byte messages with Nagle off, each with PSH) never make "every second full-sized segment"; without
     * this their sender, held by its congestion window or by Nagle, waited for the timer on every flight (the review
     * of 29fd4a2).
     */
    @Test
    void aReadOfMoreThanAnMssOfShortSegmentsAwaitingTheDelayedAckAcksAtOnce()
    {
        t.passiveOpen();
        for (int i = 0; i < 4; i++)
        {
            t.send(t.in().seq(t.irs + 1 + i * 400).flags(ACK | PSH).payload(bytes(400, 1 + i)));
        }
        t.recvNothing(); // none is full-sized: the ACK is delayed
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        assertEquals(1600, t.conn.read(b, 0, 8192));
        t.poll();
        t.recv(t.out().ack(t.irs + 1 + 1600));
    }

    @Test
    void rfc9293_must40_delayedAckUnderHalfASecond()
    {
        assertTrue(new TcpSettings().delayedAckNanos < 500 * MS);
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 12)));
        t.recvNothing();
        t.advance(t.settings().delayedAckNanos - MS);
        t.recvNothing();
        t.advance(MS);
        t.recv(t.out().ack(t.irs + 11));
    }

    @Test
    void rfc9293_shld19_ackForEverySecondFullSizedSegment()
    {
        t.passiveOpen();
        t.send(t.in().payload(bytes(1460, 13)));
        t.recvNothing();
        t.send(t.in().seq(t.irs + 1461).payload(bytes(1460, 14)));
        t.recv(t.out().ack(t.irs + 2921));
    }

    @Test
    void rfc9293_shld19_fullSizedIsLearntFromThePeersSegments()
    {
        // A sender behind a path MTU of 1400 (ours is 1500) sends segments of 1348 octets with timestamps, PSH clear:
        // "full-sized" is what the peer sends, not our MSS. Linux learns it (tcp_measure_rcv_mss) and still ACKs
        // every second segment at once, not each burst on the delayed-ACK timer.
        t.passiveOpen();
        final int size = 1348;
        int acks = 0;
        int lastAck = t.irs + 1;
        for (int i = 0; i < 12; i++)
        {
            t.send(t.in().seq(t.irs + 1 + i * size).payload(bytes(size, i)));
            for (final Seg s : t.recv())
            {
                acks++;
                lastAck = s.r.ack;
            }
        }
        assertTrue(acks >= 5, "every second segment ACKed at once once its size is learnt: " + acks + " ACKs");
        assertTrue(lastAck - (t.irs + 1) >= 10 * size, "at most two segments wait for an ACK: " + (lastAck - t.irs - 1));
    }

    @Test
    void rfc9293_shld19_aSmallerSegmentOnceIsNotTheNewFullSize()
    {
        // Short segments between full ones do not lower "full-sized": Linux needs the same smaller size twice in a
        // row, and below 536 octets only from segments without PSH (a write's tail carries it).
        t.passiveOpen();
        t.send(t.in().payload(bytes(1448, 1)));
        t.send(t.in().seq(t.irs + 1449).flags(ACK | PSH).payload(bytes(500, 2)));
        t.send(t.in().seq(t.irs + 1949).flags(ACK | PSH).payload(bytes(500, 3)));
        t.send(t.in().seq(t.irs + 2449).payload(bytes(700, 4)));
        t.recvNothing();
        t.send(t.in().seq(t.irs + 3149).payload(bytes(1448, 5)));
        t.recv(t.out().ack(t.irs + 4597));
    }

    @Test
    void rfc9293_must58_must59_acksAggregatedOverAQueuedBurst()
    {
        t.passiveOpen();
        t.sendBurst(t.in().payload(bytes(1460, 1)), t.in().seq(t.irs + 1461).payload(bytes(1460, 2)),
            t.in().seq(t.irs + 2921).payload(bytes(1460, 3)), t.in().seq(t.irs + 4381).payload(bytes(1460, 4)),
            t.in().seq(t.irs + 5841).flags(ACK | PSH).payload(bytes(100, 5)));
        t.recv(t.out().ack(t.irs + 5941));
    }

    @Test
    void rfc9293_must66_rstProcessedWithZeroWindow()
    {
        t.settings().receiveBufferBytes = 4096;
        t.passiveOpen();
        t.sendBurst(t.in().payload(bytes(1460, 1)), t.in().seq(t.irs + 1461).payload(bytes(1460, 2)),
            t.in().seq(t.irs + 2921).payload(bytes(4096 - 2920, 3)));
        t.recv(t.out().ack(t.irs + 4097).window(0));
        t.send(t.in().seq(t.irs + 4097).flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_RESET, t.events.closedReason);
    }

    @Test
    void rfc9293_anOldAckDoesNotUpdateTheSendWindow()
    {
        // §3.10.7.4 "fifth": the send window is updated only if SND.UNA =< SEG.ACK =< SND.NXT. A segment with new data
        // but an old ACK (reordered behind the peer's later ACK; acceptable within MAX.SND.WND, RFC 5961 §5.2) carries
        // a window from before: its data is taken, its window is not.
        t.passiveOpen();
        t.write(bytes(1000, 1));
        t.recv(t.out().flags(ACK | PSH).payloadLength(1000));
        t.send(t.in().ack(t.iss + 1001));
        t.send(t.in().seq(t.irs + 1).ack(t.iss + 1001).flags(ACK | PSH).payload(bytes(10, 2)));
        t.send(t.in().seq(t.irs + 11).ack(t.iss + 1).window(0).flags(ACK | PSH).payload(bytes(10, 3)));
        assertEquals(20, t.conn.readable(), "the data is taken");
        assertEquals(65535, t.conn.sndWnd, "the window is not");
        t.write(bytes(500, 4));
        t.recv(t.out().seq(t.iss + 1001).ack(t.irs + 21).flags(ACK | PSH).payloadLength(500));
    }

    @Test
    void rfc9293_zeroWindowStillAcceptsAcks()
    {
        // §3.10.7.4: with RCV.WND = 0 no data is acceptable, but valid ACKs are processed.
        t.settings().receiveBufferBytes = 4096;
        t.passiveOpen();
        fillTheReceiveWindowWhileSending100Bytes();
        t.send(t.in().seq(t.irs + 4097).ack(t.iss + 101));
        assertEquals(0, t.conn.writable() - t.conn.settings().sendBufferBytes, "the 100 bytes were acknowledged");
        // Data beyond a zero window: not accepted, answered with an ACK.
        t.send(t.in().seq(t.irs + 4097).ack(t.iss + 101).payload(bytes(10, 9)));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 4097).window(0));
    }

    @Test
    void linux_aBareFinAtRcvNxtIsTakenWhileTheWindowIsZero()
    {
        // RFC 9293 §3.4 accepts nothing but ACKs, URGs and RSTs in a zero window; Linux takes a FIN without data at
        // RCV.NXT too (tcp_data_queue: it takes no room, and some stacks resend it in a tight loop while refused).
        t.settings().receiveBufferBytes = 4096;
        t.passiveOpen();
        fillTheReceiveWindowWhileSending100Bytes();
        t.send(t.in().seq(t.irs + 4097).ack(t.iss + 101).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 4098).window(0));
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertTrue(t.events.peerClosed);
        assertEquals(4096, t.read().length);
        assertTrue(t.conn.isInputShutdown());
    }

    @Test
    void rfc9293_zeroWindowProbeHasItsAckTakenAndItsTextDropped()
    {
        // §3.10.7.4 "special allowance": the peer's zero-window probe (one new octet at RCV.NXT) also acknowledges our
        // 100 bytes. Its ACK field counts; its octet does not (the window is zero), and the answer says so.
        t.settings().receiveBufferBytes = 4096;
        t.passiveOpen();
        fillTheReceiveWindowWhileSending100Bytes();
        t.send(t.in().seq(t.irs + 4097).ack(t.iss + 101).payload(bytes(1, 9)));
        assertEquals(t.conn.settings().sendBufferBytes, t.conn.writable(), "the probe acknowledged the 100 bytes");
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 4097).window(0));
        assertEquals(4096, t.read().length, "the probe's octet was not taken");
    }

    /**
     * §3.10.7.4 "special allowance should be made to accept valid ACKs" with RCV.WND = 0, for a segment that straddles
     * RCV.NXT as well as for a probe at it: here the peer sends its last 200 octets again with 100 new ones, and
     * acknowledges our 100 bytes on them. Its ACK field is taken, as Linux's tcp_sequence accepts it (SEG.SEQ =<
     * RCV.NXT + 0); none of its text is, the new octets lying beyond the window, and the answer says so. Before, the
     * segment failed the acceptability test with its ACK unread: if no other segment carried that ACK, our data went
     * again at the RTO, spuriously.
     */
    @Test
    void rfc9293_zeroWindowSegmentStraddlingRcvNxtHasItsAckTakenAndItsTextDropped()
    {
        t.settings().receiveBufferBytes = 4096;
        t.passiveOpen();
        fillTheReceiveWindowWhileSending100Bytes();
        t.send(t.in().seq(t.irs + 4097 - 200).ack(t.iss + 101).flags(ACK | PSH).payload(bytes(300, 9)));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 4097).window(0));
        assertEquals(t.conn.settings().sendBufferBytes, t.conn.writable(), "the segment acknowledged the 100 bytes");
        t.advanceMs(2000);
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS));
        assertEquals(4096, t.read().length, "none of its octets was taken");
    }

    /** As above with SACK: the octets below RCV.NXT are a duplicate, reported in a D-SACK block (RFC 2883 §4). */
    @Test
    void rfc2883_zeroWindowSegmentStraddlingRcvNxtIsAnsweredWithADsackOfItsOldPart()
    {
        t.settings().receiveBufferBytes = 4096;
        t.peerSackPermitted = true;
        t.passiveOpen();
        fillTheReceiveWindowWhileSending100Bytes();
        t.send(t.in().seq(t.irs + 4097 - 200).ack(t.iss + 101).flags(ACK | PSH).payload(bytes(300, 9)));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 4097).window(0).sack(t.irs + 4097 - 200, t.irs + 4097));
        assertEquals(t.conn.settings().sendBufferBytes, t.conn.writable(), "the segment acknowledged the 100 bytes");
    }

    /**
     * A wholly old segment (the peer's retransmission of text we hold) that ends at or after Last.ACK.sent has its ACK
     * field taken before its text is dropped and answered, as Linux's tcp_sequence (end_seq >= rcv_wup) and BSD's
     * tcp_input ("keep on processing for RST or ACK") do. A peer's retransmission timeout or loss probe cancels its own
     * delayed ACK, so that segment may be the only one acknowledging our data. Before, its ACK was thrown away with its
     * text, and our data went again at our RTO, a spurious timeout costing the congestion window (no F-RTO here).
     * An older one (ending before Last.ACK.sent) is only answered, as RFC 9293 §3.10.7.4 says.
     */
    @Test
    void rfc9293_anOldRetransmissionEndingAtLastAckSentHasItsAckTaken()
    {
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 101));
        t.write(bytes(100, 2));
        t.recv(t.out().flags(ACK | PSH).ack(t.irs + 101).payload(bytes(100, 2)));

        // An older segment (ending before Last.ACK.sent) acknowledging our 100 octets: answered, its ACK not taken.
        t.send(t.in().seq(t.irs + 1).ack(t.iss + 101).flags(ACK | PSH).payload(bytes(50, 1)));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 101));
        assertEquals(t.conn.settings().sendBufferBytes - 100, t.conn.writable());

        // The peer's retransmission of its last segment, acknowledging our 100 octets on it.
        t.send(t.in().ack(t.iss + 101).flags(ACK | PSH).payload(bytes(100, 1)));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 101));
        assertEquals(t.conn.settings().sendBufferBytes, t.conn.writable(), "the old segment's ACK was taken");
        t.advanceMs(2000);
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS));
        assertEquals(100, t.read().length, "its text was not taken twice");
    }

    @Test
    void rfc9293_pureAckAfterOurZeroWindowProbeCarriesThePeersRightEdge()
    {
        // Our probe's octet lies beyond the peer's zero window, so SND.MAX is one past the only sequence number the
        // peer accepts (RCV.NXT). A pure ACK (here, for data the peer sends while its own window is closed) carries
        // the window's right edge instead, or the peer would drop it with its ACK field unread.
        sendAZeroWindowProbe();
        t.send(t.in().ack(t.iss + 1461).window(0).payload(bytes(100, 3)));
        t.advanceMs(200);
        t.recv(t.out().seq(t.iss + 1461).ack(t.irs + 101));
    }

    /** Our 100 bytes sent and unacknowledged; then 4096 bytes from the peer close our 4096-byte window. */
    private void fillTheReceiveWindowWhileSending100Bytes()
    {
        t.write(bytes(100, 4));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        t.sendBurst(t.in().payload(bytes(1460, 1)), t.in().seq(t.irs + 1461).payload(bytes(1460, 2)),
            t.in().seq(t.irs + 2921).payload(bytes(4096 - 2920, 3)));
        t.recv(t.out().seq(t.iss + 101).ack(t.irs + 4097).window(0));
    }

    @Test
    void rfc9293_urgentDataDeliveredInline()
    {
        // No urgent-data API (MUST-30..33 not implemented): URG segments are still delivered in sequence, nothing lost.
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH | URG).urgent(5).payload(bytes(10, 15)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11));
        assertArrayEquals(bytes(10, 15), t.read());
    }

    // ------------------------------------------------------------------------------------------
    // IP options and ICMP (§3.9.2)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_must50_unknownIpOptionsIgnored()
    {
        t.passiveOpen();
        // An unknown IP option (kind 0x9E, length 4), then NOP...EOL padding.
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 16)).ipOptions(0x9E, 4, 0, 0, 1, 1, 1, 0));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11));
        assertArrayEquals(bytes(10, 16), t.read());
    }

    @Test
    void rfc9293_must55_must56_icmpErrorsDoNotAbortTheConnection()
    {
        t.passiveOpen();
        t.write(bytes(10, 17));
        // The errors quote the segment in flight (SND.UNA = iss + 1), so the connection believes them (RFC 5927).
        final byte[] quoted = t.ourSegment(t.iss + 1);
        // Source quench (4): discarded (MUST-55), no soft error recorded.
        t.device.inject(t.icmpError(4, 0, quoted));
        t.poll();
        assertEquals(0, t.conn.softError());
        // Destination unreachable net/host/frag-needed/source route (3/0,1,4,5), time exceeded (11), parameter problem (12):
        // soft errors (MUST-56), kept for the application (SHLD-25). Frag-needed reports the path's MTU as 1500, no
        // reduction (the MSS change on a smaller one is IcmpToTcpTest#fragmentationNeededShrinksTheMssAndResendsWhatIsInFlight).
        final int[][] errors = {{3, 0}, {3, 1}, {3, 4}, {3, 5}, {11, 0}, {12, 0}};
        for (final int[] e : errors)
        {
            t.device.inject(t.icmpError(e[0], e[1], e[0] == 3 && e[1] == 4 ? 1500 : 0, quoted));
            t.poll();
            assertEquals(e[0] << 8 | e[1], t.conn.softError(), "soft error recorded for " + e[0] + "/" + e[1]);
        }
        t.recv(t.out().flags(ACK | PSH).payload(bytes(10, 17)));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        t.send(t.in().ack(t.iss + 11));
        t.write(bytes(5, 18));
        t.recv(t.out().seq(t.iss + 11).flags(ACK | PSH).payload(bytes(5, 18)));
    }

}
