package io.nicstack.stack.tcp;

import io.nicstack.stack.tcp.cc.CongestionControls;

/** Per-connection options, copied into each connection at open (from the stack's defaults, the caller's or the listener's). */
public final class TcpSettings
{
    /** Disable Nagle's algorithm (RFC 9293 §3.7.4, MUST-17: an application can turn it off). */
    public boolean noDelay;
    /** Send buffer of the stack's own ring: a power of two up to {@link #MAX_BUFFER_BYTES} ({@link #check}). */
    public int sendBufferBytes = 256 * 1024;
    /** Receive buffer of the stack's own ring, whose free space is the window: a power of two, as the send buffer. */
    public int receiveBufferBytes = 256 * 1024;
    public boolean windowScaling = true;
    public boolean timestamps = true;
    public boolean sack = true;
    /** RFC 9293 §3.8.6.3 (MUST-40 / SHLD-18): delayed ACK no longer than 500 ms; the issue says at most 200 ms. */
    public long delayedAckNanos = 40_000_000L;
    public long minRtoNanos = 200_000_000L;
    public long maxRtoNanos = 120_000_000_000L;
    /** TIME-WAIT lasts 2 × MSL (RFC 9293 §3.4.2; MSL = 30 s here, as Linux uses 60 s in all). */
    public long timeWaitNanos = 60_000_000_000L;
    /**
     * How long a connection the application closed waits in FIN-WAIT-2 for the peer's FIN before it is dropped
     * silently (Linux's net.ipv4.tcp_fin_timeout, 60 s). Closed, it can take no more data, and a peer that never
     * sends its FIN would hold it for ever. A half-closed connection ({@code shutdownOutput}) whose application still
     * reads waits for the FIN as long as it takes (RFC 9293 §3.6).
     */
    public long finWait2TimeoutNanos = 60_000_000_000L;
    /** R1 (RFC 9293 §3.8.3, MUST-20): retransmissions after which IP gets negative advice and the handler is told. */
    public int r1Retransmits = 3;
    /** R2 for data: retransmissions before the connection is given up (≥ 100 s with backoff). */
    public int r2Retransmits = 15;
    /**
     * R2 for SYN: at least 3 minutes (MUST-23). With the 1 s initial RTO doubling up to {@link #maxRtoNanos}, the 8
     * retransmissions go at 1, 3, 7, 15, 31, 63, 127 and 247 s, and the attempt is given up one RTO after the last: 367 s.
     */
    public int synRetransmits = 8;
    /**
     * Retransmissions of a passive open's SYN,ACK before the half-open connection is given up: 5, as Linux's
     * net.ipv4.tcp_synack_retries, so about 63 s (1+2+4+8+16+32). A half-open connection holds buffers and a place in
     * its listener's connection limit for a peer that has proven nothing: spoofed SYNs must not hold them for the
     * 6 minutes of {@link #synRetransmits}, whose 3-minute floor (MUST-23) is for our own SYN (RFC 4987 §3.3, reducing the SYN-RECEIVED timer).
     */
    public int synAckRetransmits = 5;
    /**
     * Zero-window probes a connection the application closed sends in one zero-window period before it is reset,
     * answered or not (Linux's net.ipv4.tcp_orphan_retries, whose default 0 means 8). Nobody will write to it again,
     * and a peer that answers every probe with a zero window would hold it for ever (sockstress); the count starts
     * again when the window opens, so a slow reader that goes on is served to the end. While the application owns the
     * connection the window may stay closed indefinitely (RFC 9293 §3.8.6.1).
     */
    public int orphanRetries = 8;
    /** Keep-alives are off by default (RFC 9293 §3.8.4, MUST-25). */
    public boolean keepAlive;
    /** MUST-28: the idle interval must default to no less than two hours. */
    public long keepAliveIdleNanos = 7_200_000_000_000L;
    public long keepAliveIntervalNanos = 75_000_000_000L;
    public int keepAliveProbes = 9;
    public String congestionControl = "cubic";
    /**
     * RFC 5961 §7: at most one challenge ACK per this interval answers RSTs and SYNs (and other segments without data)
     * on one connection. Linux's net.ipv4.tcp_invalid_ratelimit, 500 ms.
     */
    public long challengeAckIntervalNanos = 500_000_000L;
    /**
     * RFC 5681 §4.1 (SHOULD): after sending no new data for longer than the RTO, start again from the restart window
     * instead of bursting the old cwnd into a path it no longer knows. Linux's net.ipv4.tcp_slow_start_after_idle.
     */
    public boolean slowStartAfterIdle = true;
    /**
     * RFC 8985 §7 tail loss probe (with SACK only): when no ACK comes for about two round trips after the last
     * segment, send one probe (new data, or the last segment again) whose ACK reveals a lost tail, instead of waiting
     * for the retransmission timeout. Linux's net.ipv4.tcp_early_retrans (on by default).
     */
    public boolean tailLossProbe = true;
    /**
     * RFC 9293 §3.9.1.1 (MUST-48): the DiffServ code point (RFC 2474, 0..63) of every segment the connection sends, as
     * IP_TOS sets it for a Linux socket; 0 is the default class, 46 Expedited Forwarding (RFC 3246). The two ECN bits
     * stay 0: this stack does not negotiate ECN.
     */
    public int dscp;

    /** Largest buffer: stream distances within a ring must fit an {@code int} window (RFC 7323 §2.3: 2^30). */
    public static final int MAX_BUFFER_BYTES = 1 << 30;

    /** RFC 9293 §3.8.6.3 (MUST-40): an ACK is delayed less than this. */
    public static final long MAX_DELAYED_ACK_NANOS = 500_000_000L;

    /**
     * Refuse settings the stack cannot run with, so they fail at listen or connect, not when a SYN arrives: buffer
     * sizes its rings cannot have (they are indexed by mask: a power of two from 1 to {@link #MAX_BUFFER_BYTES}), an
     * unknown congestion control, a delayed ACK outside [0, {@link #MAX_DELAYED_ACK_NANOS}), an RTO floor of 0 (a
     * retransmission on every poll) or above the ceiling, a negative timeout or retry count, and keep-alive times of 0
     * or no probe. Listen and connect call it.
     *
     * @return this.
     * @throws IllegalArgumentException naming the first field out of its range, with its value.
     */
    public TcpSettings check()
    {
        checkBufferSize("sendBufferBytes", sendBufferBytes);
        checkBufferSize("receiveBufferBytes", receiveBufferBytes);
        if (!CongestionControls.isKnown(congestionControl))
        {
            throw new IllegalArgumentException("tcp congestionControl must be " + CongestionControls.CUBIC + " or " +
                CongestionControls.NEWRENO + ": " + congestionControl);
        }
        checkRange("delayedAckNanos", delayedAckNanos, 0, MAX_DELAYED_ACK_NANOS - 1);
        checkRange("minRtoNanos", minRtoNanos, 1, Long.MAX_VALUE);
        checkRange("maxRtoNanos", maxRtoNanos, minRtoNanos, Long.MAX_VALUE);
        checkRange("timeWaitNanos", timeWaitNanos, 0, Long.MAX_VALUE);
        checkRange("finWait2TimeoutNanos", finWait2TimeoutNanos, 0, Long.MAX_VALUE);
        checkRange("r1Retransmits", r1Retransmits, 0, Integer.MAX_VALUE);
        checkRange("r2Retransmits", r2Retransmits, 0, Integer.MAX_VALUE);
        checkRange("synRetransmits", synRetransmits, 0, Integer.MAX_VALUE);
        checkRange("synAckRetransmits", synAckRetransmits, 0, Integer.MAX_VALUE);
        checkRange("orphanRetries", orphanRetries, 0, Integer.MAX_VALUE);
        checkRange("keepAliveIdleNanos", keepAliveIdleNanos, 1, Long.MAX_VALUE);
        checkRange("keepAliveIntervalNanos", keepAliveIntervalNanos, 1, Long.MAX_VALUE);
        checkRange("keepAliveProbes", keepAliveProbes, 1, Integer.MAX_VALUE);
        checkRange("challengeAckIntervalNanos", challengeAckIntervalNanos, 0, Long.MAX_VALUE);
        checkRange("dscp", dscp, 0, 63);
        return this;
    }

    private static void checkBufferSize(final String field, final int bytes)
    {
        if (bytes < 1 || bytes > MAX_BUFFER_BYTES || Integer.bitCount(bytes) != 1)
        {
            throw new IllegalArgumentException(
                "tcp " + field + " must be a power of two from 1 to " + MAX_BUFFER_BYTES + ": " + bytes);
        }
    }

    private static void checkRange(final String field, final long value, final long min, final long max)
    {
        if (value < min || value > max)
        {
            throw new IllegalArgumentException("tcp " + field + " must be " +
                (max == Long.MAX_VALUE || max == Integer.MAX_VALUE ? "at least " + min : "from " + min + " to " + max) +
                ": " + value);
        }
    }

    public TcpSettings copy()
    {
        final TcpSettings c = new TcpSettings();
        c.noDelay = noDelay;
        c.sendBufferBytes = sendBufferBytes;
        c.receiveBufferBytes = receiveBufferBytes;
        c.windowScaling = windowScaling;
        c.timestamps = timestamps;
        c.sack = sack;
        c.delayedAckNanos = delayedAckNanos;
        c.minRtoNanos = minRtoNanos;
        c.maxRtoNanos = maxRtoNanos;
        c.timeWaitNanos = timeWaitNanos;
        c.finWait2TimeoutNanos = finWait2TimeoutNanos;
        c.r1Retransmits = r1Retransmits;
        c.r2Retransmits = r2Retransmits;
        c.synRetransmits = synRetransmits;
        c.synAckRetransmits = synAckRetransmits;
        c.orphanRetries = orphanRetries;
        c.keepAlive = keepAlive;
        c.keepAliveIdleNanos = keepAliveIdleNanos;
        c.keepAliveIntervalNanos = keepAliveIntervalNanos;
        c.keepAliveProbes = keepAliveProbes;
        c.congestionControl = congestionControl;
        c.challengeAckIntervalNanos = challengeAckIntervalNanos;
        c.slowStartAfterIdle = slowStartAfterIdle;
        c.tailLossProbe = tailLossProbe;
        c.dscp = dscp;
        return c;
    }
}
