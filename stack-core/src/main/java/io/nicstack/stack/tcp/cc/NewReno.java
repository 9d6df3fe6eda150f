package io.nicstack.stack.tcp.cc;

import io.nicstack.stack.tcp.CongestionControl;

/**
 * Reno congestion control as NewReno senders use it: RFC 5681 (3.1) slow start and congestion
 * avoidance, both with appropriate byte counting (RFC 3465, L = 2 in slow start, L = 1 in the slow
 * start that follows a timeout), RFC 5681 (4)
 * ssthresh on loss, the loss window after a timeout and RFC 6582 (3.2) step 3 deflation on leaving
 * fast recovery, and the RFC 5681 (4.1) restart window after idle. Partial ACKs and window
 * inflation during recovery are the sender's.
 *
 * <p>cwnd only grows while the sender is cwnd limited (see {@link CongestionControls}): an
 * application- or receiver-limited flow must not build up a window it never used (RFC 7661).
 */
public final class NewReno implements CongestionControl
{
    private int mss;
    private long cwnd;
    private long ssthresh = CongestionControls.INITIAL_SSTHRESH;
    /** RFC 3465 (2.1): bytes acknowledged in congestion avoidance not yet turned into cwnd. */
    private long bytesAcked;
    /** A timeout happened and no new data has been acknowledged since. */
    private boolean inTimeoutBackoff;
    /** Between {@link #onFastRetransmit} and {@link #onRecoveryExit}. */
    private boolean inFastRecovery;
    /** The slow start that follows a timeout, until it reaches ssthresh (RFC 3465 (2.3): L = 1 SMSS). */
    private boolean slowStartAfterTimeout;
    /** cwnd and ssthresh before the last {@link #onFastRetransmit}, for {@link #undoLastReduction}. */
    private long priorCwnd;
    private long priorSsthresh;

    /** {@inheritDoc} */
    public void init(final int mss, final long nowNanos)
    {
        this.mss = mss;
        cwnd = CongestionControls.initialWindow(mss);
        ssthresh = CongestionControls.INITIAL_SSTHRESH;
        bytesAcked = 0;
        inTimeoutBackoff = false;
        inFastRecovery = false;
        slowStartAfterTimeout = false;
    }

    /** {@inheritDoc} */
    public long cwnd()
    {
        return cwnd;
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
        if (ackedBytes <= 0)
        {
            return;
        }
        inTimeoutBackoff = false;

        long acked = ackedBytes;
        if (cwnd < ssthresh)
        {
            if (!CongestionControls.cwndLimited(cwnd, flightBefore, mss, true))
            {
                return;
            }
            // RFC 3465: cwnd += min(N, L*SMSS) per ACK in slow start.
            final long increase = CongestionControls.slowStartIncrease(acked, mss, slowStartAfterTimeout);
            final long room = ssthresh - cwnd;
            if (increase <= room)
            {
                cwnd += increase;
                slowStartAfterTimeout &= cwnd < ssthresh;
                return;
            }
            // RFC 5681 (3.1): slow start ends at ssthresh; the rest of this ACK counts in avoidance.
            cwnd = ssthresh;
            acked -= room;
            slowStartAfterTimeout = false;
        }

        if (!CongestionControls.cwndLimited(cwnd, flightBefore, mss, false))
        {
            return;
        }
        // RFC 3465 (2.1) / RFC 5681 (3.1): once a full cwnd of bytes has been acknowledged, grow by SMSS.
        bytesAcked += acked;
        if (bytesAcked >= cwnd)
        {
            bytesAcked -= cwnd;
            cwnd += mss;
        }
    }

    /** {@inheritDoc} */
    public void onFastRetransmit(final long flightSize, final long nowNanos)
    {
        // RFC 5681 (4): ssthresh = max(FlightSize / 2, 2*SMSS); RFC 6582 (3.2) step 2 cwnd = ssthresh
        // (the sender adds 3*SMSS of inflation itself).
        priorCwnd = cwnd;
        priorSsthresh = ssthresh;
        ssthresh = Math.max(flightSize / 2, 2L * mss);
        cwnd = ssthresh;
        bytesAcked = 0;
        inFastRecovery = true;
        slowStartAfterTimeout = false;
    }

    /** {@inheritDoc} */
    public void onRecoveryExit(final long nowNanos)
    {
        // RFC 6582 (3.2) step 3, full acknowledgment: deflate the window to ssthresh.
        cwnd = ssthresh;
        bytesAcked = 0;
        inFastRecovery = false;
    }

    /** {@inheritDoc} */
    public void undoLastReduction(final long nowNanos)
    {
        // RFC 3708 §4 (and Linux's tcp_undo_cwnd_reduction): back to the window before the reduction, or keep a larger
        // one grown since; the same for ssthresh, so congestion avoidance (or slow start) goes on from where it was.
        cwnd = Math.max(cwnd, priorCwnd);
        ssthresh = Math.max(ssthresh, priorSsthresh);
        bytesAcked = 0;
        inFastRecovery = false;
    }

    /** {@inheritDoc} */
    public void onRetransmitTimeout(final long flightSize, final long nowNanos)
    {
        // RFC 5681 (3.1) note after (4): when the segment already went out once by the timer,
        // ssthresh is held constant; a timeout with no ACK since the last one is that case. Otherwise
        // ssthresh MUST be no more than (4)'s max(FlightSize / 2, 2*SMSS). During a fast recovery it
        // never rises above the recovery's either, as Linux's tcp_enter_loss keeps it: the recovery
        // already halved for this loss, and the FlightSize its window inflation (RFC 6582 (3.2) step 5)
        // let grow would raise it. A recovery that repaired most of its flight takes (4)'s lower value.
        if (!inTimeoutBackoff)
        {
            final long equationFour = Math.max(flightSize / 2, 2L * mss);
            ssthresh = inFastRecovery ? Math.min(ssthresh, equationFour) : equationFour;
        }
        inTimeoutBackoff = true;
        inFastRecovery = false;
        slowStartAfterTimeout = true;
        // RFC 5681 (3.1): cwnd becomes the loss window, 1 full-sized segment.
        cwnd = mss;
        bytesAcked = 0;
    }

    /** {@inheritDoc} */
    public void onSendAfterIdle(final boolean restart, final long nowNanos)
    {
        if (restart)
        {
            ssthresh = CongestionControls.ssthreshBeforeRestart(ssthresh, cwnd);
            cwnd = CongestionControls.restartWindow(cwnd, mss);
            bytesAcked = 0;
            slowStartAfterTimeout = false;
        }
    }

    /** {@inheritDoc} */
    public void mss(final int mss)
    {
        this.mss = mss;
        cwnd = Math.max(cwnd, mss);
    }

    /** {@inheritDoc} */
    public String name()
    {
        return CongestionControls.NEWRENO;
    }

    /** {@inheritDoc} */
    public String toString()
    {
        return "NewReno{cwnd=" + cwnd + ", ssthresh=" + ssthresh + ", mss=" + mss + '}';
    }
}
