package io.nicstack.stack.tcp.cc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class NewRenoTest
{
    private static final int MSS = 1000;
    private static final long RTT = 100_000_000L;

    private final NewReno cc = new NewReno();
    private AckClock clock;

    @BeforeEach
    void setUp()
    {
        cc.init(MSS, 0);
        clock = new AckClock(cc, MSS, RTT, 0);
    }

    @Test
    void rfc5681_slowStartDoublesPerRoundTrip()
    {
        assertEquals(10 * MSS, cc.cwnd());
        clock.roundTrip();
        assertEquals(20 * MSS, cc.cwnd());
        clock.roundTrip();
        assertEquals(40 * MSS, cc.cwnd());
        clock.roundTrip();
        assertEquals(80 * MSS, cc.cwnd());
    }

    @Test
    void rfc3465_delayedAcksStillDoubleInSlowStart()
    {
        clock.roundTrip(2);
        assertEquals(20 * MSS, cc.cwnd());
        clock.roundTrip(2);
        assertEquals(40 * MSS, cc.cwnd());
    }

    @Test
    void rfc3465_abcLimitsSlowStartIncreaseToTwoSmssPerAck()
    {
        cc.onAck(8L * MSS, cc.cwnd(), RTT, 1);
        assertEquals(12 * MSS, cc.cwnd());
        cc.onAck(MSS / 2, cc.cwnd(), RTT, 2);
        assertEquals(12 * MSS + MSS / 2, cc.cwnd());
    }

    @Test
    void rfc3465_theSlowStartAfterATimeoutGrowsByAtMostOneSmssPerAck()
    {
        // RFC 3465 (2.3): L = 1 SMSS in the slow start that follows a timeout; the ACK of the resend may cover much
        // data sent before it. Once slow start has reached ssthresh, a later one (after idle) has L = 2 again.
        cc.onRetransmitTimeout(40L * MSS, 0);
        cc.onAck(8L * MSS, cc.cwnd(), RTT, 1);
        assertEquals(2 * MSS, cc.cwnd());
        cc.onAck(2L * MSS, cc.cwnd(), RTT, 2);
        assertEquals(3 * MSS, cc.cwnd());
        while (cc.cwnd() < cc.ssthresh())
        {
            clock.roundTrip();
        }
        cc.onSendAfterIdle(true, 10 * RTT);
        cc.onAck(8L * MSS, cc.cwnd(), RTT, 10 * RTT + 1);
        assertEquals(12 * MSS, cc.cwnd());
    }

    @Test
    void rfc5681_congestionAvoidanceGrowsOneSmssPerRoundTrip()
    {
        enterCongestionAvoidanceAt(20 * MSS);

        clock.roundTrip();
        assertEquals(21 * MSS, cc.cwnd());
        clock.roundTrip();
        assertEquals(22 * MSS, cc.cwnd());
        clock.roundTrips(8);
        assertEquals(30 * MSS, cc.cwnd());
    }

    @Test
    void rfc3465_congestionAvoidanceCountsBytesAcrossStretchAcks()
    {
        enterCongestionAvoidanceAt(20 * MSS);

        // Delayed ACKs (2 segments each) grow the window exactly as fast as per-segment ACKs.
        clock.roundTrip(2);
        assertEquals(21 * MSS, cc.cwnd());
        clock.roundTrip(2);
        assertEquals(22 * MSS, cc.cwnd());
    }

    @Test
    void rfc5681_slowStartStopsAtSsthresh()
    {
        cc.onRetransmitTimeout(40L * MSS, 0);
        assertEquals(20 * MSS, cc.ssthresh());
        clock.roundTrips(4);
        assertEquals(16 * MSS, cc.cwnd());

        clock.roundTrip();

        assertEquals(20 * MSS, cc.cwnd());
    }

    @Test
    void rfc5681_fastRetransmitHalvesFlightSize()
    {
        cc.cwnd(64L * MSS);

        cc.onFastRetransmit(60L * MSS, 0);

        assertEquals(30 * MSS, cc.ssthresh());
        assertEquals(30 * MSS, cc.cwnd());
    }

    @Test
    void rfc5681_ssthreshIsAtLeastTwoSmss()
    {
        cc.onFastRetransmit(3L * MSS, 0);
        assertEquals(2 * MSS, cc.ssthresh());
        cc.onRetransmitTimeout(MSS, 0);
        assertEquals(2 * MSS, cc.ssthresh());
    }

    @Test
    void rfc6582_recoveryExitDeflatesToSsthresh()
    {
        cc.onFastRetransmit(40L * MSS, 0);
        cc.cwnd(cc.cwnd() + 3L * MSS + 7L * MSS); // inflated by the sender during recovery

        cc.onRecoveryExit(1);

        assertEquals(20 * MSS, cc.cwnd());
    }

    @Test
    void rfc5681_timeoutSetsLossWindowOfOneSmss()
    {
        cc.cwnd(50L * MSS);

        cc.onRetransmitTimeout(50L * MSS, 0);

        assertEquals(MSS, cc.cwnd());
        assertEquals(25 * MSS, cc.ssthresh());
    }

    @Test
    void rfc5681_repeatedTimeoutHoldsSsthresh()
    {
        cc.onRetransmitTimeout(50L * MSS, 0);
        cc.onRetransmitTimeout(MSS, 1);
        assertEquals(25 * MSS, cc.ssthresh());
        assertEquals(MSS, cc.cwnd());

        cc.onAck(MSS, MSS, -1, 2);
        cc.onRetransmitTimeout(10L * MSS, 3);
        assertEquals(5 * MSS, cc.ssthresh());
    }

    @Test
    void rfc5681_aTimeoutDuringFastRecoveryKeepsTheRecoverysSsthresh()
    {
        cc.cwnd(50L * MSS);
        cc.onFastRetransmit(40L * MSS, 0);
        // The flight grew while the sender inflated cwnd (RFC 6582 (3.2) step 5).
        cc.cwnd(35L * MSS);

        cc.onRetransmitTimeout(50L * MSS, 1);

        assertEquals(20 * MSS, cc.ssthresh(), "the recovery's, not half the grown flight");
        assertEquals(MSS, cc.cwnd());
    }

    @Test
    void rfc5681_aTimeoutDuringFastRecoveryWithASmallFlightTakesEquationFour()
    {
        // RFC 5681 (3.1): on a timeout ssthresh MUST be no more than max(FlightSize / 2, 2*SMSS). A recovery whose
        // flight has shrunk below twice its ssthresh (the holes' ACKs left little outstanding) is no reason to keep more.
        cc.cwnd(40L * MSS);
        cc.onFastRetransmit(40L * MSS, 0);
        assertEquals(20 * MSS, cc.ssthresh());

        cc.onRetransmitTimeout(10L * MSS, 1);

        assertEquals(5 * MSS, cc.ssthresh(), "max(FlightSize / 2, 2*SMSS), below the recovery's");
        assertEquals(MSS, cc.cwnd());
    }

    @Test
    void rfc3708_undoingASpuriousReductionRestoresCwndAndSsthresh()
    {
        enterCongestionAvoidanceAt(20 * MSS);
        cc.cwnd(30L * MSS);
        cc.onFastRetransmit(30L * MSS, 0);
        cc.onRecoveryExit(1);
        assertEquals(15 * MSS, cc.cwnd());

        cc.undoLastReduction(2);

        assertEquals(30 * MSS, cc.cwnd());
        assertEquals(20 * MSS, cc.ssthresh());
    }

    @Test
    void rfc3708_undoKeepsAWindowGrownLargerSince()
    {
        cc.cwnd(30L * MSS);
        cc.onFastRetransmit(30L * MSS, 0);
        cc.onRecoveryExit(1);
        cc.cwnd(40L * MSS);

        cc.undoLastReduction(2);

        assertEquals(40 * MSS, cc.cwnd());
    }

    @Test
    void rfc7661_doesNotGrowWhenNotCwndLimited()
    {
        cc.onAck(MSS, cc.cwnd() / 4, RTT, 1);
        assertEquals(10 * MSS, cc.cwnd());

        enterCongestionAvoidanceAt(20 * MSS);
        for (int i = 0; i < 100; i++)
        {
            cc.onAck(MSS, cc.cwnd() - 2L * MSS, RTT, 2 + i);
        }
        assertEquals(20 * MSS, cc.cwnd());
    }

    @Test
    void afterLossGrowthResumesLinearly()
    {
        clock.roundTrips(3);
        assertEquals(80 * MSS, cc.cwnd());

        cc.onFastRetransmit(cc.cwnd(), clock.nowNanos);
        cc.onRecoveryExit(clock.nowNanos);
        assertEquals(40 * MSS, cc.cwnd());

        clock.roundTrips(10);
        assertEquals(50 * MSS, cc.cwnd());
        assertTrue(cc.cwnd() >= cc.ssthresh());
    }

    @Test
    void rfc5681_restartAfterIdleTakesTheRestartWindowAndRfc2861KeepsThreeQuartersInSsthresh()
    {
        enterCongestionAvoidanceAt(20 * MSS);
        cc.cwnd(40L * MSS);

        cc.onSendAfterIdle(false, 1);
        assertEquals(40 * MSS, cc.cwnd(), "no restart: the window stays");

        cc.onSendAfterIdle(true, 2);
        assertEquals(10 * MSS, cc.cwnd(), "RW = min(IW, cwnd)");
        assertEquals(30 * MSS, cc.ssthresh(), "max(ssthresh, 3/4 cwnd)");

        clock.roundTrip();
        assertEquals(20 * MSS, cc.cwnd(), "slow start back towards ssthresh");
    }

    @Test
    void rfc5681_restartNeverRaisesASmallWindowNorLowersSsthresh()
    {
        enterCongestionAvoidanceAt(4 * MSS);

        cc.onSendAfterIdle(true, 1);

        assertEquals(4 * MSS, cc.cwnd());
        assertEquals(4 * MSS, cc.ssthresh());
    }

    private void enterCongestionAvoidanceAt(final long cwnd)
    {
        cc.onFastRetransmit(2 * cwnd, clock.nowNanos);
        cc.onRecoveryExit(clock.nowNanos);
        assertEquals(cwnd, cc.cwnd());
        assertEquals(cwnd, cc.ssthresh());
    }
}
