package io.nicstack.stack.tcp;

/**
 * A congestion controller (RFC 5681 framework): it owns {@code cwnd} and {@code ssthresh} and
 * decides how they grow on ACKs and shrink on loss. Loss detection and recovery (fast
 * retransmit, NewReno's partial ACKs, SACK's pipe) belong to the sender, which calls these hooks.
 * All sizes are in bytes; time is the injected clock in nanoseconds. One instance per connection.
 */
public interface CongestionControl
{
    /** Start a connection: initial window per RFC 6928 ({@code min(10*MSS, max(2*MSS, 14600))}), ssthresh "arbitrarily high". */
    void init(int mss, long nowNanos);

    /** Congestion window in bytes. */
    long cwnd();

    /** Set cwnd directly (recovery inflation and deflation by the sender). */
    void cwnd(long bytes);

    long ssthresh();

    /**
     * New data acknowledged outside recovery: grow cwnd (slow start below ssthresh, then congestion
     * avoidance or the CUBIC function).
     *
     * @param ackedBytes      bytes newly acknowledged by this ACK.
     * @param flightBefore    bytes the sender had in flight in the window this ACK belongs to (for "cwnd limited"
     *                        checks): the largest flight of that window, at least cwnd when cwnd limited the sender
     *                        in it, as the sender records it at send time (Linux's tcp_cwnd_validate). Not the flight
     *                        just before this ACK, which ACKs processed in one receive burst lower one by one.
     * @param rttNanos        an RTT sample taken from this ACK, or -1.
     */
    void onAck(long ackedBytes, long flightBefore, long rttNanos, long nowNanos);

    /**
     * Loss detected by duplicate ACKs or SACK (entering fast recovery), or repaired by a loss probe: set ssthresh (RFC
     * 5681 (4): {@code max(FlightSize/2, 2*SMSS)} for Reno; RFC 9438 (4.6) {@code cwnd*beta_cubic} for CUBIC, of no
     * more of cwnd than the sender has used since its last reduction) and cwnd = ssthresh.
     *
     * @param flightSize bytes in flight when the loss was detected (RFC 5681 FlightSize).
     */
    void onFastRetransmit(long flightSize, long nowNanos);

    /** Fast recovery ended (the recovery point was acknowledged): cwnd = ssthresh (RFC 6582 step 3). */
    void onRecoveryExit(long nowNanos);

    /**
     * The reduction of the last {@link #onFastRetransmit} proved spurious (every retransmission of its recovery was
     * reported received twice, RFC 2883 §4 D-SACK; RFC 3708 §4): called after {@link #onRecoveryExit}, never across a
     * timeout. cwnd and ssthresh become no less than they were before that reduction (as Linux's
     * tcp_undo_cwnd_reduction), and a controller with state of its own restores it too (RFC 9438 §4.9 for CUBIC).
     */
    void undoLastReduction(long nowNanos);

    /**
     * Retransmission timeout: ssthresh reduced as by {@link #onFastRetransmit} (Reno from the flight size, RFC 5681
     * (4); CUBIC from cwnd, RFC 9438 (4.8)), held over repeated timeouts, and cwnd = 1 MSS (RFC 5681 (3.1), the loss
     * window). During a fast recovery (after {@link #onFastRetransmit}, before {@link #onRecoveryExit}) ssthresh never
     * rises above the recovery's: that reduction answered this loss, and cwnd may be the sender's inflated window; it
     * falls to the timeout's value when that is less (RFC 5681 (3.1) MUST: a recovery that repaired most of its flight).
     *
     * @param flightSize bytes outstanding when the timer expired.
     */
    void onRetransmitTimeout(long flightSize, long nowNanos);

    /**
     * The sender is about to send new data with nothing in flight. With {@code restart} (it last sent new data more
     * than an RTO ago, so the ACK clock is gone and cwnd says nothing about the path any more) cwnd becomes the
     * restart window {@code min(IW, cwnd)} (RFC 5681 (4.1) SHOULD); RFC 2861 (3), as Linux's tcp_cwnd_restart does,
     * first keeps the window's memory in ssthresh ({@code max(ssthresh, 3/4 cwnd)}) so that slow start climbs back
     * in a few round trips. A controller with a clock of its own (CUBIC's t) stops it over the idle period in
     * either case (RFC 9438 (5.8)).
     */
    void onSendAfterIdle(boolean restart, long nowNanos);

    /** Sender MSS changed (rare; path MTU). */
    void mss(int mss);

    /** Short name for {@code nicstack conns}: "newreno", "cubic". */
    String name();
}
