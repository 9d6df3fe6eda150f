package io.nicstack.stack.tcp;

import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.tcp.cc.Cubic;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.wire.Seq;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * RFC 6298 (RTO), RFC 6582 (NewReno), RFC 2018/2883/6675 (SACK), RFC 7323 (window scale,
 * timestamps, PAWS), RFC 4987 SYN cookies and listener backlog bounds.
 */
class TcpExtensionsTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    // ------------------------------------------------------------------------------------------
    // RFC 6298
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc6298_initialRtoIsOneSecondAndDoubles()
    {
        final Seg syn = t.connect();
        t.advanceMs(999);
        t.recvNothing();
        t.advanceMs(1);
        assertEquals(syn.r.seq, t.recv().get(0).r.seq, "(2.1) RTO = 1 s before any sample");
        t.advanceMs(1999);
        t.recvNothing();
        t.advanceMs(1);
        assertEquals(1, t.recv().size(), "(5.5) doubled to 2 s");
    }

    @Test
    void rfc6298_theInitialRtoIsClampedToTheConfiguredBounds()
    {
        // (2.4)/(2.5): the bounds apply to every RTO, so a minimum above 1 s (the RFC's own SHOULD) or a maximum
        // below it also holds for the 1 s of (2.1), before any sample.
        final RttEstimator lowMax = new RttEstimator(200 * MS, 500 * MS);
        assertEquals(500 * MS, lowMax.rto(), "maxRto 500 ms");
        t.settings().minRtoNanos = 2 * SECOND;
        final Seg syn = t.connect();
        assertEquals(2 * SECOND, t.conn.rtoNanos(), "minRto 2 s");
        t.advanceMs(1999);
        t.recvNothing();
        t.advanceMs(1);
        assertEquals(syn.r.seq, t.recv().get(0).r.seq, "the SYN sent again after the 2 s minimum");
    }

    @Test
    void rfc6298_clearingTheBackoffKeepsTheRtoItWasBackedOffFrom()
    {
        // An answered zero-window episode clears the timeouts' backoff (the FIN sent again when the window opens):
        // back to the RTO of the last sample, or without one to the initial RTO, which after a lost SYN is 3 s
        // ((5.7), a MUST) and must not fall back to 1 s.
        final RttEstimator unsampled = new RttEstimator(200 * MS, 120 * SECOND);
        unsampled.reinitialize(3 * SECOND);
        unsampled.backoff();
        unsampled.backoff();
        unsampled.clearBackoff();
        assertEquals(3 * SECOND, unsampled.rto(), "the (5.7) RTO after a lost SYN");
        final RttEstimator sampled = new RttEstimator(200 * MS, 120 * SECOND);
        sampled.sample(100 * MS);
        sampled.backoff();
        sampled.clearBackoff();
        assertEquals(300 * MS, sampled.rto(), "SRTT + 4 RTTVAR");
        assertEquals(0, sampled.backoffCount());
    }

    @Test
    void rfc6298_rtoFromFirstSample()
    {
        // The handshake ACK arrives 100 ms after the SYN-ACK: SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300 ms.
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.advanceMs(100);
        t.send(t.in());
        t.conn = t.listener.accept();
        assertEquals(100 * MS, t.conn.srttNanos());
        assertEquals(300 * MS, t.conn.rtoNanos());
        t.write(bytes(10, 1));
        t.recv(t.out().flags(ACK | PSH).payloadLength(10));
        t.advanceMs(299);
        t.recvNothing();
        t.advanceMs(1);
        t.recv(t.out().flags(ACK | PSH).payloadLength(10));
        // (5.2) all acknowledged: the timer stops.
        t.send(t.in().ack(t.iss + 11));
        t.advance(10 * SECOND);
        t.recvNothing();
    }

    @Test
    void rfc6298_timestampsTimeARetransmissionAndItsSampleClearsTheBackoff()
    {
        // §3: with timestamps a retransmitted segment may be timed (the echo says which transmission arrived), and the
        // sample clears the backoff (§5.7). Without that, only a segment never sent twice could clear it, and on a
        // lossy path each timeout doubled the RTO left by the one before.
        t.peerOffersAll();
        t.passiveOpen();
        final long rto = t.conn.rtoNanos();
        final long srtt = t.conn.srttNanos();
        sendAndRetransmitOnce(rto);
        // The peer acknowledges 30 ms after the retransmission, echoing its TSval: a 30 ms sample.
        t.advanceMs(30);
        t.send(t.in().ack(t.iss + 101));
        assertEquals((7 * srtt + 30 * MS) / 8, t.conn.srttNanos(), "(2.3) the 30 ms sample taken");
        assertTrue(t.conn.rtoNanos() < 2 * rto, "the backoff cleared: " + t.conn.rtoNanos());
    }

    @Test
    void rfc6298_anEchoOlderThanTheRetransmissionDoesNotTimeIt()
    {
        // The ACK echoes the first transmission's TSval, as a receiver whose ACKs were lost echoes its old TS.Recent
        // when our retransmission duplicates what it holds: now - TSecr includes the timeout's wait. No sample (§3,
        // Karn), and the backoff stays.
        t.peerOffersAll();
        t.passiveOpen();
        final long rto = t.conn.rtoNanos();
        final long srtt = t.conn.srttNanos();
        final int firstTsVal = sendAndRetransmitOnce(rto);
        t.advanceMs(30);
        t.send(t.in().ack(t.iss + 101).tsEcr(firstTsVal));
        assertEquals(srtt, t.conn.srttNanos());
        assertEquals(2 * rto, t.conn.rtoNanos());
    }

    @Test
    void rfc6298_rfc5681_afterOurSynWasSentAgainTheRtoIsThreeSecondsAndTheInitialWindowOneSegment()
    {
        // RFC 6298 §5.7: the SYN timed out (RTO 1 s, backed off to 2 s) and no RTT sample could be taken: data starts
        // with an RTO of 3 s. RFC 5681 §3.1 / RFC 6928 §2: the initial window is one segment after a lost SYN.
        final Seg syn = t.connect();
        t.advanceMs(1000);
        assertEquals(syn.r.seq, t.recv().get(0).r.seq, "the SYN sent again");
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 1));
        t.recv();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertEquals(3 * SECOND, t.conn.rtoNanos());
        assertInitialWindowIsOneSegment();
    }

    @Test
    void rfc6298_rfc5681_afterOurSynAckWasSentAgainTheRtoIsThreeSecondsAndTheInitialWindowOneSegment()
    {
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.advanceMs(1000);
        t.recv(t.expectedSynAck());
        t.send(t.in());
        t.conn = t.listener.accept();
        t.conn.handler(t.events);
        assertEquals(3 * SECOND, t.conn.rtoNanos());
        assertInitialWindowIsOneSegment();
    }

    @Test
    void rfc5681_afterOurSynAckWasSentAgainForThePeersRepeatedSynTheInitialWindowIsOneSegment()
    {
        // RFC 5681 §3.1 / RFC 6928 §2 (MUST): the initial window is one segment once the SYN,ACK was lost, also when
        // the peer's SYN timer, shorter than ours, asks for it again before ours expires: the SYN,ACK goes again in
        // reply to the repeated SYN (no timer expiry), and the handshake completes with it.
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq; // lost
        t.advanceMs(300);
        t.recvNothing();
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        t.send(t.in());
        t.conn = t.listener.accept();
        assertNotNull(t.conn);
        t.conn.handler(t.events);
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES), "no timer expired");
        assertEquals(t.conn.sendMss(), t.conn.cwnd());
        assertInitialWindowIsOneSegment();
    }

    @Test
    void rfc6298_karnSegmentsSentAgainAfterAZeroWindowTimeoutAreNotTimed()
    {
        // The window closes on five segments in flight, one of them timed. The timeout sends nothing, but everything
        // after it goes again once the window opens: its ACK must not be read as a 30-second round trip.
        t.passiveOpen();
        t.write(bytes(5 * 1460, 3));
        assertEquals(5, t.recv().size());
        t.send(t.in().window(0));
        for (int i = 0; i < 30; i++)
        {
            t.advance(SECOND);
            if (!t.recv().isEmpty())
            {
                t.send(t.in().window(0));
            }
        }
        assertTrue(t.counter(StackCounter.TCP_RTO_EXPIRIES) > 0, "the timer ran out against the closed window");
        t.send(t.in().window(65535));
        assertFalse(t.recv().isEmpty(), "the window opens: the data goes again");
        t.send(t.in().ack(t.iss + 1 + 5 * 1460));
        assertTrue(t.conn.rtoNanos() < 5 * SECOND, "no sample from data sent twice: RTO " + t.conn.rtoNanos());
    }

    @Test
    void rfc6928_aHandshakeWithoutLossKeepsTheTenSegmentWindowAndItsRttSample()
    {
        t.passiveOpen();
        t.write(bytes(20 * 1460, 1));
        assertEquals(10, t.recv().size());
        assertTrue(t.conn.rtoNanos() < SECOND, "the handshake's sample set the RTO: " + t.conn.rtoNanos());
    }

    private void assertInitialWindowIsOneSegment()
    {
        t.write(bytes(20 * 1460, 1));
        assertEquals(1, t.recv().size(), "one segment in the first flight");
        t.send(t.in().ack(t.iss + 1 + 1460));
        assertEquals(2, t.recv().size(), "then slow start");
    }

    /** 100 bytes sent and, unacknowledged, sent again when {@code rto} runs out; returns the first one's TSval. */
    private int sendAndRetransmitOnce(final long rto)
    {
        // A tail loss probe would go at the RTO's time in its place (RFC 8985 §7.2), without the backoff under test.
        t.conn.settings().tailLossProbe = false;
        t.write(bytes(100, 1));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        final int firstTsVal = t.lastStackTsVal;
        t.advance(rto);
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        assertEquals(2 * rto, t.conn.rtoNanos(), "(5.5) backed off");
        return firstTsVal;
    }

    // ------------------------------------------------------------------------------------------
    // RFC 6582 NewReno (no SACK)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc6582_partialAckRetransmitsNextHoleFullAckExitsRecovery()
    {
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        t.write(bytes(5 * 1460, 1));
        assertEquals(5, t.recv().size());
        // Segments 1 and 3 lost; 2, 4 and 5 arrive: three duplicate ACKs.
        t.send(t.in());
        t.send(t.in());
        t.recvNothing();
        t.send(t.in());
        t.recv(t.out().payloadLength(1460));
        assertEquals(3650, t.conn.ssthresh(), "max(FlightSize/2, 2*SMSS)");
        // Partial ACK (segments 1 and 2): retransmit the first unacknowledged segment at once.
        t.send(t.in().ack(t.iss + 1 + 2920));
        t.recv(t.out().seq(t.iss + 1 + 2920).payloadLength(1460));
        // Full ACK: recovery ends with cwnd = ssthresh.
        t.send(t.in().ack(t.iss + 1 + 5 * 1460));
        assertEquals(3650, t.conn.cwnd());
        t.recvNothing();
    }

    @Test
    void rfc6582_slowButSteadyEveryPartialAckRestartsTheRetransmissionTimer()
    {
        // §3.2 step 4 and §4: without SACK, the retransmission timer restarts on every partial ACK ("Slow-but-Steady",
        // RFC 6298 §5.3's restart on an ACK of new data), not only on the first ("Impatient"). Pinned until the owner
        // chooses between them: three holes, the second partial ACK comes more than an RTO after the fast retransmit
        // but less than one after the first partial ACK, and the timer waits a whole RTO from the second.
        t.settings().congestionControl = "newreno";
        t.settings().noDelay = true;
        t.settings().tailLossProbe = false;
        t.passiveOpen();
        final int m = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(10 * m, 1));
        assertEquals(10, t.recv().size());
        // S0, S3 and S6 lost; three duplicate ACKs.
        for (int i = 0; i < 3; i++)
        {
            t.send(t.in());
        }
        assertTrue(retransmitted(t.recv(), s, m), "fast retransmit");
        final long rto = t.conn.rtoNanos();
        t.advance(rto * 3 / 5);
        t.send(t.in().ack(s + 3 * m));
        assertTrue(retransmitted(t.recv(), s + 3 * m, m), "the first partial ACK's retransmission");
        assertEquals(rto, t.conn.rtoNanos(), "no RTT sample from retransmitted data (Karn)");
        final long firstPartial = t.now;
        t.advance(rto * 3 / 5);
        t.send(t.in().ack(s + 6 * m));
        assertTrue(retransmitted(t.recv(), s + 6 * m, m), "the second partial ACK's retransmission");
        final long secondPartial = t.now;
        // An RTO after the first partial ACK (Impatient's deadline): nothing.
        t.advance(firstPartial + rto - t.now + MS);
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        // An RTO after the second: the timer expires.
        t.advance(secondPartial + rto - t.now);
        assertTrue(retransmitted(t.recv(), s + 6 * m, m), "the timeout's retransmission");
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc6582_aPartialAckOfLessThanOneSmssDeflatesWithoutAddingBack()
    {
        // §3.2 step 4: deflate by the amount acknowledged and "if the partial ACK acknowledges at least one SMSS of new
        // data, then add back SMSS bytes". A 100-byte segment, then five full ones; the small one is held up in the
        // network: three duplicate ACKs, then, in recovery, its ACK arrives on its own, a partial ACK of 100 bytes.
        t.settings().congestionControl = "newreno";
        t.settings().noDelay = true;
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(100, 1));
        t.recv(t.out().flags(ACK | PSH).payloadLength(100));
        t.write(bytes(5 * mss, 2));
        assertEquals(5, t.recv().size());
        t.send(t.in());
        t.send(t.in());
        t.send(t.in());
        assertEquals(s, t.recv().get(0).r.seq, "fast retransmit");
        final long cwnd = t.conn.cwnd();
        t.send(t.in().ack(s + 100));
        assertEquals(s + 100, t.recv().get(0).r.seq, "the partial ACK's retransmission");
        assertEquals(cwnd - 100, t.conn.cwnd(), "less than one SMSS acknowledged: no SMSS added back");
        // A partial ACK of a full segment: deflated by it and SMSS added back.
        t.send(t.in().ack(s + 100 + mss));
        assertEquals(s + 100 + mss, t.recv().get(0).r.seq, "the next partial ACK's retransmission");
        assertEquals(cwnd - 100, t.conn.cwnd(), "one SMSS acknowledged: SMSS added back");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc5681_aTimeoutDuringFastRecoveryKeepsTheRecoverysSsthresh(final String congestionControl)
    {
        // The timeout ends a recovery whose reduction already answered this loss. Its ssthresh stays, as Linux's
        // tcp_enter_loss keeps it while the recovery is under way: taken from the window §3.2 step 5 inflated by one
        // segment per duplicate ACK (CUBIC, RFC 9438 §4.8 from cwnd), or from a flight that inflation let grow
        // (NewReno, RFC 5681 (4) from FlightSize), it came out higher than the recovery's, a larger window after two
        // losses than after one.
        t.settings().congestionControl = congestionControl;
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        t.write(bytes(20 * mss, 1));
        assertEquals(10, t.recv().size());
        // Segment 0 lost, 1-9 arrive: nine duplicate ACKs, the last six inflating cwnd and letting new data out.
        for (int i = 0; i < 3; i++)
        {
            t.send(t.in());
        }
        assertTrue(retransmitted(t.recv(), t.iss + 1, mss), "fast retransmit");
        final long recoverySsthresh = t.conn.ssthresh();
        for (int i = 0; i < 6; i++)
        {
            t.send(t.in());
        }
        assertFalse(t.recv().isEmpty(), "the inflated window lets new data out");
        // The retransmission is lost too.
        t.advance(t.conn.rtoNanos());
        assertTrue(retransmitted(t.recv(), t.iss + 1, mss), "the timeout's retransmission");
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertEquals(recoverySsthresh, t.conn.ssthresh());
        assertEquals(mss, t.conn.cwnd(), "the loss window");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc5681_aTimeoutDuringARecoveryWhoseFlightShrankTakesNoMoreThanEquationFour(final String congestionControl)
    {
        // RFC 5681 (3.1): when the timer detects a loss, ssthresh MUST be no more than max(FlightSize / 2, 2*SMSS) (RFC
        // 9438 (4.8): CUBIC takes beta_cubic of it instead of a half). A SACK recovery that repaired most of its flight
        // before the timeout has little outstanding: the recovery's ssthresh, taken from the whole flight, is more.
        t.peerWindowScale = 7;
        t.peerSackPermitted = true;
        t.peerTimestamps = false;
        t.settings().congestionControl = congestionControl;
        t.settings().noDelay = true;
        t.settings().tailLossProbe = false;
        t.passiveOpen();
        final int m = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(10 * m, 1));
        assertEquals(10, t.recv().size());
        // S0 and S5 lost; S1-S4 and S6-S9 SACKed.
        t.send(t.in().ack(s).sack(s + m, s + 3 * m));
        t.send(t.in().ack(s).sack(s + m, s + 5 * m));
        t.send(t.in().ack(s).sack(s + 6 * m, s + 8 * m).sack(s + m, s + 5 * m));
        t.send(t.in().ack(s).sack(s + 6 * m, s + 10 * m).sack(s + m, s + 5 * m));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        t.recv();
        final long recoverySsthresh = t.conn.ssthresh();
        // S0's resend arrives, S5's is lost: S5-S9 outstanding, FlightSize 5 segments.
        t.advanceMs(20);
        t.send(t.in().ack(s + 5 * m).sack(s + 6 * m, s + 10 * m));
        t.recv();
        final long flightSize = t.conn.sndMax - t.conn.sndUna;
        assertEquals(5L * m, flightSize);
        t.advance(t.conn.rtoNanos());
        assertTrue(retransmitted(t.recv(), s + 5 * m, m), "the timeout's retransmission");
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        final long bound = "cubic".equals(congestionControl)
            ? Math.max(Math.round(flightSize * Cubic.BETA), 2L * m) : Math.max(flightSize / 2, 2L * m);
        assertTrue(bound < recoverySsthresh, "the case: the recovery's ssthresh is above the bound");
        assertEquals(bound, t.conn.ssthresh());
        assertEquals(m, t.conn.cwnd(), "the loss window");
    }

    @Test
    void theCongestionControllerHandedOutIsTheOneTheSenderKeepsTo()
    {
        // TcpConnection.congestionController, for tests and benchmarks (TcpAckBurstBenchmark's congestion avoidance):
        // a window set through it is the one the sender sends by, and the connection reports the controller's state.
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        final CongestionControl cc = t.conn.congestionController();
        assertEquals(t.conn.congestionControl(), cc.name());
        cc.cwnd(3L * mss);
        assertEquals(3L * mss, t.conn.cwnd());
        t.write(bytes(10 * mss, 1));
        assertEquals(3, t.recv().size(), "a window of three segments");
        cc.onFastRetransmit(3L * mss, t.now);
        cc.onRecoveryExit(t.now);
        assertEquals(Math.max(Math.round(0.7 * 3 * mss), 2L * mss), t.conn.ssthresh());
        assertEquals(t.conn.ssthresh(), t.conn.cwnd());
    }

    @Test
    void rfc9438_aLossInAnApplicationLimitedSlowStartReducesFromTheFlightNotTheWindow()
    {
        // RFC 9438 §4.6: CUBIC reduces from cwnd, and "MUST use other measures to prevent cwnd from growing when the
        // volume of bytes in flight is smaller than cwnd". Slow start counts the window as used with half of it in
        // flight (as Linux), so an application that writes nine segments at a time, each acknowledged on its own,
        // takes cwnd past eighteen. A loss in such a flight reduces from the nine in flight, never more: ssthresh 6.3
        // segments, not 13.
        t.settings().congestionControl = "cubic";
        t.settings().noDelay = true;
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        for (int burst = 0; burst < 8; burst++)
        {
            t.write(bytes(9 * mss, burst));
            final List<Seg> flight = t.recv();
            assertEquals(9, flight.size());
            for (final Seg seg : flight)
            {
                t.send(t.in().ack(seg.r.seq + seg.payload.length));
            }
            t.recvNothing();
        }
        assertTrue(t.conn.cwnd() >= 18L * mss, "cwnd grew to twice the flight: " + t.conn.cwnd());
        final int una = t.conn.sndUna;
        t.write(bytes(9 * mss, 9));
        assertEquals(9, t.recv().size());
        // The first segment of the flight is lost: three duplicate ACKs.
        for (int i = 0; i < 3; i++)
        {
            t.send(t.in().ack(una));
        }
        t.recv(t.out().seq(una).payloadLength(mss));
        assertEquals(Math.round(0.7 * 9 * mss), t.conn.ssthresh());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc7661_congestionAvoidanceGrowsAsMuchWhenAWindowsAcksArriveInOneBurst(final String congestionControl)
    {
        // RFC 7661 and RFC 9438 §5.8 hold cwnd back when the sender did not use it, over a window, not per ACK. A
        // sender that fills a 20-segment window is cwnd limited for the whole round trip, however the ACKs of that
        // window are grouped into polls: all in one receive burst (processed before the output pass refills the
        // flight), the flight seen just before each ACK falls by a segment per ACK and only the first ACK found the
        // window full. Six round trips: about one segment each (Reno, or CUBIC's Reno-friendly W_est) either way.
        final long onePerPoll = cwndAfterRoundTrips(congestionControl, true, 6, false, -1);
        final long oneBurst = cwndAfterRoundTrips(congestionControl, true, 6, true, -1);
        final long mss = PEER_MSS;
        assertTrue(onePerPoll >= 25 * mss, "one ACK per poll grows cwnd about a segment per round trip: " + onePerPoll);
        assertTrue(Math.abs(oneBurst - onePerPoll) <= mss,
            "one burst per window: cwnd " + oneBurst + " bytes, one ACK per poll: " + onePerPoll);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc5681_slowStartDoublesPerWindowWhenItsAcksArriveInOneBurst(final String congestionControl)
    {
        // RFC 5681 §3.1 (with RFC 3465, one SMSS per ACK of a full segment): slow start doubles a window the sender
        // fills every round trip. With the flight measured just before each ACK of a burst, growth stopped once the
        // flight had fallen below half of cwnd, about a third of the way through the window.
        final long onePerPoll = cwndAfterRoundTrips(congestionControl, false, 2, false, -1);
        final long oneBurst = cwndAfterRoundTrips(congestionControl, false, 2, true, -1);
        final long mss = PEER_MSS;
        assertEquals(40 * mss, onePerPoll, "10 segments, 20, 40");
        assertTrue(Math.abs(oneBurst - onePerPoll) <= mss,
            "one burst per window: cwnd " + oneBurst + " bytes, one ACK per poll: " + onePerPoll);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc7661_aWindowTheApplicationLeftHalfUnusedDoesNotGrowWhenItsAcksArriveInOneBurst(final String congestionControl)
    {
        // The window is judged over the round trip: an application that writes ten segments per round trip into a
        // window of twenty never fills it, and the ACKs of its flights, in one burst or one per poll, leave cwnd alone.
        final long mss = PEER_MSS;
        assertEquals(20 * mss, cwndAfterRoundTrips(congestionControl, true, 6, true, 10));
        assertEquals(20 * mss, cwndAfterRoundTrips(congestionControl, true, 6, false, 10));
    }

    /**
     * cwnd after {@code roundTrips} round trips of a sender with a peer window far larger than cwnd, from the initial
     * window (slow start), or in congestion avoidance from 20 segments. The application keeps data queued
     * ({@code writeSegments} -1), or writes {@code writeSegments} segments at the start and after each round trip. Each
     * round trip 10 ms later, the peer acknowledges every segment of the last one on its own, in one receive burst
     * per window ({@code oneBurst}, at most {@code NetDevice.BURST} frames) or one ACK per poll.
     */
    private static long cwndAfterRoundTrips(final String congestionControl, final boolean congestionAvoidance,
        final int roundTrips, final boolean oneBurst, final int writeSegments)
    {
        final TcpTestHarness h = new TcpTestHarness();
        h.settings().congestionControl = congestionControl;
        h.peerWindowScale = 7;
        h.passiveOpen();
        final int mss = h.conn.sendMss();
        if (congestionAvoidance)
        {
            // A loss in a flight of four segments: ssthresh two or three segments, then a window of twenty above it.
            final CongestionControl cc = h.conn.congestionController();
            cc.onFastRetransmit(4L * mss, h.now);
            cc.onRecoveryExit(h.now);
            cc.cwnd(20L * mss);
        }
        h.conn.settings().noDelay = true;
        final UnsafeBuffer chunk = new UnsafeBuffer(new byte[writeSegments < 0 ? 64 * 1024 : writeSegments * mss]);
        h.conn.write(chunk, 0, chunk.capacity());
        List<Seg> flight = h.recv();
        for (int round = 0; round < roundTrips; round++)
        {
            assertEquals(writeSegments < 0 ? h.conn.cwnd() / mss : writeSegments, flight.size(),
                "the sender fills its window, or sends what the application wrote");
            assertTrue(flight.size() <= 32, "one receive burst acknowledges the window");
            h.now += 10 * MS;
            final Seg[] acks = new Seg[flight.size()];
            for (int i = 0; i < acks.length; i++)
            {
                acks[i] = h.in().ack(flight.get(i).r.seq + flight.get(i).payload.length);
            }
            final List<Seg> next = new ArrayList<>();
            if (oneBurst)
            {
                h.sendBurst(acks);
                next.addAll(h.recv());
            }
            else
            {
                for (final Seg ack : acks)
                {
                    h.send(ack);
                    next.addAll(h.recv());
                }
            }
            // Keep data queued (the window, not the application, limits the sender), or the application's next write.
            while (h.conn.write(chunk, 0, chunk.capacity()) > 0 && writeSegments < 0)
            {
                next.addAll(h.recv());
            }
            next.addAll(h.recv());
            flight = next;
        }
        return h.conn.cwnd();
    }

    @Test
    void rfc6582_fastRetransmitStillWorksAfterMoreThanTwoGibibytesWithoutLoss()
    {
        // Step 2 holds a new recovery back until the ACK passes the last recovery point. The point starts at the ISS;
        // if it stayed there, SND.UNA would be "before" it (sequence arithmetic) from 2^31 bytes on, and a loss would
        // wait for the timeout. Jumbo frames and a large window make the 2^31 bytes about 240,000 segments.
        final TcpTestHarness big = new TcpTestHarness(9000);
        big.settings().congestionControl = "newreno";
        big.peerWindowScale = 7;
        big.peerMss = 8960;
        big.passiveOpen();
        big.conn.settings().noDelay = true;
        final UnsafeBuffer chunk = new UnsafeBuffer(new byte[256 * 1024]);
        long acked = 0;
        while (acked <= (1L << 31) + (1L << 20))
        {
            big.conn.write(chunk, 0, chunk.capacity());
            big.poll();
            big.device.takeSent();
            big.send(big.in().ack(big.conn.sndMax).window(65535));
            big.device.takeSent();
            acked = big.conn.bytesAcked();
        }
        assertEquals(big.conn.sndMax, big.conn.sndUna, "everything acknowledged, no loss");
        assertEquals(0, big.counter(StackCounter.TCP_FAST_RETRANSMITS));

        final int mss = big.conn.sendMss();
        final int una = big.conn.sndUna;
        big.conn.write(chunk, 0, 5 * mss);
        big.poll();
        assertEquals(5, big.recv().size());
        // The first of the five is lost: three duplicate ACKs.
        for (int i = 0; i < 3; i++)
        {
            big.send(big.in().ack(una).window(65535));
        }
        big.recv(big.out().seq(una).payloadLength(mss));
        assertEquals(1, big.counter(StackCounter.TCP_FAST_RETRANSMITS));
    }

    @Test
    void rfc3465_theAckOfATimeoutsResendGrowsCwndByOneSegment()
    {
        // Segment 0 of 10 is lost and its RTO expires; the peer holds 1-9, so the ACK of the resend covers all ten. In
        // the slow start that follows a timeout RFC 3465 (2.3) has L = 1 SMSS: this "big ACK" is no sign that the path
        // takes a burst, and cwnd grows from one segment to two, not three.
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(20 * mss, 5));
        assertEquals(10, t.recv().size());
        t.advance(t.conn.rtoNanos() + MS);
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        t.recv(t.out().seq(s).payloadLength(mss));
        assertEquals(mss, t.conn.cwnd());
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(2L * mss, t.conn.cwnd());
        assertEquals(2, t.recv().size());
    }

    @Test
    void rfc5681_aFinIsNotADuplicateAck()
    {
        // RFC 5681 §2: a duplicate ACK has neither SYN nor FIN set. Two duplicate ACKs and a FIN that acknowledges
        // nothing new do not make three: no fast retransmit, only the FIN's ACK.
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(5 * 1460, 14));
        assertEquals(5, t.recv().size());
        t.send(t.in());
        t.send(t.in());
        t.send(t.in().flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 1 + 5 * 1460).ack(t.irs + 2));
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
    }

    // ------------------------------------------------------------------------------------------
    // RFC 2018, RFC 2883, RFC 6675
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc2018_sackBlocksForOutOfOrderDataMostRecentFirst()
    {
        t.peerOffersAll();
        t.passiveOpen();
        // [0,100) lost; [100,200) arrives: immediate duplicate ACK reporting it.
        t.send(t.in().seq(t.irs + 101).payload(bytes(100, 2)));
        t.recv(t.out().sack(t.irs + 101, t.irs + 201));
        // [300,400): the block holding the segment that triggered the ACK comes first (§4).
        t.send(t.in().seq(t.irs + 301).payload(bytes(100, 4)));
        t.recv(t.out().sack(t.irs + 301, t.irs + 401).sack(t.irs + 101, t.irs + 201));
        // [0,100) fills the first hole: immediate ACK up to 200, still reporting [300,400).
        t.send(t.in().payload(bytes(100, 1)));
        t.recv(t.out().ack(t.irs + 201).sack(t.irs + 301, t.irs + 401));
        // [200,300) fills the last hole: everything delivered in order.
        t.send(t.in().seq(t.irs + 201).payload(bytes(100, 3)));
        t.recv(t.out().ack(t.irs + 401));
        final byte[] all = t.read();
        assertEquals(400, all.length);
        for (int i = 0; i < 4; i++)
        {
            assertArrayEquals(bytes(100, i + 1), java.util.Arrays.copyOfRange(all, i * 100, i * 100 + 100));
        }
    }

    /**
     * RFC 5681 §4.2: "A TCP receiver SHOULD send an immediate duplicate ACK when an out-of-order segment arrives", one
     * per segment, as Linux's __tcp_ack_snd_check does while its out-of-order queue is not empty. A peer without SACK
     * counts them (§3.2): three segments after a loss, arriving in one receive burst, are its three duplicate ACKs.
     * Before, the burst got one ACK, and the sender waited for more round trips or its RTO.
     */
    @Test
    void rfc5681_eachOutOfOrderSegmentOfABurstGetsItsOwnDuplicateAck()
    {
        t.passiveOpen();
        t.sendBurst(
            t.in().seq(t.irs + 1 + 1460).payload(bytes(1460, 2)),
            t.in().seq(t.irs + 1 + 2920).payload(bytes(1460, 3)),
            t.in().seq(t.irs + 1 + 4380).payload(bytes(1460, 4)));
        t.recv(t.out(), t.out(), t.out());
        // The lost segment fills the hole: one ACK for everything, and nothing more after it.
        t.send(t.in().payload(bytes(1460, 1)));
        t.recv(t.out().ack(t.irs + 1 + 5840));
        t.advanceMs(500);
        t.recvNothing();
    }

    /** RFC 5681 §4.2 with RFC 2018 §4: each duplicate ACK of a burst carries the SACK blocks as they stand after its segment. */
    @Test
    void rfc2018_eachOutOfOrderSegmentOfABurstIsAcknowledgedWithTheBlocksItLeaves()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.sendBurst(
            t.in().seq(t.irs + 1 + 1460).payload(bytes(1460, 2)),
            t.in().seq(t.irs + 1 + 2920).payload(bytes(1460, 3)),
            t.in().seq(t.irs + 1 + 5840).payload(bytes(1460, 5)));
        t.recv(
            t.out().sack(t.irs + 1 + 1460, t.irs + 1 + 2920),
            t.out().sack(t.irs + 1 + 1460, t.irs + 1 + 4380),
            t.out().sack(t.irs + 1 + 5840, t.irs + 1 + 7300).sack(t.irs + 1 + 1460, t.irs + 1 + 4380));
    }

    /**
     * RFC 5681 §4.2: "a TCP receiver SHOULD send an immediate ACK when an incoming segment fills in all or part of a
     * gap": a segment that fills the first of two holes is acknowledged at once, a partial ACK a NewReno sender answers
     * with the next hole (RFC 6582 §3.2 step 5). The segment that then fills the last hole, and in-order data after it
     * in the same burst, share the ACK at the end of the burst.
     */
    @Test
    void rfc5681_aSegmentThatFillsPartOfTheGapsIsAcknowledgedAtOnceWithinABurst()
    {
        t.passiveOpen();
        t.send(t.in().seq(t.irs + 1 + 1460).payload(bytes(1460, 2)));
        t.recv(t.out());
        t.send(t.in().seq(t.irs + 1 + 4380).payload(bytes(1460, 4)));
        t.recv(t.out());
        t.sendBurst(
            t.in().payload(bytes(1460, 1)),
            t.in().seq(t.irs + 1 + 2920).payload(bytes(1460, 3)),
            t.in().seq(t.irs + 1 + 5840).payload(bytes(1460, 5)));
        t.recv(t.out().ack(t.irs + 1 + 2920), t.out().ack(t.irs + 1 + 7300));
        assertEquals(7300, t.read().length);
    }

    @Test
    void rfc2883_duplicateSegmentReportedAsDsack()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 101));
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 1)));
        t.recv(t.out().ack(t.irs + 101).sack(t.irs + 1, t.irs + 101));
    }

    /**
     * RFC 2883 §4: each duplicate segment is reported in the D-SACK block of the ACK it gets, so two duplicates in one
     * burst get an ACK each (as Linux's tcp_send_dupack answers every one at once). Before, the burst got one ACK at its
     * end, reporting the last duplicate only: the sender never learnt of the other spurious retransmission.
     */
    @Test
    void rfc2883_eachDuplicateOfABurstGetsAnAckWithItsOwnDsack()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.sendBurst(t.in().flags(ACK | PSH).payload(bytes(100, 1)), t.in().seq(t.irs + 101).flags(ACK | PSH).payload(bytes(100, 2)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 201));
        t.sendBurst(t.in().flags(ACK | PSH).payload(bytes(100, 1)), t.in().seq(t.irs + 101).flags(ACK | PSH).payload(bytes(100, 2)));
        t.recv(t.out().ack(t.irs + 201).sack(t.irs + 1, t.irs + 101), t.out().ack(t.irs + 201).sack(t.irs + 101, t.irs + 201));
    }

    /**
     * RFC 2883 §4: "A D-SACK block is used to report a duplicate contiguous sequence of data received by the receiver in
     * the most recent packet": a segment that straddles RCV.NXT carries one below it (Linux's tcp_data_queue:
     * tcp_dsack_set(sk, seq, rcv_nxt)). Before, only segments wholly below RCV.NXT were reported.
     */
    @Test
    void rfc2883_thePartOfASegmentBelowRcvNxtIsReportedAsDsack()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 101));
        // [50, 150): [50, 100) is a duplicate.
        final byte[] b = new byte[100];
        System.arraycopy(bytes(100, 1), 50, b, 0, 50);
        t.send(t.in().seq(t.irs + 51).flags(ACK | PSH).payload(b));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 151).sack(t.irs + 51, t.irs + 101));
        assertEquals(150, t.read().length);
    }

    /**
     * RFC 2883 §4: a duplicate of data held above RCV.NXT is reported in the first block, and "the second SACK block in
     * that SACK option should specify that (possibly larger) block of data" (Linux's tcp_data_queue_ofo).
     */
    @Test
    void rfc2883_aDuplicateOfOutOfOrderDataIsReportedAsDsackBeforeTheBlockHoldingIt()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.send(t.in().seq(t.irs + 101).payload(bytes(100, 2)));
        t.recv(t.out().sack(t.irs + 101, t.irs + 201));
        t.send(t.in().seq(t.irs + 151).payload(java.util.Arrays.copyOfRange(bytes(100, 2), 50, 100)));
        t.recv(t.out().sack(t.irs + 151, t.irs + 201).sack(t.irs + 101, t.irs + 201));
        // Partly new: [191, 231) brings [201, 231), its first 10 bytes are the duplicate.
        t.send(t.in().seq(t.irs + 191).payload(new byte[40]));
        t.recv(t.out().sack(t.irs + 191, t.irs + 201).sack(t.irs + 101, t.irs + 231));
        // Nothing duplicate: no D-SACK.
        t.send(t.in().seq(t.irs + 301).payload(new byte[10]));
        t.recv(t.out().sack(t.irs + 301, t.irs + 311).sack(t.irs + 101, t.irs + 231));
    }

    /** RFC 2883 §4: the hole filled by a segment that reaches into data held out of order reports that part (Linux's tcp_ofo_queue). */
    @Test
    void rfc2883_aSegmentFillingTheHoleReportsWhatItCarriedOfTheDataHeldAsDsack()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.send(t.in().seq(t.irs + 101).payload(bytes(100, 2)));
        t.recv(t.out().sack(t.irs + 101, t.irs + 201));
        t.send(t.in().payload(new byte[150]));
        t.recv(t.out().ack(t.irs + 201).sack(t.irs + 101, t.irs + 151));
    }

    @Test
    void rfc6675_senderRetransmitsHolesReportedBySack()
    {
        t.peerOffersAll();
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        t.write(bytes(10 * mss, 5));
        assertEquals(10, t.recv().size());
        // Segments 1 and 4 lost: the peer SACKs 2-3 and 5-10.
        t.send(t.in().sack(t.iss + 1 + 4 * mss, t.iss + 1 + 10 * mss).sack(t.iss + 1 + mss, t.iss + 1 + 3 * mss));
        t.recv(t.out().payloadLength(mss), t.out().seq(t.iss + 1 + 3 * mss).payloadLength(mss));
        assertEquals(5 * mss, t.conn.ssthresh(), "RFC 6675 §5 (4.2): ssthresh = FlightSize / 2");
        t.send(t.in().ack(t.iss + 1 + 10 * mss));
        t.recvNothing();
        assertEquals(5 * mss, t.conn.cwnd());
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
    }

    @Test
    void rfc6675_sackOnSegmentsThatCarryDataCountsAsDuplicateAcks()
    {
        // RFC 6675 §2: an ACK that SACKs new data is a duplicate "even if it carries new data". With data flowing both
        // ways the peer's ACKs ride on its data; if only pure ACKs counted, its SACKs would never start a recovery.
        t.peerOffersAll();
        t.passiveOpen();
        final List<Seg> flight = sendTenSegments();
        final int s = flight.get(0).r.seq;
        final int len = flight.get(0).payload.length;
        int peerSeq = t.irs + 1;
        for (int i = 1; i <= 2; i++)
        {
            t.send(t.in().seq(peerSeq).flags(ACK | PSH).payload(bytes(100, i)).sack(s + len, s + (i + 1) * len));
            peerSeq += 100;
        }
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "two segments SACKed: not yet");
        t.send(t.in().seq(peerSeq).flags(ACK | PSH).payload(bytes(100, 3)).sack(s + len, s + 4 * len));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "the third duplicate: recovery");
        assertTrue(retransmitted(t.recv(), s, len), "the lost first segment is sent again at once");
    }

    @Test
    void rfc6675_acksThatCarryOnlyADsackAreNotDuplicateAcks()
    {
        // The network duplicated segment 0, which had already arrived: the peer reports each copy in a D-SACK (RFC
        // 2883) below SND.UNA. With SACK, RFC 6675 §2 counts an ACK as a duplicate only when it SACKs something new;
        // these report no loss, and three of them must not start a recovery or send anything again.
        final int mss = newRenoSending(20, 10);
        final int s = t.iss + 1;
        t.send(t.in().ack(s + mss));
        t.recv();
        for (int i = 0; i < 3; i++)
        {
            t.send(t.in().ack(s + mss).sack(s, s + mss));
        }
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertEquals(0, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS));
    }

    @Test
    void rfc6675_copiesOfAnAckWithoutSackBlocksAreNotDuplicateAcks()
    {
        // The network delivered one pure ACK four times. Without SACK they would be RFC 5681 duplicates; with SACK in
        // use they SACK nothing, so RFC 6675 §2 counts none of them: no limited transmit, no recovery.
        t.peerOffersAll();
        t.settings().congestionControl = "cubic";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(20 * mss, 5));
        assertEquals(10, t.recv().size());
        t.send(t.in().ack(s + mss));
        assertFalse(t.recv().isEmpty(), "slow start: new data");
        for (int i = 0; i < 3; i++)
        {
            t.send(t.in().ack(s + mss));
        }
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertEquals(0, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS));
    }

    @Test
    void rfc6675_isLostCountsMoreThanTwoSegmentsOfBytesSackedAboveTheHole()
    {
        // IsLost: more than (DupThresh - 1) * SMSS bytes SACKed above the hole. Three small segments (an application
        // writing 1000 bytes at a time without Nagle) SACKed by one ACK make 3000 bytes: more than 2 * 1448.
        t.peerOffersAll();
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        for (int i = 0; i < 5; i++)
        {
            t.write(bytes(1000, i));
        }
        final List<Seg> flight = t.recv();
        assertEquals(5, flight.size());
        final int s = flight.get(0).r.seq;
        t.send(t.in().sack(s + 1000, s + 4000));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertTrue(retransmitted(t.recv(), s, 1000));
    }

    @Test
    void rfc8985_inRecoveryAHoleWithOneSegmentSackedAboveItIsSentBeforeNewData()
    {
        // Segments 0 and 8 of 10 are missing; the peer SACKs 1-7 and 9. RFC 6675's IsLost(8) would not hold yet (one
        // segment SACKed above it), and new data would go first. In recovery this stack deems every hole below a SACK
        // lost, as RFC 8985 does (reordering window 0 in recovery when no reordering has been seen): 8 goes at once,
        // right after 0, then new data while cwnd allows. Measured against strict IsLost in BENCHMARKS.md.
        final int mss = newRenoSending(20, 10);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + 9 * mss, s + 10 * mss).sack(s + mss, s + 8 * mss));
        final List<Seg> recovery = t.recv();
        assertEquals(s, recovery.get(0).r.seq, "segment 0 first");
        assertEquals(s + 8 * mss, recovery.get(1).r.seq, "then segment 8, before any new data");
        // cwnd 5 segments (half the flight), pipe 2 once both are sent: three segments of new data.
        assertEquals(5, recovery.size());
        for (int i = 2; i < recovery.size(); i++)
        {
            assertEquals(s + (8 + i) * mss, recovery.get(i).r.seq, "new data");
        }
        t.send(t.in().ack(s + 10 * mss).sack(s + 10 * mss, s + 11 * mss));
        assertEquals(s + 10 * mss, t.conn.sndUna);
        assertEquals(0, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    private List<Seg> sendTenSegments()
    {
        t.write(bytes(10 * t.conn.sendMss(), 5));
        final List<Seg> flight = t.recv();
        assertTrue(flight.size() >= 10, "a full initial window: " + flight.size());
        return flight;
    }

    private static boolean retransmitted(final List<Seg> sent, final int seq, final int length)
    {
        for (final Seg seg : sent)
        {
            if (seg.r.seq == seq && seg.payload.length == length)
            {
                return true;
            }
        }
        return false;
    }

    @Test
    void rfc6675_rescueRetransmissionSendsALostTailOncePerRecovery()
    {
        // Segments 0 and 9 of 10 are lost and 8 is delayed; the peer SACKs 1-7. Recovery resends 0 (rule 1, the only
        // hole below a SACK). Its ACK (0-7) leaves no hole and there is no new data: nothing can reveal 9's loss, so
        // rule 4 resends the segment holding the highest unSACKed byte while cwnd - pipe allows: 9, at once, instead
        // of after the retransmission timeout. Only once per recovery: the partial ACK when 8 arrives brings no second
        // rescue (RescueRxt is then the recovery point).
        final int mss = newRenoSending(10, 10);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + mss, s + 3 * mss));
        t.send(t.in().sack(s + mss, s + 5 * mss));
        t.send(t.in().sack(s + mss, s + 8 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        t.advanceMs(10);
        t.send(t.in().ack(s + 8 * mss));
        t.recv(t.out().seq(s + 9 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        t.send(t.in().ack(s + 9 * mss));
        t.recvNothing();
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(1, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc6675_noRescueBeforeTheCumulativeAckPassesTheFirstRetransmission()
    {
        // §5 (4.3): RescueRxt is set to the end of the first retransmission "to prevent ... a premature rescue
        // retransmission"; NextSeg (4) rescues only once HighACK > RescueRxt. Segments 1 and 10 of 10 are lost and 2-9
        // SACKed: recovery resends 1 and nothing else, however much room cwnd leaves. The ACK of that resend (1-9)
        // lets the rescue send 10, once.
        final int mss = newRenoSending(10, 10);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + mss, s + 3 * mss));
        t.send(t.in().sack(s + mss, s + 5 * mss));
        t.send(t.in().sack(s + mss, s + 9 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        assertTrue(t.conn.cwnd() - 2L * mss >= mss, "room for a rescue: cwnd " + t.conn.cwnd());
        assertEquals(0, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS), "the first retransmission is not acknowledged");
        t.advanceMs(10);
        t.send(t.in().ack(s + 9 * mss));
        t.recv(t.out().seq(s + 9 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(1, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc9293_inSackRecoveryNoHoleIsSentPastTheRightEdgeOfAShrunkWindow()
    {
        // Segments 0, 4 and 7 of 10 are lost; the peer SACKs the rest but has shrunk its window to 4 segments and 100
        // octets (RFC 9293 §3.8.6: it should not, but may; MUST-34). Recovery resends 0, and of 4 what is left of the
        // window; 7 starts past the right edge SND.UNA + SND.WND, where the peer would drop it (Linux's
        // tcp_retransmit_skb does not send it either). The rest goes once the window opens, without a timeout.
        final int mss = sackPeerSending(10);
        final int s = t.iss + 1;
        final int window = 4 * mss + 100;
        t.send(t.in().window(window).sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        t.send(t.in().window(window).sack(s + 5 * mss, s + 7 * mss).sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s + 4 * mss).payloadLength(100));
        t.send(t.in().window(window).sack(s + 8 * mss, s + 10 * mss).sack(s + 5 * mss, s + 7 * mss).sack(s + mss, s + 4 * mss));
        t.recvNothing();

        t.send(t.in().sack(s + 8 * mss, s + 10 * mss).sack(s + 5 * mss, s + 7 * mss).sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s + 4 * mss + 100).payloadLength(mss - 100), t.out().seq(s + 7 * mss).payloadLength(mss));
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(s + 10 * mss, t.conn.sndUna);
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc9293_inSackRecoveryNothingIsSentIntoAWindowShrunkToZero()
    {
        // Segments 0, 2, 4 and 6 of 10 are lost, the rest SACKed, and the peer's window closes (its application stopped
        // reading). No hole goes into the closed window, SND.UNA's neither: as after any timeout behind a closed window,
        // the persist timer probes it with one octet (RFC 9293 §3.8.6.1), and the connection lives while the peer
        // answers. Once the window opens, every hole goes and all the data ends acknowledged.
        final int mss = sackPeerSending(10);
        final int s = t.iss + 1;
        final boolean[] held = {false, true, false, true, false, true, false, true, true, true};
        t.send(t.in().window(0).sack(s + mss, s + 2 * mss));
        t.send(t.in().window(0).sack(s + 3 * mss, s + 4 * mss).sack(s + mss, s + 2 * mss));
        t.send(t.in().window(0).sack(s + 5 * mss, s + 6 * mss).sack(s + 3 * mss, s + 4 * mss).sack(s + mss, s + 2 * mss));
        t.send(t.in().window(0).sack(s + 7 * mss, s + 10 * mss).sack(s + 5 * mss, s + 6 * mss).sack(s + 3 * mss, s + 4 * mss));
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
        t.recvNothing();
        int probes = 0;
        for (int step = 0; step < 600; step++)
        {
            t.advanceMs(100);
            for (final Seg seg : t.recv())
            {
                assertEquals(s, seg.r.seq, t.describe(seg));
                assertTrue(seg.payload.length <= 1, "a zero-window probe: " + t.describe(seg));
                t.send(acknowledgeHeld(held, s, mss, 0));
                probes++;
            }
        }
        assertTrue(probes > 0, "the closed window is probed");
        assertEquals(TcpState.ESTABLISHED, t.conn.state());

        t.send(acknowledgeHeld(held, s, mss, 65535));
        for (int round = 0; round < 100 && t.conn.sndUna != s + 10 * mss; round++)
        {
            for (final Seg seg : t.recv())
            {
                for (int i = (seg.r.seq - s) / mss; i < (seg.r.seq - s + seg.payload.length + mss - 1) / mss; i++)
                {
                    held[i] = true;
                }
            }
            t.advanceMs(10);
            t.send(acknowledgeHeld(held, s, mss, 65535));
        }
        assertEquals(s + 10 * mss, t.conn.sndUna, "all the data acknowledged: " + t.conn.describe());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc6675_theRescueRetransmissionWaitsForAWindowShrunkBeforeTheTail()
    {
        // Segments 0 and 9 of 10 are lost and 8 is delayed; the peer SACKs 1-7 and recovery resends 0. The ACK of it
        // (0-7) shrinks the window to one segment: 8, in flight, fits; 9 starts at the right edge. The rescue (RFC 6675
        // NextSeg rule 4) does not send it into the window, where the peer would drop it, nor counts it as done: it
        // goes, once, when the window opens, and the recovery ends without a timeout.
        final int mss = sackPeerSending(10);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + mss, s + 3 * mss));
        t.send(t.in().sack(s + mss, s + 5 * mss));
        t.send(t.in().sack(s + mss, s + 8 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        t.advanceMs(10);
        t.send(t.in().ack(s + 8 * mss).window(mss));
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        t.send(t.in().ack(s + 8 * mss));
        t.recv(t.out().seq(s + 9 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(s + 10 * mss, t.conn.sndUna);
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    /** A SACK peer without window scaling (its window set to the octet) and NewReno; {@code segments} full ones sent. */
    private int sackPeerSending(final int segments)
    {
        t.peerSackPermitted = true;
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        t.write(bytes(segments * mss, 5));
        assertEquals(segments, t.recv().size());
        return mss;
    }

    /** The peer's ACK for the full segments from {@code s} it {@code held}: the cumulative point, then SACK blocks. */
    private Seg acknowledgeHeld(final boolean[] held, final int s, final int mss, final int window)
    {
        int cumulative = 0;
        while (cumulative < held.length && held[cumulative])
        {
            cumulative++;
        }
        final Seg ack = t.in().ack(s + cumulative * mss).window(window);
        int blocks = 0;
        for (int i = cumulative; i < held.length && blocks < 4; i++)
        {
            if (held[i] && (i == 0 || !held[i - 1]))
            {
                int end = i;
                while (end < held.length && held[end])
                {
                    end++;
                }
                ack.sack(s + i * mss, s + end * mss);
                blocks++;
            }
        }
        return ack;
    }

    @Test
    void aLostRetransmissionIsSentAgainOnceThreeSegmentsSentAfterItAreSacked()
    {
        // Segment 1 is lost, and so is its fast retransmission. Recovery goes on with new data; once more than two
        // segments' worth sent after the retransmission is SACKed and segment 1 is still missing, it goes again,
        // instead of the cumulative ACK waiting for the retransmission timeout.
        t.peerOffersAll();
        t.peerWindowScale = 7;
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(30 * mss, 7));
        assertEquals(10, t.recv().size());
        t.send(t.in().sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        // Segments 5-10 arrive: pipe falls and new data (11, 12, ...) goes out.
        int newData = 0;
        for (int end = 5; end <= 10; end++)
        {
            t.send(t.in().sack(s + mss, s + end * mss));
            for (final Seg seg : t.recv())
            {
                assertTrue(Seq.ge(seg.r.seq, s + 10 * mss), "only new data, no second retransmission yet: " + t.describe(seg));
                newData++;
            }
        }
        assertTrue(newData >= 3, "new data in recovery: " + newData);
        // Two of the new segments SACKed: not yet (reordering is allowed for).
        t.send(t.in().sack(s + mss, s + 12 * mss));
        assertFalse(retransmitted(t.recv(), s, mss));
        // The third: the retransmission was lost.
        t.send(t.in().sack(s + mss, s + 13 * mss));
        assertTrue(retransmitted(t.recv(), s, mss), "segment 1 sent a second time");
        assertEquals(1, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "one recovery, not a new one");
        t.send(t.in().ack(s + 13 * mss));
        assertEquals(s + 13 * mss, t.conn.sndUna);
    }

    @Test
    void aLostRetransmissionIsSentAgainARoundTripAfterItOnceDataSentAfterItIsSacked()
    {
        // A small recovery: segment 1 of 10 is lost, and so is its fast retransmission. Only two segments of new data
        // are left to go out after it: the byte rule (more than two segments' worth SACKed) can never hold. Once data
        // sent after the retransmission is SACKed and a round trip plus a reordering window (SRTT / 4, at least 1 ms)
        // has passed since it went out, it would have arrived: segment 1 goes again (RACK's time rule), by a timer
        // when the SACK comes sooner. Before, this waited for the retransmission timeout.
        final int mss = newRenoSending(12, 10);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        t.send(t.in().sack(s + mss, s + 10 * mss));
        assertEquals(2, t.recv().size(), "the last two segments of new data");
        t.send(t.in().sack(s + mss, s + 11 * mss));
        assertFalse(retransmitted(t.recv(), s, mss), "not yet: no time has passed since the retransmission");
        t.advanceMs(2);
        t.recv(t.out().seq(s).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        t.send(t.in().ack(s + 12 * mss));
        assertEquals(s + 12 * mss, t.conn.sndUna);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cubic", "newreno"})
    void rfc6675_aRecoveryRightAfterAnotherDoesNotResendAHoleWhoseResendIsInFlight(final String congestionControl)
    {
        // The first recovery sends S<R> (new data after its recovery point R) again when S<R+1> and S<R+2> are SACKed
        // above it, and ends when the ACK reaches R. S<R+3>, sent before that resend, is SACKed next: a second
        // recovery starts (a new loss, a new reduction), but its SACK says nothing about the resend, still on its way.
        // It is not sent a third time, and HighRxt stays past it (RFC 6675 §4 NextSeg never resends below HighRxt).
        // The resend stays watched: once data sent after it is SACKed and a round trip has passed, it goes again.
        t.peerWindowScale = 7;
        t.peerSackPermitted = true;
        t.settings().congestionControl = congestionControl;
        t.settings().noDelay = true;
        t.settings().tailLossProbe = false;
        t.passiveOpen();
        final int m = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(60 * m, 3));
        assertEquals(10, t.recv().size());
        // S0 lost: the first recovery.
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
        assertTrue(Seq.ge(t.conn.sndMax, s + (r + 4) * m), "S" + r + " to S" + (r + 3) + " sent in the recovery");
        // S<R> lost: S<R+1> and S<R+2> SACKed above it, and it goes again.
        t.send(t.in().sack(s + (r + 1) * m, s + (r + 3) * m).sack(s + m, s + r * m));
        assertTrue(retransmitted(t.recv(), s + r * m, m), "the first recovery resends S" + r);
        // S0's resend arrives: the ACK reaches the recovery point.
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, s + (r + 3) * m));
        t.recv();
        assertFalse(t.conn.inRecovery, "the first recovery is over");
        final int highRxt = t.conn.highRxt;
        assertEquals(s + (r + 1) * m, highRxt);
        // S<R+3>, sent before S<R>'s resend, arrives.
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, s + (r + 4) * m));
        assertEquals(2, t.counter(StackCounter.TCP_FAST_RETRANSMITS), "a second recovery");
        assertFalse(retransmitted(t.recv(), s + r * m, m), "S" + r + "'s resend is still on its way");
        assertEquals(highRxt, t.conn.highRxt, "HighRxt stays past it");
        // Everything else SACKed, then data sent after the resend: a round trip later the resend counts as lost.
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, t.conn.sndMax));
        t.recv();
        t.send(t.in().ack(s + r * m).sack(s + (r + 1) * m, t.conn.sndMax));
        t.advanceMs(2);
        assertTrue(retransmitted(t.recv(), s + r * m, m), "the lost resend goes again");
        assertEquals(1, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc6675_noRescueWhileCwndLeavesLessThanOneSegmentOfRoom()
    {
        // §5 (C): NextSeg is consulted only while cwnd - pipe >= 1 SMSS. Nine and a half segments, the first and the
        // half lost; NewReno's ssthresh is half the flight, 4.75 segments. A rescue waits for the ACK of the first
        // retransmission (§5 (4.3)), so the ACKs here are cumulative.
        t.peerOffersAll();
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(9 * mss + mss / 2, 6));
        assertEquals(10, t.recv().size());
        t.send(t.in().sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        assertEquals((9 * mss + mss / 2) / 2, t.conn.cwnd());
        // 0-4 acknowledged: pipe is 4.5 segments, a quarter of a segment under cwnd. No rescue yet.
        t.send(t.in().ack(s + 5 * mss));
        t.recvNothing();
        // All but 8 and the half: pipe is 1.5 segments. The rescue sends the tail, a full segment ending at SND.MAX.
        t.send(t.in().ack(s + 8 * mss));
        t.recv(t.out().seq(s + 8 * mss + mss / 2).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_RESCUE_RETRANSMITS));
    }

    @Test
    void rfc6675_noHoleIsSentAgainWhileCwndLeavesLessThanOneSegmentOfRoom()
    {
        // §5 (C): retransmission goes on only "while cwnd - pipe >= 1 SMSS". Nine and a half segments; 0-5 lost, 6-9
        // SACKed in one ACK. NewReno's ssthresh, the recovery's cwnd, is half the flight: 4.75 segments. After four holes
        // sent again pipe is four segments, three quarters of a segment under cwnd: the fifth waits for an ACK.
        t.peerOffersAll();
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(9 * mss + mss / 2, 6));
        assertEquals(10, t.recv().size());
        t.send(t.in().sack(s + 6 * mss, s + 9 * mss + mss / 2));
        final List<Seg> sent = t.recv();
        assertEquals((9 * mss + mss / 2) / 2, t.conn.cwnd());
        assertEquals(List.of(0, 1, 2, 3), segmentNumbers(sent, s, mss));
        // The first two resends arrive: pipe is two segments, room for two more holes.
        t.send(t.in().ack(s + 2 * mss).sack(s + 6 * mss, s + 9 * mss + mss / 2));
        assertEquals(List.of(4, 5), segmentNumbers(t.recv(), s, mss));
    }

    @Test
    void rfc6675_afterATimeoutTheDataSentAgainSkipsWhatThePeerSacked()
    {
        // §5.1: after an RTO the sender "SHOULD use this SACK information when determining what data should be sent".
        // Segments 0-10 (of 12); the peer holds 1-3 and 5-7, and what recovery sent is lost too. The timeout
        // forgets the scoreboard (RFC 2018 §8: the peer may have reneged) and sends segment 0 again; the peer's ACK of
        // 0-3 SACKs 5-7 afresh, and lets cwnd grow from one segment to two (RFC 3465 (2.3): L = 1 SMSS in the slow
        // start after a timeout). The segments sent are 4 and 8: 5-7 are not sent a second time, nor counted in flight.
        final int mss = goneBackPastTheSackedSegments();
        final int s = t.iss + 1;
        assertEquals(2 * mss, t.conn.cwnd());
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        // The rest is 10, which recovery sent, and 11, new data.
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(List.of(10, 11), segmentNumbers(t.recv(), s, mss));
        t.send(t.in().ack(s + 12 * mss));
        assertEquals(s + 12 * mss, t.conn.sndUna);
    }

    @Test
    void rfc6675_aLostRetransmissionAfterATimeoutIsSentAgainWithoutAnotherTimeout()
    {
        // The timeout's resend of segment 4 is lost; segment 8, sent after it, is SACKed. RFC 6675 §5.1 forbids a new
        // recovery until the recovery point is acknowledged, so segment 4 used to wait for a second, doubled,
        // timeout. Data sent after it has arrived: a round trip and a reordering window later, it goes again.
        final int mss = goneBackPastTheSackedSegments();
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 4 * mss).sack(s + 5 * mss, s + 9 * mss));
        assertFalse(retransmitted(t.recv(), s + 4 * mss, mss), "not yet: no time has passed since 4 went out");
        t.advanceMs(2);
        t.recv(t.out().seq(s + 4 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES), "no second timeout");
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(s + 10 * mss, t.conn.sndUna);
    }

    @Test
    void rfc6675_aRetransmissionAfterATimeoutThatTheAckReachesIsWatchedFromThen()
    {
        // The ACK of 4-7 makes 8, already sent again, SND.UNA: its loss is watched from then on. 9 and 10, sent again
        // after that ACK (cwnd 3: RFC 3465 (2.3), L = 1 SMSS after a timeout), are SACKed: a round trip and a
        // reordering window after that ACK, 8 goes again, without a second timeout.
        final int mss = goneBackPastTheSackedSegments();
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 8 * mss));
        assertEquals(List.of(9, 10), segmentNumbers(t.recv(), s, mss), "9 and 10 again");
        t.send(t.in().ack(s + 8 * mss).sack(s + 9 * mss, s + 11 * mss));
        assertFalse(retransmitted(t.recv(), s + 8 * mss, mss), "not yet: no time has passed since 8 became SND.UNA");
        t.advanceMs(2);
        t.recv(t.out().seq(s + 8 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        t.send(t.in().ack(s + 12 * mss));
        assertEquals(s + 12 * mss, t.conn.sndUna);
    }

    @Test
    void aLateAckFromBeforeTheTimeoutIsNoSignThatTheTimeoutsResendIsLost()
    {
        // The peer's ACK of the original 8 and 9 (ack 0, SACK 5-9 and 1-3), sent before the timeout, arrives just
        // after it (delayed, or duplicated). Everything it SACKs was sent before segment 0's resend: neither the byte
        // rule at once nor, for a single segment SACKed, the time rule later may count it as sent after the resend.
        final int mss = sackRecoveryThenTimeout();
        final int s = t.iss + 1;
        t.send(t.in().ack(s).sack(s + 5 * mss, s + 10 * mss).sack(s + mss, s + 4 * mss));
        assertFalse(retransmitted(t.recv(), s, mss), "segment 0 sent a third time at once");
        t.send(t.in().ack(s).sack(s + 9 * mss, s + 10 * mss));
        t.advanceMs(2);
        assertFalse(retransmitted(t.recv(), s, mss), "segment 0 sent a third time by the time rule");
        assertEquals(0, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
    }

    @Test
    void rfc3042_theFirstTwoDuplicateAcksEachLetOneNewSegmentOut()
    {
        // A full window of ten segments, ten more queued. Each of the first two duplicate ACKs sends one segment of new
        // data beyond cwnd, and cwnd does not change for them (RFC 5681 §3.2); the third starts recovery with segment 0.
        final int mss = newRenoSending(20, 10);
        final int s = t.iss + 1;
        final long cwnd = t.conn.cwnd();
        t.send(t.in().ack(s).sack(s + mss, s + 2 * mss));
        assertEquals(List.of(10), segmentNumbers(t.recv(), s, mss));
        t.send(t.in().ack(s).sack(s + mss, s + 3 * mss));
        assertEquals(List.of(11), segmentNumbers(t.recv(), s, mss));
        assertEquals(cwnd, t.conn.cwnd());
        assertEquals(0, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        t.send(t.in().ack(s).sack(s + mss, s + 4 * mss));
        assertEquals(0, segmentNumbers(t.recv(), s, mss).get(0));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
    }

    @Test
    void rfc3042_limitedTransmitDataIsNotInTheFlightSizeThatSetsSsthreshWithSack()
    {
        // Ten segments in flight, two more sent by limited transmit on the first two duplicate ACKs; the third starts
        // recovery. RFC 5681 §3.2 step 2: limited-transmit data MUST NOT be included in FlightSize: ssthresh is half
        // of the ten, not of twelve.
        final int mss = newRenoSending(20, 10);
        final int s = t.iss + 1;
        t.send(t.in().ack(s).sack(s + mss, s + 2 * mss));
        assertEquals(1, t.recv().size(), "limited transmit");
        t.send(t.in().ack(s).sack(s + mss, s + 3 * mss));
        assertEquals(1, t.recv().size(), "limited transmit");
        t.send(t.in().ack(s).sack(s + mss, s + 4 * mss));
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertEquals(5L * mss, t.conn.ssthresh());
    }

    @Test
    void rfc3042_limitedTransmitDataIsNotInTheFlightSizeThatSetsSsthreshWithoutSack()
    {
        // As above with RFC 5681 duplicate ACKs: ssthresh = 10 / 2 segments, and NewReno's cwnd = ssthresh + 3 SMSS.
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        t.write(bytes(20 * mss, 5));
        assertEquals(10, t.recv().size());
        t.send(t.in());
        assertEquals(1, t.recv().size(), "limited transmit");
        t.send(t.in());
        assertEquals(1, t.recv().size(), "limited transmit");
        t.send(t.in());
        assertEquals(1, t.counter(StackCounter.TCP_FAST_RETRANSMITS));
        assertEquals(5L * mss, t.conn.ssthresh());
        assertEquals(8L * mss, t.conn.cwnd());
    }

    @Test
    void rfc3042_goingBackLimitedTransmitSendsNoDataSentBefore()
    {
        // After the timeout cwnd is one segment, which segment 0's resend fills. A late ACK from before the timeout
        // (ack 0, SACK 5-9 and 1-3) is a duplicate ACK. RFC 3042 lets each of the first two duplicates send one
        // segment beyond cwnd, but only of "previously unsent data", which none of the go-back's resends is: segment 4
        // waits for the ACK of 0-3, and then goes with 10 (recovery sent it), as cwnd allows (1 + 1 segment: RFC 3465
        // (2.3), L = 1 SMSS in the slow start after a timeout).
        final int mss = sackRecoveryThenTimeout();
        final int s = t.iss + 1;
        t.send(t.in().ack(s).sack(s + 5 * mss, s + 10 * mss).sack(s + mss, s + 4 * mss));
        t.recvNothing();
        t.send(t.in().ack(s + 4 * mss).sack(s + 5 * mss, s + 10 * mss));
        assertEquals(List.of(4, 10), segmentNumbers(t.recv(), s, mss));
    }

    @Test
    void aBlockLearntLateDoesNotMakeOneReorderedResendALostRetransmission()
    {
        // Segments 10-29 in flight; the peer holds 11, 13, 15, 17-19 and 21-23, and recovery's resends are lost: a
        // timeout. The ACK of 10's resend has room for three blocks of the four (timestamps on): 17-19 is not among
        // them, and the go-back sends 12 and 14 (cwnd 2: RFC 3465 (2.3), L = 1 SMSS after a timeout), which leaves
        // SND.NXT at 16 (past 15, SACKed). 14's resend overtakes 12's; the peer's next SACK reports 13-15 and, at
        // last, 17-19. Only 14 was sent after 12: one segment of reordering, not the byte rule's three; 17-19, from
        // SND.NXT on, was sent before the timeout.
        final int mss = newRenoSending(60, 10);
        final int s = t.iss + 1;
        t.settings().tailLossProbe = false;
        for (int i = 1; i <= 10; i++)
        {
            t.send(t.in().ack(s + i * mss));
        }
        assertEquals(30, segmentNumbers(t.recv(), s, mss).get(19) + 1, "10-29 in flight");
        t.send(t.in().ack(s + 10 * mss).sack(s + 11 * mss, s + 12 * mss));
        t.send(t.in().ack(s + 10 * mss).sack(s + 13 * mss, s + 14 * mss).sack(s + 11 * mss, s + 12 * mss));
        t.send(t.in().ack(s + 10 * mss).sack(s + 15 * mss, s + 16 * mss).sack(s + 13 * mss, s + 14 * mss)
            .sack(s + 11 * mss, s + 12 * mss));
        t.send(t.in().ack(s + 10 * mss).sack(s + 17 * mss, s + 20 * mss).sack(s + 15 * mss, s + 16 * mss)
            .sack(s + 13 * mss, s + 14 * mss));
        t.send(t.in().ack(s + 10 * mss).sack(s + 21 * mss, s + 24 * mss).sack(s + 17 * mss, s + 20 * mss)
            .sack(s + 15 * mss, s + 16 * mss));
        t.recv();
        t.advance(t.conn.rtoNanos() + MS);
        t.recv(t.out().seq(s + 10 * mss).payloadLength(mss));
        t.send(t.in().ack(s + 12 * mss).sack(s + 13 * mss, s + 14 * mss).sack(s + 15 * mss, s + 16 * mss)
            .sack(s + 21 * mss, s + 24 * mss));
        assertEquals(List.of(12, 14), segmentNumbers(t.recv(), s, mss));
        assertEquals(s + 16 * mss, t.conn.sndNxt);
        t.send(t.in().ack(s + 12 * mss).sack(s + 13 * mss, s + 16 * mss).sack(s + 17 * mss, s + 20 * mss)
            .sack(s + 21 * mss, s + 24 * mss));
        assertFalse(retransmitted(t.recv(), s + 12 * mss, mss), "12 sent again after one reordered segment");
        assertEquals(0, t.counter(StackCounter.TCP_LOST_RETRANSMISSIONS));
    }

    /**
     * {@link #sackRecoveryThenTimeout}, then the peer's ACK of 0-3 SACKs 5-7: the go-back sends 4 and 8 (cwnd 2: RFC 3465
     * (2.3), L = 1 SMSS in the slow start after a timeout).
     */
    private int goneBackPastTheSackedSegments()
    {
        final int mss = sackRecoveryThenTimeout();
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 4 * mss).sack(s + 5 * mss, s + 8 * mss));
        assertEquals(List.of(4, 8), segmentNumbers(t.recv(), s, mss));
        return mss;
    }

    /** The sent segments' numbers, {@code (SEG.SEQ - s) / mss}. */
    private static List<Integer> segmentNumbers(final List<Seg> sent, final int s, final int mss)
    {
        return sent.stream().map(seg -> (seg.r.seq - s) / mss).toList();
    }

    /**
     * Twelve segments queued, 0-9 sent; the peer SACKs 1-3 and 5-7 and nothing more arrives (recovery's resends of 0
     * and 4, and its new segment 10, are lost): the retransmission timeout sends segment 0 again, and only it (cwnd
     * is one segment).
     */
    private int sackRecoveryThenTimeout()
    {
        final int mss = newRenoSending(12, 10);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + mss, s + 4 * mss));
        t.recv(t.out().seq(s).payloadLength(mss));
        t.send(t.in().sack(s + 5 * mss, s + 8 * mss).sack(s + mss, s + 4 * mss));
        t.recv();
        t.advance(t.conn.rtoNanos() + MS);
        t.recv(t.out().seq(s).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        return mss;
    }

    // ------------------------------------------------------------------------------------------
    // RFC 8985 §7 tail loss probe
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc8985_aLostTailIsProbedAfterTwoRoundTripsAndTheProbesSackStartsRecovery()
    {
        // Segments 9 and 10 of 10 are lost: the ACK for 1-8 is the peer's last word, and no SACK can reveal the loss.
        // After PTO = max(2 * SRTT, 10 ms), not the 200 ms RTO, the last segment goes again (§7.3); the peer SACKs it,
        // so segment 9, sent a PTO before it and still missing, is lost (§7.4.1): recovery resends it at once.
        final int mss = tenSegmentsTwoLostAtTheTail();
        final int s = t.iss + 1;
        final long pto = Math.max(2 * t.conn.srttNanos(), 10 * MS);
        t.advance(pto - 2 * MS);
        t.recvNothing();
        t.advance(3 * MS);
        t.recv(t.out().seq(s + 9 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOSS_PROBES));
        t.send(t.in().ack(s + 8 * mss).sack(s + 9 * mss, s + 10 * mss));
        t.recv(t.out().seq(s + 8 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
        t.send(t.in().ack(s + 10 * mss));
        assertEquals(s + 10 * mss, t.conn.sndUna);
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc8985_noProbeWhenTheTailLiesPastAWindowThePeerShrank()
    {
        // Segments 9 and 10 of 10 are lost, and the ACK for 1-8 shrinks the window to one segment: the last segment, the
        // probe's, starts at the right edge, where the peer would drop it. No probe is sent or counted (Linux's
        // tcp_send_loss_probe gives up so too); the RTO takes over and resends segment 9, which the window takes.
        final int mss = sackPeerSending(10);
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 8 * mss).window(mss));
        t.recvNothing();
        t.advance(Math.max(2 * t.conn.srttNanos(), 10 * MS) + MS);
        t.recvNothing();
        assertEquals(0, t.counter(StackCounter.TCP_LOSS_PROBES));
        t.advance(t.conn.rtoNanos());
        t.recv(t.out().seq(s + 8 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc8985_oneProbeAtATimeThenTheRetransmissionTimeout()
    {
        // The probe is lost as well: no second probe follows (§7.3 condition 1), and the re-armed RTO takes over.
        final int mss = tenSegmentsTwoLostAtTheTail();
        final int s = t.iss + 1;
        final long pto = Math.max(2 * t.conn.srttNanos(), 10 * MS);
        t.advance(pto + MS);
        t.recv(t.out().seq(s + 9 * mss).payloadLength(mss));
        t.advance(pto + MS);
        t.recvNothing();
        t.advance(t.conn.rtoNanos());
        t.recv(t.out().seq(s + 8 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOSS_PROBES));
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    @Test
    void rfc8985_noProbeWhileRecoveringFromATimeout()
    {
        // §7.2: no PTO in RTO recovery. Go-back-N catches up with SND.MAX long before SND.UNA reaches the recovery
        // point; a probe then, and its "repair", would answer the one loss episode with a second reduction.
        final int mss = newRenoSending(10, 10);
        final int s = t.iss + 1;
        t.advanceMs(20);
        t.send(t.in().ack(s + mss));
        t.recv();
        t.advance(3 * t.conn.rtoNanos());
        t.recv();
        assertEquals(1, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        final long probes = t.counter(StackCounter.TCP_LOSS_PROBES);
        final int recoveryPoint = t.conn.recoveryPoint;
        int una = t.conn.sndUna;
        for (int i = 0; i < 8 && t.conn.sndNxt != t.conn.sndMax; i++)
        {
            t.advanceMs(5);
            una += mss;
            t.send(t.in().ack(una));
            t.recv();
        }
        assertEquals(t.conn.sndMax, t.conn.sndNxt, "go-back-N has caught up");
        // One more ACK of new data: outside recovery it would arm the PTO.
        t.advanceMs(5);
        una += mss;
        t.send(t.in().ack(una));
        t.recvNothing();
        assertTrue(Seq.lt(t.conn.sndUna, recoveryPoint), "but the timeout's recovery is not over");
        t.advanceMs(100);
        t.recv();
        assertEquals(probes, t.counter(StackCounter.TCP_LOSS_PROBES));
    }

    @Test
    void rfc8985_aSackAboveTheProbeThatLeavesTheProbeUnsackedStartsNoRecovery()
    {
        // The probe (new data, segment 11) is overtaken by segment 12 sent after it. A SACK of 12 alone is one
        // duplicate ACK whose hole is the probe itself, sent moments before: reordering, not a loss the probe revealed.
        final int mss = newRenoSending(40, 10);
        final int s = t.iss + 1;
        t.advance(Math.max(2 * t.conn.srttNanos(), 10 * MS) + MS);
        t.recv(t.out().seq(s + 10 * mss).payloadLength(mss));
        t.advanceMs(1);
        t.send(t.in().ack(s + 10 * mss));
        assertFalse(t.recv().isEmpty(), "the window opened: segments 12 and on");
        t.send(t.in().ack(s + 10 * mss).sack(s + 11 * mss, s + 12 * mss));
        assertEquals(0, t.counter(StackCounter.TCP_SACK_RECOVERIES));
    }

    @Test
    void rfc8985_aSackBelowDupThreshIsFollowedByAProbeWhoseSackStartsRecovery()
    {
        // Five segments, of which only the second arrives: one SACK, below DupThresh, and nothing more can come. RACK's
        // reordering timer would mark the first lost; without RACK the probe does: the last segment goes again at the
        // PTO, the peer SACKs it, and everything unSACKed below it is lost. Recovery, no timeout.
        final int mss = newRenoSending(5, 5);
        final int s = t.iss + 1;
        t.send(t.in().sack(s + mss, s + 2 * mss));
        t.recvNothing();
        t.advance(Math.max(2 * t.conn.srttNanos(), 10 * MS) + MS);
        t.recv(t.out().seq(s + 4 * mss).payloadLength(mss));
        t.send(t.in().sack(s + 4 * mss, s + 5 * mss).sack(s + mss, s + 2 * mss));
        final List<Seg> resent = t.recv();
        assertTrue(retransmitted(resent, s, mss), "segment 1 sent again");
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
        t.send(t.in().ack(s + 5 * mss));
        assertEquals(s + 5 * mss, t.conn.sndUna);
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
    }

    private int tenSegmentsTwoLostAtTheTail()
    {
        final int mss = newRenoSending(10, 10);
        t.send(t.in().ack(t.iss + 1 + 8 * mss));
        t.recvNothing();
        return mss;
    }

    @Test
    void rfc8985_theProbeIsNewDataWhenThePeersWindowTakesIt()
    {
        // A full initial window and no ACK at all: the probe is the 11th segment, new data one segment beyond cwnd
        // (§7.3), so nothing is sent twice. Its ACK covers everything: nothing was lost, and cwnd is not reduced.
        t.peerOffersAll();
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        final int s = t.iss + 1;
        t.write(bytes(20 * mss, 5));
        assertEquals(10, t.recv().size());
        t.advance(Math.max(2 * t.conn.srttNanos(), 10 * MS) + MS);
        t.recv(t.out().seq(s + 10 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOSS_PROBES));
        assertEquals(0, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS));
        final long ssthresh = t.conn.ssthresh();
        t.send(t.in().ack(s + 11 * mss));
        assertEquals(ssthresh, t.conn.ssthresh(), "no loss, no reduction");
        assertEquals(0, t.counter(StackCounter.TCP_LOSS_PROBE_RECOVERIES));
    }

    @Test
    void rfc8985_aProbeThatRepairedTheLastSegmentIsOneLossEventNotATimeout()
    {
        // The last of five segments is lost. Its ACK covers exactly the probe, without D-SACK: the question stays open
        // (§7.4.2). The next ACK beyond the probe shows that the probe repaired a loss: one reduction, as a fast
        // recovery's (NewReno: ssthresh = max(FlightSize / 2, 2 SMSS)), never the loss window of a timeout.
        final int mss = probeTheLastOfFiveSegments();
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 5 * mss));
        assertEquals(0, t.counter(StackCounter.TCP_LOSS_PROBE_RECOVERIES), "an ACK of exactly the probe: not yet known");
        t.write(bytes(2 * mss, 6));
        assertEquals(2, t.recv().size());
        t.send(t.in().ack(s + 7 * mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOSS_PROBE_RECOVERIES));
        assertEquals(2L * mss, t.conn.ssthresh());
        assertTrue(t.conn.cwnd() >= 2L * mss, "cwnd " + t.conn.cwnd());
    }

    @Test
    void rfc8985_aLossAfterAProbeRepairIsRecoveredAtOnceWithoutASecondReduction()
    {
        // The probe repaired segment 4 and cwnd was reduced for it. Eight more segments are written; segment 6 is lost
        // and 7-9 are SACKed. §7.4.2 asks only that the window not be reduced twice: the loss is still detected and
        // segment 6 goes again at once (Linux: CWR, then Recovery), not a doubled RTO later, and ssthresh stays.
        final int mss = probeTheLastOfFiveSegments();
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 5 * mss));
        t.write(bytes(8 * mss, 6));
        assertTrue(t.recv().size() >= 5);
        t.send(t.in().ack(s + 6 * mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOSS_PROBE_RECOVERIES));
        final long ssthresh = t.conn.ssthresh();
        t.recv();
        t.advanceMs(1);
        t.send(t.in().ack(s + 6 * mss).sack(s + 7 * mss, s + 8 * mss));
        t.send(t.in().ack(s + 6 * mss).sack(s + 7 * mss, s + 9 * mss));
        t.send(t.in().ack(s + 6 * mss).sack(s + 7 * mss, s + 10 * mss));
        final List<Seg> out = t.recv();
        assertTrue(retransmitted(out, s + 6 * mss, mss), "segment 6 sent again after three SACKs; sent "
            + out.stream().map(x -> (x.r.seq - s) / mss).toList());
        assertEquals(1, t.counter(StackCounter.TCP_SACK_RECOVERIES));
        assertEquals(ssthresh, t.conn.ssthresh(), "no second reduction for the window the probe's repair answered");
        t.send(t.in().ack(t.conn.sndMax));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertEquals(ssthresh, t.conn.ssthresh());
    }

    @Test
    void rfc8985_aProbeReportedAsADuplicateRepairedNothing()
    {
        // All five segments arrived and the ACK for the last was lost. The probe duplicates it, and the peer's D-SACK
        // says so: no loss, no reduction, however far later ACKs go.
        final int mss = probeTheLastOfFiveSegments();
        final int s = t.iss + 1;
        final long ssthresh = t.conn.ssthresh();
        t.send(t.in().ack(s + 5 * mss).sack(s + 4 * mss, s + 5 * mss));
        t.write(bytes(2 * mss, 6));
        assertEquals(2, t.recv().size());
        t.send(t.in().ack(s + 7 * mss));
        assertEquals(0, t.counter(StackCounter.TCP_LOSS_PROBE_RECOVERIES));
        assertEquals(ssthresh, t.conn.ssthresh());
    }

    @Test
    void rfc8985_aProbeOutstandingWhenThePathMtuShrinksRepairedNoCongestionLoss()
    {
        // The probe and the segment it repeats were too big for the path (RFC 1191): "fragmentation needed" sends
        // everything from SND.UNA again in smaller segments. Those resends, not the probe, bring the ACK up to the
        // probe's end, and new data then takes it beyond. A segment too big is no sign of congestion: no loss event,
        // no reduction.
        final int mss = probeTheLastOfFiveSegments();
        final int s = t.iss + 1;
        final long ssthresh = t.conn.ssthresh();
        t.device.inject(t.icmpError(3, 4, 1000, t.ourSegment(s + 4 * mss)));
        t.poll();
        assertEquals(1, t.counter(StackCounter.TCP_PATH_MTU_REDUCTIONS));
        final List<Seg> resent = t.recv();
        assertEquals(s + 4 * mss, resent.get(0).r.seq);
        int resentBytes = 0;
        for (final Seg r : resent)
        {
            assertEquals(s + 4 * mss + resentBytes, r.r.seq, "in order");
            assertTrue(r.payload.length < mss, "sent again in segments that fit: " + r.payload.length);
            resentBytes += r.payload.length;
        }
        assertEquals(mss, resentBytes, "the probed segment sent again whole");
        t.send(t.in().ack(s + 5 * mss));
        t.write(bytes(2 * mss, 6));
        assertFalse(t.recv().isEmpty());
        t.send(t.in().ack(t.conn.sndMax));
        assertEquals(0, t.counter(StackCounter.TCP_LOSS_PROBE_RECOVERIES));
        assertEquals(ssthresh, t.conn.ssthresh());
    }

    /**
     * Five segments, the first four acknowledged; then silence. With one segment in flight the PTO adds the worst-case
     * delayed ACK (200 ms), which puts it past the RTO: the probe goes at the RTO's time, in place of the timeout
     * (§7.2), so the window does not collapse to one segment.
     */
    private int probeTheLastOfFiveSegments()
    {
        final int mss = newRenoSending(5, 5);
        final int s = t.iss + 1;
        t.send(t.in().ack(s + 4 * mss));
        t.advance(t.conn.rtoNanos() - 2 * MS);
        t.recvNothing();
        t.advance(3 * MS);
        t.recv(t.out().seq(s + 4 * mss).payloadLength(mss));
        assertEquals(1, t.counter(StackCounter.TCP_LOSS_PROBES));
        assertEquals(0, t.counter(StackCounter.TCP_RTO_EXPIRIES));
        assertTrue(t.conn.cwnd() > mss, "no loss window: " + t.conn.cwnd());
        return mss;
    }

    /** A NewReno connection with SACK and timestamps that has written {@code segments} full segments and sent {@code sent}. */
    private int newRenoSending(final int segments, final int sent)
    {
        t.peerOffersAll();
        t.settings().congestionControl = "newreno";
        t.passiveOpen();
        final int mss = t.conn.sendMss();
        t.write(bytes(segments * mss, 5));
        assertEquals(sent, t.recv().size());
        return mss;
    }

    // ------------------------------------------------------------------------------------------
    // RFC 5681 §4.1 restarting after idle
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc5681_afterIdlingLongerThanTheRtoTheWindowRestartsFromTheInitialWindow()
    {
        final long grown = growWindowThenIdle(MS);
        assertEquals(10, burstAfterIdle().size(), "IW = 10 segments, not the old cwnd");
        assertTrue(t.conn.ssthresh() >= grown - grown / 4, "RFC 2861: ssthresh keeps at least 3/4 of the old cwnd");
    }

    @Test
    void rfc5681_anIdlePeriodWithinTheRtoKeepsTheWindow()
    {
        final long grown = growWindowThenIdle(-MS);
        assertEquals(grown / t.conn.sendMss(), burstAfterIdle().size(), "the whole window, at once");
    }

    @Test
    void rfc5681_slowStartAfterIdleCanBeTurnedOff()
    {
        t.settings().slowStartAfterIdle = false;
        final long grown = growWindowThenIdle(MS);
        assertEquals(grown / t.conn.sendMss(), burstAfterIdle().size());
    }

    @Test
    void rfc5681_aZeroWindowStallLongerThanTheRtoRestartsFromTheInitialWindow()
    {
        // Nothing but the zero-window probe's byte outstanding for 30 s is an idle period: no data was in flight, and
        // the ACK clock is gone. The byte is not data in flight (Linux probes with an old sequence number and no
        // byte at all): when the window opens, the segment that carries it again is new data, timed and not counted
        // as a retransmission (RFC 6298 §3 would otherwise leave it untimed).
        final long grown = growWindow();
        final int end = t.conn.sndMax;
        t.send(t.in().ack(end).window(0));
        t.write(bytes(100 * t.conn.sendMss(), 4));
        t.recvNothing();
        int probes = 0;
        for (int i = 0; i < 300; i++)
        {
            t.advanceMs(100);
            for (final Seg probe : t.recv())
            {
                probes++;
                t.send(t.in().ack(end).window(0));
            }
        }
        assertTrue(probes > 0, "the zero window was probed");
        final long retransmitted = t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS);
        final long srtt = t.conn.srttNanos();
        t.send(t.in().ack(end).window(1024));
        final List<Seg> burst = t.recv();
        assertEquals(10, burst.size(), "IW = 10 segments, not the old cwnd");
        assertEquals(end, burst.get(0).r.seq);
        assertTrue(t.conn.ssthresh() >= grown - grown / 4, "RFC 2861: ssthresh keeps at least 3/4 of the old cwnd");
        assertEquals(retransmitted, t.counter(StackCounter.TCP_RETRANSMITTED_SEGMENTS), "no retransmission");
        t.advanceMs(50);
        t.send(t.in().ack(end + burst.get(0).payload.length).window(1024));
        assertNotEquals(srtt, t.conn.srttNanos(), "the first segment after the stall was timed");
    }

    /**
     * Slow start to a window of at least 40 segments, every segment acknowledged, then idle for the RTO plus {@code
     * beyondRto}; returns the window reached.
     */
    private long growWindowThenIdle(final long beyondRto)
    {
        final long grown = growWindow();
        t.advance(t.conn.rtoNanos() + beyondRto);
        t.recvNothing();
        return grown;
    }

    /** Slow start to a window of at least 40 segments, every segment acknowledged; returns the window reached. */
    private long growWindow()
    {
        t.peerWindowScale = 7;
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        final int mss = t.conn.sendMss();
        t.write(bytes(60 * mss, 3));
        for (int round = 0; round < 10 && t.conn.sndUna != t.conn.sndMax; round++)
        {
            for (final Seg seg : t.recv())
            {
                t.send(t.in().ack(seg.r.seq + seg.payload.length).window(1024));
            }
        }
        assertEquals(t.conn.sndMax, t.conn.sndUna, "all acknowledged");
        final long grown = t.conn.cwnd();
        assertTrue(grown >= 40L * mss, "slow start grew the window: " + grown);
        return grown;
    }

    private List<Seg> burstAfterIdle()
    {
        t.write(bytes(100 * t.conn.sendMss(), 4));
        return t.recv();
    }

    // ------------------------------------------------------------------------------------------
    // RFC 7323
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc7323_noWindowScaleUnlessBothOffer()
    {
        t.peerSackPermitted = true;
        t.passiveOpen(); // expectedSynAck(): no window-scale option in the SYN-ACK
        assertEquals(0, t.conn.receiveWindowScale());
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11).window(65535 - 10));
    }

    @Test
    void rfc7323_windowScaleAppliedBothWays()
    {
        t.peerOffersAll();
        t.settings().noDelay = true;
        t.passiveOpen();
        final int shift = t.conn.receiveWindowScale();
        assertEquals(TcpConnection.windowScaleFor(t.settings().receiveBufferBytes), shift);
        t.send(t.in().flags(ACK | PSH).payload(bytes(16, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 17).window((t.settings().receiveBufferBytes - 16) >> shift));
        // Peer window field 20 << 7 = 2560 bytes: one full segment plus a 1112-byte tail of a 2560-byte write.
        t.send(t.in().seq(t.irs + 17).window(20));
        t.write(bytes(2560, 2));
        t.recv(t.out().seq(t.iss + 1).ack(t.irs + 17).payloadLength(1448),
            t.out().seq(t.iss + 1449).ack(t.irs + 17).flags(ACK | PSH).payloadLength(2560 - 1448));
    }

    @Test
    void rfc7323_synAckWindowNeverScaledAndActiveOpenWithoutPeerScale()
    {
        // We offer window scaling in our SYN; the peer does not: nothing is scaled either way.
        t.peerSackPermitted = true;
        t.activeOpen();
        assertEquals(0, t.conn.receiveWindowScale());
        assertEquals(0, t.conn.sendWindowScale());
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11).window(65535 - 10));
    }

    /**
     * RFC 9293 §3.8.6.2.2 (SHLD-14) and RFC 7323 §2.4: with a scale the field counts steps of 2^shift from RCV.NXT, which
     * moves by any count of bytes; the edge held (receiver SWS avoidance) is rounded up to a step, never down.
     */
    @Test
    void rfc7323_theAdvertisedRightEdgeNeverMovesLeftWithWindowScaling()
    {
        t.peerOffersAll();
        t.passiveOpen();
        final int shift = t.conn.receiveWindowScale();
        assertEquals(3, shift);
        t.send(t.in().flags(ACK | PSH).payload(bytes(1001, 1)));
        t.advanceMs(40);
        final int edge1 = advertisedEdge(t.recv().get(0), shift);
        // 1001 more, no read: the edge may not move (SWS), and 1001 is no multiple of 8.
        t.send(t.in().seq(t.irs + 1 + 1001).flags(ACK | PSH).payload(bytes(1001, 2)));
        t.advanceMs(40);
        final int edge2 = advertisedEdge(t.recv().get(0), shift);
        assertTrue(Seq.ge(edge2, edge1), "the advertised right edge moved left by " + (edge1 - edge2) + " bytes");
    }

    /** RFC 7323 §2.4: a held window of fewer bytes than one scale step is advertised as one step, not as a zero window. */
    @Test
    void rfc7323_aHeldWindowSmallerThanOneScaleStepIsNotAdvertisedAsZero()
    {
        t.peerOffersAll();
        t.passiveOpen();
        final int shift = t.conn.receiveWindowScale();
        assertEquals(3, shift);
        t.send(t.in().flags(ACK | PSH).payload(bytes(1001, 1)));
        t.advanceMs(40);
        final int edge = advertisedEdge(t.recv().get(0), shift);
        // No read: the peer fills the window to 3 bytes short of the edge held.
        int seq = t.irs + 1 + 1001;
        while (edge - seq > 3)
        {
            final int length = Math.min(1448, edge - seq - 3);
            t.send(t.in().seq(seq).payload(bytes(length, seq)));
            seq += length;
        }
        t.advanceMs(40);
        final List<Seg> acks = t.recv();
        final Seg last = acks.get(acks.size() - 1);
        assertEquals(seq, last.r.ack);
        assertEquals(1, last.r.window, "3 bytes left of the window: one step of 8, not a zero window");
        assertTrue(Seq.ge(advertisedEdge(last, shift), edge));
    }

    /**
     * RFC 7323 §2.4 and Appendix F: rounding the edge held up to a scale step from each new RCV.NXT must stop at the end of
     * the receive buffer. An application that never reads, a peer that sends what each ACK allows in segments no
     * multiple of the step (1001 bytes, then 7): no advertised edge passes the end of the buffer, every byte the peer
     * sends inside a window is taken, and the full buffer is advertised as a zero window. Before, each short segment
     * carried the edge up to a step further, up to 19,136 bytes past the end, those bytes were dropped, and the full
     * buffer still advertised 2,392 steps.
     */
    @Test
    void rfc7323_theAdvertisedEdgeNeverPassesTheEndOfTheReceiveBuffer()
    {
        t.peerOffersAll();
        t.settings().receiveBufferBytes = 256 * 1024;
        t.passiveOpen();
        final int shift = t.conn.receiveWindowScale();
        assertEquals(3, shift);
        final int capacity = t.conn.receiveBuffer.capacity();
        int seq = t.irs + 1;
        int edge = seq + 65535; // the SYN,ACK's window, unscaled
        Seg last = null;
        for (int segments = 0; segments < 40_000 && Seq.gt(edge, seq); segments++)
        {
            final int length = Math.min(edge - seq, edge - seq >= 20_000 ? 1001 : 7);
            t.send(t.in().seq(seq).payload(bytes(length, segments)));
            seq += length;
            assertEquals(seq, t.irs + 1 + t.conn.receiveBuffer.contiguousEnd(), "every byte inside the window taken");
            t.advanceMs(50);
            for (final Seg ack : t.recv())
            {
                final int ackEdge = advertisedEdge(ack, shift);
                assertTrue(Seq.le(ackEdge, t.irs + 1 + capacity), "edge " + (ackEdge - t.irs) + " past the buffer's end "
                    + (1 + capacity) + " after " + segments + " segments");
                edge = Seq.gt(ackEdge, edge) ? ackEdge : edge;
                last = ack;
            }
        }
        assertEquals(capacity, t.conn.readable(), "the buffer filled");
        assertNotNull(last);
        assertEquals(0, last.r.window, "a full buffer: a zero window");
    }

    /**
     * RFC 7323 §2.4 with a scale step (2 KiB at shift 11) larger than the SWS threshold of one MSS: an edge that may move
     * is the free space rounded down, which can land left of the edge held, and the edge held rounded up would here
     * pass the end of the buffer. §2.4 leaves two choices, a window beyond the buffer or a smaller one; the window
     * retracts, by less than one step, and a segment inside the earlier window is still taken (§2.4's receiver rule 1:
     * the largest edge advertised is tracked).
     */
    @Test
    void rfc7323_aMovingEdgeThatWouldPassTheBufferRetractsByLessThanAStepAndTheEarlierWindowIsHonoured()
    {
        t.peerOffersAll();
        t.settings().receiveBufferBytes = 1 << 26;
        t.passiveOpen();
        final int shift = t.conn.receiveWindowScale();
        assertEquals(11, shift);
        t.send(t.in().flags(ACK | PSH).payload(bytes(1001, 1)));
        t.advanceMs(40);
        final int edge1 = advertisedEdge(t.recv().get(0), shift);
        // A read of 500 frees 1547 bytes beyond the edge held: more than an MSS, so the edge may move; 1600 more bytes
        // then put RCV.NXT where the last whole step of free space ends 448 bytes short of that edge, and the next
        // whole step past it ends 53 bytes past the end of the buffer.
        assertEquals(500, t.conn.read(new UnsafeBuffer(new byte[500]), 0, 500));
        t.poll();
        t.recv();
        t.send(t.in().seq(t.irs + 1 + 1001).payload(bytes(1448, 2)));
        t.send(t.in().seq(t.irs + 1 + 2449).flags(ACK | PSH).payload(bytes(152, 3)));
        t.advanceMs(40);
        final Seg ack = t.recv().get(0);
        assertEquals(t.irs + 1 + 2601, ack.r.ack);
        final int edge2 = advertisedEdge(ack, shift);
        assertEquals(448, edge1 - edge2, "retracted by less than one step");
        assertTrue(Seq.le(edge2, t.irs + 1 + 500 + (1 << 26)), "within the buffer");

        t.send(t.in().seq(edge1 - 100).flags(ACK | PSH).payload(bytes(100, 4)));
        assertEquals(100, t.conn.receiveBuffer.outOfOrderBytes(), "the end of the earlier window taken");
    }

    /**
     * With a scale step (2 KiB at shift 11) larger than the SWS threshold of one MSS, a read from a full buffer can free
     * enough for the edge to move but less than one step: the field would still be 0. Such a read sends nothing (it
     * used to send a window update announcing the same zero window); the read that frees a whole step sends it.
     */
    @Test
    void rfc7323_aReadFreeingLessThanOneScaleStepSendsNoZeroWindowUpdate()
    {
        t.peerOffersAll();
        t.settings().receiveBufferBytes = 1 << 26;
        t.passiveOpen();
        final int shift = t.conn.receiveWindowScale();
        assertEquals(11, shift);
        final int capacity = t.conn.receiveBuffer.capacity();
        int seq = t.irs + 1;
        int edge = seq + 65535; // the SYN,ACK's window, unscaled
        Seg last = null;
        for (int segments = 0; segments < 10_000 && Seq.gt(edge, seq); segments++)
        {
            final int length = Math.min(edge - seq, 60_000);
            t.send(t.in().seq(seq).flags(ACK | PSH).payload(bytes(length, segments)));
            seq += length;
            t.advanceMs(50);
            for (final Seg ack : t.recv())
            {
                edge = Seq.gt(advertisedEdge(ack, shift), edge) ? advertisedEdge(ack, shift) : edge;
                last = ack;
            }
        }
        assertEquals(capacity, t.conn.readable(), "the buffer filled");
        assertNotNull(last);
        assertEquals(0, last.r.window, "a full buffer: a zero window");

        final UnsafeBuffer b = new UnsafeBuffer(new byte[4096]);
        assertEquals(1500, t.conn.read(b, 0, 1500));
        t.poll();
        t.recvNothing(); // 1,500 bytes free: more than an MSS, less than one step of 2,048
        assertEquals(600, t.conn.read(b, 0, 600));
        t.poll();
        final List<Seg> update = t.recv();
        assertEquals(1, update.size());
        assertEquals(seq, update.get(0).r.ack);
        assertEquals(1, update.get(0).r.window, "2,100 bytes free: one step");
    }

    /** Edge cases of the window field itself, up to the largest scale (RFC 7323 §2.3: 14). */
    @Test
    void rfc7323_theWindowFieldRoundsTheEdgeHeldUpAndTheFreeSpaceDown()
    {
        assertEquals(1, TcpConnection.windowField(16384, 3, false, 14), "less than one step held: one step");
        assertEquals(2, TcpConnection.windowField(3 * 16384, 16385, false, 14), "the edge held, rounded up");
        assertEquals(0, TcpConnection.windowField(3, 3, false, 14), "but never past the buffer's end: 3 bytes are no step");
        assertEquals(1, TcpConnection.windowField(2 * 16384 - 1, 16385, false, 14), "rounded down at the buffer's end");
        assertEquals(0, TcpConnection.windowField(0, 0, false, 14));
        assertEquals(2, TcpConnection.windowField(2 * 16384 + 2100, 2 * 16384 + 100, true, 14), "the free space, rounded down");
        assertEquals(5, TcpConnection.windowField(5 * 16384 + 2100, 2 * 16384 + 100, true, 14));
        assertEquals(65535, TcpConnection.windowField(1L << 30, 65535L << 14, true, 14));
        assertEquals(65535, TcpConnection.windowField(70000, 65535, true, 0));
    }

    private static int advertisedEdge(final Seg ack, final int shift)
    {
        return ack.r.ack + (ack.r.window << shift);
    }

    /**
     * RFC 6191 §3 (and RFC 7323 §5.4): the timestamps of successive incarnations of one 4-tuple must rise, or a peer
     * still in TIME-WAIT takes our new SYN for an old duplicate (PAWS) and the connection waits out a SYN timeout. The
     * offset added to the clock is a keyed hash of the 4-tuple, as Linux's, not of each incarnation's ISN: before, 5 of
     * these 11 reconnections 1 to 11 s apart sent a TSval below the last one.
     */
    @Test
    void rfc6191_tsValsRiseAcrossIncarnationsOfOneFourTuple()
    {
        final int counter = t.stack.tcp().nextEphemeral;
        int previousTsVal = 0;
        int port = -1;
        for (int i = 0; i < 12; i++)
        {
            t.stack.tcp().nextEphemeral = counter; // the same local port each time
            final Seg syn = t.connect();
            if (port >= 0)
            {
                assertEquals(port, t.localPort, "the same 4-tuple");
                assertTrue(Seq.gt(syn.r.tsVal, previousTsVal), "incarnation " + i + ": TSval "
                    + Integer.toUnsignedString(syn.r.tsVal) + " after " + Integer.toUnsignedString(previousTsVal));
            }
            port = t.localPort;
            previousTsVal = syn.r.tsVal;
            t.send(t.in().flags(RST | ACK).seq(0).ack(t.iss + 1).window(0)); // refused: the 4-tuple is free again
            assertEquals(TcpState.CLOSED, t.conn.state());
            t.advance((i + 1) * SECOND);
            t.recv();
        }
    }

    /**
     * RFC 7323 §7.1: the TSval offset hides the host's clock (here System.nanoTime, the uptime). It was a public
     * function of the ISN (TSval - ISN * 0x9E3779B9 was the clock in milliseconds); it is a keyed hash now, and two
     * 4-tuples get unrelated offsets.
     */
    @Test
    void rfc7323_theTimestampOffsetTellsNothingOfTheClock()
    {
        final Seg first = t.connect();
        final int clockMs = (int)(t.now / 1_000_000L);
        assertNotEquals(clockMs, first.r.tsVal - first.r.seq * 0x9E37_79B9);
        final int firstOffset = first.r.tsVal - clockMs;
        t.send(t.in().flags(RST | ACK).seq(0).ack(t.iss + 1).window(0));
        final Seg second = t.connect(); // another local port: another 4-tuple, at the same instant
        assertNotEquals(firstOffset, second.r.tsVal - clockMs);
    }

    @Test
    void rfc7323_timestampsEchoTheEarliestUnacknowledgedSegment()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.peerTsVal = 2000;
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 1)));
        t.peerTsVal = 2001;
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).payload(bytes(10, 2)));
        t.advanceMs(40);
        // §4.3: a delayed ACK echoes the TSval of the earliest segment it acknowledges.
        t.recv(t.out().ack(t.irs + 21).tsEcr(2000));
    }

    @Test
    void rfc7323_pawsDropsOldTimestampWithAck()
    {
        tenBytesWithTsVal5000();
        // A segment whose TSval is older than TS.Recent: an old duplicate, dropped with an ACK.
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).payload(bytes(10, 2)).ts(4000, t.lastStackTsVal));
        t.recv(t.out().ack(t.irs + 11).tsEcr(5000));
        assertEquals(10, t.conn.readable());
        assertEquals(1, t.counter(StackCounter.TCP_PAWS_DROPS));
    }

    /**
     * RFC 7323 §3.2: "If a non-<RST> segment is received without a TSopt, a TCP SHOULD silently drop the segment." We
     * take it instead, as Linux does (tcp_validate_incoming applies PAWS only to segments that carry a TSopt): a
     * middlebox that strips the option from some segments would otherwise stall the connection. Such a segment passes
     * no PAWS check and does not change TS.Recent, and our answer still carries timestamps echoing TS.Recent.
     */
    @Test
    void linux_aSegmentWithoutTimestampsOnATimestampedConnectionIsTaken()
    {
        tenBytesWithTsVal5000();
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).payload(bytes(10, 2)).noTimestamps());
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 21).tsEcr(5000));
        assertEquals(20, t.conn.readable());
        assertEquals(0, t.counter(StackCounter.TCP_PAWS_DROPS));
    }

    @Test
    void linux_oowRateLimit_pawsDropsWithoutDataAreAnsweredOncePerInterval()
    {
        tenBytesWithTsVal5000();
        // Old duplicates without data, replayed in a stream: one ACK per interval (Linux's tcp_oow_rate_limited on
        // its PAWS drop); with data, each is answered.
        for (int i = 0; i < 50; i++)
        {
            t.send(t.in().seq(t.irs + 11).ts(4000, t.lastStackTsVal));
        }
        t.recv(t.out().ack(t.irs + 11).tsEcr(5000));
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).payload(bytes(10, 2)).ts(4000, t.lastStackTsVal));
        t.recv(t.out().ack(t.irs + 11).tsEcr(5000));
        t.advanceMs(500);
        t.send(t.in().seq(t.irs + 11).ts(4000, t.lastStackTsVal));
        t.recv(t.out().ack(t.irs + 11).tsEcr(5000));
        assertEquals(52, t.counter(StackCounter.TCP_PAWS_DROPS));
    }

    @Test
    void rfc7323_pawsForgetsATsRecentOlderThan24Days()
    {
        // §5.5: after 24 idle days the peer's 1 ms clock may have run past half its cycle, so a newer TSval compares
        // as older. TS.Recent is invalidated: the segment is taken and its TSval becomes TS.Recent. Before that
        // (23 days) the same segment is still an old duplicate.
        tenBytesWithTsVal5000();
        final int wrapped = 5000 + (1 << 31) + 1000; // "before" 5000 in sequence arithmetic

        t.advance(java.util.concurrent.TimeUnit.DAYS.toNanos(23));
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).payload(bytes(10, 2)).ts(wrapped, t.lastStackTsVal));
        t.recv(t.out().ack(t.irs + 11).tsEcr(5000));
        assertEquals(1, t.counter(StackCounter.TCP_PAWS_DROPS));

        t.advance(java.util.concurrent.TimeUnit.DAYS.toNanos(1) + SECOND);
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).payload(bytes(10, 2)).ts(wrapped, t.lastStackTsVal));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 21).tsEcr(wrapped));
        assertEquals(1, t.counter(StackCounter.TCP_PAWS_DROPS));
        assertEquals(20, t.conn.readable());
    }

    /** An established connection with timestamps, holding 10 bytes whose segment set TS.Recent to 5000. */
    private void tenBytesWithTsVal5000()
    {
        t.peerOffersAll();
        t.passiveOpen();
        t.peerTsVal = 5000;
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11));
    }

    @Test
    void rfc7323_noTimestampsUnlessBothOffer()
    {
        t.peerWindowScale = 7;
        t.peerSackPermitted = true;
        t.passiveOpen();
        assertFalse(t.conn.timestampsEnabled());
        t.write(bytes(10, 1));
        t.recv(t.out().flags(ACK | PSH).payloadLength(10)); // out() expects no timestamps option
    }

    // ------------------------------------------------------------------------------------------
    // Listener: backlog, SYN cookies (RFC 4987 §3.6)
    // ------------------------------------------------------------------------------------------

    /**
     * RFC 4987 §3.6 with RFC 7323: a SYN that offers timestamps gets a cookie SYN,ACK that offers window scale,
     * SACK-permitted and timestamps as a stateful one does; the peer's shift and SACK-permitted ride in the low bits of
     * our TSval (as Linux's cookie_init_timestamp) and come back in the ACK's TSecr. The connection then scales the
     * peer's window, stamps its segments and reports out-of-order data in SACK blocks. Before, a cookie connection had
     * none of these: 64 KiB windows, no SACK recovery, no PAWS, for every client of a listener under a SYN flood.
     */
    @Test
    void rfc4987_aCookieConnectionKeepsTheWindowScaleSackAndTimestampsTheSynOffered()
    {
        t.peerOffersAll();
        t.listen(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        assertEquals(1, t.listener.synReceived());

        // Backlog full: a stateless SYN,ACK whose ISN is the cookie.
        t.peerPort = PEER_PORT + 1;
        t.peerTsVal += 1000;
        t.send(t.peerSyn());
        final Seg cookie = t.recvOne(t.expectedSynAck());
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
        assertEquals(1, t.listener.synReceived(), "no state kept for the cookie");
        assertEquals(7, SynCookies.windowScaleIn(cookie.r.tsVal), "the peer's shift in our TSval");
        assertTrue(SynCookies.sackIn(cookie.r.tsVal));

        t.iss = cookie.r.seq;
        t.tsOn = true;
        t.send(t.in().window(1000).flags(ACK | PSH).payload(bytes(20, 1)));
        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the cookie ACK established the connection");
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertArrayEquals(bytes(20, 1), t.read());
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
        assertEquals(1, t.conn.bytesAcked(), "our SYN,ACK, as with state");

        assertTrue(t.conn.timestampsEnabled());
        assertTrue(t.conn.sackEnabled());
        assertEquals(7, t.conn.sendWindowScale());
        assertEquals(1000L << 7, t.conn.sndWnd, "the ACK's window is scaled by the peer's shift");

        t.conn.settings().noDelay = true;
        t.write(bytes(3000, 2));
        final java.util.List<Seg> data = t.recv();
        assertEquals(1448, data.stream().mapToInt(seg -> seg.r.payloadLength).max().orElse(0),
            "the MSS less the timestamps option");
        for (final Seg seg : data)
        {
            assertTrue(seg.r.timestampsPresent, "every segment stamped: " + seg.r);
            assertTrue(seg.r.tsVal - cookie.r.tsVal >= 0, "TSvals never go back from the cookie's");
        }

        // Out-of-order data is reported in a SACK block.
        t.send(t.in().seq(t.irs + 1 + 20 + 100).ack(t.iss + 1).window(1000).payload(bytes(50, 3)));
        final Seg dupAck = t.recv().get(0);
        assertEquals(1, dupAck.r.sackBlockCount, "a SACK block for the out-of-order data: " + dupAck.r);
        assertEquals(t.irs + 1 + 120, dupAck.r.sackLeft[0]);
    }

    /**
     * RFC 7323 §4.3: TS.Recent takes the TSval of a segment at or below Last.ACK.sent. A cookie connection's SYN,ACK
     * acknowledged RCV.NXT, so Last.ACK.sent starts there, as on a stateful open. Before, it was 0 until the first ACK
     * went out: with RCV.NXT in (0, 2^31) no segment updated TS.Recent, and the delayed ACK of the first data echoed
     * the handshake ACK's TSval, a second old here (the client's RTT sample a second too long).
     */
    @Test
    void rfc7323_aCookieConnectionEchoesTheTsValOfItsFirstData()
    {
        t.irs = 0x1000_0000;
        t.peerOffersAll();
        t.listen(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        final Seg cookie = t.recvOne(t.expectedSynAck());
        t.iss = cookie.r.seq;
        t.tsOn = true;
        t.send(t.in());
        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the cookie ACK established the connection");
        t.advanceMs(1000);
        t.recv(); // the first half-open connection's SYN,ACK again
        t.peerTsVal += 1000;
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 1)));
        t.advanceMs(t.settings().delayedAckNanos / MS);
        t.recv(t.out().ack(t.irs + 11).tsEcr(t.peerTsVal));
    }

    /**
     * A cookie connection never sends segments larger than the peer's MSS (RFC 9293 §3.7.1), also one below 536, and
     * its SYN,ACK offers our own MSS, as any SYN,ACK does. Before, the cookie's table started at 536 (a peer's 300 was
     * exceeded by 236 bytes) and the SYN,ACK offered the table's entry for the smaller of both MSS as ours: a peer
     * with MSS 300 was told 536, one with 1400 was told 1220 and sent smaller segments than it could.
     */
    @Test
    void rfc4987_aCookieConnectionKeepsAPeerMssBelow536AndOffersOurOwnMss()
    {
        t.listen(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        t.peerPort = PEER_PORT + 1;
        t.peerMss = 300;
        t.send(t.peerSyn());
        final Seg cookie = t.recv(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).get(0);
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
        t.iss = cookie.r.seq;
        t.tsOn = false;
        t.send(t.in());
        t.conn = t.listener.accept();
        assertNotNull(t.conn);
        t.settings().noDelay = true;
        t.write(bytes(2000, 3));
        int largest = 0;
        for (final Seg seg : t.recv())
        {
            largest = Math.max(largest, seg.r.payloadLength);
        }
        assertTrue(largest > 0 && largest <= 300, "segments within the peer's MSS of 300: " + largest);
    }

    @Test
    void rfc4987_forgedCookieAckGetsReset()
    {
        t.listen(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        // The backlog is full: a cookie goes out, so ACKs are checked as cookies from now on. A forged one fails.
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        t.recv(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460));
        t.peerPort = PEER_PORT + 2;
        t.send(t.in().ack(123_456));
        t.recv(t.out().flags(RST).seq(123_456).ack(0));
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_FAILED));
    }

    @Test
    void rfc4987_anAckIsNotTakenForACookieWhenNoneWasSentLately()
    {
        // No cookie sent for two minutes (their lifetime): a bare ACK to the listener is not checked as one, so a
        // forger cannot open a connection with a lucky 24-bit guess while the listener is not under a flood.
        t.listen(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        t.peerPort = PEER_PORT + 1;
        t.send(t.in().ack(123_456));
        t.recv(t.out().flags(RST).seq(123_456).ack(0));
        assertEquals(0, t.counter(StackCounter.TCP_SYN_COOKIES_FAILED), "not even tried");

        // A cookie sent, then its whole lifetime passes: its ACK, valid in every other way, is refused too.
        t.peerPort = PEER_PORT + 2;
        t.send(t.peerSyn());
        final Seg cookie = t.recv(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).get(0);
        t.advance(SynCookies.MAX_LIFETIME_NANOS + SECOND);
        t.recv(); // the first connection's SYN,ACK, sent again meanwhile
        t.iss = cookie.r.seq;
        t.tsOn = false;
        t.send(t.in());
        t.recv(t.out().flags(RST).seq(t.iss + 1).ack(0));
        assertEquals(0, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
    }

    @Test
    void rfc4987_aCookieSynAckOffersNoMoreThanTheListenersBuffer()
    {
        // A cookie connection gets the listener's receive buffer and no window scaling: its SYN,ACK advertises that
        // buffer (here 16 KiB), not 65535, or the right edge would move left once the connection exists.
        t.settings().receiveBufferBytes = 16 * 1024;
        t.listen(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        final Seg cookie = t.recv(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).get(0);
        assertEquals(16 * 1024, cookie.r.window);
    }

    @Test
    void rfc4987_aHalfOpenConnectionWhoseAckFindsTheAcceptQueueFullIsNotReset()
    {
        // Backlog 1: A's SYN takes the one slot (SYN-RECEIVED), so B's SYN gets a cookie, and B's cookie ACK fills the
        // accept queue (a real client behind a flood of spoofed SYNs must get in). A's own ACK then finds no room: it
        // is dropped and A stays half-open, as in Linux, rather than reset for a handshake the listener admitted.
        t.listen(1);
        t.send(t.peerSyn());
        final int issA = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        t.iss = t.recv(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).get(0).r.seq;
        t.tsOn = false;
        t.send(t.in());
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
        assertEquals(1, t.listener.pending());

        t.peerPort = PEER_PORT;
        t.iss = issA;
        t.tsOn = true;
        t.send(t.in());
        t.recvNothing();
        assertEquals(1, t.counter(StackCounter.TCP_LISTEN_ACK_DROPPED));
        assertEquals(1, t.listener.synReceived(), "A is still half-open");

        // The application takes B; A's SYN,ACK goes again at its timeout, and A's answer completes A.
        assertNotNull(t.listener.accept());
        t.advanceMs(1000);
        t.recv(t.expectedSynAck().seq(issA));
        t.send(t.in());
        final TcpConnection a = t.listener.accept();
        assertNotNull(a, "A's handshake completed once there was room");
        assertEquals(TcpState.ESTABLISHED, a.state());
        assertEquals(1, t.counter(StackCounter.TCP_LISTEN_ACK_DROPPED));
    }

    @Test
    void rfc9293_closingAListenerResetsItsHalfOpenConnections()
    {
        // §3.10.5 ABORT in SYN-RECEIVED: <SEQ=SND.NXT><CTL=RST>. A closed listener's half-open connections end with
        // it, as its queued ones do; left alone they would go on sending SYN,ACKs for a port no longer listening.
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.listener.close();
        t.recv(t.out().flags(RST).seq(t.iss + 1));
        assertEquals(0, t.listener.synReceived());
        assertEquals(0, t.stack.tcp().connectionCount());
        t.advanceMs(10_000); // past the SYN,ACK's retransmission timeouts (1, 2 and 4 s)
        t.recvNothing();

        // §3.10.7.1: the peer's late ACK finds the port CLOSED: <SEQ=SEG.ACK><CTL=RST>.
        t.send(t.in());
        t.recv(t.out().flags(RST).seq(t.iss + 1));
        assertEquals(1, t.counter(StackCounter.TCP_NO_CONNECTION));
    }

    @Test
    void listenerBacklogBoundsTheAcceptQueue()
    {
        t.listen(2);
        t.passiveOpen();
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.send(t.in());
        assertEquals(1, t.listener.pending(), "one accepted by passiveOpen, one queued");
        // Queue: 1 waiting + fill it with another, then a SYN beyond: silently dropped (the client retries).
        t.peerPort = PEER_PORT + 2;
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.send(t.in());
        assertEquals(2, t.listener.pending());
        t.peerPort = PEER_PORT + 3;
        t.send(t.peerSyn());
        t.recvNothing();
        assertEquals(1, t.counter(StackCounter.TCP_LISTEN_SYN_DROPPED));
        final List<TcpConnection> accepted = List.of(t.listener.accept(), t.listener.accept());
        assertEquals(2, accepted.size());
        assertNull(t.listener.accept());
    }
}
