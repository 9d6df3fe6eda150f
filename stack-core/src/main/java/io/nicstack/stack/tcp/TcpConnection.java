package io.nicstack.stack.tcp;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.storage.DetachedBuffers;
import io.nicstack.stack.storage.ReceiveBuffer;
import io.nicstack.stack.storage.SendBuffer;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.time.Timers;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.Seq;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.TcpRepr;

/**
 * One TCP connection: the transmission control block of RFC 9293 §3.3.1 and its event processing
 * (§3.10), with MSS, window scaling, timestamps/PAWS (RFC 7323), SACK (RFC 2018/2883/6675),
 * NewReno (RFC 6582), RTO (RFC 6298), RFC 5961 hardening and pluggable congestion control.
 *
 * <p>Sequence variables are ints compared only through {@link Seq}. Payload lives in a
 * {@link SendBuffer} and a {@link ReceiveBuffer} addressed by 64-bit stream offsets; stream offset 0
 * is sequence number {@code iss + 1} (send) or {@code irs + 1} (receive).
 *
 * <p>Single threaded: everything runs on the event loop; application calls included.
 */
public final class TcpConnection
{
    /** Why a connection closed ({@link TcpHandler#onClosed}). */
    public static final int CLOSE_NORMAL = 0;
    public static final int CLOSE_RESET = 1;
    public static final int CLOSE_REFUSED = 2;
    public static final int CLOSE_TIMED_OUT = 3;
    public static final int CLOSE_ABORTED = 4;

    /** The MSS assumed of a peer that sends no MSS option (RFC 9293 §3.7.1, MUST-15). */
    static final int DEFAULT_MSS = 536;
    /** The smallest segment taken as a full-sized one on a small-MTU path (Linux's TCP_MIN_MSS). */
    private static final int MIN_FULL_SEGMENT = 88;
    /** Smallest path MTU believed from an ICMP error (Linux's net.ipv4.route.min_pmtu). */
    static final int MIN_PATH_MTU = 552;
    /**
     * How long a path MTU lowered by ICMP is believed before full-sized segments are tried again (RFC 1191 §6.3: at
     * least 5 minutes, 10 recommended; Linux's route MTU expiry is 10 minutes too).
     */
    static final long PATH_MTU_RAISE_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(10);

    private static final long NONE = 0;

    final Tcp tcp;
    final long key;
    final int localIp;
    final int localPort;
    final int remoteIp;
    final int remotePort;
    /** The IPv4 identification key of the peer (Identifications.key), kept: no hash per segment however many peers. */
    final long identificationKey;
    final TcpSettings settings;
    /** Replaced by a {@link DetachedBuffers} when the buffers are given back early (TIME-WAIT). */
    SendBuffer sendBuffer;
    ReceiveBuffer receiveBuffer;
    final CongestionControl cc;
    final RttEstimator rtt;
    /** Where the buffers came from when not the stack's own rings (released to it in Tcp.remove), else null. */
    BufferProvider bufferProvider;
    BufferProvider.ConnectionBuffers buffers;
    /** True once the buffers went back (to their provider, or to the stack's budget) before the connection ended (TIME-WAIT). */
    boolean buffersDetached;
    /** True while this connection counts against {@link #listener}'s connection limit. */
    boolean countedInListener;
    /** In TIME-WAIT and counted against {@link Tcp#maxTimeWait}. */
    boolean countedInTimeWait;
    TcpListener listener;
    TcpHandler handler;
    TcpState state = TcpState.CLOSED;
    boolean passive;
    /** Counted in its listener's SYN backlog until established or gone. */
    boolean inSynBacklog;
    /** Returned by accept() or connect(): the application may hold it, so its buffers are never reused. */
    boolean handedToApplication;

    // RFC 9293 §3.3.1 send sequence variables.
    int iss;
    int sndUna;
    int sndNxt;
    /** Highest sequence number sent plus one (sndNxt is rewound by a retransmission timeout). */
    int sndMax;
    /**
     * SND.MAX - 1 is a zero-window probe's byte (RFC 9293 §3.8.6.1), sent past the window and not yet as data. It is
     * not data in flight: Linux probes with an old sequence number and no byte at all (tcp_xmit_probe_skb). See
     * {@link #sndMaxOfData}.
     */
    private boolean probeByteOutstanding;
    /** The end of the last new segment sent shorter than a full one, if one was ({@link #smallSegmentUnacknowledged}). */
    private int smallSentEnd;
    private boolean smallSent;
    long sndWnd;
    long maxSndWnd;
    int sndWl1;
    int sndWl2;
    /** Payload bytes in a full-sized segment: effective send MSS less the options every segment carries. */
    int sndMss;
    /** min(peer MSS, our MMS_S - 20): the payload of a segment without options (RFC 9293 §3.7.1). */
    int mssBase;
    /** {@link #mssBase} as the handshake set it, before path MTU discovery lowered it. */
    private int mssBaseNegotiated;
    /** When a lowered path MTU is to be tried at its old size again; NONE when it was not lowered. */
    private long pathMtuRaiseAt = NONE;
    /** A link on the path is smaller than {@link #MIN_PATH_MTU}: segments cut to it go without DF, to be fragmented. */
    private boolean pathMtuLocked;
    int sndWscale;
    boolean finRequested;

    // Receive sequence variables.
    int irs;
    int rcvNxt;
    /** Right edge of the window last advertised (RFC 9293 §3.8.6.2.2: never moved left). */
    int rcvAdvertisedEdge;
    int rcvWscale;
    int rcvMss;
    boolean peerFinPending;
    int peerFinSeq;
    boolean peerFinReceived;

    // RFC 7323.
    boolean tsEnabled;
    int tsRecent;
    /** When {@link #tsRecent} was last set: RFC 7323 §5.5 invalidates it after 24 days. */
    private long tsRecentNanos;
    int lastAckSent;
    /** Added to the millisecond clock for our TSvals: a keyed hash of the 4-tuple ({@link Tcp#timestampOffset}). */
    int tsOffset;

    // RFC 2018 / 2883 / 6675.
    boolean sackEnabled;
    // Allocated on the first SACK block: most connections never see loss, and idle ones must stay small.
    private int[] sackedStart = NO_SCOREBOARD;
    private int[] sackedEnd = NO_SCOREBOARD;
    private static final int[] NO_SCOREBOARD = new int[0];
    private int sackedCount;
    /**
     * RFC 6675 RescueRxt, as its last octet: no rescue retransmission until the cumulative ACK is past it (HighACK >
     * RescueRxt). Recovery sets it to the end of its first retransmission (§5 (4.3)), a rescue to the recovery point.
     */
    private int rescueRxt;
    /**
     * Lost-retransmission detection: SND.UNA's segment was retransmitted (or found already retransmitted) when SND.NXT
     * was {@link #unaRetransmitMark}; valid while {@link #unaRetransmitSeq} is SND.UNA. Since then
     * {@link #unaRetransmitSackedAfter} bytes sent after it have been SACKed: newly SACKed bytes from the mark up to
     * SND.NXT as it stood when their ACK came, all sent after the mark (a block above SND.NXT, or one SACKed before,
     * was not: SACK options carry only 3-4 blocks, so some arrive late).
     */
    private int unaRetransmitSeq;
    private int unaRetransmitMark;
    private long unaRetransmitSackedAfter;
    /** When SND.UNA's segment was (last known to be) retransmitted; and when, unanswered, it counts as lost again. */
    private long unaRetransmitNanos;
    private long lostRetransmitDeadline;
    private boolean dsackPending;
    private int dsackStart;
    private int dsackEnd;
    private static final int MAX_SCOREBOARD = 32;
    /** RFC 5681 §3.2 / RFC 6675 §2 DupThresh: duplicate ACKs (or SACKed segments) that indicate a loss. */
    private static final int DUP_THRESH = 3;
    /** The most {@link #dupThresh} becomes, as Linux's tcp_max_reordering (300). */
    static final int MAX_DUP_THRESH = 300;
    /**
     * This connection's DupThresh: {@link #DUP_THRESH}, raised by the reordering it has seen ({@link #noteReordering}),
     * up to {@link #MAX_DUP_THRESH} (Linux's tp->reordering; RFC 6675 §2 leaves DupThresh open to such adjustment,
     * RFC 4653 and RFC 8985 §6.2 adapt to reordering likewise). Only SACK information raises it; a timeout outside a
     * recovery with at least {@link #DUP_THRESH} segments SACKed lowers it back to {@link #DUP_THRESH}, the reordering
     * over-estimated (as Linux's tcp_enter_loss; see onRetransmitTimeout). Above {@link #MAX_SCOREBOARD} its block
     * rule never holds ({@link #atLeastSegments}).
     */
    int dupThresh = DUP_THRESH;

    // Undo of a spurious fast recovery (RFC 2883 §4, RFC 3708 §3.2 and §4, as Linux's undo_marker and undo_retrans).
    /** A reduction of cwnd by a fast recovery may yet be undone: it is the last, and no timeout has come since. */
    private boolean undoValid;
    /** SND.UNA when the recovery began: its first retransmission, and the low edge of what may be D-SACKed. */
    private int undoMarker;
    /** The end of the highest retransmission since {@link #undoMarker}: the high edge of what may be D-SACKed. */
    private int undoRetransEnd;
    /** Retransmitted segments of the episode not yet reported received twice by a D-SACK (Linux's undo_retrans). */
    private int undoRetrans;
    /**
     * The ranges this episode sent again (one per retransmission, and those still in flight when it began), each less
     * what a D-SACK has counted down of it; only a D-SACK inside one counts (Linux counts only TCPCB_RETRANS segments):
     * a D-SACK of a duplicate the network made of an original sent once counts nothing. Allocated with the first
     * episode; bounded as the SACK scoreboard: an episode that sends more ranges again is not undone.
     */
    private int[] undoRxtStart = NO_SCOREBOARD;
    private int[] undoRxtEnd = NO_SCOREBOARD;
    private int undoRxtCount;
    /** A D-SACK has counted {@link #undoRetrans} down (none yet: no evidence the retransmissions were spurious). */
    private boolean undoDsacked;
    /** Times the segment at {@link #undoMarker} was sent again; its D-SACK tells of reordering only if once. */
    private int undoFirstResends;
    /** Reordering distance ({@link #noteReordering}) when the cumulative ACK passed {@link #undoMarker}, 0 before. */
    private int undoFillDistance;

    // Loss recovery.
    int dupAcks;
    /** Bytes sent beyond cwnd by RFC 3042 limited transmit since the last ACK of new data: not in FlightSize at recovery. */
    private long limitedTransmitBytes;
    boolean inRecovery;
    int recoveryPoint;
    /**
     * SND.MAX when a loss probe's repair last reduced cwnd: a loss of data sent before it belongs to that congestion
     * event, so it is repaired (fast retransmit, SACK recovery) without a second reduction (RFC 8985 §7.4.2; Linux's
     * CWR state and its high_seq). Kept from falling behind SND.UNA, as the recovery point is.
     */
    private int reducedWindowEnd;
    int highRxt;
    /**
     * A timeout (or a smaller path MTU) rewound SND.NXT to SND.UNA: until the recovery point is acknowledged, what was
     * sent is sent again in order from SND.NXT, past what the peer has SACKed (RFC 6675 §5.1).
     */
    boolean goingBack;

    // RFC 8985 §7 tail loss probe (TLP).
    /** When the loss probe is due (PTO), or NONE; never later than the RTO. */
    private long ptoDeadline;
    /** TLP.end_seq: a loss probe is outstanding, covering {@link #tlpStartSeq} to {@link #tlpEndSeq} (SND.MAX after it). */
    private boolean tlpOutstanding;
    private int tlpStartSeq;
    private int tlpEndSeq;
    /** TLP.is_retrans: the outstanding probe resent the last segment (no new data could go). */
    private boolean tlpRetransmission;
    /**
     * The outstanding probe resent data sent before {@link #reducedWindowEnd}: a loss it repaired is one of the window
     * already answered. Decided when it is sent, while the end is still ahead of SND.UNA.
     */
    private boolean tlpInReducedWindow;
    /** RFC 8985 §7.3 condition 2: no further probe until an RTT sample has been taken since the last one. */
    private boolean tlpAwaitingRttSample;
    /** The lower bound of the PTO: max(2 * SRTT, 10 ms), as the TLP draft and Linux's first implementation had it. */
    private static final long MIN_PTO_NANOS = 10_000_000L;
    /** RFC 8985 §7.2 WCDelAckT: the worst-case delayed ACK a lone segment may wait for at the receiver. */
    private static final long WORST_CASE_DELAYED_ACK_NANOS = 200_000_000L;

    // RTT measurement without timestamps (Karn: never on retransmitted data).
    private boolean rttTiming;
    private int rttSeq;
    private long rttStart;
    // With timestamps: the TSval of the latest retransmission, and whether an echo has caught up with it since.
    private int retransmitTsVal;
    private boolean retransmitUnechoed;

    // Timers: deadlines in nanoseconds, NONE when unarmed; one wheel timer for the earliest.
    private long rtoDeadline;
    private long delayedAckDeadline;
    /** The zero-window probe timer (RFC 9293 §3.8.6.1). */
    private long persistDeadline;
    /**
     * The sender SWS override timer (RFC 9293 §3.8.6.2.1, MUST-38): armed when data waits for a useful window, and
     * not pushed back by what the peer sends meanwhile, or a peer that talks would hold the data for ever.
     */
    private long swsOverrideDeadline;
    private long keepAliveDeadline;
    private long timeWaitDeadline;
    /** When an orphaned connection in FIN-WAIT-2 gives up waiting for the peer's FIN ({@link #armFinWait2Timeout}). */
    private long finWait2Deadline;
    private long timerId = Timers.NO_TIMER;
    private long timerDeadline;
    /** Last believed ICMP soft error, {@code type << 8 | code}, 0 if none. */
    private int softError;
    int retransmits;
    private int persistBackoff;
    /** Zero-window probes sent since the peer last sent an acceptable ACK (RFC 9293 §3.8.6.1: it must answer them). */
    private int probesUnanswered;
    /**
     * Zero-window probes sent, answered or not, since the application closed the connection and the window last opened
     * ({@link TcpSettings#orphanRetries}).
     */
    private int orphanProbes;
    /** RFC 9293 §3.8.6.2.1: the override timeout is 0.1 to 1 s. */
    private static final long SWS_OVERRIDE_NANOS = 200_000_000L;
    /** RFC 7323 §5.5: TS.Recent older than this is no longer compared with (24 days, under 2^31 ms). */
    static final long PAWS_IDLE_NANOS = java.util.concurrent.TimeUnit.DAYS.toNanos(24);
    /** RFC 6298 §5.7: the RTO when data begins after a SYN timed out. */
    private static final long SYN_LOSS_RTO_NANOS = 3_000_000_000L;
    private boolean swsOverride;
    /** When this connection last sent a challenge ACK limited per connection ({@link #challengeAckAllowed}). */
    private long lastChallengeAckNanos;
    private boolean challengeAckSent;
    /** When a SYN,ACK last went out in reply to a segment in SYN-RECEIVED ({@link #replySynAck}), if one has. */
    private long lastSynAckReplyNanos;
    /** Our SYN,ACK has gone again in reply to a segment in SYN-RECEIVED: a retransmission {@link #retransmits} misses. */
    private boolean synAckReplied;
    /** When new data last went out (RFC 5681 §4.1's idle period; Linux's lsndtime). */
    private long lastDataSentNanos;
    /**
     * RFC 7661 and RFC 9438 §5.8 over a window, as Linux's tcp_cwnd_validate keeps them: the largest flight since the
     * window began and whether cwnd limited the sender in it (the flight filled cwnd to within one SMSS), recorded at
     * send time ({@link #recordCwndUse}); the window ends once SND.UNA reaches {@link #cwndUseEnd}. ACKs judge cwnd
     * growth by it ({@link #cwndUse}): the flight just before each ACK falls by a segment per ACK of a receive burst,
     * all processed before the output pass refills it, and would find a window the sender filled unused.
     */
    private long cwndUseFlight;
    private boolean cwndUseLimited;
    private int cwndUseEnd;
    private int keepAliveProbesSent;
    private final Timers.Handler timerHandler = this::onTimer;

    // ACK policy.
    boolean ackNow;
    /**
     * The segment being processed left or found a hole (RFC 5681 §4.2): it is acknowledged when its processing ends,
     * before the next segment of the burst, not once for the burst ({@link #ackSegmentAtOnce}).
     */
    private boolean ackAtOnce;
    private int fullSegmentsUnacked;
    /** The size of the peer's full-sized segments as learnt from them (0: none seen yet), {@link #measurePeerSegment}. */
    private int peerSegmentSize;
    /** The last smaller segment that may be full-sized on a smaller path, {@link #measurePeerSegment}. */
    private int lastShortSegmentSize;

    // Deferred application events (dispatched after the burst).
    boolean dirty;
    private boolean eventConnected;
    private boolean eventReadable;
    private boolean eventWritable;
    private boolean eventPeerClosed;
    private boolean eventDeliveryProblem;
    private boolean closedByApplication;

    // Statistics for `nicstack conns`.
    long bytesAcked;
    long bytesReceived;
    long retransmittedSegments;

    TcpConnection(
        final Tcp tcp,
        final int localIp,
        final int localPort,
        final int remoteIp,
        final int remotePort,
        final TcpSettings settings,
        final SendBuffer sendBuffer,
        final ReceiveBuffer receiveBuffer,
        final CongestionControl cc)
    {
        this.tcp = tcp;
        this.key = Tcp.key(remoteIp, remotePort, localPort);
        this.localIp = localIp;
        this.localPort = localPort;
        this.remoteIp = remoteIp;
        this.remotePort = remotePort;
        this.identificationKey = tcp.identificationKey(remoteIp);
        this.settings = settings;
        this.sendBuffer = sendBuffer;
        this.receiveBuffer = receiveBuffer;
        this.cc = cc;
        this.rtt = new RttEstimator(settings.minRtoNanos, settings.maxRtoNanos);
        this.rcvWscale = settings.windowScaling ? windowScaleFor(receiveBuffer.capacity()) : 0;
    }

    /** Smallest shift that lets the whole receive buffer be advertised (RFC 7323 §2.3, at most 14). */
    static int windowScaleFor(final int capacity)
    {
        int shift = 0;
        while (shift < TcpRepr.MAX_WINDOW_SCALE && (65535L << shift) < capacity)
        {
            shift++;
        }
        return shift;
    }

    // ------------------------------------------------------------------------------------------
    // Application API
    // ------------------------------------------------------------------------------------------

    public TcpState state()
    {
        return state;
    }

    public int remoteAddress()
    {
        return remoteIp;
    }

    public int remotePort()
    {
        return remotePort;
    }

    public int localPort()
    {
        return localPort;
    }

    public TcpSettings settings()
    {
        return settings;
    }

    public void handler(final TcpHandler handler)
    {
        this.handler = handler;
        if (handler != null && receiveBuffer.readable() > 0)
        {
            eventReadable = true;
            markDirty();
        }
        if (handler != null && peerFinReceived)
        {
            eventPeerClosed = true;
            markDirty();
        }
    }

    public TcpHandler handler()
    {
        return handler;
    }

    /** Bytes that can be read now. */
    public int readable()
    {
        return receiveBuffer.readable();
    }

    /** True once the peer's FIN has been received and every byte before it has been read. */
    public boolean isInputShutdown()
    {
        return peerFinReceived && receiveBuffer.readable() == 0;
    }

    /** Read up to {@code length} bytes; returns the count, 0 when nothing is ready, -1 at end of stream. */
    public int read(final MutableDirectBuffer destination, final int index, final int length)
    {
        final int n = receiveBuffer.read(destination, index, length);
        if (n == 0)
        {
            return peerFinReceived || state == TcpState.CLOSED ? -1 : 0;
        }
        windowOpened();
        return n;
    }

    /** The provided buffers of this connection (e.g. its pipe slot), or null when it uses the stack's own rings. */
    public BufferProvider.ConnectionBuffers buffers()
    {
        return buffers;
    }

    /**
     * Turn keep-alive on or off on this connection (RFC 9293 §3.8.4, MUST-24: the application's choice), taking effect
     * at once: turned on, the idle interval starts now, as at establishment; turned off, no probe is sent any more.
     * Setting {@code settings().keepAlive} itself only decides for a connection not yet established.
     */
    public void keepAlive(final boolean on)
    {
        settings.keepAlive = on;
        if (!on)
        {
            keepAliveDeadline = NONE;
            keepAliveProbesSent = 0;
        }
        else if (keepAliveDeadline == NONE)
        {
            peerAlive(tcp.now());
            rearm();
        }
    }

    /**
     * Someone other than {@link #write} appended to the send buffer (a host app to its TX pipe, the
     * doorbell): send what the windows allow, as {@link #write} would.
     */
    public void sendBufferAppended()
    {
        if (state.sendsData())
        {
            output(tcp.now());
        }
    }

    /**
     * Someone other than {@link #read} consumed from the receive buffer (a host app moved its RX
     * pipe head): the window opened, so tell the peer when the opening is worth it, as {@link #read} would.
     */
    public void receiveBufferConsumed()
    {
        windowOpened();
    }

    /**
     * The application consumed received bytes: tell the peer of the window when the opening is worth it (receiver SWS
     * avoidance). Not once its FIN is in: it sends nothing more, and a peer done closing answers with a RST (Linux's
     * tcp_cleanup_rbuf stops at RCV_SHUTDOWN too).
     */
    private void windowOpened()
    {
        if (state.isSynchronized() && !peerFinReceived && windowUpdateWorthSending())
        {
            ackNow = true;
            output(tcp.now());
        }
    }

    /** Space left in the send buffer. */
    public int writable()
    {
        return state.sendsData() && !finRequested ? sendBuffer.free() : 0;
    }

    /**
     * Queue up to {@code length} bytes for sending; returns how many fit (0 when the buffer is full). Bytes written
     * while the connection opens (SYN-SENT, SYN-RECEIVED) go once it is established (RFC 9293 §3.10.2).
     *
     * @throws IllegalStateException after {@link #shutdownOutput()} or {@link #close()}, or once the connection no
     *                               longer sends (the peer reset it, or it closed).
     */
    public int write(final DirectBuffer source, final int index, final int length)
    {
        if (finRequested || !(state.sendsData() || state == TcpState.SYN_SENT || state == TcpState.SYN_RECEIVED))
        {
            throw new IllegalStateException("connection not open for sending: " + state);
        }
        final int n = sendBuffer.append(source, index, length);
        if (n > 0 && state.sendsData())
        {
            output(tcp.now());
        }
        return n;
    }

    /**
     * Half-close: send FIN after the queued bytes (RFC 9293 CLOSE in ESTABLISHED/CLOSE-WAIT); the connection goes on
     * receiving until the peer's FIN. While the connection opens (SYN-SENT, SYN-RECEIVED) the FIN is queued behind the
     * bytes written so far and goes with them once the handshake completes (§3.10.4: "Queue this until all preceding
     * SENDs have been segmentized"), the connection then entering FIN-WAIT-1 at once.
     */
    public void shutdownOutput()
    {
        if (finRequested)
        {
            return;
        }
        switch (state)
        {
            case SYN_SENT:
            case SYN_RECEIVED:
            case ESTABLISHED:
                finRequested = true;
                if (state == TcpState.ESTABLISHED)
                {
                    state = TcpState.FIN_WAIT_1;
                }
                break;
            case CLOSE_WAIT:
                finRequested = true;
                state = TcpState.LAST_ACK;
                break;
            default:
                return;
        }
        output(tcp.now());
    }

    /**
     * Close: like {@link #shutdownOutput()}, and the application reads no more. Unread or later new data makes it a
     * reset (RFC 1122 4.2.2.13, as Linux does, so a peer learns its data was not consumed), except in TIME-WAIT, where
     * both ends are done and the connection keeps its 2*MSL (MUST-13; RFC 9293 §3.10.4: "connection closing").
     *
     * <p>In SYN-SENT with nothing written, the connection is deleted at once ({@link #CLOSE_NORMAL}, nothing sent; a
     * SYN,ACK that comes after is answered with a reset), as §3.10.4 has it. With bytes written, they are not lost:
     * the connection stays, and sends them and its FIN once established, as {@link #shutdownOutput()} does.
     */
    public void close()
    {
        closedByApplication = true;
        if (state == TcpState.SYN_SENT && sendBuffer.end() == sendBuffer.start())
        {
            // §3.10.4 CLOSE in SYN-SENT: "Delete the TCB"; nothing was queued, so nothing is lost.
            tcp.remove(this, CLOSE_NORMAL);
            return;
        }
        if (receiveBuffer.readable() > 0 && state.isSynchronizedBeforeTimeWait())
        {
            // Not ABORT: the peer learns its data was lost in CLOSING and LAST-ACK too, as Linux's tcp_close does.
            resetAndRemove(tcp.now());
            return;
        }
        if (state == TcpState.TIME_WAIT)
        {
            // Nobody reads the stack's own rings any more: they go back now, not after 2*MSL.
            tcp.timeWaitEntered(this);
            return;
        }
        shutdownOutput();
        if (state == TcpState.FIN_WAIT_2)
        {
            // Half-closed before (shutdownOutput): orphaned now, the FIN-WAIT-2 timeout starts here (Linux's tcp_close).
            armFinWait2Timeout(tcp.now());
            rearm();
        }
    }

    /**
     * Drop the connection (RFC 9293 §3.10.5 ABORT), with a RST to the peer in SYN-RECEIVED, ESTABLISHED, FIN-WAIT-1,
     * FIN-WAIT-2 and CLOSE-WAIT. In CLOSING, LAST-ACK and TIME-WAIT both ends have closed: the connection is dropped
     * without a reset, as the RFC says ("respond with 'ok' and delete the TCB") and Linux's tcp_need_reset has it; a
     * reset there could end the peer's TIME-WAIT early (RFC 1337). In SYN-SENT no reset either (the peer has nothing).
     */
    public void abort()
    {
        switch (state)
        {
            case CLOSED:
                return;
            case SYN_RECEIVED:
            case ESTABLISHED:
            case FIN_WAIT_1:
            case FIN_WAIT_2:
            case CLOSE_WAIT:
                resetAndRemove(tcp.now());
                return;
            default:
                tcp.remove(this, CLOSE_ABORTED);
        }
    }

    /** {@code <SEQ=SND.NXT><CTL=RST>} (RFC 9293 §3.10.5), and the connection is dropped as aborted. */
    private void resetAndRemove(final long now)
    {
        tcp.sendReset(localIp, localPort, remoteIp, remotePort, seqWithoutText(), 0, false, now);
        tcp.remove(this, CLOSE_ABORTED);
    }

    // ------------------------------------------------------------------------------------------
    // Opening
    // ------------------------------------------------------------------------------------------

    /** Active open: send SYN (RFC 9293 §3.10.1 OPEN in CLOSED). */
    void connect(final int initialSequence, final long now)
    {
        iss = initialSequence;
        sndUna = iss;
        sndNxt = iss;
        sndMax = iss;
        recoveryPoint = iss;
        reducedWindowEnd = iss;
        highRxt = iss;
        state = TcpState.SYN_SENT;
        tsOffset = tcp.timestampOffset(localPort, remoteIp, remotePort);
        rcvMss = tcp.mss();
        cc.init(DEFAULT_MSS, now);
        sendSyn(now);
    }

    /** Passive open: a SYN arrived at a listener (§3.10.7.2). */
    void acceptSyn(final TcpRepr syn, final int initialSequence, final long now)
    {
        passive = true;
        irs = syn.seq;
        rcvNxt = irs + 1;
        iss = initialSequence;
        sndUna = iss;
        sndNxt = iss;
        sndMax = iss;
        recoveryPoint = iss;
        reducedWindowEnd = iss;
        highRxt = iss;
        tsOffset = tcp.timestampOffset(localPort, remoteIp, remotePort);
        rcvMss = tcp.mss();
        negotiate(syn, now);
        sndWnd = syn.window;
        maxSndWnd = sndWnd;
        sndWl1 = syn.seq;
        sndWl2 = iss;
        state = TcpState.SYN_RECEIVED;
        cc.init(sndMss, now);
        sendSyn(now);
    }

    /**
     * A connection rebuilt from a valid SYN cookie (RFC 4987 §3.6): ESTABLISHED with the cookie's MSS and, when the
     * handshake carried timestamps, the options our SYN,ACK's TSval held, back in the ACK's TSecr
     * ({@link SynCookies#timestampWithOptions}, which Tcp.sendCookie wrote under the same settings).
     */
    void acceptCookie(final TcpRepr ack, final int mss, final long now)
    {
        final boolean timestamps = ack.timestampsPresent && settings.timestamps;
        final int peerWindowScale = timestamps ? SynCookies.windowScaleIn(ack.tsEcr) : -1;
        final boolean sack = timestamps && SynCookies.sackIn(ack.tsEcr);
        passive = true;
        irs = ack.seq - 1;
        rcvNxt = ack.seq;
        iss = ack.ack - 1;
        sndUna = ack.ack;
        bytesAcked = 1; // our SYN,ACK, as on a passive open with state
        sndNxt = ack.ack;
        sndMax = ack.ack;
        recoveryPoint = ack.ack;
        reducedWindowEnd = ack.ack;
        highRxt = ack.ack;
        tsOffset = tcp.timestampOffset(localPort, remoteIp, remotePort);
        rcvMss = tcp.mss();
        // The SYN,ACK offered our window scale (the constructor's rcvWscale, from the same capacity) only beside the
        // peer's: RFC 7323 §2.2, both or neither.
        if (peerWindowScale >= 0 && settings.windowScaling)
        {
            sndWscale = peerWindowScale;
        }
        else
        {
            sndWscale = 0;
            rcvWscale = 0;
        }
        sackEnabled = sack && settings.sack;
        tsEnabled = timestamps;
        if (tsEnabled)
        {
            tsRecent = ack.tsVal;
            tsRecentNanos = now;
        }
        mssBase = Math.min(mss, tcp.mss());
        mssBaseNegotiated = mssBase;
        sndMss = mssBase - (tsEnabled ? 12 : 0);
        // RFC 7323 §2.2: only a SYN's window is unscaled.
        sndWnd = (long)ack.window << sndWscale;
        maxSndWnd = sndWnd;
        sndWl1 = ack.seq;
        sndWl2 = ack.ack;
        rcvAdvertisedEdge = rcvNxt + Math.min(65535, receiveBuffer.window());
        lastAckSent = rcvNxt; // the cookie SYN,ACK acknowledged the peer's SYN (RFC 7323 §4.3 compares with it)
        state = TcpState.ESTABLISHED;
        cc.init(sndMss, now);
    }

    /**
     * Whether {@code syn}, arriving in TIME-WAIT, belongs to a newer incarnation of this connection (RFC 6191 §2): when
     * both this incarnation and the next use timestamps, its TSval is newer than TS.Recent (or equal, with a sequence
     * number above RCV.NXT); otherwise its sequence number is above RCV.NXT (RFC 9293 §3.6.1, RFC 1122 4.2.2.13). Without
     * timestamps the peer's new sequence space thus starts above all of its old one; with them, PAWS holds across
     * incarnations and tells the peer's old segments from its new ones whatever their sequence numbers.
     *
     * @param timestampsNext the next incarnation would use timestamps (the SYN offers them and the listener agrees).
     */
    boolean newerIncarnation(final TcpRepr syn, final boolean timestampsNext)
    {
        if (tsEnabled && timestampsNext)
        {
            return Seq.gt(syn.tsVal, tsRecent) || (syn.tsVal == tsRecent && Seq.gt(syn.seq, rcvNxt));
        }
        return Seq.gt(syn.seq, rcvNxt);
    }

    /**
     * The ISN for the incarnation that replaces this one in TIME-WAIT: above every sequence number this one used (RFC
     * 1122 4.2.2.13 (1)) by more than an unscaled window, as Linux's tcp_timewait_state_process chooses it, so the peer's
     * new connection takes none of our old segments that may still be in the network.
     */
    int nextIncarnationIss()
    {
        return sndMax + 65535 + 2;
    }

    /** Options from the peer's SYN (or SYN-ACK): MSS, window scale, SACK-permitted, timestamps. */
    private void negotiate(final TcpRepr syn, final long now)
    {
        // RFC 9293 §3.7.1 (MUST-15): without an MSS option assume 536.
        final int peerMss = syn.mss > 0 ? syn.mss : DEFAULT_MSS;
        if (syn.windowScale >= 0 && settings.windowScaling)
        {
            sndWscale = Math.min(syn.windowScale, TcpRepr.MAX_WINDOW_SCALE);
        }
        else
        {
            sndWscale = 0;
            rcvWscale = 0;
        }
        sackEnabled = syn.sackPermitted && settings.sack;
        tsEnabled = syn.timestampsPresent && settings.timestamps;
        if (tsEnabled)
        {
            tsRecent = syn.tsVal;
            tsRecentNanos = now;
        }
        // RFC 9293 §3.7.1: effective send MSS = min(SendMSS + 20, MMS_S) - TCP header - options carried.
        mssBase = Math.max(76, Math.min(peerMss, tcp.mss()));
        mssBaseNegotiated = mssBase;
        sndMss = mssBase - (tsEnabled ? 12 : 0);
    }

    // ------------------------------------------------------------------------------------------
    // Segment arrival (RFC 9293 §3.10.7)
    // ------------------------------------------------------------------------------------------

    /** Process one segment addressed to this connection. */
    void onSegment(final TcpRepr seg, final DirectBuffer buffer, final long now)
    {
        if (state == TcpState.ESTABLISHED && tcp.headerPrediction && predicted(seg, buffer, now))
        {
            return;
        }
        if (state == TcpState.SYN_SENT)
        {
            onSegmentInSynSent(seg, now);
            return;
        }
        // RFC 9293 §3.6.1, RFC 6191: a new SYN may end TIME-WAIT and open the next incarnation through the listener.
        if (state == TcpState.TIME_WAIT
            && (seg.flags & (TcpHeader.SYN | TcpHeader.ACK | TcpHeader.RST | TcpHeader.FIN)) == TcpHeader.SYN
            && tcp.reopenFromTimeWait(this, seg, now))
        {
            return;
        }
        final int segLen = seg.payloadLength + (seg.hasFlags(TcpHeader.SYN) ? 1 : 0) + (seg.hasFlags(TcpHeader.FIN) ? 1 : 0);

        // RFC 9293 §3.5 figure 7 (MUST-10): in a simultaneous open the peer's SYN,ACK repeats the SYN we
        // already took (SEG.SEQ = RCV.NXT - 1), so the acceptability test would drop it and both ends would
        // answer each other's SYN,ACK forever; take its ACK instead (as Linux tcp_validate_incoming does).
        if (state == TcpState.SYN_RECEIVED && !passive && seg.hasFlags(TcpHeader.SYN | TcpHeader.ACK)
            && !seg.hasFlags(TcpHeader.RST) && seg.payloadLength == 0 && seg.seq + 1 == rcvNxt && seg.ack == sndMax)
        {
            final long maxWindowBefore = maxSndWnd;
            establish(seg, now);
            // RFC 7323 §2.2: the window of a SYN,ACK is never scaled.
            sndWnd = seg.window;
            maxSndWnd = Math.max(maxWindowBefore, sndWnd);
            bytesAcked += seg.ack - sndUna; // our SYN, as onNewAck counts it on a passive open
            sndUna = seg.ack;
            if (rttTiming)
            {
                rtt.sample(now - rttStart);
                rttTiming = false;
            }
            startDataPhase(now);
            retransmits = 0;
            rtoDeadline = NONE;
            markDirty();
            return;
        }

        // RFC 7323 §5.3 PAWS: a timestamp older than TS.Recent marks an old duplicate, unless TS.Recent itself is
        // more than 24 days old (§5.5): the peer's clock may have run half its cycle since, so "older" means nothing.
        if (tsEnabled && seg.timestampsPresent && !seg.hasFlags(TcpHeader.RST) && Seq.lt(seg.tsVal, tsRecent)
            && now - tsRecentNanos < PAWS_IDLE_NANOS)
        {
            tcp.count(StackCounter.TCP_PAWS_DROPS);
            answerUnacceptable(seg, segLen, now);
            return;
        }

        // First: sequence number acceptability (four cases). With our window at zero no segment is acceptable, "but
        // special allowance should be made to accept valid ACKs, URGs, and RSTs": one with text that covers RCV.NXT
        // (the peer's zero-window probe, starting there, or a segment straddling it, old text and new) has its ACK
        // field taken before its text is dropped, as Linux's tcp_sequence accepts it (SEG.SEQ =< RCV.NXT + 0).
        // Without that, a peer whose only segments are probes, or whose retransmission carries the only ACK of our
        // data, could never tell us what it received. Only at RCV.NXT may such a segment carry SYN or RST (a RST
        // there is exact); below it, one with either is unacceptable as before.
        final boolean probe = seg.payloadLength > 0 && rcvAdvertisedEdge - rcvNxt <= 0
            && (seg.seq == rcvNxt || ((seg.flags & (TcpHeader.SYN | TcpHeader.RST)) == 0
                && Seq.lt(seg.seq, rcvNxt) && Seq.gt(seg.seq + segLen, rcvNxt)));
        // A FIN without data at RCV.NXT takes no room: it is taken with the window at zero, as Linux does since some
        // stacks send it again and again, never backing off, while each is refused (tcp_data_queue). The peer learns
        // of the close only later otherwise, when the application reads. (With the window open it is acceptable.)
        final boolean bareFin = (seg.flags & (TcpHeader.FIN | TcpHeader.SYN | TcpHeader.RST)) == TcpHeader.FIN
            && seg.payloadLength == 0 && seg.seq == rcvNxt;
        if (!probe && !bareFin && !acceptable(seg.seq, segLen))
        {
            if (!seg.hasFlags(TcpHeader.RST))
            {
                final boolean duplicate = sackEnabled && seg.payloadLength > 0 && Seq.le(seg.seq + seg.payloadLength, rcvNxt);
                if (duplicate)
                {
                    // RFC 2883 §4: a duplicate segment (wholly below RCV.NXT) is reported in the first SACK block.
                    dsackPending = true;
                    dsackStart = seg.seq;
                    dsackEnd = seg.seq + seg.payloadLength;
                }
                if (state == TcpState.TIME_WAIT && countedInTimeWait && seg.hasFlags(TcpHeader.FIN)
                    && seg.seq + seg.payloadLength + 1 == rcvNxt)
                {
                    // §3.10.7.4 "eighth", TIME-WAIT: "The only thing that can arrive in this state is a retransmission
                    // of the remote FIN. Acknowledge it, and restart the 2 MSL timeout." Being old, it fails the
                    // acceptability test, so the restart is made here (as Linux's tcp_timewait_state_process does).
                    timeWaitDeadline = now + settings.timeWaitNanos;
                }
                // RFC 9293: an unacceptable segment gets <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, then is dropped.
                tcp.count(StackCounter.TCP_OUT_OF_WINDOW);
                if (ackOfOldSegmentTaken(seg, segLen) && !processAck(seg, now))
                {
                    return; // challenged (RFC 5961 §5.2), or the ACK of our FIN closed the connection
                }
                answerUnacceptable(seg, segLen, now);
                if (duplicate && ackNow)
                {
                    // Each duplicate's own D-SACK, in an ACK of its own (as Linux's tcp_send_dupack): in one ACK at the
                    // end of a burst, only the last duplicate would be reported.
                    ackSegmentAtOnce(now);
                }
            }
            return;
        }

        // Second: RST (RFC 5961 §3.2).
        if (seg.hasFlags(TcpHeader.RST))
        {
            if (seg.seq == rcvNxt)
            {
                tcp.count(StackCounter.TCP_RESETS_RECEIVED);
                if (state == TcpState.SYN_RECEIVED && passive)
                {
                    tcp.remove(this, CLOSE_RESET);
                }
                else
                {
                    tcp.remove(this, state == TcpState.SYN_RECEIVED ? CLOSE_REFUSED : CLOSE_RESET);
                }
            }
            else
            {
                tcp.challengeAck(this, seg.payloadLength == 0, now);
            }
            return;
        }

        // Fourth: SYN. In SYN-RECEIVED of a passive open (RFC 9293 §3.10.7.4) it returns the connection to LISTEN: the
        // peer started again with another ISN, and its next SYN opens a fresh connection. Otherwise the state is
        // synchronized (RFC 5961 §4.2): challenge ACK, whatever the sequence number.
        if (seg.hasFlags(TcpHeader.SYN))
        {
            if (state == TcpState.SYN_RECEIVED && passive)
            {
                tcp.remove(this, CLOSE_RESET);
            }
            else
            {
                tcp.challengeAck(this, true, now);
            }
            return;
        }

        // Fifth: ACK.
        if (!seg.hasFlags(TcpHeader.ACK))
        {
            return;
        }
        if (state == TcpState.SYN_RECEIVED)
        {
            if (Seq.lt(sndUna, seg.ack) && Seq.le(seg.ack, sndMax))
            {
                if (listener != null && listener.acceptQueueFull())
                {
                    // No room to queue it for accept (connections from SYN cookies may have filled the queue while this
                    // one was half-open): the ACK is dropped and the connection stays SYN-RECEIVED, as Linux does with
                    // tcp_abort_on_overflow off. The SYN,ACK's retransmission, or the peer's next segment, tries again.
                    tcp.count(StackCounter.TCP_LISTEN_ACK_DROPPED);
                    return;
                }
                establish(seg, now);
                if (state == TcpState.CLOSED)
                {
                    return; // its listener could not take it (Tcp.established) and reset it
                }
                startDataPhase(now);
            }
            else
            {
                tcp.sendReset(localIp, localPort, remoteIp, remotePort, seg.ack, 0, false, now);
                return;
            }
        }
        if (!processAck(seg, now))
        {
            return;
        }
        peerAlive(now);

        updateTsRecent(seg, now);
        if (probe)
        {
            // Its text, and a FIN after it, lie beyond the window: dropped and answered, as an unacceptable segment.
            // Text below RCV.NXT is a duplicate, reported in a D-SACK block (RFC 2883 §4; Linux's tcp_data_queue
            // notes it before it drops the tail for the closed window).
            if (sackEnabled && Seq.lt(seg.seq, rcvNxt))
            {
                dsackPending = true;
                dsackStart = seg.seq;
                dsackEnd = rcvNxt;
            }
            tcp.count(StackCounter.TCP_OUT_OF_WINDOW);
            ackNow = true;
            markDirty();
            return;
        }

        // The FIN's place is noted before the text is taken, so that no text past it is taken, from this segment or
        // any other (the FIN itself is processed "eighth", once RCV.NXT reaches it).
        if (seg.hasFlags(TcpHeader.FIN))
        {
            notePeerFin(seg.seq + seg.payloadLength);
        }

        // Seventh: segment text.
        if (seg.payloadLength > 0)
        {
            // §3.10.7.4 "eighth": a FIN ends the stream, so octets past one already seen are not data.
            final int length = peerFinPending && Seq.gt(seg.seq + seg.payloadLength, peerFinSeq) ?
                Math.max(0, peerFinSeq - seg.seq) : seg.payloadLength;
            if (length == 0)
            {
                ackNow = true;
            }
            else if (state.receivesData() && !closedByApplication)
            {
                receive(seg, buffer, length, now);
            }
            else if (closedByApplication && state.receivesData() && Seq.gt(seg.seq + length, rcvNxt))
            {
                // New data for an application that closed: reset (RFC 2525 §2.17, as Linux). Only new data: a peer
                // that resends text we already took, with its FIN joined on, is closing as we are.
                tcp.sendReset(localIp, localPort, remoteIp, remotePort, seqWithoutText(), 0, false, now);
                tcp.remove(this, CLOSE_ABORTED);
                return;
            }
            else
            {
                ackNow = true;
            }
        }

        // Eighth: FIN, when every octet before it is in (its place was noted above).
        if (seg.hasFlags(TcpHeader.FIN))
        {
            ackNow = true;
        }
        if (peerFinPending && rcvNxt == peerFinSeq)
        {
            onFin(now);
        }
        if (ackAtOnce)
        {
            ackSegmentAtOnce(now);
        }
        markDirty();
    }

    /**
     * Whether the ACK field of an unacceptable segment is processed before the segment is answered and dropped: a
     * wholly old one (the peer's retransmission of text we hold) that ends at or after Last.ACK.sent, with ACK and
     * without SYN or RST, once synchronized (not SYN-RECEIVED, whose ACK establishes; not TIME-WAIT, where no ACK
     * matters). RFC 9293 §3.10.7.4 drops it unread; Linux's tcp_sequence accepts a segment whose end is not before
     * rcv_wup, and BSD's tcp_input keeps "processing for RST or ACK". A peer's retransmission timeout or loss probe
     * cancels its pending delayed ACK, so such a segment may be the only one to acknowledge our data: unread, our data
     * would go again at our RTO, a spurious timeout. Its window is not taken (SND.WL1 is past its sequence number).
     */
    private boolean ackOfOldSegmentTaken(final TcpRepr seg, final int segLen)
    {
        return (seg.flags & (TcpHeader.ACK | TcpHeader.SYN | TcpHeader.RST)) == TcpHeader.ACK
            && state.isSynchronizedBeforeTimeWait()
            && Seq.le(seg.seq + segLen, rcvNxt) && Seq.ge(seg.seq + segLen, lastAckSent);
    }

    /**
     * The ACK of one segment that left or found a hole, sent before the next segment of the burst is processed, with the
     * SACK blocks (and D-SACK) as they stand after it. It settles what the segment owed ({@link #ackNow}, the delayed
     * ACK): the burst ends with another ACK only if a later segment asks for one.
     */
    private void ackSegmentAtOnce(final long now)
    {
        ackAtOnce = false;
        sendSegment(TcpHeader.ACK, seqWithoutText(), 0, 0, now);
    }

    /**
     * Note where the peer's FIN ends its stream, as soon as the FIN is in the window, in order or not: from then on no
     * text past it is taken, and out-of-order text held past it is dropped. Were text past it taken, RCV.NXT would run
     * over the FIN's sequence number when the hole before it filled, the FIN would never be processed (its
     * retransmission then being old), and octets after the end of the stream would reach the application.
     *
     * <p>Of two FINs at different places (a peer contradicting itself) the lower one stands, whatever the order they
     * arrive in, as in Linux: the first FIN reached in sequence order is taken and tcp_fin purges the out-of-order
     * queue behind it. A FIN is noted even when its segment's text was refused (every out-of-order range in use): it
     * is processed only once RCV.NXT reaches it, over every octet before it, so never without that text.
     */
    private void notePeerFin(final int finSeq)
    {
        if (!peerFinReceived && Seq.ge(finSeq, rcvNxt) && Seq.lt(finSeq, rcvAdvertisedEdge + 1)
            && (!peerFinPending || Seq.lt(finSeq, peerFinSeq)))
        {
            peerFinPending = true;
            peerFinSeq = finSeq;
            receiveBuffer.discardOutOfOrderFrom(offsetOfReceive(finSeq));
        }
    }

    /**
     * Header prediction (Van Jacobson's, as in Linux's {@code tcp_rcv_established} fast path), in ESTABLISHED only.
     * A segment that has only ACK (and perhaps PSH) set, starts at RCV.NXT, carries no SACK blocks and the window we
     * already hold, passes PAWS with a timestamp when timestamps are on, acknowledges something in (SND.UNA, SND.MAX]
     * (or, with payload, nothing new), and whose payload lies wholly in the advertised window while no out-of-order
     * data is held, outside loss recovery: for such a segment the outcome of every check of §3.10.7.4 is known (it is
     * acceptable, no RST, no SYN, a valid ACK that is not a duplicate, no FIN). It gets exactly the updates the general
     * path makes, in the same order, and none of the checks. Anything else takes the general path.
     * {@code TcpHeaderPredictionTest} holds the two paths to the same behaviour.
     *
     * @return false, having changed nothing, when the segment is not the predicted kind.
     */
    private boolean predicted(final TcpRepr seg, final DirectBuffer buffer, final long now)
    {
        final int seq = seg.seq;
        final int ack = seg.ack;
        final int length = seg.payloadLength;
        if ((seg.flags & ~TcpHeader.PSH) != TcpHeader.ACK || seq != rcvNxt || seg.sackBlockCount != 0 || inRecovery
            || peerFinPending || ((long)seg.window << sndWscale) != sndWnd || Seq.lt(ack, sndUna) || Seq.gt(ack, sndMax))
        {
            return false;
        }
        // RFC 7323 §5.3: PAWS must pass; a segment without timestamps on a connection that has them goes the long way.
        if (tsEnabled && (!seg.timestampsPresent || Seq.lt(seg.tsVal, tsRecent)))
        {
            return false;
        }
        if (length == 0)
        {
            if (ack == sndUna)
            {
                // Possibly a duplicate ACK (RFC 5681 §2): the general path counts it.
                return false;
            }
        }
        else if (closedByApplication || length > rcvAdvertisedEdge - rcvNxt || receiveBuffer.outOfOrderRanges() != 0)
        {
            return false;
        }

        peerAlive(now);
        // §3.10.7.4 "fifth", as processAck: a new ACK, then the window update (the window itself is unchanged).
        if (ack != sndUna)
        {
            final long flightBefore = flight();
            onNewAck(seg, ack, flightBefore, now);
            if (tlpOutstanding)
            {
                lossProbeAcked(seg, ack, false, flightBefore, now);
            }
        }
        updateSendWindow(seg, ack);
        updateTsRecent(seg, now);
        // "Seventh": segment text.
        if (length > 0)
        {
            receive(seg, buffer, length, now);
        }
        markDirty();
        tcp.predictedInBurst++;
        return true;
    }

    /**
     * An ICMP error quoting a segment of this connection (RFC 9293 §3.9.2, RFC 1122 §4.2.3.9, RFC 5461, RFC 5927).
     *
     * <ul>
     * <li>Only an error that quotes a sequence number in flight ({@code SND.UNA <= seq < SND.MAX}; the ISS before
     *     anything is acknowledged) is believed: others are forged or stale (RFC 5927 §4.1).</li>
     * <li>Source quench is discarded (MUST-55).</li>
     * <li>Protocol or port unreachable (destination unreachable codes 2 and 3) are hard errors: they end a connection
     *     that is still being opened, as refused (SHLD-26). In a synchronized state they count as soft errors, as RFC
     *     5461 §4 recommends (an attacker's or a transient router's error must not kill a working connection).</li>
     * <li>Everything else (net/host unreachable, fragmentation needed, source route failed, time exceeded, parameter
     *     problem) is a soft error: the connection goes on (MUST-56) and the error is kept for the application
     *     ({@link #softError()}, SHLD-25).</li>
     * <li>Fragmentation needed (code 4) is path MTU discovery (RFC 1191): every segment we send has DF set, so a
     *     smaller link on the path drops it and says so. The send MSS shrinks to the reported next-hop MTU (at least
     *     {@link #MIN_PATH_MTU}, as Linux's min_pmtu, so a forged error cannot make segments tiny; when the router does
     *     not report one, ICMP gives RFC 1191's plateau estimate) and what is in flight is sent again in smaller segments at once, without a
     *     congestion response (RFC 1191 §6.5: a segment too big is not congestion). A report below the floor also
     *     clears DF on what is sent from then on, so the router with the small link fragments it, and what is in
     *     flight goes again so at once, even when the MSS stays.</li>
     * </ul>
     */
    void onIcmpError(final int type, final int code, final int nextHopMtu, final int seq, final long now)
    {
        final boolean inFlight = Seq.le(sndUna, seq) && Seq.lt(seq, sndMax);
        if (!inFlight || type == IcmpHeader.TYPE_SOURCE_QUENCH)
        {
            tcp.count(StackCounter.TCP_ICMP_IGNORED);
            return;
        }
        tcp.count(StackCounter.TCP_ICMP_ERRORS);
        final boolean unreachable = type == IcmpHeader.TYPE_DESTINATION_UNREACHABLE;
        final boolean hard = unreachable
            && (code == IcmpHeader.CODE_PROTOCOL_UNREACHABLE || code == IcmpHeader.CODE_PORT_UNREACHABLE);
        if (hard && !state.isSynchronized())
        {
            tcp.remove(this, CLOSE_REFUSED);
            return;
        }
        softError = type << 8 | code;
        if (unreachable && code == IcmpHeader.CODE_FRAGMENTATION_NEEDED)
        {
            pathMtuReduced(nextHopMtu, now);
        }
    }

    /** {@link #softError()} for a first hop that never answered ARP: destination unreachable, host unreachable. */
    static final int SOFT_ERROR_HOST_UNREACHABLE = IcmpHeader.TYPE_DESTINATION_UNREACHABLE << 8 | IcmpHeader.CODE_HOST_UNREACHABLE;

    /**
     * Our segment {@code seq} was discarded unsent: ARP gave up on the first hop (its address went unanswered for
     * about 3 s, StackConfig's ARP retries). A segment no longer in flight tells nothing (an ACK, or one acknowledged
     * since).
     *
     * <ul>
     * <li>An active open still opening (SYN-SENT, or SYN-RECEIVED of a simultaneous open) ends at once, as timed out
     *     with the soft error host unreachable, which the pipes report as UNREACHABLE: Linux's tcp_v4_err aborts a
     *     SYN-SENT socket with EHOSTUNREACH on the host unreachable that arp_error_report delivers to it. A connect to
     *     an on-link address nobody holds fails in about 3 s, not after R2 for a SYN (MUST-23's 3 minutes, 367 s
     *     here). RFC 1122 §4.2.3.9 (MUST-56) forbids aborting on a received host unreachable, which a router far away
     *     may send for a transient condition, or an attacker forge; this one was seen by this host on its own link,
     *     and the application that would retry can do so (the next attempt asks ARP again). A deviation, listed in
     *     docs/rfc9293-musts.md at MUST-23 and MUST-56.</li>
     * <li>A passive open's SYN,ACK, or any synchronized connection, keeps the RFC's behaviour: it retransmits to its
     *     limit (R2, MUST-20), ARP asking again for each, and the host unreachable is kept as a soft error (SHLD-25), so
     *     that a timeout is reported as UNREACHABLE rather than TIMED_OUT, as Linux's sk_err_soft is.</li>
     * </ul>
     */
    void onLinkFailure(final int seq, final long now)
    {
        if (!(Seq.le(sndUna, seq) && Seq.lt(seq, sndMax)))
        {
            return;
        }
        tcp.count(StackCounter.TCP_LINK_FAILURES);
        softError = SOFT_ERROR_HOST_UNREACHABLE;
        if (!state.isSynchronized() && !passive)
        {
            tcp.remove(this, CLOSE_TIMED_OUT);
        }
    }

    /**
     * RFC 1191: a smaller path MTU; shrink the MSS, or clear DF below the floor, and resend what is in flight in
     * segments that get through.
     */
    private void pathMtuReduced(final int mtu, final long now)
    {
        final int base = Math.max(MIN_PATH_MTU, mtu) - 40; // IPv4 and TCP headers without options
        final boolean dontFragmentCleared = mtu < MIN_PATH_MTU && !pathMtuLocked;
        if (dontFragmentCleared)
        {
            // Below the floor the segments cannot fit; without DF the router with the small link fragments them
            // (Linux locks such a path MTU at min_pmtu and clears DF). What is sent from here on goes so.
            pathMtuLocked = true;
            pathMtuRaiseAt = now + PATH_MTU_RAISE_NANOS;
        }
        final boolean smaller = base < mssBase;
        if (!smaller && !dontFragmentCleared)
        {
            return; // nothing changes for what we send (a stale or repeated report): nothing is sent again for it
        }
        if (smaller)
        {
            tcp.count(StackCounter.TCP_PATH_MTU_REDUCTIONS);
            sendMssBase(base);
            pathMtuRaiseAt = now + PATH_MTU_RAISE_NANOS;
        }
        // Even at the same MSS (already at the floor, or a peer's MSS below it), what is in flight went with DF and
        // the small link dropped it: it goes again without DF now, not at the timeout.
        if (state.isSynchronized() && sndNxt != sndUna)
        {
            // Everything after SND.UNA left in segments too big for the path: the timeout's bookkeeping, without its
            // congestion response (a segment too big is not congestion, RFC 1191 §6.5). A loss recovery under way
            // ends with it: its reduction stays, its window inflation goes (RFC 6582 §3.2 step 3).
            if (inRecovery)
            {
                cc.onRecoveryExit(now);
            }
            goBackToSndUna();
            rttTiming = false; // Karn: no RTT sample from what is sent again
            // A loss probe outstanding was too big as well. The ACKs that cover it will answer the resends, so they
            // cannot say that the probe repaired a loss (RFC 8985 §7.4.2), and no congestion caused this one.
            dropLossProbe();
            markDirty();
        }
    }

    /** The payload of a segment without options ({@link #mssBase}) and with ours ({@link #sndMss}), for cc too. */
    private void sendMssBase(final int base)
    {
        mssBase = base;
        sndMss = mssBase - (tsEnabled ? 12 : 0);
        cc.mss(sndMss);
    }

    /**
     * Send again from SND.UNA (after a timeout, or a path MTU reduction): no fast retransmit until what was sent
     * before is acknowledged (RFC 6582 §3.2 step 1, RFC 6675 §5.1). The SACK scoreboard is forgotten, as the receiver
     * may have reneged (RFC 2018 §8); what the peer SACKs from now on is used in choosing what to send again
     * ({@link #skipSacked}, RFC 6675 §5.1). Keeping the scoreboard across the timeout instead, with a test for
     * reneging as Linux has, did worse in the two-stack loss runs (BENCHMARKS.md).
     */
    private void goBackToSndUna()
    {
        recoveryPoint = sndMax;
        inRecovery = false;
        goingBack = true;
        dupAcks = 0;
        limitedTransmitBytes = 0;
        sackedCount = 0;
        highRxt = sndUna;
        sndNxt = sndUna;
    }

    /**
     * RFC 1191 §6.3: a path MTU learnt from ICMP may have grown since (a route changed back). Go back to the size the
     * handshake set; if the path is still small, the next full-sized segment draws another "fragmentation needed" and
     * {@link #pathMtuReduced} lowers it again (one segment resent every {@link #PATH_MTU_RAISE_NANOS}).
     */
    private void raisePathMtu()
    {
        pathMtuRaiseAt = NONE;
        pathMtuLocked = false;
        if (mssBase < mssBaseNegotiated)
        {
            tcp.count(StackCounter.TCP_PATH_MTU_RAISES);
            sendMssBase(mssBaseNegotiated);
        }
    }

    /**
     * The last ICMP error believed for this connection that did not end it, as {@code type << 8 | code} (e.g. 0x0301
     * for host unreachable), 0 if none or if new data has been acknowledged since: what the application may want to
     * know when the connection stalls (RFC 9293 SHLD-25), or times out (RFC 1122 §4.2.3.9).
     */
    public int softError()
    {
        return softError;
    }

    /** RFC 9293 §3.10.7.3: SYN-SENT. */
    private void onSegmentInSynSent(final TcpRepr seg, final long now)
    {
        final boolean ack = seg.hasFlags(TcpHeader.ACK);
        if (ack && (Seq.le(seg.ack, iss) || Seq.gt(seg.ack, sndMax)))
        {
            if (!seg.hasFlags(TcpHeader.RST))
            {
                tcp.sendReset(localIp, localPort, remoteIp, remotePort, seg.ack, 0, false, now);
            }
            return;
        }
        if (seg.hasFlags(TcpHeader.RST))
        {
            if (ack)
            {
                tcp.count(StackCounter.TCP_RESETS_RECEIVED);
                tcp.remove(this, CLOSE_REFUSED);
            }
            return;
        }
        if (!seg.hasFlags(TcpHeader.SYN))
        {
            return;
        }
        irs = seg.seq;
        rcvNxt = irs + 1;
        // Our SYN advertised an unscaled window (RFC 7323 §2.2).
        rcvAdvertisedEdge = rcvNxt + Math.min(65535, receiveBuffer.window());
        negotiate(seg, now);
        cc.mss(sndMss);
        sndWnd = seg.window;
        maxSndWnd = sndWnd;
        sndWl1 = seg.seq;
        if (ack)
        {
            sndWl2 = seg.ack;
            bytesAcked += seg.ack - sndUna; // our SYN, as onNewAck counts it on a passive open
            sndUna = seg.ack;
            softError = 0; // our SYN got through (see onNewAck)
            if (sndNxt != sndUna && Seq.lt(sndNxt, sndUna))
            {
                sndNxt = sndUna;
            }
            if (rttTiming)
            {
                rtt.sample(now - rttStart);
                rttTiming = false;
            }
            startDataPhase(now);
            retransmits = 0;
            rtoDeadline = NONE;
            // A FIN queued in SYN-SENT (close or shutdownOutput) goes after the data queued with it (§3.10.4).
            state = finRequested ? TcpState.FIN_WAIT_1 : TcpState.ESTABLISHED;
            armKeepAlive(now);
            tcp.count(StackCounter.TCP_ESTABLISHED);
            eventConnected = true;
            ackNow = true;
            // Window in a SYN-ACK is never scaled (RFC 7323 §2.2); later ones are.
            markDirty();
        }
        else
        {
            // Simultaneous open (RFC 9293 §3.5 figure 8): SYN-RECEIVED, answer with SYN,ACK.
            state = TcpState.SYN_RECEIVED;
            sendSyn(now);
        }
    }

    private void establish(final TcpRepr seg, final long now)
    {
        state = finRequested ? TcpState.FIN_WAIT_1 : TcpState.ESTABLISHED;
        armKeepAlive(now);
        tcp.count(StackCounter.TCP_ESTABLISHED);
        sndWnd = (long)seg.window << sndWscale;
        maxSndWnd = Math.max(maxSndWnd, sndWnd);
        sndWl1 = seg.seq;
        sndWl2 = seg.ack;
        if (passive)
        {
            tcp.established(this);
        }
        else
        {
            eventConnected = true;
        }
    }

    /**
     * Congestion control and the timer for the data that follows the handshake, before its ACK clears
     * {@link #retransmits}. When our SYN or SYN,ACK had to be sent again, the path has just lost a segment:
     * <ul>
     * <li>RFC 5681 §3.1 and RFC 6928 §2 (MUST): the initial window is one segment, not ten, whether the timer sent it
     *     again or the peer's repeated SYN asked for it ({@link #replySynAck}, which leaves {@link #retransmits} as it
     *     is);</li>
     * <li>RFC 6298 §5.7 (MUST): when the timer expired, an RTO under 3 s is re-initialised to 3 s, when no RTT sample
     *     was taken (Karn's rule forbids one from a segment sent twice; Linux's tcp_init_transfer has the same
     *     condition).</li>
     * </ul>
     */
    private void startDataPhase(final long now)
    {
        cc.init(sndMss, now);
        lastDataSentNanos = now;
        if (retransmits > 0 || synAckReplied)
        {
            cc.cwnd(sndMss);
        }
        if (retransmits > 0 && rtt.srtt() < 0 && rtt.rto() < SYN_LOSS_RTO_NANOS)
        {
            rtt.reinitialize(SYN_LOSS_RTO_NANOS);
        }
    }

    /**
     * RFC 9293 §3.8.4 (MUST-24, MUST-26): the idle interval starts when the connection is established,
     * not with the first segment after it (an idle connection would otherwise never be probed).
     */
    private void armKeepAlive(final long now)
    {
        if (settings.keepAlive)
        {
            keepAliveProbesSent = 0;
            keepAliveDeadline = now + settings.keepAliveIdleNanos;
        }
    }

    /**
     * A segment passed the sequence number, PAWS, RST, SYN and ACK checks: the peer is alive, and the keep-alive idle
     * interval starts again (RFC 9293 §3.8.4). Only such a segment: one that fails them may be anyone's (a blind
     * attacker needs only the 4-tuple), and counting it would keep a dead peer's connection from ever being probed;
     * Linux likewise takes the time of the last valid ACK (rcv_tstamp, in tcp_ack) or data. Not in TIME-WAIT (a
     * peer's retransmitted FIN): probes there would end it before 2*MSL (MUST-13).
     */
    private void peerAlive(final long now)
    {
        if (settings.keepAlive && state.isSynchronizedBeforeTimeWait())
        {
            keepAliveProbesSent = 0;
            keepAliveDeadline = now + settings.keepAliveIdleNanos;
        }
    }

    /**
     * The ACK that answers a segment dropped as unacceptable (RFC 9293 §3.10.7.4 "first") or as an old duplicate (RFC
     * 7323 §5.3), limited as Linux's tcp_oow_rate_limited limits it:
     * <ul>
     * <li>a SYN in a synchronized state gets a challenge ACK, whatever its sequence number (RFC 5961 §4.2, as Linux's
     *     tcp_validate_incoming), with its limits (per connection and host-wide, {@link Tcp#challengeAck});</li>
     * <li>a segment without data (SEG.LEN 0, its FIN counted) or with SYN is answered at most once per
     *     {@link TcpSettings#challengeAckIntervalNanos} (Linux's tcp_invalid_ratelimit), the interval shared with
     *     challenge ACKs as Linux shares last_oow_ack_time: a stream of them is an ACK loop or a flood, each ACK
     *     answering one. A keep-alive probe (or a zero-window probe without data) comes far less often;</li>
     * <li>a segment with data is always answered: a peer that sends again what we hold (below RCV.NXT) needs the ACK,
     *     and its D-SACK, for its recovery, and data is no part of an ACK loop.</li>
     * </ul>
     */
    private void answerUnacceptable(final TcpRepr seg, final int segLen, final long now)
    {
        final boolean syn = seg.hasFlags(TcpHeader.SYN);
        if (syn && state.isSynchronized())
        {
            tcp.challengeAck(this, true, now);
            return;
        }
        if ((segLen == 0 || syn) && !challengeAckAllowed(now))
        {
            return;
        }
        ackNow = true;
        markDirty();
    }

    /** RFC 5961 §7, per connection: whether {@link TcpSettings#challengeAckIntervalNanos} passed since the last one. */
    boolean challengeAckAllowed(final long now)
    {
        if (challengeAckSent && now - lastChallengeAckNanos < settings.challengeAckIntervalNanos)
        {
            return false;
        }
        challengeAckSent = true;
        lastChallengeAckNanos = now;
        return true;
    }

    /** RFC 9293 §3.10.7.4 "first": the four-case acceptability test against the window we advertised. */
    private boolean acceptable(final int seq, final int segLen)
    {
        final int rcvWnd = Math.max(0, rcvAdvertisedEdge - rcvNxt);
        if (segLen == 0)
        {
            return rcvWnd == 0 ? seq == rcvNxt : Seq.le(rcvNxt, seq) && Seq.lt(seq, rcvNxt + rcvWnd);
        }
        if (rcvWnd == 0)
        {
            return false;
        }
        final int last = seq + segLen - 1;
        return (Seq.le(rcvNxt, seq) && Seq.lt(seq, rcvNxt + rcvWnd)) || (Seq.le(rcvNxt, last) && Seq.lt(last, rcvNxt + rcvWnd));
    }

    /** The ACK field (§3.10.7.4 "fifth") with RFC 5961 §5.2 validation; false when the segment is done with. */
    private boolean processAck(final TcpRepr seg, final long now)
    {
        final int ack = seg.ack;
        // RFC 5961 §5.2: acceptable only within [SND.UNA - MAX.SND.WND, SND.NXT(max)].
        if (Seq.gt(ack, sndMax) || Seq.lt(ack, sndUna - (int)Math.min(maxSndWnd, Integer.MAX_VALUE)))
        {
            tcp.count(StackCounter.TCP_ACK_INVALID);
            tcp.challengeAck(this, seg.payloadLength == 0, now);
            return false;
        }
        final long flightBefore = flight();
        final long windowBefore = sndWnd;
        final int unaBefore = sndUna;
        final int highestSackedBefore = sackedCount > 0 ? sackedEnd[sackedCount - 1] : sndUna;
        if (undoValid && seg.sackBlockCount > 0)
        {
            checkDsack(seg, now);
        }
        final boolean newlySacked = sackEnabled && seg.sackBlockCount > 0 && takeSackBlocks(seg);
        if (Seq.gt(ack, sndUna))
        {
            noteHoleFilled(highestSackedBefore);
            onNewAck(seg, ack, flightBefore, now);
        }
        updateSendWindow(seg, ack);
        // RFC 5681 §2 duplicate ACK: SEG.ACK equals SND.UNA as it was before this segment (a new ACK is not one),
        // no data, neither SYN nor FIN, the same window, and data outstanding.
        final boolean duplicate = ack == unaBefore && seg.payloadLength == 0
            && (seg.flags & (TcpHeader.SYN | TcpHeader.FIN)) == 0 && sndWnd == windowBefore && sndMax != sndUna
            && flightBefore > 0;
        if (tlpOutstanding)
        {
            lossProbeAcked(seg, ack, duplicate, flightBefore, now);
        }
        // With SACK, RFC 6675 §2's definition instead: an ACK that SACKs octets not SACKed before, "even if it carries
        // new data, changes the advertised window, or moves the cumulative acknowledgment point" (with data both ways
        // the peer's SACKs ride on its data segments), and only such an ACK. One that SACKs nothing new (a D-SACK
        // only, RFC 2883, or the network's copy of an earlier ACK) reports no loss.
        if (sackEnabled ? newlySacked && sackedCount > 0 : duplicate)
        {
            onDuplicateAck(now);
        }
        if (newlySacked)
        {
            checkUnaRetransmission(now);
        }

        switch (state)
        {
            case FIN_WAIT_1:
                if (finAcked())
                {
                    state = TcpState.FIN_WAIT_2;
                    armFinWait2Timeout(now);
                }
                break;
            case CLOSING:
                if (finAcked())
                {
                    enterTimeWait(now);
                }
                break;
            case LAST_ACK:
                if (finAcked())
                {
                    tcp.remove(this, CLOSE_NORMAL);
                    return false;
                }
                break;
            default:
                break;
        }
        return true;
    }

    /**
     * Window update (RFC 9293 §3.10.7.4 "fifth"): only when SND.UNA =< SEG.ACK =< SND.NXT (SND.UNA already moved to a
     * new SEG.ACK, and SEG.ACK past SND.NXT never comes here), and SND.WL1 < SEG.SEQ or (SND.WL1 = SEG.SEQ and SND.WL2
     * =< SEG.ACK). An old ACK (SEG.ACK < SND.UNA, acceptable within MAX.SND.WND by RFC 5961 §5.2) carries a window
     * the peer had before it acknowledged more, even when its data is new: it must not close or shrink ours.
     */
    private void updateSendWindow(final TcpRepr seg, final int ack)
    {
        // Every acceptable ACK passes here, predicted or not: it answers any zero-window probe outstanding.
        probesUnanswered = 0;
        if (Seq.ge(ack, sndUna) && (Seq.lt(sndWl1, seg.seq) || (sndWl1 == seg.seq && Seq.le(sndWl2, ack))))
        {
            final boolean wasClosed = sndWnd == 0;
            sndWnd = (long)seg.window << sndWscale;
            maxSndWnd = Math.max(maxSndWnd, sndWnd);
            sndWl1 = seg.seq;
            sndWl2 = ack;
            if (sndWnd > 0)
            {
                persistDeadline = NONE;
                persistBackoff = 0;
                orphanProbes = 0; // the limit is per zero-window period: a peer that opens its window makes progress
                if (wasClosed && onlyFinOutstanding())
                {
                    // Our FIN, alone outstanding, went into the closed window (or past the data the window took) and
                    // was dropped. The window is open: it goes again now, as a FIN Linux held behind the window would,
                    // not at the next expiry of a timer that backed off while the peer answered it with a closed
                    // window (those answers proved the path, as answered zero-window probes do). Not so for an
                    // orphan: its FIN's expiries count toward R2 however the peer answers (see below), so its timer
                    // runs on, or a peer opening and closing its window would hold the connection for ever.
                    sndNxt = sndUna;
                    if (!closedByApplication)
                    {
                        rtt.clearBackoff();
                        rtoDeadline = NONE;
                    }
                }
            }
        }
        if (sndWnd == 0 && onlyFinOutstanding() && !closedByApplication)
        {
            // Only our FIN outstanding, behind a closed window: a receiver with RCV.WND = 0 drops it (a segment of
            // length 1) and ACKs, so the FIN is in effect a zero-window probe and this ACK its answer. The connection
            // stays open while the peer answers (RFC 9293 §3.8.6.1, MUST-36, MUST-37; RFC 1122 4.2.2.17): the retries
            // toward R2 start again (as a probe answer clears Linux's icsk_probes_out); the RTO keeps its backoff.
            // Not once the application has closed: answered or not, the FIN's retransmissions then count toward R2,
            // as Linux counts an orphan's (tcp_write_timeout), or the peer could hold the connection for ever.
            retransmits = 0;
        }
    }

    /** Keep TS.Recent (RFC 7323 §4.3): only from a segment that covers Last.ACK.sent and passes PAWS. */
    private void updateTsRecent(final TcpRepr seg, final long now)
    {
        if (tsEnabled && seg.timestampsPresent && Seq.le(seg.seq, lastAckSent)
            && (Seq.ge(seg.tsVal, tsRecent) || now - tsRecentNanos >= PAWS_IDLE_NANOS))
        {
            tsRecent = seg.tsVal;
            tsRecentNanos = now;
        }
    }

    private void onNewAck(final TcpRepr seg, final int ack, final long flightBefore, final long now)
    {
        final int acked = ack - sndUna;
        final long dataEnd = sendBuffer.end();
        final long ackOffset = offsetOfSend(ack);
        sendBuffer.release(Math.min(Math.max(ackOffset, sendBuffer.start()), dataEnd));
        bytesAcked += acked;
        sndUna = ack;
        softError = 0; // data got through: an ICMP error from before is stale (Linux's tcp_ack clears sk_err_soft)
        if (Seq.gt(sndUna, reducedWindowEnd))
        {
            reducedWindowEnd = sndUna; // left behind, it would read as ahead once sequence numbers wrap
        }
        if (Seq.lt(sndNxt, sndUna))
        {
            sndNxt = sndUna;
        }
        if (sndUna == sndMax)
        {
            probeByteOutstanding = false; // a receiver may take the probe's byte
        }
        if (Seq.lt(highRxt, sndUna))
        {
            highRxt = sndUna;
        }
        if (unaResent())
        {
            // The new SND.UNA is a hole already retransmitted: watch for its loss from data sent from now on.
            markUnaRetransmitted(now);
        }
        pruneScoreboard();

        // RTT: prefer a Karn-clean timed segment (RFC 6298 §3), else the echoed timestamp of this ACK of new data
        // (RFC 7323 §4.1, RTTM), retransmitted data included when the echo says so (see echoTimesAck).
        long sample = -1;
        if (rttTiming && Seq.gt(ack, rttSeq))
        {
            sample = now - rttStart;
        }
        else if (tsEnabled && seg.timestampsPresent && seg.tsEcr != 0 && echoTimesAck(seg.tsEcr))
        {
            sample = Math.max(0, (long)(tsNow(now) - seg.tsEcr)) * 1_000_000L;
        }
        if (Seq.gt(ack, rttSeq))
        {
            rttTiming = false;
        }
        if (sample >= 0)
        {
            rtt.sample(sample);
            tlpAwaitingRttSample = false;
        }
        retransmits = 0;

        if (inRecovery)
        {
            if (Seq.ge(ack, recoveryPoint))
            {
                // RFC 6582 §3.2 step 3: full acknowledgment.
                inRecovery = false;
                dupAcks = 0;
                cc.onRecoveryExit(now);
                if (undoValid && undoDsacked && undoRetrans <= 0)
                {
                    // Every retransmission of the recovery was D-SACKed while it went on: it was spurious.
                    undoReduction(now);
                }
            }
            else if (!sackEnabled)
            {
                // RFC 6582 §3.2 step 4: partial ACK: retransmit the next hole, deflate by the amount acked.
                final int end = retransmitAt(sndUna, Integer.MAX_VALUE, now);
                if (Seq.gt(end, highRxt))
                {
                    highRxt = end;
                }
                // Add back SMSS only "if the partial ACK acknowledges at least one SMSS of new data" (same step): a
                // smaller ACK adding it back would grow the flight allowed by more than the ACK let leave.
                final int addBack = acked >= sndMss ? sndMss : 0;
                cc.cwnd(Math.max(sndMss, cc.cwnd() - acked + addBack));
                // Step 4 and §4: the timer restarts on every partial ACK, the "Slow-but-Steady" variant (and RFC 6298
                // §5.3's restart on an ACK of new data, below, does it again), not only on the first ("Impatient",
                // which would end a recovery of many holes, one per round trip, in a timeout). A choice the owner has
                // yet to make (docs/rfc9293-musts.md, RFC 6582); pinned by
                // TcpExtensionsTest#rfc6582_slowButSteadyEveryPartialAckRestartsTheRetransmissionTimer.
                rtoDeadline = now + rtt.rto();
            }
        }
        else
        {
            dupAcks = 0;
            limitedTransmitBytes = 0;
            // RFC 6582 §3.2 step 2 only asks whether the ACK has passed the recovery point. Once it has, the point
            // follows SND.UNA: left behind, it would read as ahead after 2^31 bytes (sequence numbers wrap), and
            // every loss from then on would wait for a timeout.
            if (Seq.gt(sndUna, recoveryPoint))
            {
                recoveryPoint = sndUna;
            }
            if (!Seq.lt(sndUna, recoveryPoint))
            {
                goingBack = false;
            }
            cc.onAck(acked, cwndUse(flightBefore), sample, now);
        }
        rtoDeadline = sndUna == sndMax ? NONE : now + rtt.rto();
        schedulePto(now);
        eventWritable = true;
    }

    /**
     * Whether an ACK of new data echoing {@code tsEcr} may be timed by it. RFC 6298 §3 allows samples from retransmitted
     * segments when timestamps remove the ambiguity, and a sample is what clears a timeout's backoff (§5.7): without
     * one, each timeout on a lossy path doubled the RTO the last one left, up to the maximum. The echo is unambiguous
     * when it is no older than the latest retransmission: the receiver took TS.Recent from a segment sent since then
     * (the one that filled its hole, RFC 7323 §4.3). An older echo may be stale: a receiver whose ACKs were lost
     * answers our retransmission of what it already holds with the TS.Recent it kept (a duplicate does not update
     * it), and now minus that includes the timeout's wait. Such an echo gives no sample, as Karn's rule has it; once an
     * echo has caught up, every later one is newer still (TS.Recent only grows).
     */
    private boolean echoTimesAck(final int tsEcr)
    {
        if (retransmitUnechoed && Seq.lt(tsEcr, retransmitTsVal))
        {
            return false;
        }
        retransmitUnechoed = false;
        return true;
    }

    /** Count a segment sent again and remember its TSval for {@link #echoTimesAck}. */
    private void countRetransmission(final long now)
    {
        retransmittedSegments++;
        tcp.count(StackCounter.TCP_RETRANSMITTED_SEGMENTS);
        retransmitTsVal = tsNow(now);
        retransmitUnechoed = true;
    }

    private void onDuplicateAck(final long now)
    {
        dupAcks++;
        if (inRecovery)
        {
            if (!sackEnabled)
            {
                // RFC 6582 §3.2 step 5 / RFC 5681: inflate by one segment per further duplicate.
                cc.cwnd(cc.cwnd() + sndMss);
            }
            return;
        }
        final boolean lossIndicated = dupAcks >= dupThresh || (sackEnabled && (firstSegmentLost() || lossProbeSacked()));
        // RFC 6582 §3.2 step 2: no new recovery until the previous recovery point is acknowledged.
        if (lossIndicated && Seq.ge(sndUna, recoveryPoint))
        {
            enterRecovery(now);
        }
    }

    /**
     * SND.UNA's retransmission was lost: more than (DupThresh - 1) * SMSS of data sent after it has been SACKed, and it
     * has not arrived (IsLost's rule, applied in order of transmission rather than of sequence). RFC 6675 alone never
     * sends a hole twice (NextSeg starts past HighRxt), so the cumulative ACK waited for the RTO; Linux detects this
     * case the same way (tcp_mark_lost_retrans, before RACK). Not a new congestion event: the recovery goes on.
     */
    private void retransmitLostRetransmission(final long now)
    {
        tcp.count(StackCounter.TCP_LOST_RETRANSMISSIONS);
        retransmitAt(sndUna, unaHoleLength(), now);
    }

    /** Bytes from SND.UNA to the first SACKed block above it (to SND.MAX when none is). */
    private int unaHoleLength()
    {
        return holeEnd(sndUna) - sndUna;
    }

    private void markUnaRetransmitted(final long now)
    {
        // In SACK recovery SND.NXT is SND.MAX: new data is what is sent next. Going back, it is the next hole.
        unaRetransmitSeq = sndUna;
        unaRetransmitMark = sndNxt;
        unaRetransmitSackedAfter = 0;
        unaRetransmitNanos = now;
        lostRetransmitDeadline = NONE;
    }

    /**
     * SND.UNA's retransmission, and data sent after it SACKed: is the retransmission lost? By IsLost's byte rule at
     * once, as before. By time, as RACK does (RFC 8985 §6.2): data sent after it has arrived, so once a round trip and
     * a reordering window (SRTT / 4, at least the clock granularity) have passed since it went out, it would have
     * arrived too. A small recovery flight sends too little after the retransmission for the byte rule ever to hold,
     * and its loss otherwise waited for the RTO. Until the time has come, a timer waits for it. Only while SND.UNA's
     * segment is a retransmission: of SACK recovery, or of the data a timeout sends again (in order, so what is newly
     * SACKed between the mark and SND.NXT was sent after it). There, before, every such loss waited for another,
     * doubled, timeout: RFC 6675 §5.1 forbids a new recovery until the recovery point is acknowledged, and this is not
     * one (no new congestion response; the data sent again is the same loss event).
     */
    private void checkUnaRetransmission(final long now)
    {
        if (!unaResent() || unaRetransmitSeq != sndUna)
        {
            return;
        }
        if (unaRetransmissionLost(now))
        {
            retransmitLostRetransmission(now);
        }
        else if (unaRetransmitSackedAfter > 0)
        {
            lostRetransmitDeadline = unaRetransmissionDue();
        }
    }

    /** By {@link #checkUnaRetransmission}'s rules (the watch must be on SND.UNA): is SND.UNA's retransmission lost? */
    private boolean unaRetransmissionLost(final long now)
    {
        final long sentAfter = unaRetransmitSackedAfter;
        return sentAfter > (dupThresh - 1L) * sndMss || sentAfter > 0 && now - unaRetransmissionDue() >= 0;
    }

    /** When SND.UNA's retransmission, data sent after it SACKed, counts as lost by time: a round trip and a reordering window after it. */
    private long unaRetransmissionDue()
    {
        final long srtt = Math.max(0, rtt.srtt());
        return unaRetransmitNanos + srtt + Math.max(srtt / 4, RttEstimator.GRANULARITY_NANOS);
    }

    /**
     * Entering a recovery right after another: SND.UNA's hole was already sent again by the last one (HighRxt is past
     * it, and the lost-retransmission watch is on it), and that resend has not been found lost. The SACKs that started
     * this recovery report data sent before it, or too little after it to say it is lost: it is still on its way, and
     * sending it again now would only duplicate it. The SACKs between the two recoveries were not counted (the watch
     * runs in recovery); those of data sent after the mark are counted now.
     */
    private boolean unaResendInFlight(final long now)
    {
        if (!sackEnabled || !Seq.gt(highRxt, sndUna) || unaRetransmitSeq != sndUna)
        {
            return false;
        }
        unaRetransmitSackedAfter = Math.max(unaRetransmitSackedAfter, sackedBetween(unaRetransmitMark, sndNxt));
        return !unaRetransmissionLost(now);
    }

    /** SND.UNA's segment has been sent again: in SACK recovery (below HighRxt), or going back (below SND.NXT). */
    private boolean unaResent()
    {
        return inRecovery ? Seq.gt(highRxt, sndUna) : goingBack && Seq.gt(sndNxt, sndUna);
    }

    /** SACKed bytes in {@code [from, to)}; none when {@code to} is not after {@code from}. */
    private long sackedBetween(final int from, final int to)
    {
        long sum = 0;
        for (int i = 0; i < sackedCount; i++)
        {
            final int left = Seq.gt(sackedStart[i], from) ? sackedStart[i] : from;
            final int right = Seq.lt(sackedEnd[i], to) ? sackedEnd[i] : to;
            if (Seq.lt(left, right))
            {
                sum += right - left;
            }
        }
        return sum;
    }

    /**
     * RFC 6675 §4 IsLost(SND.UNA): DupThresh discontiguous SACKed blocks above it, or more than (DupThresh - 1) * SMSS
     * bytes SACKed above it (segments smaller than SMSS, such as those that carry SACK blocks of their own, make the
     * byte rule need a fourth segment if it asked for DupThresh * SMSS).
     */
    private boolean firstSegmentLost()
    {
        return atLeastSegments(sackedCount, sackedBytes(), dupThresh);
    }

    /**
     * Whether {@code blocks} SACKed blocks of {@code bytes} in all make at least {@code segments} segments, as RFC 6675
     * IsLost counts them: as many discontiguous blocks, or more than {@code segments - 1} SMSS of bytes. IsLost of a
     * hole asks it of what is SACKed above the hole with DupThresh. The scoreboard holds {@link #MAX_SCOREBOARD} blocks:
     * for a DupThresh above that only the byte rule can hold (each block holds a segment, so it falls short only with
     * segments smaller than SMSS).
     */
    private boolean atLeastSegments(final int blocks, final long bytes, final int segments)
    {
        return blocks >= segments || bytes > (segments - 1L) * sndMss;
    }

    private void enterRecovery(final long now)
    {
        tcp.count(StackCounter.TCP_FAST_RETRANSMITS);
        if (sackEnabled)
        {
            tcp.count(StackCounter.TCP_SACK_RECOVERIES);
        }
        // RFC 6675 §5 (4.2) / RFC 5681 (4): ssthresh from FlightSize, taken before inRecovery turns flight() into the pipe.
        // RFC 5681 §3.2 step 2 (RFC 3042 §2): data sent by limited transmit MUST NOT be included in it.
        final long flightSize = Math.max(0, flight() - limitedTransmitBytes);
        limitedTransmitBytes = 0;
        inRecovery = true;
        recoveryPoint = sndMax;
        // RFC 8985 §7.2: no probe during recovery; a probe that revealed this loss has done its work (the recovery's
        // congestion response covers the loss it repaired, if any).
        dropLossProbe();
        // RFC 8985 §7.4.2: a loss in the window a probe's repair already answered is recovered all the same, but cwnd
        // is not reduced a second time for it (RFC 6582 §3.2: one reduction per window of data).
        if (!Seq.lt(sndUna, reducedWindowEnd))
        {
            cc.onFastRetransmit(flightSize, now);
            startUndoEpisode();
        }
        else
        {
            undoValid = false; // no reduction of its own; one from before would count this recovery's retransmissions
        }
        // RFC 6675 §4 HighRxt: the first retransmission of a recovery must not be sent again by NextSeg. With SACK it
        // fills the first hole and no more: the bytes after it have arrived. Unless the last recovery sent that hole
        // again and the resend is still on its way: then HighRxt stays where that recovery left it (it only moves
        // forward, as NextSeg does) and the lost-retransmission watch goes on (checkUnaRetransmission).
        if (!unaResendInFlight(now))
        {
            highRxt = retransmitAt(sndUna, unaHoleLength(), now);
        }
        // §5 (4.3): RescueRxt too, "to prevent ... a premature rescue retransmission": the ACK of this one comes first.
        rescueRxt = highRxt - 1;
        if (!sackEnabled)
        {
            cc.cwnd(cc.ssthresh() + 3L * sndMss);
        }
        rtoDeadline = now + rtt.rto();
    }

    /**
     * A new episode for undo, at a recovery's reduction: the retransmissions from here on are counted, and D-SACKs
     * count them down. Resends still in flight from before (SND.UNA's, kept by {@link #unaResendInFlight}, and any
     * other below HighRxt; or those of a timeout's going back) are counted in too, as Linux's tcp_init_undo counts
     * retrans_out: one of them filling a really lost hole is as much a needed retransmission as any sent from now on.
     * They are the holes left in {@code [SND.UNA, HighRxt)} (NextSeg resent every hole below HighRxt).
     */
    private void startUndoEpisode()
    {
        if (undoRxtStart == NO_SCOREBOARD)
        {
            undoRxtStart = new int[MAX_SCOREBOARD];
            undoRxtEnd = new int[MAX_SCOREBOARD];
        }
        undoValid = true;
        undoMarker = sndUna;
        undoRetransEnd = sndUna;
        undoRetrans = 0;
        undoRxtCount = 0;
        undoDsacked = false;
        undoFirstResends = 0;
        undoFillDistance = 0;
        int resentEnd = Seq.gt(highRxt, sndUna) ? highRxt : sndUna;
        if (goingBack && Seq.gt(sndNxt, resentEnd))
        {
            resentEnd = sndNxt;
        }
        int cursor = sndUna;
        for (int i = 0; i < sackedCount && Seq.lt(cursor, resentEnd); i++)
        {
            if (Seq.lt(cursor, sackedStart[i]))
            {
                noteUndoRetransmission(cursor, Seq.lt(sackedStart[i], resentEnd) ? sackedStart[i] : resentEnd);
            }
            if (Seq.gt(sackedEnd[i], cursor))
            {
                cursor = sackedEnd[i];
            }
        }
        if (Seq.lt(cursor, resentEnd))
        {
            noteUndoRetransmission(cursor, resentEnd);
        }
        if (undoFirstResends > 0)
        {
            // SND.UNA was sent again before the episode: a D-SACK of it may be of two resends, and tells no reordering.
            undoFirstResends = 2;
        }
    }

    /**
     * Segments sent again, {@code [from, to)}: counted in the undo episode (none is undone until each has been
     * D-SACKed), as a range a D-SACK may count down. More ranges than there is room for: no undo for this episode.
     */
    private void noteUndoRetransmission(final int from, final int to)
    {
        if (!undoValid)
        {
            return;
        }
        if (undoRxtCount == undoRxtStart.length)
        {
            undoValid = false; // conservative: a retransmission not tracked could be a needed one
            return;
        }
        undoRxtStart[undoRxtCount] = from;
        undoRxtEnd[undoRxtCount] = to;
        undoRxtCount++;
        undoRetrans += segmentsIn(from, to);
        if (Seq.gt(to, undoRetransEnd))
        {
            undoRetransEnd = to;
        }
        if (from == undoMarker)
        {
            undoFirstResends++;
        }
    }

    /** Segments of at most SMSS in {@code [from, to)}, at least one (as Linux's pcount). */
    private int segmentsIn(final int from, final int to)
    {
        return Math.max(1, (int)(((long)(to - from) + sndMss - 1) / sndMss));
    }

    /**
     * The episode's retransmitted range holding all of {@code [left, right)}, with that taken out of it (the range
     * shrinks from the side it touches; a D-SACK from its middle leaves only the larger rest, so that the smaller can
     * count nothing down later: conservative), and its count; -1 if there is none: no retransmission of the episode
     * was received twice.
     */
    private int takeUndoRange(final int left, final int right)
    {
        for (int i = 0; i < undoRxtCount; i++)
        {
            final int start = undoRxtStart[i];
            final int end = undoRxtEnd[i];
            if (Seq.le(start, left) && Seq.le(right, end))
            {
                if (left - start >= end - right)
                {
                    undoRxtEnd[i] = left;
                }
                else
                {
                    undoRxtStart[i] = right;
                }
                if (undoRxtStart[i] == undoRxtEnd[i])
                {
                    undoRxtCount--;
                    undoRxtStart[i] = undoRxtStart[undoRxtCount];
                    undoRxtEnd[i] = undoRxtEnd[undoRxtCount];
                }
                return segmentsIn(left, right);
            }
        }
        return -1;
    }

    /**
     * The cumulative ACK moves past SND.UNA's hole while data above it was SACKed ({@code highestSacked}, the highest
     * SACKed byte before this ACK). Sent only once, the hole was filled by its original: it was overtaken, not lost,
     * and the distance is reordering (Linux's tcp_check_sack_reordering). Sent again, which copy filled it is not
     * known yet: for the recovery's first retransmission the distance is kept for its D-SACK ({@link #checkDsack}).
     */
    private void noteHoleFilled(final int highestSacked)
    {
        if (!sackEnabled || !Seq.lt(sndUna, highestSacked))
        {
            return;
        }
        final int distance = Math.min(MAX_DUP_THRESH, segmentsIn(sndUna, highestSacked));
        if (Seq.lt(sndUna, highRxt) || goingBack && Seq.lt(sndUna, sndNxt))
        {
            if (undoValid && sndUna == undoMarker && undoFirstResends == 1)
            {
                undoFillDistance = distance;
            }
            return;
        }
        noteReordering(distance);
    }

    /**
     * Reordering seen: a hole filled by a segment that {@code distance - 1} segments sent after it overtook, the hole
     * included in the count. DupThresh becomes at least that, so that the same reordering again starts no recovery
     * (RFC 6675's rules with a larger DupThresh), at most {@link #MAX_DUP_THRESH}.
     */
    private void noteReordering(final int distance)
    {
        if (distance > dupThresh)
        {
            dupThresh = Math.min(distance, MAX_DUP_THRESH);
        }
    }

    /**
     * RFC 2883 §4: the first SACK block is a D-SACK when it lies below the cumulative ACK or within the second block:
     * the data in it arrived twice. One inside a range the undo episode sent again counts it down (Linux's
     * tcp_check_dsack and undo_retrans, for TCPCB_RETRANS segments only; RFC 3708 §3.2 counts the same way), each
     * byte once per retransmission ({@link #takeUndoRange}); when none is left, every retransmission was
     * spurious and the reduction is undone (RFC 3708 §4, RFC 9438 §4.9) once the recovery is over, or at its end. A
     * D-SACK of the recovery's first retransmission, sent once, shows its fast retransmit was spurious: the distance
     * by which the original was overtaken (when the cumulative ACK passed it) is reordering.
     *
     * <p>A D-SACK of a duplicate the network made of an original never sent again counts nothing: it lies in no range
     * of the episode. One of an original the episode did send again is taken for the resend's (Linux cannot tell them
     * apart either).
     */
    private void checkDsack(final TcpRepr seg, final long now)
    {
        final int left = seg.sackLeft[0];
        final int right = seg.sackRight[0];
        final boolean dsack = Seq.lt(left, right) && (Seq.le(right, seg.ack)
            || seg.sackBlockCount > 1 && Seq.ge(left, seg.sackLeft[1]) && Seq.le(right, seg.sackRight[1]));
        if (!dsack || Seq.lt(left, undoMarker) || Seq.gt(right, undoRetransEnd) || undoRetrans <= 0)
        {
            return;
        }
        final int segments = takeUndoRange(left, right);
        if (segments < 0)
        {
            return;
        }
        if (left == undoMarker && undoFillDistance > 0)
        {
            noteReordering(undoFillDistance);
        }
        undoRetrans -= segments;
        undoDsacked = true;
        if (undoRetrans <= 0 && !inRecovery)
        {
            undoReduction(now);
        }
    }

    /** The episode's reduction proved spurious: cwnd, ssthresh and the controller's state go back (RFC 3708 §4). */
    private void undoReduction(final long now)
    {
        undoValid = false;
        cc.undoLastReduction(now);
        tcp.count(StackCounter.TCP_SPURIOUS_RECOVERIES_UNDONE);
    }

    private boolean finAcked()
    {
        return finRequested && Seq.gt(sndUna, finSeq());
    }

    /** Our FIN is sent and unacknowledged, and nothing else is: every data byte is acknowledged. */
    private boolean onlyFinOutstanding()
    {
        return finRequested && sndUna == finSeq() && sndMax != sndUna;
    }

    /** Sequence number of our FIN (once requested): right after the last data byte. */
    private int finSeq()
    {
        return seqOfSend(sendBuffer.end());
    }

    /** Take the first {@code length} octets of the segment's text (all of it but what lies past the peer's FIN). */
    private void receive(final TcpRepr seg, final DirectBuffer buffer, final int length, final long now)
    {
        final int end = seg.seq + length;
        if (Seq.le(end, rcvNxt))
        {
            // RFC 2883: a duplicate segment is reported in the first SACK block (D-SACK).
            if (sackEnabled)
            {
                dsackPending = true;
                dsackStart = seg.seq;
                dsackEnd = end;
            }
            ackNow = true;
            return;
        }
        final long offset = offsetOfReceive(seg.seq);
        final boolean hadHoles = receiveBuffer.outOfOrderRanges() > 0;
        final int advanced = receiveBuffer.write(offset, buffer, seg.payloadOffset, length);
        if (advanced == ReceiveBuffer.REJECTED)
        {
            // Out of order all the same: the duplicate ACK tells the sender data arrived past the hole.
            tcp.count(StackCounter.TCP_OUT_OF_ORDER_REJECTED);
            ackAtOnce = true;
            return;
        }
        if (sackEnabled)
        {
            noteDuplicate(seg.seq);
        }
        if (advanced > 0)
        {
            rcvNxt += advanced;
            bytesReceived += advanced;
            eventReadable = true;
            if (hadHoles)
            {
                // RFC 5681 §4.2: a segment that fills a hole is acknowledged at once. While holes remain, before the
                // next segment of the burst: each partial ACK moves a NewReno sender on to the next hole (RFC 6582
                // §3.2). Once none remain, in-order data after it in the burst shares the ACK.
                if (receiveBuffer.outOfOrderRanges() > 0)
                {
                    ackAtOnce = true;
                }
                else
                {
                    ackNow = true;
                }
            }
            else if (measurePeerSegment(seg, length) && ++fullSegmentsUnacked >= 2)
            {
                // RFC 9293 §3.8.6.3 (MUST-58): an ACK for at least every second full-sized segment.
                ackNow = true;
            }
            else if (delayedAckDeadline == NONE)
            {
                delayedAckDeadline = now + settings.delayedAckNanos;
            }
        }
        else
        {
            // Out of order: an immediate duplicate ACK carrying SACK (RFC 5681 §4.2, RFC 2018), one per segment as
            // Linux's __tcp_ack_snd_check sends while its out-of-order queue is not empty: a sender without SACK counts
            // them (§3.2), and one ACK for a burst of them would leave it short of three.
            ackAtOnce = true;
        }
    }

    /**
     * RFC 2883 §4: the first block of the next SACK reports "a duplicate contiguous sequence of data received ... in
     * the most recent packet": the part of a segment that straddles RCV.NXT below it (called before RCV.NXT moves
     * past the segment), else the first run of it already held out of order, as Linux's tcp_data_queue and
     * tcp_data_queue_ofo do. The block holding the out-of-order data comes second (it is the most recently updated).
     */
    private void noteDuplicate(final int seq)
    {
        if (Seq.lt(seq, rcvNxt))
        {
            dsackPending = true;
            dsackStart = seq;
            dsackEnd = rcvNxt;
        }
        else if (receiveBuffer.lastDuplicateEnd() != receiveBuffer.lastDuplicateStart())
        {
            dsackPending = true;
            dsackStart = seqOfReceive(receiveBuffer.lastDuplicateStart());
            dsackEnd = seqOfReceive(receiveBuffer.lastDuplicateEnd());
        }
    }

    /**
     * Is this in-order segment full-sized (RFC 9293 §3.8.6.3, SHLD-19)? Full-sized is what the peer sends when it has
     * data, which a path MTU smaller than ours keeps below our MSS: learnt from its segments as Linux's
     * tcp_measure_rcv_mss does. A larger segment raises the size (to our MSS less the timestamps at most); a smaller
     * one lowers it only when it has the size of the last smaller one (Linux's last_seg_size) and looks like no
     * write's tail (536 octets or more, or no PSH or FIN). A segment's size counts the SACK blocks it carries: a
     * sender takes their room from its MSS.
     */
    private boolean measurePeerSegment(final TcpRepr seg, final int length)
    {
        final int size = length + (seg.sackBlockCount > 0 ? 4 + 8 * seg.sackBlockCount : 0);
        if (peerSegmentSize == 0)
        {
            peerSegmentSize = Math.max(1, Math.min(rcvMss, sndMss) - 12);
        }
        if (size >= peerSegmentSize)
        {
            peerSegmentSize = Math.min(size, rcvMss - (tsEnabled ? 12 : 0)); // our MSS caps it, as it capped the start
            return true;
        }
        if (size >= DEFAULT_MSS || (size >= MIN_FULL_SEGMENT && (seg.flags & (TcpHeader.PSH | TcpHeader.FIN)) == 0))
        {
            final boolean again = size == lastShortSegmentSize;
            lastShortSegmentSize = size;
            if (again)
            {
                peerSegmentSize = size;
                return true;
            }
        }
        return false;
    }

    private void onFin(final long now)
    {
        peerFinPending = false;
        peerFinReceived = true;
        rcvNxt = rcvNxt + 1;
        ackNow = true;
        eventPeerClosed = true;
        switch (state)
        {
            case SYN_RECEIVED:
            case ESTABLISHED:
                state = TcpState.CLOSE_WAIT;
                break;
            case FIN_WAIT_1:
                if (finAcked())
                {
                    enterTimeWait(now);
                }
                else
                {
                    state = TcpState.CLOSING;
                }
                break;
            case FIN_WAIT_2:
                enterTimeWait(now);
                break;
            default:
                break;
        }
    }

    /**
     * Linux's tcp_fin_timeout: a connection the application closed takes no more data, so in FIN-WAIT-2 it only waits
     * for the peer's FIN, and a peer that never sends one would hold it (its buffers, its place in a listener's limit)
     * for ever. It is dropped without a segment after {@link TcpSettings#finWait2TimeoutNanos}, counted from when it
     * was both orphaned and in FIN-WAIT-2, and not pushed back by what arrives: Linux moves it to a FIN-WAIT-2
     * timewait socket that expires silently, and a FIN after that draws a reset here as there. A half-closed
     * connection whose application still reads is not orphaned and waits as long as RFC 9293 §3.6 has it.
     */
    private void armFinWait2Timeout(final long now)
    {
        if (state == TcpState.FIN_WAIT_2 && closedByApplication && finWait2Deadline == NONE)
        {
            finWait2Deadline = now + settings.finWait2TimeoutNanos;
        }
    }

    private void enterTimeWait(final long now)
    {
        state = TcpState.TIME_WAIT;
        finWait2Deadline = NONE;
        rtoDeadline = NONE;
        ptoDeadline = NONE;
        persistDeadline = NONE;
        swsOverrideDeadline = NONE;
        keepAliveDeadline = NONE;
        // Beyond the stack-wide bound it ends at the next timer pass, once the ACK of the peer's FIN is out.
        timeWaitDeadline = tcp.admitTimeWait(this) ? now + settings.timeWaitNanos : now;
        eventPeerClosed = eventPeerClosed || !peerFinReceived;
        tcp.timeWaitEntered(this);
    }

    /**
     * In TIME-WAIT nothing is left to send and nothing more is accepted; only the stream positions matter. Swap the
     * real buffers for a {@link DetachedBuffers} holding them; the caller gives the real ones back.
     */
    void detachBuffers()
    {
        assert state == TcpState.TIME_WAIT && !buffersDetached;
        final DetachedBuffers detached = new DetachedBuffers(sendBuffer.end(), receiveBuffer.contiguousEnd(), receiveBuffer.capacity());
        sendBuffer = detached;
        receiveBuffer = detached;
        buffersDetached = true;
    }

    /** Whether the application closed this connection: it reads no more, so nobody but the stack needs its buffers. */
    boolean closedByApplication()
    {
        return closedByApplication;
    }

    // ------------------------------------------------------------------------------------------
    // SACK scoreboard (sender side)
    // ------------------------------------------------------------------------------------------

    /**
     * Add the segment's SACK blocks to the scoreboard, and count those sent after SND.UNA's retransmission (see
     * {@link #unaRetransmitSackedAfter}); whether any byte was SACKed that was not before.
     */
    private boolean takeSackBlocks(final TcpRepr seg)
    {
        final boolean watching = unaResent() && unaRetransmitSeq == sndUna;
        final long watchedBefore = watching ? sackedBetween(unaRetransmitMark, sndNxt) : 0;
        if (updateScoreboard(seg) == 0)
        {
            return false;
        }
        if (watching)
        {
            unaRetransmitSackedAfter += sackedBetween(unaRetransmitMark, sndNxt) - watchedBefore;
        }
        return true;
    }

    /** Add the segment's SACK blocks to the scoreboard; returns the bytes SACKed that were not before. */
    private long updateScoreboard(final TcpRepr seg)
    {
        long added = 0;
        for (int i = 0; i < seg.sackBlockCount; i++)
        {
            int left = seg.sackLeft[i];
            final int right = seg.sackRight[i];
            // Ignore D-SACK and blocks outside what we sent (RFC 2883 §4, RFC 6675 §5).
            if (!Seq.lt(left, right) || Seq.le(right, sndUna) || Seq.gt(right, sndMax))
            {
                continue;
            }
            if (Seq.lt(left, sndUna))
            {
                left = sndUna;
            }
            added += addSacked(left, right);
        }
        return added;
    }

    /** Merge {@code [left, right)} into the scoreboard; returns how many of its bytes were not SACKed before. */
    private long addSacked(final int left, final int right)
    {
        if (sackedStart == NO_SCOREBOARD)
        {
            sackedStart = new int[MAX_SCOREBOARD];
            sackedEnd = new int[MAX_SCOREBOARD];
        }
        final int[] s = sackedStart;
        final int[] e = sackedEnd;
        final int n = sackedCount;
        int l = left;
        int r = right;
        // Keep the list sorted and disjoint: find the first block that could touch [l, r) ...
        int i = 0;
        while (i < n && Seq.lt(e[i], l))
        {
            i++;
        }
        // ... and merge every block that does.
        int j = i;
        long known = 0;
        while (j < n && Seq.le(s[j], r))
        {
            l = Seq.lt(s[j], l) ? s[j] : l;
            r = Seq.gt(e[j], r) ? e[j] : r;
            known += e[j] - s[j];
            j++;
        }
        if (j == i && n == MAX_SCOREBOARD)
        {
            return 0; // full: forgetting a block only costs a spurious retransmission
        }
        System.arraycopy(s, j, s, i + 1, n - j);
        System.arraycopy(e, j, e, i + 1, n - j);
        s[i] = l;
        e[i] = r;
        sackedCount = n - (j - i) + 1;
        return (r - l) - known;
    }

    private void pruneScoreboard()
    {
        int keep = 0;
        for (int i = 0; i < sackedCount; i++)
        {
            if (Seq.gt(sackedEnd[i], sndUna))
            {
                sackedStart[keep] = Seq.lt(sackedStart[i], sndUna) ? sndUna : sackedStart[i];
                sackedEnd[keep] = sackedEnd[i];
                keep++;
            }
        }
        sackedCount = keep;
    }

    /** Every SACKed byte: the blocks all lie in [SND.UNA, SND.MAX) (clamped when added and when SND.UNA moves). */
    private long sackedBytes()
    {
        return sackedBetween(sndUna, sndMax);
    }

    /**
     * Bytes in flight: RFC 6675 "pipe" during SACK recovery; going back after a timeout, what has been sent again
     * and not SACKed (SND.NXT - SND.UNA, less the SACKed bytes it skipped); else SND.NXT - SND.UNA.
     */
    private long flight()
    {
        final long outstanding = sndMax - sndUna;
        if (goingBack && sackedCount > 0)
        {
            return Math.max(0, (long)(sndNxt - sndUna) - sackedBetween(sndUna, sndNxt));
        }
        if (!inRecovery || !sackEnabled || sackedCount == 0)
        {
            return Math.max(0, (long)(sndNxt - sndUna));
        }
        // In recovery every hole below the highest SACKed byte not yet sent again is deemed lost: RFC 8985 §6.2's
        // reordering window of 0 in recovery when no reordering has been seen (noteReordering), where
        // RFC 6675's IsLost waits for DupThresh segments SACKed above each hole. Strict IsLost was tried (BENCHMARKS.md,
        // "SACK loss marking"): with 5% loss the median run took 1.6 times as long, with twice as many timeouts.
        // Once reordering has been seen (DupThresh raised), RFC 6675's IsLost with that DupThresh instead: a hole with
        // fewer SACKed segments above it than the reordering seen may only be late.
        final int highestSacked = sackedEnd[sackedCount - 1];
        final boolean reordering = dupThresh > DUP_THRESH;
        long sackedAbove = reordering ? sackedBytes() : 0;
        long lost = 0;
        int cursor = Seq.gt(highRxt, sndUna) ? highRxt : sndUna;
        for (int i = 0; i < sackedCount; i++)
        {
            if (Seq.gt(sackedStart[i], cursor) && (!reordering || atLeastSegments(sackedCount - i, sackedAbove, dupThresh)))
            {
                lost += sackedStart[i] - cursor;
            }
            sackedAbove -= sackedEnd[i] - sackedStart[i];
            if (Seq.gt(sackedEnd[i], cursor))
            {
                cursor = sackedEnd[i];
            }
            if (!Seq.lt(cursor, highestSacked))
            {
                break;
            }
        }
        return Math.max(0, outstanding - sackedBytes() - lost);
    }

    /**
     * RFC 6675 NextSeg rule 1, with every hole below the highest SACK deemed lost (see {@link #flight}), so rule 3 never
     * has a hole left: the first byte at or after HighRxt in a hole below the highest SACK, or -1 (as a long). Once
     * reordering has raised DupThresh, only a hole IsLost finds lost with it.
     */
    private long nextHole()
    {
        if (sackedCount == 0)
        {
            return -1;
        }
        final boolean reordering = dupThresh > DUP_THRESH;
        long sackedAbove = reordering ? sackedBytes() : 0;
        int cursor = Seq.gt(highRxt, sndUna) ? highRxt : sndUna;
        for (int i = 0; i < sackedCount; i++)
        {
            if (Seq.lt(cursor, sackedStart[i]))
            {
                if (!reordering || atLeastSegments(sackedCount - i, sackedAbove, dupThresh))
                {
                    return cursor & 0xFFFF_FFFFL;
                }
                // Holes lie in sequence order: one above has less SACKed above it still.
                return -1;
            }
            sackedAbove -= sackedEnd[i] - sackedStart[i];
            if (Seq.gt(sackedEnd[i], cursor))
            {
                cursor = sackedEnd[i];
            }
        }
        return -1;
    }

    private int holeEnd(final int from)
    {
        for (int i = 0; i < sackedCount; i++)
        {
            if (Seq.gt(sackedStart[i], from))
            {
                return sackedStart[i];
            }
        }
        return sndMax;
    }

    // ------------------------------------------------------------------------------------------
    // Output
    // ------------------------------------------------------------------------------------------

    /** Send whatever the windows, Nagle and SWS avoidance allow, then a pure ACK if one is owed. */
    void output(final long now)
    {
        if (state == TcpState.CLOSED || state == TcpState.LISTEN || state == TcpState.SYN_SENT)
        {
            rearm();
            return;
        }
        if (state == TcpState.SYN_RECEIVED)
        {
            if (ackNow)
            {
                replySynAck(now);
            }
            rearm();
            return;
        }
        if (pathMtuRaiseAt != NONE && now - pathMtuRaiseAt >= 0)
        {
            raisePathMtu();
        }
        boolean sent = false;
        if (inRecovery && sackEnabled)
        {
            sent = sackRecoveryOutput(now);
        }
        sent |= sendNewData(now);
        if (!sent && inRecovery && sackEnabled)
        {
            sent = rescueRetransmission(now);
        }
        if (sent)
        {
            recordCwndUse();
        }
        if (!sent && (ackNow || (delayedAckDeadline != NONE && now - delayedAckDeadline >= 0)))
        {
            sendSegment(TcpHeader.ACK, seqWithoutText(), 0, 0, now);
        }
        rearm();
    }

    /**
     * After a send, the window's record of cwnd use ({@link #cwndUseFlight}): a new window once SND.UNA has passed the
     * last one, and at any time the flight fills cwnd to within one SMSS (the sender could not send another full
     * segment: it is cwnd limited) or, in a window that was not, outgrows the largest flight so far.
     */
    private void recordCwndUse()
    {
        final long inFlight = flight();
        final boolean limited = inFlight + sndMss > cc.cwnd();
        if (!Seq.lt(sndUna, cwndUseEnd) || limited || (!cwndUseLimited && inFlight > cwndUseFlight))
        {
            cwndUseFlight = inFlight;
            cwndUseLimited = limited;
            cwndUseEnd = sndMax;
        }
    }

    /**
     * The flight an ACK outside recovery judges cwnd growth by ({@link CongestionControl#onAck}): at least cwnd when
     * the sender was cwnd limited in the current window, else the largest flight of the window, or {@code flightBefore}
     * when larger (data a timer sent again, outside the output pass).
     */
    private long cwndUse(final long flightBefore)
    {
        return Math.max(cwndUseLimited ? cc.cwnd() : cwndUseFlight, flightBefore);
    }

    /**
     * SEG.SEQ of a segment without text (a pure ACK, and the RST of an abort): {@code <SEQ=SND.NXT>} in RFC 9293's
     * model, where SND.NXT is never rewound, so here {@link #sndMax}. After a timeout rewinds sndNxt, an ACK carrying it
     * would fall below the peer's RCV.NXT, be found unacceptable with its ACK field unread, and both ends could stall
     * answering each other. But when what we sent reaches past the peer's window (a zero-window probe's byte, or a
     * window the peer shrank), SND.MAX lies beyond what a peer with a zero window accepts (only SEG.SEQ = RCV.NXT, and
     * for a RST only that, RFC 5961 §3.2): the window's right edge is used instead, as Linux's tcp_acceptable_seq does.
     */
    private int seqWithoutText()
    {
        final int edge = sndUna + (int)Math.min(sndWnd, Integer.MAX_VALUE);
        return Seq.gt(sndMax, edge) ? edge : sndMax;
    }

    private boolean sackRecoveryOutput(final long now)
    {
        boolean sent = false;
        // RFC 6675 §5 (C): a segment goes "while cwnd - pipe >= 1 SMSS"; with any room at all, a full-sized hole
        // would put up to SMSS - 1 bytes more in flight than cwnd allows.
        for (int guard = 0; guard < 64 && cc.cwnd() - flight() >= sndMss; guard++)
        {
            final long hole = nextHole();
            if (hole < 0)
            {
                break;
            }
            final int from = (int)hole;
            // Holes lie in sequence order: once one starts past the peer's right edge, so do the rest. They go when the
            // window opens (retransmitAt).
            final int len = (int)Math.min(Math.min(segmentLimit(), holeEnd(from) - from), windowFrom(from));
            if (len <= 0)
            {
                break;
            }
            retransmitAt(from, len, now);
            highRxt = from + len;
            sent = true;
        }
        return sent;
    }

    /**
     * RFC 6675 NextSeg rule 4, once per recovery: when no hole is deemed lost and no new data may go, the segment that
     * ends at the highest outstanding unSACKed byte is sent again (a "rescue"). A lost tail of the flight has no SACK
     * above it to reveal it, and would otherwise wait for the retransmission timeout. Only once HighACK > RescueRxt:
     * after the cumulative ACK has passed the recovery's first retransmission (§5 (4.3)), and then RescueRxt is the
     * recovery point, which no ACK passes before the recovery ends. HighRxt stays where it was.
     */
    private boolean rescueRetransmission(final long now)
    {
        // RFC 6675 §5 (C): NextSeg is asked only while cwnd - pipe >= 1 SMSS. With less room, sendNewData holds a
        // partial segment back (sender SWS avoidance), which is no reason to resend the tail. HighACK is SND.UNA - 1.
        if (!Seq.gt(sndUna - 1, rescueRxt) || cc.cwnd() - flight() < sndMss)
        {
            return false;
        }
        final int highestSacked = sackedCount > 0 ? sackedEnd[sackedCount - 1] : sndUna;
        final int top = Seq.gt(highestSacked, sndUna) ? highestSacked : sndUna;
        if (!Seq.lt(top, sndMax) || windowFrom(lastSegmentStart(top)) == 0)
        {
            return false; // nothing to rescue, or the tail lies past a window the peer shrank: not yet
        }
        retransmitLastSegment(top, now);
        // Rule 4: RescueRxt = RecoveryPoint, its last octet here as for the first retransmission's.
        rescueRxt = recoveryPoint - 1;
        tcp.count(StackCounter.TCP_RESCUE_RETRANSMITS);
        return true;
    }

    /** Send again the segment that ends at SND.MAX (its FIN included), starting no lower than {@code floor}; returns its start. */
    private int retransmitLastSegment(final int floor, final long now)
    {
        final int from = lastSegmentStart(floor);
        retransmitAt(from, sndMax - from, now);
        return from;
    }

    /** Where the segment that ends at SND.MAX starts when sent again, no lower than {@code floor}. */
    private int lastSegmentStart(final int floor)
    {
        final int dataEnd = finRequested && Seq.gt(sndMax, finSeq()) ? finSeq() : sndMax;
        return Seq.gt(dataEnd - segmentLimit(), floor) ? dataEnd - segmentLimit() : floor;
    }

    private boolean sendNewData(final long now)
    {
        if (!state.sendsData() && state != TcpState.FIN_WAIT_1 && state != TcpState.CLOSING && state != TcpState.LAST_ACK)
        {
            return false;
        }
        if (sndMaxOfData() == sndUna && sndWnd > 0 && sendBuffer.end() > offsetOfSend(sndNxt))
        {
            // Nothing in flight and new data to send: the end of an idle period (RFC 5681 §4.1). So is the end of a
            // zero-window stall with only the probe's byte outstanding: no ACK clock ran while the window was closed.
            cc.onSendAfterIdle(settings.slowStartAfterIdle && now - lastDataSentNanos > rtt.rto(), now);
        }
        boolean sent = false;
        boolean sentNew = false;
        for (int guard = 0; guard < 1024; guard++)
        {
            // Going back after a timeout: what the peer has SACKed is not sent again (RFC 6675 §5.1), and a segment
            // sent again ends where the next SACKed block starts.
            final int holeLimit = goingBack ? skipSacked() : Integer.MAX_VALUE;
            final long nextOffset = offsetOfSend(sndNxt);
            final long unsent = sendBuffer.end() - nextOffset;
            final boolean finDue = finRequested && !Seq.gt(sndNxt, finSeq());
            if (unsent <= 0 && !finDue)
            {
                break;
            }
            // RFC 3042 limited transmit: each of the first two duplicate ACKs lets one segment of "previously unsent
            // data" out, never a resend of the go-back.
            final long limited = inRecovery || Seq.lt(sndNxt, sndMax) ? 0 : Math.min(dupAcks, 2) * (long)sndMss;
            final long window = Math.min(sndWnd, cc.cwnd() + limited);
            final long inFlight = flight();
            final long usable = Math.min(window - inFlight, windowFrom(sndNxt));
            int len = (int)Math.min(Math.min(unsent, segmentLimit()), Math.max(0, usable));
            if (len >= holeLimit)
            {
                // A hole smaller than a segment is sent whole: it is not a small segment by choice (no SWS wait).
                len = holeLimit;
            }
            if (unsent > 0 && len <= 0)
            {
                if (sndWnd == 0 && sndNxt == sndUna && persistDeadline == NONE)
                {
                    // RFC 9293 §3.8.6.1: probe a zero window, indefinitely.
                    persistDeadline = now + persistInterval();
                }
                break;
            }
            if (len > 0 && len < segmentLimit() && len != holeLimit)
            {
                final boolean allQueued = len == unsent;
                if (!allQueued && windowFrom(sndNxt) >= Math.min(unsent, segmentLimit()))
                {
                    // The peer's window has room for a full segment: what keeps it back is the data in flight
                    // against cwnd, whose ACKs will make room (or the RTO fires). No runt into the remainder, now or
                    // at the SWS override, which is for a small window of the peer's.
                    break;
                }
                if (!allQueued && len < maxSndWnd / 2 && !swsOverride)
                {
                    // Sender SWS avoidance (RFC 9293 §3.8.6.2.1): wait for a useful window, but only until
                    // the override timeout (MUST-38), or a window that never grows would stall us.
                    if (swsOverrideDeadline == NONE)
                    {
                        swsOverrideDeadline = now + SWS_OVERRIDE_NANOS;
                    }
                    break;
                }
                if (allQueued && !settings.noDelay && smallSegmentUnacknowledged() && !finRequested)
                {
                    // Nagle (RFC 9293 §3.7.4) as Minshall refined it (Linux's tcp_minshall_check): one small segment
                    // outstanding at a time. Full ones do not hold a small tail back: the tail of a write that
                    // ends an odd number of full segments would wait for the peer's delayed ACK (up to 500 ms).
                    break;
                }
            }
            final boolean fin = finDue && len == unsent;
            if (len == 0 && !fin)
            {
                break;
            }
            sentNew |= Seq.ge(sndNxt, sndMaxOfData());
            if (limited > 0)
            {
                limitedTransmitBytes += Math.min(len, Math.max(0, inFlight + len - cc.cwnd()));
            }
            transmitAtSndNxt(nextOffset, len, len > 0 && len == unsent, fin, now);
            if (len > 0 && len < segmentLimit())
            {
                smallSentEnd = sndNxt;
                smallSent = true;
            }
            sent = true;
            swsOverrideDeadline = NONE;
            if (fin)
            {
                break;
            }
        }
        if (sentNew)
        {
            // RFC 8985 §7.2: the PTO restarts after new data goes out (not a loss probe).
            schedulePto(now);
        }
        return sent;
    }

    /** Whether the last segment sent shorter than a full one is still unacknowledged (and not behind a go-back). */
    private boolean smallSegmentUnacknowledged()
    {
        return smallSent && Seq.gt(smallSentEnd, sndUna) && Seq.le(smallSentEnd, sndNxt);
    }

    /**
     * Going back after a timeout: move SND.NXT past the SACKed blocks it stands in (never at SND.UNA, which RFC 2018
     * §8 has sent again whatever a SACK may say); returns the bytes from it to the next SACKed block, or
     * {@link Integer#MAX_VALUE} when none lies ahead.
     */
    private int skipSacked()
    {
        for (int i = 0; i < sackedCount; i++)
        {
            if (Seq.gt(sndNxt, sndUna) && Seq.le(sackedStart[i], sndNxt) && Seq.lt(sndNxt, sackedEnd[i]))
            {
                sndNxt = sackedEnd[i];
            }
            else if (Seq.gt(sackedStart[i], sndNxt))
            {
                return sackedStart[i] - sndNxt;
            }
        }
        return Integer.MAX_VALUE;
    }

    /** Send {@code length} bytes (and a FIN if {@code fin}) at SND.NXT, and advance it. */
    private void transmitAtSndNxt(final long offset, final int length, final boolean push, final boolean fin, final long now)
    {
        final int flags = TcpHeader.ACK | (push ? TcpHeader.PSH : 0) | (fin ? TcpHeader.FIN : 0);
        // The probe's byte going out with the data after it is new data: timed, and no retransmission.
        final boolean retransmission = Seq.lt(sndNxt, sndMaxOfData());
        final int seq = sndNxt;
        sendSegment(flags, seq, offset, length, now);
        if (!retransmission && length > 0)
        {
            lastDataSentNanos = now;
            if (!rttTiming)
            {
                rttTiming = true;
                rttSeq = sndNxt;
                rttStart = now;
            }
        }
        sndNxt += length + (fin ? 1 : 0);
        if (!Seq.lt(sndNxt, sndMax))
        {
            sndMax = sndNxt;
            probeByteOutstanding = false;
        }
        if (retransmission)
        {
            countRetransmission(now);
            noteUndoRetransmission(seq, seq + length);
            if (seq == sndUna)
            {
                markUnaRetransmitted(now); // after SND.NXT moved: what is SACKed from there on was sent later
            }
        }
        if (rtoDeadline == NONE)
        {
            rtoDeadline = now + rtt.rto();
        }
    }

    /**
     * Retransmit one segment starting at {@code seq} (fast retransmit, partial ACK, SACK hole, rescue).
     *
     * A retransmission of SND.UNA's segment is noted for the detection of its loss ({@link #markUnaRetransmitted}).
     *
     * @return the sequence number after its data ({@code seq} when nothing was sent); HighRxt is the caller's.
     */
    private int retransmitAt(final int seq, final int maxLength, final long now)
    {
        final long offset = offsetOfSend(seq);
        // A retransmission never goes past what was sent (SND.MAX) nor past the hole it fills: bytes beyond
        // would be new data the sender does not account for, and the peer's ACKs for them would then fall
        // outside [SND.UNA, SND.MAX] and be refused (RFC 5961 §5.2) — a stall found at 5% loss.
        final long sentEnd = Math.min(sendBuffer.end(), offsetOfSend(sndMax));
        // Nor past the right edge SND.UNA + SND.WND, which the peer may have moved left since it first went (RFC 9293
        // §3.8.6, MUST-34 robustness): what lies beyond would be dropped (Linux's tcp_retransmit_skb: "receiver has
        // shrunk his window, and skb is out of new window, do not retransmit it"). Into a closed window nothing goes,
        // SND.UNA's segment included: the timeout leaves that to the persist timer, whose probes carry one octet.
        final long room = windowFrom(seq);
        int len = (int)Math.max(0, Math.min(Math.min(Math.min(segmentLimit(), maxLength), sentEnd - offset), room));
        int flags = TcpHeader.ACK;
        if (finRequested && seq + len == finSeq() && Seq.gt(sndMax, finSeq()) && len < room)
        {
            flags |= TcpHeader.FIN;
        }
        if (len == 0 && (flags & TcpHeader.FIN) == 0)
        {
            return seq;
        }
        sendSegment(flags, seq, offset, len, now);
        countRetransmission(now);
        noteUndoRetransmission(seq, seq + len);
        rttTiming = false;
        if (seq == sndUna)
        {
            markUnaRetransmitted(now);
        }
        return seq + len;
    }

    /** Octets of the peer's window from {@code seq} (not below SND.UNA) to its right edge; 0 at or past the edge. */
    private long windowFrom(final int seq)
    {
        return Math.max(0, sndWnd - (long)(seq - sndUna));
    }

    /** Send our SYN (or SYN,ACK) for the first time, or again when the retransmission timer expires, and arm the timer. */
    private void sendSyn(final long now)
    {
        emitSyn(now);
        if (!rttTiming && retransmits == 0)
        {
            rttTiming = true;
            rttSeq = iss;
            rttStart = now;
        }
        rtoDeadline = now + rtt.rto();
        rearm();
    }

    /**
     * A segment in SYN-RECEIVED asked for a reply (the peer's SYN again, or any unacceptable segment): our SYN,ACK
     * again, as Linux's tcp_check_req sends it, at most once per {@link TcpSettings#challengeAckIntervalNanos} (its
     * tcp_oow_rate_limited, per request). It is no expiry of the retransmission timer: the timer's deadline and its
     * count of retries stay as they are, so whatever the peer sends, short of completing the handshake, the half-open
     * connection ends after {@link TcpSettings#synAckRetransmits}. Before, each reply re-armed the timer, and a peer (or
     * anyone sending with its address) that kept asking held the connection, and its place in the SYN backlog, for
     * ever. The reply is a retransmission all the same: counted, no RTT sample is taken across it (Karn), and the data
     * that follows the handshake starts from a window of one segment ({@link #startDataPhase}).
     */
    private void replySynAck(final long now)
    {
        ackNow = false;
        if (synAckReplied && now - lastSynAckReplyNanos < settings.challengeAckIntervalNanos)
        {
            return;
        }
        synAckReplied = true;
        lastSynAckReplyNanos = now;
        countRetransmission(now);
        rttTiming = false;
        emitSyn(now);
    }

    /** Build and send our SYN or SYN,ACK with its options; SND.NXT is past it. Timers are the caller's. */
    private void emitSyn(final long now)
    {
        final TcpRepr r = tcp.repr();
        r.reset();
        r.flags = TcpHeader.SYN | (state == TcpState.SYN_RECEIVED ? TcpHeader.ACK : 0);
        r.seq = iss;
        r.ack = state == TcpState.SYN_RECEIVED ? rcvNxt : 0;
        r.mss = rcvMss;
        final boolean offer = state == TcpState.SYN_SENT;
        if (settings.windowScaling && (offer || sndWscale > 0 || rcvWscale > 0))
        {
            r.windowScale = rcvWscale;
        }
        if (settings.sack && (offer || sackEnabled))
        {
            r.sackPermitted = true;
        }
        if (settings.timestamps && (offer || tsEnabled))
        {
            r.timestampsPresent = true;
            r.tsVal = tsNow(now);
            r.tsEcr = state == TcpState.SYN_RECEIVED ? tsRecent : 0;
        }
        // RFC 7323 §2.2: the window field of a SYN is never scaled.
        final int window = Math.min(65535, receiveBuffer.window());
        r.window = window;
        rcvAdvertisedEdge = rcvNxt + window;
        tcp.emit(this, r, 0, 0, now);
        // RFC 7323 §4.3: Last.ACK.sent is what the SYN-ACK acknowledged (TS.Recent updates compare to it).
        lastAckSent = rcvNxt;
        if (Seq.gt(iss + 1, sndMax))
        {
            sndMax = iss + 1;
        }
        sndNxt = iss + 1;
        ackNow = false;
    }

    /**
     * Largest payload of the next segment: the effective MSS less the options it will carry
     * (timestamps always, SACK blocks while we hold out-of-order data), so no segment exceeds the MTU.
     */
    private int segmentLimit()
    {
        int options = tsEnabled ? 12 : 0;
        if (sackEnabled)
        {
            final int blocks = Math.min(receiveBuffer.outOfOrderRanges() + (dsackPending ? 1 : 0), tsEnabled ? 3 : 4);
            if (blocks > 0)
            {
                options += 4 + 8 * blocks;
            }
        }
        return mssBase - options;
    }

    /** Build and send one segment of this connection with our window, timestamps and SACK blocks. */
    private void sendSegment(final int flags, final int seq, final long dataOffset, final int length, final long now)
    {
        final TcpRepr r = tcp.repr();
        r.reset();
        r.flags = flags;
        r.seq = seq;
        r.ack = rcvNxt;
        r.window = advertiseWindow();
        if (tsEnabled)
        {
            r.timestampsPresent = true;
            r.tsVal = tsNow(now);
            r.tsEcr = tsRecent;
        }
        if (sackEnabled)
        {
            if (dsackPending)
            {
                r.addSackBlock(dsackStart, dsackEnd);
                dsackPending = false;
            }
            final int ranges = receiveBuffer.outOfOrderRanges();
            for (int i = 0; i < ranges; i++)
            {
                r.addSackBlock(seqOfReceive(receiveBuffer.outOfOrderStart(i)), seqOfReceive(receiveBuffer.outOfOrderEnd(i)));
            }
        }
        tcp.emit(this, r, dataOffset, length, now);
        lastAckSent = rcvNxt;
        ackNow = false;
        delayedAckDeadline = NONE;
        fullSegmentsUnacked = 0;
    }

    /** The window field to send: free receive space, never shrinking the advertised edge, with receiver SWS avoidance. */
    private int advertiseWindow()
    {
        final long free = offerableWindow();
        final long current = advertisedWindowLeft();
        final int scaled = windowField(free, current, edgeMayMove(free, current), rcvWscale);
        final int edge = rcvNxt + (scaled << rcvWscale);
        if (Seq.gt(edge, rcvAdvertisedEdge))
        {
            rcvAdvertisedEdge = edge;
        }
        return scaled;
    }

    /**
     * The window field for {@code free} offerable bytes (up to the end of the receive buffer) and {@code current} left
     * of the window last advertised, with scale {@code shift}. A scaled field can only express multiples of 2^shift
     * from RCV.NXT, which moves by any count of bytes. RFC 9293 §3.8.6.2.2 (SHLD-14): the right edge should not move
     * left, so the edge held is rounded up to the next multiple (as Linux's tcp_select_window does), and a held window
     * smaller than one step is still one step, not a zero window; a moving edge is the free space rounded down. But
     * never past the end of the buffer: there the field is the free space rounded down, a retraction of less than one
     * step, which RFC 7323 §2.4 and its Appendix F expect of a scaled window (SEG.WND = RCV.WND >> shift) and which
     * Linux's tcp_shrink_window allows for the same reason. Rounding up from each new RCV.NXT would otherwise carry the
     * edge further past the end with every short segment, so a full buffer would never show a zero window, and the
     * bytes the peer sent into that window would be dropped.
     */
    static int windowField(final long free, final long current, final boolean edgeMayMove, final int shift)
    {
        final long room = free >> shift;
        final long held = (current + (1L << shift) - 1) >> shift;
        return (int)Math.min(65535, edgeMayMove ? room : Math.min(held, room));
    }

    /**
     * Whether a read earns a window update of its own. Only when the edge may move (receiver SWS avoidance), and then
     * (Linux's tcp_cleanup_rbuf) when the window at least doubles, so a closed or nearly closed window is reopened at
     * once while one still half open or more rides on the next ACK or data segment, not one ACK more per read; or when
     * an ACK is owed anyway (the delayed-ACK timer runs) for more than one MSS taken since the last ACK: segments
     * shorter than a full MSS never make "every second full-sized segment", and a sender held by its congestion window
     * or by Nagle would wait for the timer on every flight. A window update is sent only when the field can say it:
     * with a scale step larger than an MSS (shift 11 and up) a read can free more than an MSS but less than one step,
     * and the update would repeat the window already advertised.
     */
    private boolean windowUpdateWorthSending()
    {
        final long free = offerableWindow();
        final long current = advertisedWindowLeft();
        if (!edgeMayMove(free, current))
        {
            return false;
        }
        final boolean fieldGrows = (free >> rcvWscale << rcvWscale) > current;
        return fieldGrows && free >= 2 * current
            || delayedAckDeadline != NONE && rcvNxt - lastAckSent > Math.max(rcvMss, 1);
    }

    /** Free receive space as far as the window field can express it (RFC 9293 §3.8.6.2.2, MUST-39: field and scale). */
    private long offerableWindow()
    {
        return Math.min(receiveBuffer.window(), 65535L << rcvWscale);
    }

    /** What is left of the window last advertised, from RCV.NXT to the advertised right edge. */
    private long advertisedWindowLeft()
    {
        return Math.max(0, rcvAdvertisedEdge - rcvNxt);
    }

    /** Receiver SWS avoidance (RFC 9293 §3.8.6.2.2): the right edge moves only by at least min(RCV.BUFF/2, Eff.snd.MSS). */
    private boolean edgeMayMove(final long free, final long current)
    {
        return free - current >= Math.min(receiveBuffer.capacity() / 2, Math.max(rcvMss, 1));
    }

    /**
     * SND.MAX less a zero-window probe's byte: the end of the data sent. The byte is no data in flight, so the stall
     * it probed is an idle period (RFC 5681 §4.1, RFC 9438 §5.8) and its next transmission no retransmission.
     */
    private int sndMaxOfData()
    {
        return probeByteOutstanding ? sndMax - 1 : sndMax;
    }

    /** Send a keep-alive or zero-window probe: SEG.SEQ = SND.NXT - 1 with no data (RFC 9293 §3.8.4), or one byte. */
    private void sendProbe(final long now, final boolean withByte)
    {
        final long offset = offsetOfSend(sndNxt);
        if (withByte && sendBuffer.end() - offset > 0)
        {
            // Zero-window probe: one new byte beyond the window (the peer ACKs with its window).
            sendSegment(TcpHeader.ACK, sndNxt, offset, 1, now);
            if (Seq.gt(sndNxt + 1, sndMax))
            {
                // SND.MAX covers the byte so that the peer's ACK of it is acceptable.
                sndMax = sndNxt + 1;
                probeByteOutstanding = true;
            }
            else
            {
                // The byte went before (an earlier probe's, or old data after a shrunken window): a peer that took it
                // answers this copy with the TS.Recent of the first, and that echo would time the persist interval.
                // Not a retransmission to count, but timed as one (echoTimesAck).
                retransmitTsVal = tsNow(now);
                retransmitUnechoed = true;
            }
        }
        else
        {
            sendSegment(TcpHeader.ACK, sndNxt - 1, 0, 0, now);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Tail loss probe (RFC 8985 §7)
    // ------------------------------------------------------------------------------------------

    /**
     * RFC 8985 §7.2: (re)start the PTO after new data went out or an ACK of new data came in, unless the connection is
     * in a recovery (fast recovery, or a timeout's: SND.UNA is below the recovery point), has a probe outstanding, or
     * has nothing in flight. The reduction a probe's repair made is no recovery: Linux probes in its CWR state too.
     * PTO = max(2 * SRTT, 10 ms) (1 s before any RTT sample), plus the worst-case delayed ACK when a lone segment is in
     * flight; never later than the RTO would fire.
     *
     * <p>§7.2 also leaves out a connection holding SACKed data below DupThresh, because RACK's reordering timer marks
     * its holes lost. Without RACK nothing would until the RTO: a small flight (cwnd of two or three segments after a
     * reduction) with one segment lost and one SACKed can raise neither DupThresh duplicate ACKs nor, cwnd-limited,
     * more data. The probe does it here: once it is SACKed, what lies unSACKed below it was sent at least a PTO
     * before it and is lost ({@link #lossProbeSacked}), RACK's own inference, a PTO later than its timer would.
     */
    private void schedulePto(final long now)
    {
        if (!sackEnabled || !settings.tailLossProbe || recovering() || tlpOutstanding
            || rtoDeadline == NONE)
        {
            ptoDeadline = NONE;
            return;
        }
        final long srtt = rtt.srtt();
        long pto = srtt < 0 ? RttEstimator.INITIAL_RTO_NANOS : Math.max(2 * srtt, MIN_PTO_NANOS);
        if (sndMax - sndUna <= sndMss)
        {
            pto += WORST_CASE_DELAYED_ACK_NANOS;
        }
        final long at = now + pto;
        ptoDeadline = at - rtoDeadline > 0 ? rtoDeadline : at;
    }

    /**
     * RFC 8985 §7.3: the PTO fired with no ACK since. One probe goes out, if none is outstanding and an RTT sample was
     * taken since the last: a segment of new data when the peer's window takes it (cwnd aside: the flight may exceed
     * it by this one segment), else the last segment sent, again. Its ACK or SACK reveals what was lost at the tail
     * ({@link #lossProbeSacked}, {@link #lossProbeAcked}). Then the RTO is re-armed, not the PTO.
     */
    private void onLossProbeTimeout(final long now)
    {
        if (tlpOutstanding || tlpAwaitingRttSample || recovering() || sndUna == sndMax || sndWnd == 0
            || !state.isSynchronizedBeforeTimeWait())
        {
            return;
        }
        final long offset = offsetOfSend(sndNxt);
        final long unsent = sendBuffer.end() - offset;
        final int length = (int)Math.min(unsent, segmentLimit());
        if (unsent > 0 && windowFrom(sndMax) >= length)
        {
            tlpStartSeq = sndNxt;
            tlpRetransmission = false;
            transmitAtSndNxt(offset, length, length == unsent, finRequested && length == unsent, now);
        }
        else if (windowFrom(lastSegmentStart(sndUna)) == 0)
        {
            // The last segment lies past a window the peer shrank, which would drop it: no probe (nor does Linux's
            // tcp_send_loss_probe send one); the RTO takes over.
            return;
        }
        else
        {
            tlpStartSeq = retransmitLastSegment(sndUna, now);
            tlpRetransmission = true;
            tlpInReducedWindow = Seq.lt(tlpStartSeq, reducedWindowEnd);
        }
        tlpEndSeq = sndMax;
        tlpOutstanding = true;
        tlpAwaitingRttSample = true;
        tcp.count(StackCounter.TCP_LOSS_PROBES);
        rtoDeadline = now + rtt.rto();
    }

    /**
     * No loss probe outstanding and none due: a recovery or a go-back has taken over from it, and no ACK may still be
     * read as the probe's answer ({@link #lossProbeAcked}).
     */
    private void dropLossProbe()
    {
        tlpOutstanding = false;
        ptoDeadline = NONE;
    }

    /** In fast recovery, or recovering from a timeout (go-back-N): below the recovery point. */
    private boolean recovering()
    {
        return inRecovery || Seq.lt(sndUna, recoveryPoint) || sndNxt != sndMax;
    }

    /**
     * RFC 8985 §7.4.2 TLP_process_ack, for an acceptable ACK once it has been taken. Once the ACK covers the probe: a
     * probe of new data has simply been delivered; a resent segment reported back as a duplicate (D-SACK), or answered
     * by a duplicate ACK (RFC 5681's, the window unchanged) without SACK, repaired nothing. An ACK beyond the resent
     * segment without either means that it repaired a loss (of the segment, or of the ACKs for it): congestion control
     * answers it as one loss event of the flight the probe ended. Another loss in that flight is still detected and
     * repaired (§7.4.2 asks only that cwnd not be reduced twice), but brings no second reduction: {@link
     * #reducedWindowEnd} moves to SND.MAX (RFC 6582's one per window). An ACK of exactly the resent segment, without
     * D-SACK, leaves the question open until a later ACK.
     */
    private void lossProbeAcked(final TcpRepr seg, final int ack, final boolean duplicate, final long flightBefore, final long now)
    {
        if (Seq.lt(ack, tlpEndSeq))
        {
            return;
        }
        final boolean dsackOfProbe = seg.sackBlockCount > 0 && Seq.ge(seg.sackLeft[0], tlpStartSeq)
            && Seq.le(seg.sackRight[0], tlpEndSeq);
        if (!tlpRetransmission || dsackOfProbe || (duplicate && seg.sackBlockCount == 0))
        {
            tlpOutstanding = false;
        }
        else if (Seq.gt(ack, tlpEndSeq))
        {
            tlpOutstanding = false;
            tcp.count(StackCounter.TCP_LOSS_PROBE_RECOVERIES);
            if (!tlpInReducedWindow)
            {
                cc.onFastRetransmit(flightBefore, now);
                cc.onRecoveryExit(now);
                reducedWindowEnd = sndMax;
            }
        }
        if (!tlpOutstanding && !duplicate)
        {
            // The ACK could not restart the PTO while the probe was outstanding (§7.2).
            schedulePto(now);
        }
    }

    /**
     * The outstanding probe has been SACKed above a hole: everything unSACKed below it was sent at least a PTO before
     * it and has not arrived within the probe's round trip. RACK would deem it lost from the send times (RFC 8985
     * §7.4.1, the general case); without per-segment send times this is RACK's inference for the one case the probe
     * sets up, and it starts SACK recovery (whose IsLost then takes every hole below the probe as lost).
     */
    private boolean lossProbeSacked()
    {
        if (!tlpOutstanding || sackedCount == 0 || !Seq.lt(sndUna, sackedStart[0]))
        {
            return false;
        }
        for (int i = 0; i < sackedCount; i++)
        {
            if (Seq.lt(sackedStart[i], tlpEndSeq) && Seq.gt(sackedEnd[i], tlpStartSeq))
            {
                return true;
            }
        }
        return false;
    }

    // ------------------------------------------------------------------------------------------
    // Timers
    // ------------------------------------------------------------------------------------------

    private long persistInterval()
    {
        return Math.min(60_000_000_000L, Math.max(rtt.rto(), 200_000_000L) << Math.min(persistBackoff, 10));
    }

    /**
     * Keep the single wheel timer no later than the earliest armed deadline. A timer that would fire earlier than
     * needed is left alone (as Linux's sk_reset_timer callers do with lazily pushed-back RTOs): {@link #onTimer}
     * acts only on deadlines that are due and re-arms, so an early expiry costs one wheel pass, while cancelling
     * and rescheduling on every ACK that moves the RTO later would cost two per segment.
     */
    void rearm()
    {
        long next = NONE;
        next = earliest(next, rtoDeadline);
        next = earliest(next, ptoDeadline);
        next = earliest(next, lostRetransmitDeadline);
        next = earliest(next, delayedAckDeadline);
        next = earliest(next, persistDeadline);
        next = earliest(next, swsOverrideDeadline);
        next = earliest(next, keepAliveDeadline);
        next = earliest(next, timeWaitDeadline);
        next = earliest(next, finWait2Deadline);
        if (timerId != Timers.NO_TIMER ? next == NONE || next - timerDeadline >= 0 : next == NONE)
        {
            return;
        }
        if (timerId != Timers.NO_TIMER)
        {
            tcp.timers().cancel(timerId);
            timerId = Timers.NO_TIMER;
        }
        timerDeadline = next;
        if (next != NONE)
        {
            timerId = tcp.timers().schedule(next, timerHandler);
        }
    }

    private static long earliest(final long a, final long b)
    {
        if (a == NONE)
        {
            return b;
        }
        if (b == NONE)
        {
            return a;
        }
        return b - a < 0 ? b : a;
    }

    void cancelTimers()
    {
        rtoDeadline = NONE;
        ptoDeadline = NONE;
        lostRetransmitDeadline = NONE;
        delayedAckDeadline = NONE;
        persistDeadline = NONE;
        swsOverrideDeadline = NONE;
        keepAliveDeadline = NONE;
        timeWaitDeadline = NONE;
        finWait2Deadline = NONE;
        if (timerId != Timers.NO_TIMER)
        {
            tcp.timers().cancel(timerId);
            timerId = Timers.NO_TIMER;
        }
        timerDeadline = NONE;
    }

    private void onTimer(final long now, final long id)
    {
        timerId = Timers.NO_TIMER;
        timerDeadline = NONE;
        boolean completed = false;
        try
        {
            expire(now);
            completed = true;
        }
        finally
        {
            // The wheel timer is gone, and only the end of an expiry (output) arms the next one: an expiry that threw
            // part way (Timers reports it) would otherwise leave every deadline set with no timer behind it, and no
            // retransmission, R2, keep-alive, TIME-WAIT or FIN-WAIT-2 expiry would come, ever.
            if (state != TcpState.CLOSED)
            {
                if (completed)
                {
                    rearm();
                }
                else
                {
                    rearmAfterFailedExpiry(now);
                }
            }
        }
    }

    /**
     * After an expiry that threw: the deadline it was handling may have been cleared with nothing in its place (a SYN
     * whose retransmission failed before its next deadline was set), so whatever is unacknowledged or unsent gets the
     * retransmission timer, whose expiries lead to R2. The wheel timer goes no sooner than an RTO from now: deadlines
     * left due would otherwise fire again at once, and a failure that repeats would spin the event loop.
     */
    private void rearmAfterFailedExpiry(final long now)
    {
        final boolean unfinished = sndMax != sndUna || sendBuffer.end() > offsetOfSend(sndNxt)
            || (finRequested && !Seq.gt(sndMax, finSeq()));
        if (rtoDeadline == NONE && state != TcpState.TIME_WAIT && unfinished)
        {
            rtoDeadline = now + rtt.rto();
        }
        rearm();
        final long retry = now + rtt.rto();
        if (timerId != Timers.NO_TIMER && timerDeadline - retry < 0)
        {
            tcp.timers().cancel(timerId);
            timerDeadline = retry;
            timerId = tcp.timers().schedule(retry, timerHandler);
        }
    }

    /** The timer work due at {@code now}; the caller arms the wheel timer again. */
    private void expire(final long now)
    {
        if (timeWaitDeadline != NONE && now - timeWaitDeadline >= 0)
        {
            tcp.remove(this, CLOSE_NORMAL);
            return;
        }
        if (finWait2Deadline != NONE && now - finWait2Deadline >= 0)
        {
            tcp.remove(this, CLOSE_TIMED_OUT);
            return;
        }
        if (ptoDeadline != NONE && now - ptoDeadline >= 0)
        {
            ptoDeadline = NONE;
            onLossProbeTimeout(now);
        }
        if (lostRetransmitDeadline != NONE && now - lostRetransmitDeadline >= 0)
        {
            lostRetransmitDeadline = NONE;
            checkUnaRetransmission(now);
        }
        if (rtoDeadline != NONE && now - rtoDeadline >= 0)
        {
            rtoDeadline = NONE;
            if (!onRetransmitTimeout(now))
            {
                return;
            }
        }
        if (persistDeadline != NONE && now - persistDeadline >= 0)
        {
            persistDeadline = NONE;
            if (sndWnd == 0 && sendBuffer.end() > offsetOfSend(sndNxt))
            {
                if (probesUnanswered >= settings.r2Retransmits)
                {
                    // The window may stay closed for ever, but only while the peer answers (RFC 9293 §3.8.6.1); one
                    // that vanished behind a zero window is given up after R2 probes, as after R2 retransmissions.
                    tcp.remove(this, CLOSE_TIMED_OUT);
                    return;
                }
                if (closedByApplication && orphanProbes >= settings.orphanRetries)
                {
                    // Nobody will read our reply or write again: a peer that answers every probe with a zero window
                    // must not hold the connection for ever (sockstress). Linux's tcp_probe_timer gives an orphan
                    // tcp_orphan_retries probes, answered or not; the reset tells a live peer it will get no more.
                    tcp.sendReset(localIp, localPort, remoteIp, remotePort, seqWithoutText(), 0, false, now);
                    tcp.remove(this, CLOSE_TIMED_OUT);
                    return;
                }
                sendProbe(now, true);
                probesUnanswered++;
                if (closedByApplication)
                {
                    orphanProbes++;
                }
                persistBackoff++;
                persistDeadline = now + persistInterval();
            }
        }
        if (swsOverrideDeadline != NONE && now - swsOverrideDeadline >= 0)
        {
            swsOverrideDeadline = NONE;
            if (sndWnd > 0 && sendBuffer.end() > offsetOfSend(sndNxt))
            {
                // SWS override timeout: send what the small window allows.
                swsOverride = true;
                output(now);
                swsOverride = false;
            }
        }
        if (keepAliveDeadline != NONE && now - keepAliveDeadline >= 0)
        {
            if (!settings.keepAlive)
            {
                // Turned off through the settings rather than keepAlive(false).
                keepAliveDeadline = NONE;
            }
            else if (sndMax != sndUna || sendBuffer.end() > offsetOfSend(sndUna))
            {
                // Not idle: data (or a FIN) waits for an ACK, or for the window. The retransmission or persist timer
                // and R2 judge the peer (RFC 9293 §3.8.3); keep-alive looks again an idle interval later (Linux's
                // tcp_keepalive_timer reschedules the same way). Once our FIN is acknowledged (FIN-WAIT-2), SND.UNA
                // lies one past the end of the data: idle, and probed, as Linux probes in FIN_WAIT2.
                keepAliveProbesSent = 0;
                keepAliveDeadline = now + settings.keepAliveIdleNanos;
            }
            else if (keepAliveProbesSent >= settings.keepAliveProbes)
            {
                // Unanswered probes need not mean a dead peer: only the probes or their answers may have been lost, or
                // the path may have healed since. The reset (<SEQ=SND.NXT><CTL=RST>, an active reset as ABORT's) tells
                // a peer that is alive after all that the connection is gone, as Linux's tcp_keepalive_timer sends
                // tcp_send_active_reset before tcp_write_err. R2 sends none (tcp_write_timeout's tcp_write_err neither).
                tcp.sendReset(localIp, localPort, remoteIp, remotePort, seqWithoutText(), 0, false, now);
                tcp.remove(this, CLOSE_TIMED_OUT);
                return;
            }
            else
            {
                keepAliveProbesSent++;
                sendProbe(now, false);
                keepAliveDeadline = now + settings.keepAliveIntervalNanos;
            }
        }
        if (delayedAckDeadline != NONE && now - delayedAckDeadline >= 0)
        {
            ackNow = true;
        }
        output(now);
    }

    /** RFC 6298 §5.4-5.7 and RFC 5681 §3.1: retransmit the earliest unacknowledged segment; false if the connection died. */
    private boolean onRetransmitTimeout(final long now)
    {
        tcp.count(StackCounter.TCP_RTO_EXPIRIES);
        // A window closed on unacknowledged data (shrunk, or the probe byte beyond it): nothing can be retransmitted
        // through it. The expiry still goes back to SND.UNA, but leaves the window to the persist timer, whose probes
        // the peer must answer; it is no retry towards R2, or a peer that keeps its window closed for long, as it may,
        // would have the connection dropped while answering every probe (as Linux's tcp_retransmit_timer). Only data
        // waits on the persist timer: a FIN alone is retransmitted, and counted, as usual, until the peer answers it
        // (updateSendWindow: while the application owns the connection, an answer behind a closed window clears the
        // count, as a probe's answer would).
        final boolean windowClosed = state.isSynchronized() && sndWnd == 0 && sendBuffer.end() > offsetOfSend(sndUna);
        final boolean opening = state == TcpState.SYN_SENT || state == TcpState.SYN_RECEIVED;
        if (!windowClosed)
        {
            retransmits++;
            if (retransmits == settings.r1Retransmits)
            {
                // R1 (RFC 9293 §3.8.3, MUST-20, SHLD-9): negative advice to IP, and the application is told.
                tcp.count(StackCounter.TCP_R1_REACHED);
                tcp.adviseUnreachable(remoteIp, now);
                eventDeliveryProblem = true;
                markDirty();
            }
            // A passive open's SYN,ACK has its own, shorter, limit (TcpSettings.synAckRetransmits, as Linux's
            // tcp_synack_retries); a simultaneous open's SYN,ACK is our SYN's and keeps the SYN's (MUST-23).
            final int limit = !opening ? settings.r2Retransmits : passive ? settings.synAckRetransmits : settings.synRetransmits;
            if (retransmits > limit)
            {
                // R2 reached (RFC 9293 §3.8.3, MUST-20): give up.
                tcp.remove(this, CLOSE_TIMED_OUT);
                return false;
            }
            rtt.backoff();
        }
        // Karn's rule (RFC 6298 §3): whatever was being timed may now be sent again.
        rttTiming = false;
        // RFC 8985 §7.3: a loss probe answered by nothing is deemed lost; the timeout's retransmissions replace it.
        dropLossProbe();
        if (opening)
        {
            countRetransmission(now);
            sendSyn(now);
            return true;
        }
        if (sndUna == sndMax)
        {
            return true;
        }
        // No undo across a timeout (its spurious case, RFC 5682 F-RTO, is not implemented): its reduction stands.
        undoValid = false;
        // A timeout outside a recovery (and not repeated) with at least three segments SACKed: the loss those SACKs
        // showed waited for a DupThresh raised too far. Back to three (Linux's tcp_enter_loss: "the degree of
        // reordering is over-estimated", when sacked_out >= sysctl_tcp_reordering in Open or Disorder).
        if (!inRecovery && !goingBack && sackEnabled && atLeastSegments(sackedCount, sackedBytes(), DUP_THRESH))
        {
            dupThresh = DUP_THRESH;
        }
        cc.onRetransmitTimeout(sndMax - sndUna, now);
        goBackToSndUna();
        if (!windowClosed)
        {
            rtoDeadline = now + rtt.rto();
        }
        return true;
    }

    // ------------------------------------------------------------------------------------------
    // Events and bookkeeping
    // ------------------------------------------------------------------------------------------

    void markDirty()
    {
        if (!dirty)
        {
            dirty = true;
            tcp.markDirty(this);
        }
    }

    /** After a receive burst: deliver events, then send what is owed. */
    void afterBurst(final long now)
    {
        dirty = false;
        try
        {
            deliverEvents();
        }
        finally
        {
            // A handler that threw (Tcp reports it) costs its events, not the ACK or data this burst owes.
            if (state != TcpState.CLOSED)
            {
                output(now);
            }
        }
    }

    /** The events of the burst, each once; none once the connection closed in the burst (onClosed said so). */
    private void deliverEvents()
    {
        final TcpHandler h = handler;
        if (h == null)
        {
            return;
        }
        if (eventConnected && state != TcpState.CLOSED)
        {
            eventConnected = false;
            h.onConnected(this);
        }
        if (eventReadable && state != TcpState.CLOSED)
        {
            eventReadable = false;
            h.onReadable(this);
        }
        if (eventPeerClosed && state != TcpState.CLOSED)
        {
            eventPeerClosed = false;
            h.onPeerClosed(this);
        }
        if (eventWritable && state != TcpState.CLOSED && sendBuffer.free() > 0)
        {
            eventWritable = false;
            h.onWritable(this);
        }
        if (eventDeliveryProblem && state != TcpState.CLOSED)
        {
            eventDeliveryProblem = false;
            h.onDeliveryProblem(this);
        }
    }

    private int tsNow(final long now)
    {
        return timestampClock(now, tsOffset);
    }

    /** The TSval at {@code now} of a connection whose timestamps have {@code offset}: a 1 ms clock (RFC 7323 §5.4). */
    static int timestampClock(final long now, final int offset)
    {
        return (int)(now / 1_000_000L) + offset;
    }

    long offsetOfSend(final int seq)
    {
        return sendBuffer.start() + (seq - seqOfSend(sendBuffer.start()));
    }

    int seqOfSend(final long offset)
    {
        return iss + 1 + (int)offset;
    }

    private long offsetOfReceive(final int seq)
    {
        return receiveBuffer.contiguousEnd() + (seq - seqOfReceive(receiveBuffer.contiguousEnd()));
    }

    private int seqOfReceive(final long offset)
    {
        return irs + 1 + (int)offset;
    }

    public long cwnd()
    {
        return cc.cwnd();
    }

    public long ssthresh()
    {
        return cc.ssthresh();
    }

    public long srttNanos()
    {
        return rtt.srtt();
    }

    public long rtoNanos()
    {
        return rtt.rto();
    }

    public long bytesAcked()
    {
        return bytesAcked;
    }

    public long bytesReceived()
    {
        return bytesReceived;
    }

    public long retransmittedSegments()
    {
        return retransmittedSegments;
    }

    /** False once a link on the path proved smaller than {@link #MIN_PATH_MTU}, until the path MTU is tried again. */
    boolean dontFragment()
    {
        return !pathMtuLocked;
    }

    public int sendMss()
    {
        return sndMss;
    }

    public boolean sackEnabled()
    {
        return sackEnabled;
    }

    public boolean timestampsEnabled()
    {
        return tsEnabled;
    }

    public int sendWindowScale()
    {
        return sndWscale;
    }

    public int receiveWindowScale()
    {
        return rcvWscale;
    }

    public String congestionControl()
    {
        return cc.name();
    }

    /**
     * The congestion controller itself, for tests and benchmarks that need a window state the wire would take long to
     * reach (congestion avoidance at a chosen cwnd). Its hooks and setters bypass the sender's loss recovery: an
     * application must not call them.
     */
    public CongestionControl congestionController()
    {
        return cc;
    }

    /** Every sequence variable, for failure messages and {@code nicstack conns -v}. */
    public String describe()
    {
        return toString() + " iss=" + iss + " una=" + (sndUna - iss) + " nxt=" + (sndNxt - iss) + " max=" + (sndMax - iss)
            + " sndWnd=" + sndWnd + " cwnd=" + cc.cwnd() + " ssthresh=" + cc.ssthresh() + " rto=" + rtt.rto() / 1_000_000 + "ms"
            + " retransmits=" + retransmits + " recovery=" + inRecovery + " recover=" + (recoveryPoint - iss) + " highRxt=" + (highRxt - iss)
            + " sacked=" + sackedCount + " dupAcks=" + dupAcks + " sendBuffer=[" + sendBuffer.start() + "," + sendBuffer.end() + ")"
            + " fin=" + finRequested + " rcvNxt=" + (rcvNxt - irs) + " rcvEdge=" + (rcvAdvertisedEdge - irs)
            + " readable=" + receiveBuffer.readable() + " ooo=" + receiveBuffer.outOfOrderRanges() + " peerFin=" + peerFinReceived
            + " timers(rto=" + rtoDeadline + " dack=" + delayedAckDeadline + " persist=" + persistDeadline + " sws=" + swsOverrideDeadline + " tw=" + timeWaitDeadline + " fw2=" + finWait2Deadline
            + " armed=" + timerDeadline + ")";
    }

    @Override
    public String toString()
    {
        return state + " " + Ipv4Address.format(localIp) + ":" + localPort + " " + Ipv4Address.format(remoteIp) + ":" + remotePort;
    }
}
