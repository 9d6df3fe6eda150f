package io.nicstack.stack.tcp;

/**
 * Retransmission timer per RFC 6298: SRTT and RTTVAR from samples, RTO = SRTT + max(G, 4*RTTVAR)
 * clamped to [min, max], exponential backoff on expiry (5.5), backoff cleared by a new sample.
 */
public final class RttEstimator
{
    /** RFC 6298 (2.1): before any sample, RTO is 1 second. */
    public static final long INITIAL_RTO_NANOS = 1_000_000_000L;
    /** Clock granularity G of the injected nanosecond clock; we use 1 ms to avoid a zero variance term. */
    public static final long GRANULARITY_NANOS = 1_000_000L;

    private final long minRto;
    private final long maxRto;
    private long srtt = -1;
    private long rttvar;
    private long rto;
    /** The RTO before the timeouts' backoff: from the last sample, or the initial (or RFC 6298 (5.7)) one before it. */
    private long unbackedRto;
    private int backoff;

    /**
     * @param minRtoNanos lower bound; RFC 6298 (2.4) says SHOULD be 1 s, Linux uses 200 ms (a documented
     *                    deviation that keeps loss recovery on fast links from idling for a second).
     * @param maxRtoNanos upper bound; RFC 6298 (2.5) allows any value of at least 60 s.
     */
    public RttEstimator(final long minRtoNanos, final long maxRtoNanos)
    {
        this.minRto = minRtoNanos;
        this.maxRto = maxRtoNanos;
        // RFC 6298 (2.4)/(2.5): the bounds hold for every RTO, the (2.1) initial one included; a configured
        // minimum above 1 s (the RFC's own SHOULD) must not be undercut before the first sample.
        this.rto = clamp(INITIAL_RTO_NANOS);
        this.unbackedRto = rto;
    }

    /** Feed one RTT measurement (Karn's rule is the caller's: never a sample from a retransmitted segment without timestamps). */
    public void sample(final long rttNanos)
    {
        final long r = Math.max(rttNanos, 0);
        if (srtt < 0)
        {
            // RFC 6298 (2.2): first measurement.
            srtt = r;
            rttvar = r / 2;
        }
        else
        {
            // RFC 6298 (2.3): beta = 1/4, alpha = 1/8, RTTVAR first, using the old SRTT.
            // Both sums are non-negative, so the shifts are the divisions (without a signed division's fix-up).
            rttvar = (3 * rttvar + Math.abs(srtt - r)) >> 2;
            srtt = (7 * srtt + r) >> 3;
        }
        unbackedRto = clamp(srtt + Math.max(GRANULARITY_NANOS, 4 * rttvar));
        clearBackoff();
    }

    /** RFC 6298 (5.5): the timer expired; double the RTO (up to the maximum). */
    public void backoff()
    {
        backoff++;
        rto = Math.min(maxRto, rto * 2);
    }

    /**
     * Undo the timeouts' backoff: the RTO from SRTT and RTTVAR again, or before any sample the initial one (3 s after
     * a lost SYN, (5.7)). For expiries that proved the path alive, as answered zero-window probes do (Linux's
     * tcp_ack_probe clears icsk_backoff when the window opens).
     */
    public void clearBackoff()
    {
        backoff = 0;
        rto = unbackedRto;
    }

    /** RFC 6298 (5.7): start again at {@code rtoNanos}, without backoff, still without a sample. */
    public void reinitialize(final long rtoNanos)
    {
        unbackedRto = clamp(rtoNanos);
        clearBackoff();
    }

    /** Current RTO in nanoseconds. */
    public long rto()
    {
        return rto;
    }

    /** Smoothed RTT, or -1 before the first sample. */
    public long srtt()
    {
        return srtt;
    }

    public long rttvar()
    {
        return rttvar;
    }

    /** Consecutive expiries since the last sample. */
    public int backoffCount()
    {
        return backoff;
    }

    private long clamp(final long value)
    {
        return Math.max(minRto, Math.min(maxRto, value));
    }
}
