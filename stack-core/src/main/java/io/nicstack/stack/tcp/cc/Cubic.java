package io.nicstack.stack.tcp.cc;

import io.nicstack.stack.tcp.CongestionControl;

/**
 * CUBIC congestion control (RFC 9438): after a congestion event the window follows
 * {@code W_cubic(t) = C*(t-K)^3 + W_max}, concave up to the last saturation point {@code W_max}
 * and convex beyond it, never below the Reno estimate {@code W_est}.
 *
 * <p>Window state of the cubic function ({@code W_max}, {@code W_est}, {@code cwnd_epoch},
 * {@code cwnd_prior}) is kept in segments as doubles, as the RFC writes it; cwnd itself is kept
 * in bytes as a double so that per-ACK increments smaller than a byte are not lost, and every
 * update is byte based (RFC 9438 (4.3): "adjusted by using the number of acknowledged bytes").
 *
 * <p>Choices the RFC leaves open, and deviations:
 * <ul>
 * <li>RTT in {@code target = W_cubic(t + RTT)} is the smoothed RTT of the {@code rttNanos}
 *     samples, RFC 6298 (2.3) gain 1/8, as RFC 9438 (4.1) defines it; 0 before the first sample.</li>
 * <li>ssthresh and W_max are reduced from cwnd, not FlightSize (RFC 9438 (4.6) allows it, as Linux
 *     and Windows do), but never from more of it than the sender has used since the last reduction.
 *     cwnd only grows while the sender is cwnd limited (see {@link CongestionControls}), but in slow
 *     start half a window in flight counts, as in Linux, so an application-limited slow start takes
 *     cwnd to about twice its flight. The same section requires that an implementation that uses
 *     cwnd "MUST use other measures to prevent cwnd from growing when the volume of bytes in flight is
 *     smaller than cwnd": a loss then reduces from the largest flight, not from a window never used.
 *     A flight that left no room for one more full segment counts as the whole window, so a sender
 *     that fills its window reduces from cwnd as before, also when little is in flight at the loss
 *     (a tail loss probe's repair, a timeout at the end of a transfer). A timeout during a fast
 *     recovery keeps the recovery's ssthresh, as Linux does, rather than take beta_cubic of the
 *     window the sender inflated, unless beta_cubic of the window still in use is less.</li>
 * <li>RFC 9438 (5.8): the epoch is shifted forward by the time between ACKs that found the
 *     sender application limited, and by a fully idle period when sending starts again, so that
 *     {@code t} excludes both. After an idle period longer than the RTO, cwnd restarts from the
 *     restart window (RFC 5681 (4.1)) with ssthresh keeping 3/4 of the old window (RFC 2861), and the epoch
 *     ends, as after a loss; W_max is kept.</li>
 * <li>In the Reno-friendly region cwnd is raised to {@code W_est} but never lowered to it.</li>
 * <li>Standard slow start with RFC 3465 byte counting (L = 1 SMSS in the slow start after a timeout,
 *     (2.3)); no HyStart++ (RFC 9438 (4.10) MAY).</li>
 * </ul>
 * The congestion avoidance epoch starts at the first ACK in congestion avoidance, so recovery time
 * is not counted in {@code t}.
 */
public final class Cubic implements CongestionControl
{
    /** RFC 9438 (5.1): C SHOULD be 0.4 (segments / second^3). */
    public static final double C = 0.4;
    /** RFC 9438 (4.6): beta_cubic SHOULD be 0.7. */
    public static final double BETA = 0.7;
    /** RFC 9438 (4.3): alpha_cubic = 3 * (1 - beta_cubic) / (1 + beta_cubic), about 0.53. */
    public static final double ALPHA = 3.0 * (1.0 - BETA) / (1.0 + BETA);

    private static final double NANOS_PER_SECOND = 1e9;

    private final boolean fastConvergence;

    private int mss;
    /** Congestion window in bytes. */
    private double cwnd;
    private long ssthresh = CongestionControls.INITIAL_SSTHRESH;

    /** RFC 9438 (4.1) W_max, segments; 0 until the first congestion event. */
    private double wMax;
    /** RFC 9438 (4.1) cwnd_prior, segments: cwnd when ssthresh was last set. */
    private double cwndPrior;
    /** RFC 9438 (4.1) K, seconds. */
    private double k;
    /** RFC 9438 (4.1) W_est, segments. */
    private double wEst;
    /** RFC 9438 (4.1) cwnd_epoch, segments. */
    private double cwndEpoch;
    /** RFC 9438 (4.1) t_epoch, injected clock. */
    private long epochStartNanos;
    private boolean inEpoch;
    /** RFC 9438 (4.8): the next epoch follows a timeout, so it takes W_max from cwnd_epoch and K = 0. */
    private boolean epochAfterTimeout;
    /** A timeout happened and no new data has been acknowledged since. */
    private boolean inTimeoutBackoff;
    /** Between {@link #onFastRetransmit} and {@link #onRecoveryExit}: cwnd may be the sender's inflated one. */
    private boolean inFastRecovery;
    /** The slow start that follows a timeout, until it reaches ssthresh (RFC 3465 (2.3): L = 1 SMSS). */
    private boolean slowStartAfterTimeout;

    /**
     * The largest window, in bytes, the sender has used since the last reduction: the flight before an ACK, or cwnd
     * after an ACK whose flight filled the window (see {@link #reductionBase}).
     */
    private long usedWindow;

    // RFC 9438 (4.9): the state before the last congestion event, restored if it proves spurious.
    private double priorCwnd;
    private long priorSsthresh;
    private double priorWMax;
    private double priorCwndPrior;
    private double priorK;
    private double priorWEst;
    private double priorCwndEpoch;
    private long priorEpochStartNanos;
    private boolean priorInEpoch;
    private boolean priorEpochAfterTimeout;
    private long priorUsedWindow;

    /** Smoothed RTT in nanoseconds (integer arithmetic on every ACK; seconds only where W_cubic needs them), -1 before a sample. */
    private long srttNanos = -1;
    private long lastAckNanos;

    /** CUBIC with fast convergence (RFC 9438 (4.7) SHOULD). */
    public Cubic()
    {
        this(true);
    }

    /**
     * @param fastConvergence RFC 9438 (4.7) heuristic; the RFC says it SHOULD be disabled where a
     *                        single CUBIC flow has the path to itself.
     */
    public Cubic(final boolean fastConvergence)
    {
        this.fastConvergence = fastConvergence;
    }

    /** {@inheritDoc} */
    public void init(final int mss, final long nowNanos)
    {
        this.mss = mss;
        cwnd = CongestionControls.initialWindow(mss);
        ssthresh = CongestionControls.INITIAL_SSTHRESH;
        wMax = 0;
        cwndPrior = 0;
        k = 0;
        wEst = 0;
        cwndEpoch = 0;
        epochStartNanos = nowNanos;
        inEpoch = false;
        epochAfterTimeout = false;
        inTimeoutBackoff = false;
        inFastRecovery = false;
        slowStartAfterTimeout = false;
        usedWindow = 0;
        srttNanos = -1;
        lastAckNanos = nowNanos;
    }

    /** {@inheritDoc} */
    public long cwnd()
    {
        return (long)cwnd;
    }

    /** {@inheritDoc} */
    public void cwnd(final long bytes)
    {
        cwnd = bytes;
    }

    /** {@inheritDoc} */
    public long ssthresh()
    {
        return ssthresh;
    }

    /** {@inheritDoc} */
    public void onAck(final long ackedBytes, final long flightBefore, final long rttNanos, final long nowNanos)
    {
        if (rttNanos >= 0)
        {
            sampleRtt(rttNanos);
        }
        final long sinceLastAck = nowNanos - lastAckNanos;
        lastAckNanos = nowNanos;
        if (ackedBytes <= 0)
        {
            return;
        }
        inTimeoutBackoff = false;
        final boolean windowFull = CongestionControls.cwndLimited((long)cwnd, flightBefore, mss, false);
        grow(ackedBytes, flightBefore, sinceLastAck, nowNanos);
        // A flight that filled the window used it, and the growth this ACK gave it (RFC 9438 (4.6), reductionBase).
        usedWindow = Math.max(usedWindow, windowFull ? (long)cwnd : flightBefore);
    }

    private void grow(final long ackedBytes, final long flightBefore, final long sinceLastAck, final long nowNanos)
    {
        long acked = ackedBytes;
        if (cwnd < ssthresh)
        {
            if (!CongestionControls.cwndLimited((long)cwnd, flightBefore, mss, true))
            {
                return;
            }
            // RFC 9438 (4.10) with RFC 3465: cwnd += min(N, L*SMSS) per ACK in slow start.
            final long increase = CongestionControls.slowStartIncrease(acked, mss, slowStartAfterTimeout);
            final double room = ssthresh - cwnd;
            if (increase <= room)
            {
                cwnd += increase;
                slowStartAfterTimeout &= cwnd < ssthresh;
                return;
            }
            // Slow start ends at ssthresh; the rest of this ACK counts in congestion avoidance.
            cwnd = ssthresh;
            acked -= (long)room;
            slowStartAfterTimeout = false;
        }

        if (!CongestionControls.cwndLimited((long)cwnd, flightBefore, mss, false))
        {
            if (inEpoch && sinceLastAck > 0)
            {
                // RFC 9438 (4.2): t MUST NOT include application-limited periods.
                epochStartNanos += sinceLastAck;
            }
            return;
        }
        congestionAvoidance(acked, nowNanos);
    }

    /** {@inheritDoc} */
    public void onFastRetransmit(final long flightSize, final long nowNanos)
    {
        saveForUndo();
        final double base = reductionBase(flightSize);
        final double segments = base / mss;
        // RFC 9438 (4.7): with fast convergence a loss below the previous W_max lowers it further.
        if (fastConvergence && segments < wMax)
        {
            wMax = segments * (1.0 + BETA) / 2.0;
        }
        else
        {
            wMax = segments;
        }
        // RFC 9438 (4.6): ssthresh = cwnd * beta_cubic (of the window used), at least 2 SMSS; cwnd = ssthresh.
        cwndPrior = segments;
        ssthresh = Math.max(Math.round(base * BETA), 2L * mss);
        cwnd = ssthresh;
        inEpoch = false;
        epochAfterTimeout = false;
        inFastRecovery = true;
        slowStartAfterTimeout = false;
    }

    /** {@inheritDoc} */
    public void onRecoveryExit(final long nowNanos)
    {
        // RFC 6582 (3.2) step 3: deflate to ssthresh; the congestion avoidance epoch starts at the next ACK.
        cwnd = ssthresh;
        inEpoch = false;
        inFastRecovery = false;
    }

    /**
     * {@inheritDoc}
     *
     * <p>RFC 9438 (4.9): W_max, K, t_epoch, W_est, cwnd_epoch and cwnd_prior as they were before the event, so the
     * cubic function goes on as if it had not happened (its t counts the recovery's time); cwnd and ssthresh no lower
     * than before it, nor than they have grown since.
     */
    public void undoLastReduction(final long nowNanos)
    {
        cwnd = Math.max(cwnd, priorCwnd);
        ssthresh = Math.max(ssthresh, priorSsthresh);
        wMax = priorWMax;
        cwndPrior = priorCwndPrior;
        k = priorK;
        wEst = priorWEst;
        cwndEpoch = priorCwndEpoch;
        epochStartNanos = priorEpochStartNanos;
        inEpoch = priorInEpoch;
        epochAfterTimeout = priorEpochAfterTimeout;
        usedWindow = Math.max(usedWindow, priorUsedWindow);
        inFastRecovery = false;
    }

    private void saveForUndo()
    {
        priorCwnd = cwnd;
        priorSsthresh = ssthresh;
        priorWMax = wMax;
        priorCwndPrior = cwndPrior;
        priorK = k;
        priorWEst = wEst;
        priorCwndEpoch = cwndEpoch;
        priorEpochStartNanos = epochStartNanos;
        priorInEpoch = inEpoch;
        priorEpochAfterTimeout = epochAfterTimeout;
        priorUsedWindow = usedWindow;
    }

    /** {@inheritDoc} */
    public void onRetransmitTimeout(final long flightSize, final long nowNanos)
    {
        // RFC 9438 (4.8): ssthresh from beta_cubic as in (4.6), held constant over repeated
        // timeouts (RFC 5681 (3.1)); cwnd = the loss window of RFC 5681. A timeout during a fast
        // recovery never raises the recovery's ssthresh, as Linux's tcp_enter_loss keeps it: the
        // recovery already reduced for this loss, and cwnd is then the sender's window inflated by one
        // SMSS per duplicate ACK (RFC 6582 (3.2) step 5), whose beta_cubic share could exceed the
        // ssthresh taken at the start of the recovery. But a recovery that repaired most of its flight
        // leaves less in use than that (reductionBase), and then its lower value is taken, as RFC 5681
        // (3.1) requires of the timer's ssthresh (with CUBIC's beta for Reno's half).
        if (!inTimeoutBackoff)
        {
            final double base = reductionBase(flightSize);
            final long reduced = Math.max(Math.round(base * BETA), 2L * mss);
            if (!inFastRecovery || reduced < ssthresh)
            {
                cwndPrior = base / mss;
                ssthresh = reduced;
            }
        }
        usedWindow = 0;
        inTimeoutBackoff = true;
        inFastRecovery = false;
        slowStartAfterTimeout = true;
        cwnd = mss;
        inEpoch = false;
        epochAfterTimeout = true;
    }

    /** {@inheritDoc} */
    public void onSendAfterIdle(final boolean restart, final long nowNanos)
    {
        // RFC 9438 (5.8): t excludes the idle period. It is measured from the last ACK, the one that emptied the
        // flight: the ACKs before it that found the sender application limited have already moved the epoch
        // (onAck). Linux's bictcp_cwnd_event(CA_EVENT_TX_START) does the same from the last send.
        final long idleSinceAck = nowNanos - lastAckNanos;
        if (inEpoch && idleSinceAck > 0)
        {
            epochStartNanos += idleSinceAck;
        }
        lastAckNanos = nowNanos;
        if (restart)
        {
            ssthresh = CongestionControls.ssthreshBeforeRestart(ssthresh, (long)cwnd);
            cwnd = CongestionControls.restartWindow((long)cwnd, mss);
            slowStartAfterTimeout = false;
            // The window was cut, as after a loss: the epoch ends, and the congestion avoidance that follows the slow
            // start starts a new one with W_est = cwnd_epoch (RFC 9438 (4.3)). Kept, W_est would still hold the window
            // before the idle period, and the first Reno-friendly ACK would raise cwnd to it at once. W_max stays:
            // the idle period says nothing new about the path's saturation point (RFC 9438 is silent here; Linux
            // keeps last_max_cwnd across tcp_cwnd_restart too).
            inEpoch = false;
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>cwnd and ssthresh are bytes and stay; the cubic function's windows are segments, so they are recounted in
     * segments of the new size, the same bytes (RFC 9438 is silent; read as counts of the new segments, a path MTU
     * that halved the MSS would put W_max at half its bytes, below cwnd, and send cwnd up the convex side of the
     * curve). K was the time to W_max from the old epoch's start in old segments: the next ACK starts a new epoch.
     */
    public void mss(final int mss)
    {
        if (this.mss > 0 && mss != this.mss)
        {
            final double scale = (double)this.mss / mss;
            wMax *= scale;
            wEst *= scale;
            cwndEpoch *= scale;
            cwndPrior *= scale;
            inEpoch = false;
        }
        this.mss = mss;
        cwnd = Math.max(cwnd, mss);
    }

    /** {@inheritDoc} */
    public String name()
    {
        return CongestionControls.CUBIC;
    }

    /** RFC 9438 W_max in segments (0 before the first congestion event). */
    public double wMaxSegments()
    {
        return wMax;
    }

    /** RFC 9438 K in seconds for the current epoch. */
    public double kSeconds()
    {
        return k;
    }

    /** RFC 9438 (4.3) Reno estimate W_est in segments for the current epoch. */
    public double wEstSegments()
    {
        return wEst;
    }

    /** Whether a congestion avoidance epoch is running ({@code t_epoch} is set). */
    public boolean inEpoch()
    {
        return inEpoch;
    }

    /** Smoothed RTT in seconds used for {@code W_cubic(t + RTT)}, 0 before the first sample. */
    public double srttSeconds()
    {
        return Math.max(srttNanos, 0) / NANOS_PER_SECOND;
    }

    /** RFC 9438 (4.2) eq. 1: W_cubic(t) in segments for {@code t} seconds into the epoch. */
    public double wCubic(final double tSeconds)
    {
        final double d = tSeconds - k;
        return C * d * d * d + wMax;
    }

    /** {@inheritDoc} */
    public String toString()
    {
        return "Cubic{cwnd=" + cwnd() + ", ssthresh=" + ssthresh + ", wMax=" + wMax + ", k=" + k +
            ", wEst=" + wEst + ", mss=" + mss + '}';
    }

    private void congestionAvoidance(final long ackedBytes, final long nowNanos)
    {
        if (!inEpoch)
        {
            startEpoch(nowNanos);
        }

        final double cwndSegments = cwnd / mss;
        final double segmentsAcked = (double)ackedBytes / mss;
        final double t = (nowNanos - epochStartNanos) / NANOS_PER_SECOND;

        // RFC 9438 (4.3) eq. 4, alpha_cubic becomes 1 once W_est reaches cwnd_prior.
        final double alpha = wEst >= cwndPrior ? 1.0 : ALPHA;
        wEst += alpha * segmentsAcked / cwndSegments;

        if (wCubic(t) < wEst)
        {
            // RFC 9438 (4.3): Reno-friendly region, cwnd SHOULD be set to W_est.
            cwnd = Math.max(cwnd, wEst * mss);
            return;
        }

        // RFC 9438 (4.2): target = W_cubic(t + RTT) clamped to [cwnd, 1.5 * cwnd].
        final double target = Math.min(Math.max(wCubic(t + srttSeconds()), cwndSegments), 1.5 * cwndSegments);
        // RFC 9438 (4.4) concave and (4.5) convex regions: cwnd += (target - cwnd) / cwnd per
        // segment acknowledged, here scaled by the bytes of this ACK.
        cwnd += (target - cwndSegments) / cwndSegments * segmentsAcked * mss;
    }

    private void startEpoch(final long nowNanos)
    {
        inEpoch = true;
        epochStartNanos = nowNanos;
        cwndEpoch = cwnd / mss;
        // RFC 9438 (4.3): W_est starts at cwnd_epoch.
        wEst = cwndEpoch;
        if (epochAfterTimeout || wMax <= 0)
        {
            // RFC 9438 (4.8) after a timeout, (4.10) after a slow start without loss: K = 0 and
            // W_max is cwnd at the beginning of this congestion avoidance stage.
            wMax = cwndEpoch;
            k = 0;
            epochAfterTimeout = false;
            if (cwndPrior <= 0)
            {
                cwndPrior = cwndEpoch;
            }
        }
        else
        {
            // RFC 9438 (4.2) eq. 2: K = cubic_root((W_max - cwnd_epoch) / C); negative when the
            // epoch starts above W_max, which puts t = 0 on the convex side of the curve.
            k = Math.cbrt((wMax - cwndEpoch) / C);
        }
    }

    /**
     * RFC 9438 (4.6): the window a loss reduces from, in bytes: cwnd, but no more of it than the sender has used since
     * the last reduction ({@link #usedWindow}, or {@code flightSize} at this loss; a flight that left no room for one
     * more full segment, {@link CongestionControls#cwndLimited}'s congestion avoidance test, used all of it). Starts
     * the count for the next reduction.
     */
    private double reductionBase(final long flightSize)
    {
        final double atLoss = CongestionControls.cwndLimited((long)cwnd, flightSize, mss, false) ? cwnd : flightSize;
        final double base = Math.min(cwnd, Math.max(usedWindow, atLoss));
        usedWindow = 0;
        return base;
    }

    private void sampleRtt(final long rttNanos)
    {
        if (srttNanos < 0)
        {
            // RFC 6298 (2.2): the first measurement is the SRTT.
            srttNanos = rttNanos;
        }
        else
        {
            // RFC 6298 (2.3): SRTT = 7/8 SRTT + 1/8 R'.
            srttNanos += (rttNanos - srttNanos) / 8;
        }
    }
}
