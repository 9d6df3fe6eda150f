package io.nicstack.stack.tcp.cc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CubicTest
{
    private static final int MSS = 1000;
    private static final long MS = 1_000_000L;
    private static final long SECOND = 1_000_000_000L;

    @Test
    void rfc9438_slowStartDoublesPerRoundTrip()
    {
        final Cubic cc = newCubic();
        final AckClock clock = new AckClock(cc, MSS, 100 * MS, 0);

        clock.roundTrip();
        assertEquals(20 * MSS, cc.cwnd());
        clock.roundTrip();
        assertEquals(40 * MSS, cc.cwnd());
    }

    @Test
    void rfc3465_abcLimitsSlowStartIncreaseToTwoSmssPerAck()
    {
        final Cubic cc = newCubic();

        cc.onAck(10L * MSS, cc.cwnd(), 100 * MS, 1);

        assertEquals(12 * MSS, cc.cwnd());
    }

    @Test
    void rfc3465_theSlowStartAfterATimeoutGrowsByAtMostOneSmssPerAck()
    {
        // RFC 3465 (2.3): L = 1 SMSS in the slow start that follows a timeout (RFC 9438 (4.8) keeps RFC 5681's).
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);
        cc.onRetransmitTimeout(100L * MSS, 0);

        cc.onAck(10L * MSS, cc.cwnd(), 100 * MS, 1);

        assertEquals(2 * MSS, cc.cwnd());
    }

    @Test
    void rfc9438_lossReducesCwndToBetaAndRemembersWmax()
    {
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);

        cc.onFastRetransmit(100L * MSS, 0);

        assertEquals(70 * MSS, cc.ssthresh());
        assertEquals(70 * MSS, cc.cwnd());
        assertEquals(100.0, cc.wMaxSegments(), 1e-9);
        cc.onRecoveryExit(1);
        assertEquals(70 * MSS, cc.cwnd());
    }

    @Test
    void rfc9438_ssthreshIsAtLeastTwoSmss()
    {
        final Cubic cc = newCubic();
        cc.cwnd(2L * MSS);

        cc.onFastRetransmit(2L * MSS, 0);

        assertEquals(2 * MSS, cc.ssthresh());
        assertEquals(2 * MSS, cc.cwnd());
    }

    @Test
    void rfc9438_aLossAfterAnApplicationLimitedSlowStartReducesFromTheFlightNotTheWindow()
    {
        // RFC 9438 (4.6): reducing from cwnd, CUBIC "MUST use other measures to prevent cwnd from growing when the
        // volume of bytes in flight is smaller than cwnd". Slow start counts half a window in flight as a full one (as
        // Linux), so a sender that never has more than 60 segments in flight takes cwnd to about 120.
        final Cubic cc = applicationLimitedSlowStart(60);
        assertTrue(cc.cwnd() >= 120L * MSS, "cwnd grew past the flight: " + cc.cwnd());

        cc.onFastRetransmit(60L * MSS, 1);

        assertEquals(42 * MSS, cc.ssthresh());
        assertEquals(42 * MSS, cc.cwnd());
        assertEquals(60.0, cc.wMaxSegments(), 1e-9);
    }

    @Test
    void rfc9438_aTimeoutAfterAnApplicationLimitedSlowStartReducesFromTheFlightNotTheWindow()
    {
        final Cubic cc = applicationLimitedSlowStart(60);

        cc.onRetransmitTimeout(60L * MSS, 1);

        assertEquals(42 * MSS, cc.ssthresh());
        assertEquals(MSS, cc.cwnd());
    }

    @Test
    void rfc9438_aSenderThatFilledItsWindowReducesFromCwndWhateverIsInFlightAtTheLoss()
    {
        // A loss probe's repair of the last segment, or a timeout at the end of a transfer, finds little in flight; the
        // window was used all the same, and RFC 9438 (4.6) reduces from it.
        final Cubic cc = newCubic();
        final AckClock clock = new AckClock(cc, MSS, 100 * MS, 0);
        clock.roundTrips(3);
        assertEquals(80 * MSS, cc.cwnd());

        cc.onFastRetransmit(MSS, clock.nowNanos);

        assertEquals(56 * MSS, cc.ssthresh());
        assertEquals(80.0, cc.wMaxSegments(), 1e-9);
        final Cubic timedOut = newCubic();
        new AckClock(timedOut, MSS, 100 * MS, 0).roundTrips(3);
        timedOut.onRetransmitTimeout(MSS, clock.nowNanos);
        assertEquals(56 * MSS, timedOut.ssthresh());
    }

    @Test
    void rfc9438_kIsCubicRootOfWmaxTimesOneMinusBetaOverC()
    {
        final Cubic cc = afterLossAt(1000, 100 * MS);
        final AckClock clock = new AckClock(cc, MSS, 100 * MS, 0);

        clock.roundTrip();

        assertTrue(cc.inEpoch());
        assertEquals(Math.cbrt(1000 * (1 - Cubic.BETA) / Cubic.C), cc.kSeconds(), 1e-9);
    }

    @Test
    void rfc9438_windowReturnsToWmaxAtK()
    {
        final long rtt = 100 * MS;
        final Cubic cc = afterLossAt(1000, rtt);
        final AckClock clock = new AckClock(cc, MSS, rtt, 0);
        clock.roundTrip();
        final double k = cc.kSeconds();
        assertEquals(9.0856, k, 1e-3);

        // Concave region: cwnd tracks W_cubic(t) on the way up, then flattens out at W_max.
        runUntil(clock, (long)(k / 2 * SECOND));
        final double half = cc.wCubic(k / 2);
        assertEquals(half, (double)cc.cwnd() / MSS, half * 0.03);
        assertTrue(cc.cwnd() < 1000 * MSS);

        runUntil(clock, (long)(k * SECOND));
        assertEquals(1000.0, (double)cc.cwnd() / MSS, 1000 * 0.02);
    }

    @Test
    void rfc9438_convexRegionGrowsBeyondWmaxAndAccelerates()
    {
        final long rtt = 100 * MS;
        final Cubic cc = afterLossAt(1000, rtt);
        final AckClock clock = new AckClock(cc, MSS, rtt, 0);
        clock.roundTrip();
        final double k = cc.kSeconds();

        runUntil(clock, (long)((k + 2) * SECOND));
        final long atTwo = cc.cwnd();
        runUntil(clock, (long)((k + 4) * SECOND));
        final long atFour = cc.cwnd();
        runUntil(clock, (long)((k + 6) * SECOND));
        final long atSix = cc.cwnd();

        assertTrue(atTwo > 1000 * MSS, "convex region is above W_max");
        assertTrue(atSix - atFour > atFour - atTwo, "growth accelerates in the convex region");
        final double expected = cc.wCubic(k + 6);
        assertEquals(expected, (double)atSix / MSS, expected * 0.03);
        assertTrue(cc.wEstSegments() < (double)atSix / MSS, "the cubic function, not W_est, drives cwnd here");
    }

    @Test
    void rfc9438_targetIsClampedToOneAndAHalfCwndPerRoundTrip()
    {
        final long rtt = 100 * MS;
        final Cubic cc = afterLossAt(100, rtt);
        cc.onAck(MSS, cc.cwnd(), rtt, 1);
        final long before = cc.cwnd();

        // Far into the convex region W_cubic(t + RTT) is huge; the increase per RTT stays below slow start's.
        final AckClock clock = new AckClock(cc, MSS, rtt, 60 * SECOND);
        clock.roundTrip();

        assertTrue(cc.cwnd() <= before * 3 / 2 + MSS, "at most 1.5x per RTT: " + before + " -> " + cc.cwnd());
        assertTrue(cc.cwnd() > before * 14 / 10, "but close to it: " + before + " -> " + cc.cwnd());
    }

    @Test
    void rfc9438_fastConvergenceLowersWmaxOnLossBelowPreviousWmax()
    {
        final Cubic cc = afterLossAt(1000, 100 * MS);
        assertEquals(700 * MSS, cc.cwnd());

        cc.onFastRetransmit(cc.cwnd(), 1);

        assertEquals(700 * (1 + Cubic.BETA) / 2, cc.wMaxSegments(), 1e-6);
        assertEquals(490 * MSS, cc.cwnd());
    }

    @Test
    void rfc9438_withoutFastConvergenceWmaxIsCwndBeforeReduction()
    {
        final Cubic cc = new Cubic(false);
        cc.init(MSS, 0);
        cc.cwnd(1000L * MSS);
        cc.onFastRetransmit(cc.cwnd(), 0);

        cc.onFastRetransmit(cc.cwnd(), 1);

        assertEquals(700.0, cc.wMaxSegments(), 1e-6);
    }

    @Test
    void rfc9438_lossAboveWmaxSetsWmaxToCwnd()
    {
        final Cubic cc = afterLossAt(100, 100 * MS);
        cc.cwnd(120L * MSS);

        cc.onFastRetransmit(cc.cwnd(), 1);

        assertEquals(120.0, cc.wMaxSegments(), 1e-6);
        assertEquals(84 * MSS, cc.cwnd());
    }

    @Test
    void rfc9438_fastConvergenceShortensTheWayBackUp()
    {
        // Repeated losses before reaching W_max: the flow plateaus earlier, releasing bandwidth.
        final long rtt = 100 * MS;
        final Cubic cc = afterLossAt(1000, rtt);
        final AckClock clock = new AckClock(cc, MSS, rtt, 0);
        clock.roundTrip();
        runUntil(clock, 3 * SECOND);
        final double cwndAtLoss = (double)cc.cwnd() / MSS;
        assertTrue(cwndAtLoss < 1000);

        cc.onFastRetransmit(cc.cwnd(), clock.nowNanos);
        cc.onRecoveryExit(clock.nowNanos);

        assertTrue(cc.wMaxSegments() < cwndAtLoss);
        assertEquals(cwndAtLoss * 0.85, cc.wMaxSegments(), 1.0);
    }

    @Test
    void rfc9438_renoFriendlyRegionDominatesAtSmallRttTimesWindow()
    {
        final long rtt = MS;
        final Cubic cc = afterLossAt(20, rtt);
        final AckClock clock = new AckClock(cc, MSS, rtt, 0);

        for (int i = 0; i < 100; i++)
        {
            clock.roundTrip();
            assertTrue(cc.cwnd() >= (long)(cc.wEstSegments() * MSS) - 1, "cwnd >= W_est after round " + i);
        }

        // Reno from 14 segments: alpha_cubic ~0.53 per RTT up to cwnd_prior = 20, then 1 per RTT.
        final double renoRounds = (20 - 14) / Cubic.ALPHA;
        final double reno = 20 + (100 - renoRounds);
        final double cwnd = (double)cc.cwnd() / MSS;
        assertEquals(reno, cwnd, reno * 0.1);
        final double t = (clock.nowNanos - MS) / (double)SECOND;
        assertTrue(cc.wCubic(t) < 20, "the cubic curve alone would still be below W_max");
    }

    @Test
    void rfc9438_timeoutSetsLossWindowAndRestartsWithKZero()
    {
        final long rtt = 100 * MS;
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);

        cc.onRetransmitTimeout(100L * MSS, 0);

        assertEquals(MSS, cc.cwnd());
        assertEquals(70 * MSS, cc.ssthresh());
        assertFalse(cc.inEpoch());

        final AckClock clock = new AckClock(cc, MSS, rtt, 0);
        while (!cc.inEpoch())
        {
            clock.roundTrip();
        }
        assertEquals(0.0, cc.kSeconds(), 0.0);
        assertTrue(cc.wMaxSegments() >= 70 && cc.wMaxSegments() < 72, "W_max = cwnd at the epoch: " + cc.wMaxSegments());
        assertEquals(cc.wMaxSegments(), cc.wEstSegments(), 1.0);
    }

    @Test
    void rfc5681_repeatedTimeoutHoldsSsthresh()
    {
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);

        cc.onRetransmitTimeout(100L * MSS, 0);
        cc.onRetransmitTimeout(MSS, 1);

        assertEquals(70 * MSS, cc.ssthresh());
        assertEquals(MSS, cc.cwnd());
    }

    @Test
    void rfc9438_aTimeoutDuringFastRecoveryKeepsTheRecoverysSsthresh()
    {
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);
        cc.onFastRetransmit(100L * MSS, 0);
        // The sender inflates cwnd by one SMSS per duplicate ACK (RFC 6582 (3.2) step 5).
        cc.cwnd(140L * MSS);

        cc.onRetransmitTimeout(100L * MSS, 1);

        assertEquals(70 * MSS, cc.ssthresh(), "the recovery's, not beta_cubic of the inflated window");
        assertEquals(MSS, cc.cwnd());
        cc.onAck(MSS, MSS, -1, 2);
        cc.cwnd(50L * MSS);
        cc.onRetransmitTimeout(50L * MSS, 3);
        assertEquals(35 * MSS, cc.ssthresh(), "a later timeout, outside any recovery, reduces again");
    }

    @Test
    void rfc9438_aTimeoutDuringFastRecoveryWithASmallFlightReducesFromIt()
    {
        // RFC 9438 (4.8): a timeout sets ssthresh with beta_cubic as (4.6) does, from the flight when the window is not
        // used (RFC 5681 (3.1)'s MUST bound, with CUBIC's beta). Inside a recovery whose flight has shrunk, that is
        // below the recovery's ssthresh, and it is taken; never above it.
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);
        cc.onFastRetransmit(100L * MSS, 0);
        assertEquals(70 * MSS, cc.ssthresh());

        cc.onRetransmitTimeout(20L * MSS, 1);

        assertEquals(14 * MSS, cc.ssthresh(), "beta_cubic of the flight, below the recovery's");
        assertEquals(MSS, cc.cwnd());
    }

    @Test
    void rfc9438_undoingASpuriousCongestionEventRestoresWmaxKAndTheEpoch()
    {
        // RFC 9438 (4.9): a congestion event found spurious restores the state before it. A first loss at 100 segments,
        // an epoch, then a second, spurious, at 80: fast convergence would lower W_max to 68.
        final long rtt = 100 * MS;
        final Cubic cc = newCubic();
        cc.cwnd(100L * MSS);
        cc.onFastRetransmit(100L * MSS, 0);
        cc.onRecoveryExit(0);
        final AckClock clock = new AckClock(cc, MSS, rtt, 0);
        clock.roundTrips(3);
        assertTrue(cc.inEpoch());
        final long cwnd = cc.cwnd();
        final long ssthresh = cc.ssthresh();
        final double k = cc.kSeconds();
        final double wEst = cc.wEstSegments();
        final double wNext = cc.wCubic(1.0);

        cc.onFastRetransmit(cwnd, clock.nowNanos);
        cc.onRecoveryExit(clock.nowNanos);
        assertTrue(cc.wMaxSegments() < 100, "fast convergence lowered W_max");
        cc.undoLastReduction(clock.nowNanos);

        assertEquals(cwnd, cc.cwnd());
        assertEquals(ssthresh, cc.ssthresh());
        assertEquals(100.0, cc.wMaxSegments(), 1e-9);
        assertEquals(k, cc.kSeconds(), 1e-12);
        assertEquals(wEst, cc.wEstSegments(), 1e-12);
        assertTrue(cc.inEpoch(), "the epoch goes on");
        assertEquals(wNext, cc.wCubic(1.0), 1e-9);
    }

    @Test
    void rfc9438_applicationLimitedTimeDoesNotCountInT()
    {
        final long rtt = 100 * MS;
        final Cubic limited = afterLossAt(1000, rtt);
        final Cubic busy = afterLossAt(1000, rtt);
        limited.onAck(MSS, limited.cwnd(), rtt, 0);
        busy.onAck(MSS, busy.cwnd(), rtt, 0);

        // Five seconds of ACKs for a trickle of data: no growth, and the epoch clock stands still.
        final long before = limited.cwnd();
        for (long now = rtt; now <= 5 * SECOND; now += rtt)
        {
            limited.onAck(MSS, 10L * MSS, rtt, now);
        }
        assertEquals(before, limited.cwnd());

        final AckClock limitedClock = new AckClock(limited, MSS, rtt, 5 * SECOND);
        final AckClock busyClock = new AckClock(busy, MSS, rtt, 0);
        limitedClock.roundTrips(10);
        busyClock.roundTrips(10);

        assertEquals(busy.cwnd(), limited.cwnd(), 2 * MSS);
    }

    @Test
    void rfc9438_anIdlePeriodDoesNotCountInT()
    {
        final long rtt = 100 * MS;
        final Cubic idled = afterLossAt(1000, rtt);
        final Cubic busy = afterLossAt(1000, rtt);
        final AckClock idledClock = new AckClock(idled, MSS, rtt, 0);
        final AckClock busyClock = new AckClock(busy, MSS, rtt, 0);
        idledClock.roundTrip();
        busyClock.roundTrip();

        // Ten seconds without ACKs, then sending resumes (no restart): t goes on where it stood.
        idledClock.nowNanos += 10 * SECOND;
        idled.onSendAfterIdle(false, idledClock.nowNanos);
        idled.onSendAfterIdle(false, idledClock.nowNanos);
        idledClock.roundTrips(5);
        busyClock.roundTrips(5);

        assertEquals(busy.cwnd(), idled.cwnd(), MSS);
        assertTrue(idled.cwnd() < 1000L * MSS, "still below W_max, not thrown past it by the idle time: " + idled.cwnd());
    }

    @Test
    void rfc5681_restartAfterIdleTakesTheRestartWindowAndKeepsThreeQuartersInSsthresh()
    {
        final Cubic cc = afterLossAt(100, 100 * MS);
        assertEquals(70 * MSS, cc.ssthresh());
        cc.cwnd(120L * MSS);

        cc.onSendAfterIdle(true, SECOND);

        assertEquals(10 * MSS, cc.cwnd());
        assertEquals(90 * MSS, cc.ssthresh());
    }

    @Test
    void rfc5681_afterAnIdleRestartTheSlowStartBackToSsthreshStartsAFreshEpoch()
    {
        // A small RTT keeps cwnd in the Reno-friendly region, where it follows W_est, well past W_max.
        final long rtt = MS;
        final Cubic cc = afterLossAt(200, rtt);
        final AckClock clock = new AckClock(cc, MSS, rtt, 0);
        clock.roundTrips(300);
        final long oldCwnd = cc.cwnd();
        assertTrue(oldCwnd > 300L * MSS, "grown past W_max: " + oldCwnd);
        final double wMax = cc.wMaxSegments();

        clock.nowNanos += 10 * SECOND;
        cc.onSendAfterIdle(true, clock.nowNanos);
        assertEquals(10 * MSS, cc.cwnd());
        assertEquals(oldCwnd - oldCwnd / 4, cc.ssthresh());

        // Slow start back to ssthresh, one segment per ACK, then on into congestion avoidance. W_est of the epoch
        // before the idle period still held the old window: one ACK must not take cwnd back up to it.
        long previous = cc.cwnd();
        boolean checkedEpoch = false;
        for (int i = 0; i < 2000; i++)
        {
            clock.nowNanos += rtt / 10;
            cc.onAck(MSS, cc.cwnd(), rtt, clock.nowNanos);
            assertTrue(cc.cwnd() - previous <= MSS, "ACK " + i + " of one segment raised cwnd from " + previous + " to " + cc.cwnd());
            previous = cc.cwnd();
            if (!checkedEpoch && cc.cwnd() >= cc.ssthresh())
            {
                // RFC 9438 (4.3): W_est starts at cwnd_epoch, the window at the start of this congestion avoidance.
                assertTrue(cc.inEpoch());
                assertEquals(cc.ssthresh() / (double)MSS, cc.wEstSegments(), 1.0);
                checkedEpoch = true;
            }
        }
        assertTrue(checkedEpoch, "congestion avoidance reached: " + cc);
        assertTrue(cc.cwnd() < oldCwnd, "still below the window before the idle period: " + cc);
        assertEquals(wMax, cc.wMaxSegments(), 1e-9, "the last saturation point is kept");
    }

    @Test
    void rfc9438_rttIsSmoothed()
    {
        final Cubic cc = newCubic();
        cc.onAck(MSS, cc.cwnd(), 80 * MS, 1);
        assertEquals(0.080, cc.srttSeconds(), 1e-12);
        cc.onAck(MSS, cc.cwnd(), 160 * MS, 2);
        assertEquals(0.090, cc.srttSeconds(), 1e-12);
        cc.onAck(MSS, cc.cwnd(), -1, 3);
        assertEquals(0.090, cc.srttSeconds(), 1e-12);
    }

    @Test
    void aSmallerMssKeepsTheCubicFunctionsWindowsInBytes()
    {
        // W_max, W_est, cwnd_epoch and cwnd_prior are counted in segments, cwnd in bytes. A path MTU reduction halves
        // the MSS after a loss at 100 segments of 1000 bytes: the same bytes are 200 segments of 500. The curve must
        // go on toward the same 100,000 bytes, as for a sender that had used 500-byte segments all along; read as 100
        // of the new segments, W_max would lie far below cwnd (140 segments), and cwnd would stop growing.
        final Cubic halved = afterLossAt(100, 100 * MS);
        halved.mss(MSS / 2);
        final Cubic reference = new Cubic();
        reference.init(MSS / 2, 0);
        reference.onAck(0, 0, 100 * MS, 0);
        reference.cwnd(100L * MSS);
        reference.onFastRetransmit(reference.cwnd(), 0);
        reference.onRecoveryExit(0);
        assertEquals(reference.cwnd(), halved.cwnd());

        final AckClock halvedClock = new AckClock(halved, MSS / 2, 100 * MS, 0);
        final AckClock referenceClock = new AckClock(reference, MSS / 2, 100 * MS, 0);
        for (int i = 0; i < 30; i++)
        {
            halvedClock.roundTrip();
            referenceClock.roundTrip();
            assertEquals(reference.cwnd(), halved.cwnd(), "round trip " + i);
        }
        assertTrue(halved.cwnd() > 70L * MSS, "cwnd grew: " + halved.cwnd());
        assertEquals(reference.wMaxSegments(), halved.wMaxSegments(), 1e-9);
    }

    private static Cubic newCubic()
    {
        final Cubic cc = new Cubic();
        cc.init(MSS, 0);
        return cc;
    }

    /** A controller that just lost at {@code wMax} segments and finished recovery at time 0. */
    private static Cubic afterLossAt(final int wMaxSegments, final long rttNanos)
    {
        final Cubic cc = newCubic();
        cc.onAck(0, 0, rttNanos, 0);
        cc.cwnd((long)wMaxSegments * MSS);
        cc.onFastRetransmit(cc.cwnd(), 0);
        cc.onRecoveryExit(0);
        return cc;
    }

    /**
     * Twenty round trips of slow start by a sender that never has more than {@code flightSegments} in flight: each round
     * trip it sends that many segments and gets one ACK per segment, the flight before each ACK falling from all of
     * them to one.
     */
    private static Cubic applicationLimitedSlowStart(final int flightSegments)
    {
        final Cubic cc = newCubic();
        long now = 0;
        for (int round = 0; round < 20; round++)
        {
            final long flight = Math.min((long)flightSegments * MSS, cc.cwnd());
            for (long before = flight; before > 0; before -= MSS)
            {
                now += MS;
                cc.onAck(MSS, before, 100 * MS, now);
            }
        }
        return cc;
    }

    private static void runUntil(final AckClock clock, final long untilNanos)
    {
        while (clock.nowNanos < untilNanos)
        {
            clock.roundTrip();
        }
    }
}
