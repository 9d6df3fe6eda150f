package io.nicstack.stack.tcp.cc;

import io.nicstack.stack.tcp.CongestionControl;

/**
 * Factory for congestion controllers by name, and the rules they share (RFC 6928 initial window,
 * RFC 3465 byte counting limit, the "cwnd limited" test).
 */
public final class CongestionControls
{
    /** Name of {@link Cubic}. */
    public static final String CUBIC = "cubic";
    /** Name of {@link NewReno}. */
    public static final String NEWRENO = "newreno";
    /** Controller used when the configuration names none: CUBIC, as in Linux and Windows. */
    public static final String DEFAULT = CUBIC;

    /**
     * RFC 5681 (3.1): the initial ssthresh "MAY be arbitrarily high (for example, to the size of
     * the largest possible advertised window)"; 2^31-1 bytes is above any scaled window (2^30).
     */
    public static final long INITIAL_SSTHRESH = Integer.MAX_VALUE;

    /** RFC 3465 (2.2): L, the most segments one ACK may grow cwnd by in slow start. */
    public static final int ABC_LIMIT_SEGMENTS = 2;

    /**
     * RFC 3465 (2.3): L in the slow start that follows a retransmission timeout, 1 SMSS (RFC 2581's): the ACK of a
     * resend often covers much data sent before the timeout, and such "big ACKs" say nothing about a burst the path
     * can take.
     */
    public static final int ABC_LIMIT_SEGMENTS_AFTER_TIMEOUT = 1;

    private CongestionControls()
    {
    }

    /**
     * RFC 3465 (2.2): what one ACK of {@code acked} bytes adds to cwnd in slow start, min(N, L*SMSS), with L =
     * {@link #ABC_LIMIT_SEGMENTS}, or {@link #ABC_LIMIT_SEGMENTS_AFTER_TIMEOUT} in the slow start after a timeout (2.3).
     */
    static long slowStartIncrease(final long acked, final int mss, final boolean afterTimeout)
    {
        return Math.min(acked, (long)(afterTimeout ? ABC_LIMIT_SEGMENTS_AFTER_TIMEOUT : ABC_LIMIT_SEGMENTS) * mss);
    }

    /** Whether {@link #create} knows {@code name}. */
    public static boolean isKnown(final String name)
    {
        return CUBIC.equals(name) || NEWRENO.equals(name);
    }

    /**
     * A new controller for one connection.
     *
     * @param name {@value #CUBIC} or {@value #NEWRENO}.
     * @return a fresh controller; call {@link CongestionControl#init(int, long)} before use.
     * @throws IllegalArgumentException for any other name.
     */
    public static CongestionControl create(final String name)
    {
        if (CUBIC.equals(name))
        {
            return new Cubic();
        }
        if (NEWRENO.equals(name))
        {
            return new NewReno();
        }
        throw new IllegalArgumentException("unknown congestion control: " + name + " (expected cubic or newreno)");
    }

    /** RFC 6928 (2): IW = min(10*MSS, max(2*MSS, 14600)) bytes. */
    public static long initialWindow(final int mss)
    {
        return Math.min(10L * mss, Math.max(2L * mss, 14_600L));
    }

    /** RFC 5681 (4.1): the restart window after an idle period longer than the RTO, {@code min(IW, cwnd)}. */
    static long restartWindow(final long cwnd, final int mss)
    {
        return Math.min(initialWindow(mss), cwnd);
    }

    /** RFC 2861 (3): ssthresh before an idle restart lowers cwnd, {@code max(ssthresh, 3/4 cwnd)}. */
    static long ssthreshBeforeRestart(final long ssthresh, final long cwnd)
    {
        return Math.max(ssthresh, cwnd - cwnd / 4);
    }

    /**
     * Whether the window, not the application or the receiver, limited the sender, so that growing
     * it is justified (RFC 9438 (4.6) and (5.8): a CUBIC that reduces from cwnd "MUST use other
     * measures to prevent cwnd from growing when the volume of bytes in flight is smaller than
     * cwnd"; RFC 7661 for Reno). In slow start half a window in flight counts, as in Linux
     * {@code tcp_is_cwnd_limited}, since the flight trails a window that just doubled; in
     * congestion avoidance the sender must have been unable to send one more full segment. An
     * application-limited slow start can so take cwnd to twice its flight: NewReno reduces from
     * FlightSize, and {@link Cubic} from no more of cwnd than the sender has used.
     * A negative {@code flightBefore} means "unknown" and counts as limited.
     */
    static boolean cwndLimited(final long cwnd, final long flightBefore, final int mss, final boolean slowStart)
    {
        if (flightBefore < 0)
        {
            return true;
        }
        return slowStart ? 2 * flightBefore >= cwnd : flightBefore + mss > cwnd;
    }
}
