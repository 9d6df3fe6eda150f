package io.nicstack.stack.tcp;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.function.Consumer;

import org.agrona.DirectBuffer;
import org.agrona.ErrorHandler;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.NetDevice;
import io.nicstack.stack.iface.IpProtocolHandler;
import io.nicstack.stack.iface.Ipv4;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.storage.ReceiveBuffer;
import io.nicstack.stack.storage.RingReceiveBuffer;
import io.nicstack.stack.storage.RingSendBuffer;
import io.nicstack.stack.storage.SendBuffer;
import io.nicstack.stack.tcp.cc.CongestionControls;
import io.nicstack.stack.tcp.isn.IsnGenerator;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.time.Timers;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.TcpFrameShape;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.TcpRepr;

/**
 * The TCP layer: segment validation, demultiplexing by 4-tuple, listeners (bounded SYN backlog,
 * SYN cookies beyond it), the CLOSED-state reset rules of RFC 9293 §3.10.7.1, segment emission,
 * and the in-process API ({@link #listen}, {@link #connect}).
 */
public final class Tcp implements IpProtocolHandler
{
    /** RFC 6335 dynamic port range for active opens. */
    private static final int EPHEMERAL_FIRST = 49152;
    private static final int EPHEMERAL_COUNT = 65536 - EPHEMERAL_FIRST;
    /** Receive buffer out-of-order range limit per connection (bounds SACK bookkeeping too). */
    private static final int MAX_OOO_RANGES = 16;
    /** Half-open connections with state, stack-wide; more SYNs are answered statelessly with cookies. */
    static final int MAX_HALF_OPEN = 256;
    /** Linux's tcp_max_tw_buckets on a small host; a connection in TIME-WAIT keeps no buffers, a few hundred bytes. */
    public static final int DEFAULT_MAX_TIME_WAIT = 65_536;
    /** Closed connections' buffers kept for reuse. */
    private static final int POOL_LIMIT = 1024;

    private final Ipv4 ip;
    private final StackCounters counters;
    private final Timers timers;
    private final TcpSettings defaults;
    private final IsnGenerator isn;
    private final SynCookies cookies;
    /** Told of an exception from an application's handler ({@link #afterBurst}). */
    private final ErrorHandler handlerErrors;
    private final Long2ObjectHashMap<TcpConnection> connections = new Long2ObjectHashMap<>();
    /**
     * The connection the last segment went to: a bulk stream's next segment skips the hash lookup. Always a connection
     * in the table ({@link #remove} clears it).
     */
    private TcpConnection lastConnection;
    private long segmentsInBurst;
    /** Segments of this burst that header prediction took ({@code TcpConnection.predicted}). */
    long predictedInBurst;
    private long checksumsTrustedInBurst;
    private final Int2ObjectHashMap<TcpListener> listeners = new Int2ObjectHashMap<>();
    private final ArrayDeque<RingSendBuffer> sendPool = new ArrayDeque<>();
    private final ArrayDeque<RingReceiveBuffer> receivePool = new ArrayDeque<>();
    private long bufferBytes;
    private long bufferBudget = Runtime.getRuntime().maxMemory() / 2;
    private int timeWaitCount;
    private int maxTimeWait = DEFAULT_MAX_TIME_WAIT;
    private final TcpRepr in = new TcpRepr();
    private final TcpFrameShape shape = new TcpFrameShape();
    private final int localAddress;
    private final TcpRepr out = new TcpRepr();
    private final TcpHeader header = new TcpHeader();
    private final UnsafeBuffer scratch = new UnsafeBuffer(ByteBuffer.allocateDirect(65536));
    private final int mss;
    private TcpConnection[] dirty = new TcpConnection[64];
    private int dirtyCount;
    /**
     * Listeners with connections to announce after this burst, each once: a list, not a scan of the listener table,
     * whose callbacks may close or open listeners (a map changed while iterated skips or repeats entries).
     */
    private TcpListener[] readyListeners = new TcpListener[8];
    private int readyListenerCount;
    /** Picks the next ephemeral port; unsigned, it wraps at 2^32. Package-private so a test can start it near the wrap. */
    int nextEphemeral;
    /** Ports of the dynamic range tried by active opens, for a test to see how far a search went. */
    long ephemeralPortsTried;
    /** A destination ({@code key(ip, port, 0)}) every dynamic port towards which was taken when last searched. */
    private long fullDestination;
    private boolean fullDestinationKnown;
    private long now;
    /** Header prediction for ESTABLISHED connections ({@code TcpConnection.predicted}); off only to test it. */
    boolean headerPrediction = true;
    /** Early demultiplexing ({@link #onFrame}); off only to test it, and for an address that is also a broadcast. */
    boolean earlyDemux;
    /** Segments of this burst that {@link #onFrame} took. */
    private long earlyDemuxInBurst;
    /** RFC 5961 §7: challenge ACKs per second for the whole stack, about 1000 on average (see the class). */
    private final ChallengeAckBudget challengeAcks = ChallengeAckBudget.withRandomKey(1000);

    public Tcp(final Ipv4 ip, final StackCounters counters, final Timers timers, final TcpSettings defaults,
        final IsnGenerator isn, final SynCookies cookies, final ErrorHandler handlerErrors)
    {
        this.ip = ip;
        this.counters = counters;
        this.timers = timers;
        this.defaults = defaults;
        this.isn = isn;
        this.cookies = cookies;
        this.handlerErrors = handlerErrors;
        this.mss = ip.mtu() - Ipv4Header.MIN_HEADER_LENGTH - TcpHeader.HEADER_LENGTH;
        this.localAddress = ip.config().address();
        // An address that is also a broadcast address (the subnet's all-ones one, e.g. 10.0.0.255/24) makes IPv4 hand
        // TCP its datagrams as broadcasts, which TCP drops: no early path around that. The config is read once here.
        this.earlyDemux = !ip.isBroadcast(localAddress);
        ip.onLinkFailure(Ipv4Header.PROTOCOL_TCP, this::onLinkFailure);
    }

    /** The offset of the TCP timestamps of this 4-tuple's connections ({@link IsnGenerator#timestampOffset}). */
    int timestampOffset(final int localPort, final int remoteIp, final int remotePort)
    {
        return isn.timestampOffset(localAddress, localPort, remoteIp, remotePort);
    }

    /** Connection table key: remote address, remote port and local port (the local address is ours). */
    static long key(final int remoteIp, final int remotePort, final int localPort)
    {
        return ((remoteIp & 0xFFFF_FFFFL) << 32) | ((long)remotePort << 16) | localPort;
    }

    /** Defaults copied into every new connection's settings. */
    public TcpSettings defaults()
    {
        return defaults;
    }

    /**
     * Listen on {@code port} (0: an unused port of the dynamic range, as bind(2) to port 0; {@link TcpListener#port()}
     * says which); at most {@code backlog} connections (at least 1) wait in SYN-RECEIVED or for accept.
     * {@code onAcceptable} is called after a burst that queued connections (edge-triggered): it should accept until
     * {@link TcpListener#accept()} returns null, as it is not called again for those left queued until another one is.
     *
     * @throws IllegalStateException when the port is taken (or, for 0, every port of the dynamic range).
     */
    public TcpListener listen(final int port, final int backlog, final Consumer<TcpListener> onAcceptable)
    {
        final int local = port == 0 ? unusedPort() : port;
        checkPort(local);
        if (listeners.containsKey(local))
        {
            throw new IllegalStateException("tcp port in use: " + local);
        }
        final TcpListener listener =
            new TcpListener(this, local, Math.max(1, backlog), defaults.copy().check(), onAcceptable);
        listeners.put(local, listener);
        return listener;
    }

    /**
     * A port of the dynamic range no listener holds, from the counter active opens use, so it is unlikely to be the
     * local port of a connection too (which only shares the table if the peer's address and port are also the same).
     */
    private int unusedPort()
    {
        final int offset = isn.portOffset(localAddress, 0, 0);
        for (int i = 0; i < EPHEMERAL_COUNT; i++)
        {
            final int candidate = nextEphemeralPort(offset);
            if (!listeners.containsKey(candidate))
            {
                return candidate;
            }
        }
        throw new IllegalStateException("tcp: every port of the dynamic range is in use");
    }

    /**
     * The next port of the dynamic range (RFC 6335) to try, for an active open or a listen on port 0: RFC 6056's
     * Algorithm 3, one counter for all destinations plus each destination's secret {@code offset}
     * ({@link IsnGenerator#portOffset}).
     */
    private int nextEphemeralPort(final int offset)
    {
        // Unsigned: past 2^31 increments a signed remainder turns negative, a port below the dynamic range.
        return EPHEMERAL_FIRST + Integer.remainderUnsigned(offset + nextEphemeral++, EPHEMERAL_COUNT);
    }

    /**
     * A port of the dynamic range from which no connection goes to {@code remoteIp:remotePort} and on which no listener
     * is. When every one is taken, the destination is remembered as full, and further attempts towards it fail without
     * trying any port until a connection towards it ends or a listener closes: only those free a port (a new
     * connection or listener takes none), so an app repeating CONNECTs to a full destination costs one table lookup
     * each, not {@value #EPHEMERAL_COUNT} pairs of them.
     *
     * @throws IllegalStateException when there is none.
     */
    private int freeEphemeralPort(final int remoteIp, final int remotePort)
    {
        final long destination = key(remoteIp, remotePort, 0);
        if (!(fullDestinationKnown && fullDestination == destination))
        {
            final int offset = isn.portOffset(localAddress, remoteIp, remotePort);
            for (int i = 0; i < EPHEMERAL_COUNT; i++)
            {
                final int candidate = nextEphemeralPort(offset);
                ephemeralPortsTried++;
                if (!listeners.containsKey(candidate) && !connections.containsKey(destination | candidate))
                {
                    return candidate;
                }
            }
            fullDestinationKnown = true;
            fullDestination = destination;
        }
        throw new IllegalStateException("no free ephemeral port towards this peer");
    }

    void unlisten(final TcpListener listener)
    {
        listeners.remove(listener.port());
        fullDestinationKnown = false; // its port may be free now
    }

    /**
     * Active open to {@code remoteIp:remotePort} from an ephemeral port; events go to {@code handler}. The connection
     * gets a copy of {@code settings} (null: the stack's defaults), so the caller may reuse it; change the connection's
     * own with {@link TcpConnection#settings()}.
     */
    public TcpConnection connect(final int remoteIp, final int remotePort, final TcpHandler handler, final TcpSettings settings)
    {
        return connect(remoteIp, remotePort, handler, settings, null);
    }

    /**
     * Active open whose buffers come from {@code provider} (null: the stack's own rings).
     *
     * @throws IllegalStateException when no buffers are available (the provider returned null).
     */
    public TcpConnection connect(
        final int remoteIp, final int remotePort, final TcpHandler handler, final TcpSettings settings, final BufferProvider provider)
    {
        checkPort(remotePort);
        // RFC 9293 §3.9.2 (MUST-46): an OPEN to a broadcast, multicast or unspecified address is an error; so is one
        // to an address no peer can hold (loopback, class E, our own).
        if (ip.isMartian(remoteIp))
        {
            throw new IllegalArgumentException("tcp cannot connect to " + io.nicstack.stack.wire.Ipv4Address.format(remoteIp));
        }
        final int localPort = freeEphemeralPort(remoteIp, remotePort);
        final TcpConnection c = newConnection(localPort, remoteIp, remotePort, (settings != null ? settings : defaults).copy(), provider);
        if (c == null)
        {
            throw new IllegalStateException(provider != null ? "no buffers free for a new connection" :
                "tcp buffer memory limit reached (" + bufferBytes + " of " + bufferBudget + " bytes in use)");
        }
        c.handedToApplication = true;
        c.handler = handler;
        connections.put(c.key, c);
        counters.increment(StackCounter.TCP_ACTIVE_OPENS);
        c.connect(isn.isn(ip.config().address(), localPort, remoteIp, remotePort, now), now);
        return c;
    }

    /**
     * A connection with its buffers, or null when the buffer budget (or direct memory) is exhausted:
     * a flood must cost SYN cookies, never the daemon (RFC 4987 §3).
     */
    private TcpConnection newConnection(
        final int localPort, final int remoteIp, final int remotePort, final TcpSettings settings, final BufferProvider provider)
    {
        // Before any buffer is taken: for an active open, and again for a listener (checked at listen) whose settings
        // changed since.
        settings.check();
        if (provider != null)
        {
            // Provided buffers (pipe slots) are bounded by their provider, not by the stack's budget.
            final BufferProvider.ConnectionBuffers buffers = provider.allocate();
            if (buffers == null)
            {
                counters.increment(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED);
                return null;
            }
            final TcpConnection c = new TcpConnection(this, ip.config().address(), localPort, remoteIp, remotePort, settings,
                buffers.sendBuffer(), buffers.receiveBuffer(), CongestionControls.create(settings.congestionControl));
            c.bufferProvider = provider;
            c.buffers = buffers;
            return c;
        }
        final long bytes = (long)settings.sendBufferBytes + settings.receiveBufferBytes;
        if (bufferBytes + bytes > bufferBudget)
        {
            counters.increment(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED);
            return null;
        }
        final RingSendBuffer send;
        final RingReceiveBuffer receive;
        try
        {
            send = takeSendBuffer(settings.sendBufferBytes);
            receive = takeReceiveBuffer(settings.receiveBufferBytes);
        }
        catch (final OutOfMemoryError e)
        {
            // Direct memory reservation failed: a resource limit, not a reason to stop the event loop.
            counters.increment(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED);
            return null;
        }
        bufferBytes += bytes;
        return new TcpConnection(this, ip.config().address(), localPort, remoteIp, remotePort, settings, send, receive,
            CongestionControls.create(settings.congestionControl));
    }

    private RingSendBuffer takeSendBuffer(final int capacity)
    {
        final RingSendBuffer pooled = capacity == defaults.sendBufferBytes ? sendPool.poll() : null;
        return pooled != null ? pooled : new RingSendBuffer(capacity);
    }

    private RingReceiveBuffer takeReceiveBuffer(final int capacity)
    {
        final RingReceiveBuffer pooled = capacity == defaults.receiveBufferBytes ? receivePool.poll() : null;
        return pooled != null ? pooled : new RingReceiveBuffer(capacity, MAX_OOO_RANGES);
    }

    /**
     * Account for a closed connection's buffers and, if no application ever held the connection (a
     * half-open one that died, a queued one never accepted: what a flood leaves), reuse them instead
     * of churning direct memory. An application may still read a closed connection, so its buffers stay its own.
     */
    private void recycle(final TcpConnection c)
    {
        if (c.buffersDetached)
        {
            // Given back when it entered TIME-WAIT (timeWaitEntered).
            return;
        }
        if (c.bufferProvider != null)
        {
            // Provided buffers go back to their provider, which frees them when their other user lets go too.
            c.bufferProvider.release(c.buffers);
            return;
        }
        bufferBytes -= (long)c.sendBuffer.capacity() + c.receiveBuffer.capacity();
        if (!c.handedToApplication)
        {
            pool(c.sendBuffer, c.receiveBuffer);
        }
    }

    /** Keep the stack's own rings of the default sizes for the next connections, up to {@link #POOL_LIMIT} of each. */
    private void pool(final SendBuffer sendBuffer, final ReceiveBuffer receiveBuffer)
    {
        if (sendBuffer instanceof RingSendBuffer && sendBuffer.capacity() == defaults.sendBufferBytes
            && sendPool.size() < POOL_LIMIT)
        {
            final RingSendBuffer b = (RingSendBuffer)sendBuffer;
            b.reset();
            sendPool.add(b);
        }
        if (receiveBuffer instanceof RingReceiveBuffer && receiveBuffer.capacity() == defaults.receiveBufferBytes
            && receivePool.size() < POOL_LIMIT)
        {
            final RingReceiveBuffer b = (RingReceiveBuffer)receiveBuffer;
            b.reset();
            receivePool.add(b);
        }
    }

    /** Upper bound on send plus receive buffer bytes of all connections (default: half the JVM's max heap, the direct-memory default). */
    public void bufferBudget(final long bytes)
    {
        bufferBudget = bytes;
    }

    /**
     * Bound the connections in TIME-WAIT at once, stack-wide (default {@link #DEFAULT_MAX_TIME_WAIT}), as Linux's
     * tcp_max_tw_buckets: TIME-WAIT counts against no listener's limit, so nothing else bounds it. A connection that
     * would enter TIME-WAIT beyond it acknowledges the peer's FIN, then ends at once (counted).
     */
    public void maxTimeWait(final int max)
    {
        if (max < 0)
        {
            throw new IllegalArgumentException("maxTimeWait must not be negative: " + max);
        }
        maxTimeWait = max;
    }

    /** Connections in TIME-WAIT that keep their 2*MSL. */
    public int timeWaitCount()
    {
        return timeWaitCount;
    }

    /**
     * Whether {@code c}, entering TIME-WAIT, may keep it for 2*MSL: false (and counted) beyond {@link #maxTimeWait}, and
     * the caller ends it as soon as its last ACK is out.
     */
    boolean admitTimeWait(final TcpConnection c)
    {
        if (timeWaitCount >= maxTimeWait)
        {
            counters.increment(StackCounter.TCP_TIME_WAIT_OVERFLOW);
            return false;
        }
        timeWaitCount++;
        c.countedInTimeWait = true;
        return true;
    }

    /** Half-open connections of all listeners; beyond {@link #MAX_HALF_OPEN} new SYNs are answered with cookies. */
    private int halfOpen()
    {
        int n = 0;
        for (final TcpListener l : listeners.values())
        {
            n += l.synReceived();
        }
        return n;
    }

    private static void checkPort(final int port)
    {
        if (port < 1 || port > 65535)
        {
            throw new IllegalArgumentException("tcp port out of range: " + port);
        }
    }

    /** Connections in the table (all states but LISTEN). */
    public int connectionCount()
    {
        return connections.size();
    }

    /**
     * ABORT every connection (RFC 9293 §3.10.5): the peer of each connection in SYN-RECEIVED, ESTABLISHED, FIN-WAIT-1,
     * FIN-WAIT-2 or CLOSE-WAIT gets a reset (not in CLOSING, LAST-ACK or TIME-WAIT, where both ends have closed, nor in
     * SYN-SENT), the application its close event. For a stack going away (the daemon stopping), so that no peer is
     * left waiting on a connection nobody will serve. Listeners stay; returns how many connections there were.
     */
    public int abortAll()
    {
        final TcpConnection[] all = connections.values().toArray(new TcpConnection[0]);
        for (final TcpConnection c : all)
        {
            c.abort();
        }
        return all.length;
    }

    /** Visit every connection (for {@code nicstack conns}). */
    public void forEachConnection(final Consumer<TcpConnection> visitor)
    {
        connections.values().forEach(visitor);
    }

    /**
     * Early demultiplexing, as Linux's {@code tcp_v4_early_demux}: a frame of the shape nearly every segment of a stream
     * has ({@link TcpFrameShape}: Ethernet to us, IPv4 without options, not a fragment) that belongs to a connection
     * goes to that connection straight from the device, past the Ethernet and IPv4 layers. The connection the last
     * segment went to is tried first (a bulk stream's next segment), then the connection table, so interleaved flows
     * take this path too. The frame passes every check those layers and {@link #onDatagram} would make on the way (the
     * source address is the connection's, vetted when the connection was made), and gets the same processing and
     * counts. A frame for no connection (a SYN to a listener, a segment for a closed port) and any other frame,
     * including one whose TCP header does not parse cleanly or whose checksum fails, returns false having changed only
     * scratch state, and takes the layers, which count its drop by reason. {@code TcpEarlyDemuxTest} holds the two ways to
     * the same frames sent and the same counters. {@code NetStack} calls this before its Ethernet demultiplexing, only
     * for the TCP it registered with IPv4, which never changes ({@link Ipv4#register}).
     *
     * @param checksumTrusted the device verified the TCP checksum ({@code FrameHandler.RX_L4_CHECKSUM_TRUSTED}).
     * @return true when the segment went to its connection, false when the frame is for the layers.
     */
    public boolean onFrame(final DirectBuffer buffer, final int offset, final int length, final long mac,
        final boolean checksumTrusted, final long nowNanos)
    {
        final TcpFrameShape f = shape;
        if (!earlyDemux || !f.decode(buffer, offset, length, mac, localAddress))
        {
            return false;
        }
        final TcpConnection c = connection(key(f.source, f.ports >>> 16, f.ports & 0xFFFF));
        if (c == null || in.parse(buffer, f.tcpOffset, f.tcpLength) != TcpRepr.OK
            || !checksumAccepted(checksumTrusted, buffer, f.tcpOffset, f.tcpLength, f.source, localAddress))
        {
            return false;
        }
        now = nowNanos;
        segmentsInBurst++;
        earlyDemuxInBurst++;
        lastConnection = c;
        c.onSegment(in, buffer, nowNanos);
        return true;
    }

    /** The connection with {@code key}: the last segment's when it matches (a bulk stream), else the table's, or null. */
    private TcpConnection connection(final long key)
    {
        final TcpConnection last = lastConnection;
        return last != null && last.key == key ? last : connections.get(key);
    }

    /**
     * The TCP segment at {@code [offset, offset + length)} may be taken: the device verified its checksum (counted
     * for this burst), or it verifies here against the pseudo-header of {@code source} and {@code destination}.
     */
    private boolean checksumAccepted(final boolean trusted, final DirectBuffer buffer, final int offset, final int length,
        final int source, final int destination)
    {
        if (trusted)
        {
            checksumsTrustedInBurst++;
            return true;
        }
        return header.wrap(buffer, offset, length).checksumValid(source, destination);
    }

    @Override
    public void onDatagram(
        final Ipv4Header ipHeader,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final boolean broadcast,
        final long nowNanos)
    {
        now = nowNanos;
        if (broadcast)
        {
            // RFC 9293 §3.9.1 / RFC 1122 4.2.3.10: a SYN to a broadcast address is discarded; so is everything else.
            counters.increment(StackCounter.TCP_DROP_BROADCAST);
            return;
        }
        final int status = in.parse(buffer, offset, length);
        if (status == TcpRepr.TRUNCATED || status == TcpRepr.BAD_DATA_OFFSET)
        {
            counters.increment(StackCounter.TCP_DROP_TRUNCATED);
            return;
        }
        final int src = ip.datagramSource();
        if (!checksumAccepted(ip.l4ChecksumTrusted(), buffer, offset, length, src, ipHeader.destination()))
        {
            counters.increment(StackCounter.TCP_DROP_BAD_CHECKSUM);
            return;
        }
        final TcpConnection c = connection(key(src, in.sourcePort, in.destinationPort));
        // A connection's remote address was vetted when it was made (connect, onListenerSegment), so only a segment
        // for no connection is checked here.
        if (c == null && ip.isMartian(src))
        {
            // RFC 9293 §3.9.2 (MUST-63): a SYN (or anything else) from a broadcast/multicast source is ignored. The
            // IP layer drops such sources first (Ipv4.isMartian); this holds for TCP whatever delivers to it.
            counters.increment(StackCounter.TCP_DROP_BROADCAST);
            return;
        }
        segmentsInBurst++;
        if (status == TcpRepr.BAD_OPTION)
        {
            // RFC 9293 §3.2 (MUST-7): an illegal option length must not crash us; the options parsed so far stand.
            counters.increment(StackCounter.TCP_BAD_OPTIONS);
        }
        if (c != null)
        {
            lastConnection = c;
            c.onSegment(in, buffer, nowNanos);
            return;
        }
        final TcpListener listener = listeners.get(in.destinationPort);
        if (listener != null)
        {
            onListenerSegment(listener, src, buffer, nowNanos);
            return;
        }
        onClosedSegment(ipHeader.destination(), src, nowNanos);
    }

    /**
     * RFC 9293 §3.9.2 (MUST-54): an ICMP error quoting a segment of ours goes to the connection that sent it. The
     * quote holds our port, the remote port and the segment's sequence number in its first 8 octets.
     */
    public void onIcmpError(
        final int type, final int code, final int restOfHeader, final int remoteIp, final DirectBuffer quoted, final int offset,
        final int length, final long nowNanos)
    {
        // Only the first 8 octets are promised: ports and sequence number, which these getters read.
        final TcpHeader h = header.wrap(quoted, offset, length);
        final int seq = h.sequenceNumber();
        final TcpConnection c = connections.get(key(remoteIp, h.destinationPort(), h.sourcePort()));
        if (c == null)
        {
            counters.increment(StackCounter.TCP_ICMP_IGNORED);
            return;
        }
        now = nowNanos;
        c.onIcmpError(type, code, restOfHeader & 0xFFFF, seq, nowNanos);
    }

    /**
     * A segment of ours was discarded unsent: ARP gave up on its first hop (RFC 1122 §3.3.1.4's link-layer report; Linux
     * delivers a host unreachable to itself, tcp_v4_err). It goes to the connection that sent it, found as an ICMP
     * error's quote finds it; one that is gone, or whose segment is no longer in flight, is not told.
     */
    private void onLinkFailure(
        final int remoteIp, final DirectBuffer segment, final int offset, final int length, final long nowNanos)
    {
        final TcpHeader h = header.wrap(segment, offset, length);
        final TcpConnection c = connections.get(key(remoteIp, h.destinationPort(), h.sourcePort()));
        if (c != null)
        {
            now = nowNanos;
            c.onLinkFailure(h.sequenceNumber(), nowNanos);
        }
    }

    /** RFC 9293 §3.10.7.1: no connection. Answer anything but a RST with a RST. */
    private void onClosedSegment(final int localIp, final int remoteIp, final long nowNanos)
    {
        if (in.hasFlags(TcpHeader.RST))
        {
            return;
        }
        counters.increment(StackCounter.TCP_NO_CONNECTION);
        replyReset(localIp, remoteIp, nowNanos);
    }

    private void replyReset(final int localIp, final int remoteIp, final long nowNanos)
    {
        if (in.hasFlags(TcpHeader.ACK))
        {
            sendReset(localIp, in.destinationPort, remoteIp, in.sourcePort, in.ack, 0, false, nowNanos);
        }
        else
        {
            final int segLen = in.payloadLength + (in.hasFlags(TcpHeader.SYN) ? 1 : 0) + (in.hasFlags(TcpHeader.FIN) ? 1 : 0);
            sendReset(localIp, in.destinationPort, remoteIp, in.sourcePort, 0, in.seq + segLen, true, nowNanos);
        }
    }

    /** RFC 9293 §3.10.7.2: LISTEN, plus SYN cookies (RFC 4987 §3.6) once the backlog is full. */
    private void onListenerSegment(final TcpListener listener, final int remoteIp, final DirectBuffer buffer, final long nowNanos)
    {
        final int localIp = ip.config().address();
        if (in.hasFlags(TcpHeader.RST))
        {
            return;
        }
        if (in.hasFlags(TcpHeader.ACK))
        {
            // An ACK is checked as a cookie only while cookies this listener sent may still be valid (as Linux's
            // tcp_synq_no_recent_overflow): otherwise a forger would get one connection per 2^24 tries at any time.
            if (!in.hasFlags(TcpHeader.SYN) && listener.sentCookiesSince(nowNanos - SynCookies.MAX_LIFETIME_NANOS)
                && tryCookie(listener, remoteIp, buffer, nowNanos))
            {
                return;
            }
            counters.increment(StackCounter.TCP_NO_CONNECTION);
            sendReset(localIp, in.destinationPort, remoteIp, in.sourcePort, in.ack, 0, false, nowNanos);
            return;
        }
        if (!in.hasFlags(TcpHeader.SYN))
        {
            return;
        }
        if (in.hasFlags(TcpHeader.FIN))
        {
            // SYN and FIN together open nothing (a scanner's probe, or one for stacks that took it as a SYN): dropped
            // without a connection, a cookie or a reply, as Linux's tcp_rcv_state_process does in LISTEN.
            counters.increment(StackCounter.TCP_DROP_SYN_FIN);
            return;
        }
        if (listener.atConnectionLimit() && !listener.roomBesideHalfOpen())
        {
            // Bounded connections per listener, every one of them synchronized: refuse at once rather than queue
            // state or cookies.
            counters.increment(StackCounter.TCP_LISTEN_OVERFLOWS);
            replyReset(localIp, remoteIp, nowNanos);
            return;
        }
        // At the limit only through half-open connections (perhaps spoofed SYNs, RFC 4987 §2): answer statelessly,
        // and a completed cookie handshake takes the place of the oldest of them (tryCookie). Refused, peers that
        // have proven nothing would lock out every real client until their SYN,ACKs ran out.
        if (listener.atConnectionLimit() || cookiesOnly(listener))
        {
            if (listener.acceptQueueFull())
            {
                counters.increment(StackCounter.TCP_LISTEN_SYN_DROPPED);
                return;
            }
            sendCookie(listener, localIp, remoteIp, nowNanos);
            return;
        }
        if (!openFromSyn(listener, remoteIp, in, isn.isn(localIp, in.destinationPort, remoteIp, in.sourcePort, nowNanos), nowNanos))
        {
            sendCookie(listener, localIp, remoteIp, nowNanos);
        }
    }

    /** Whether a SYN to {@code listener} can only be answered statelessly: its backlog or all half-open room is full. */
    private boolean cookiesOnly(final TcpListener listener)
    {
        return listener.full() || halfOpen() >= MAX_HALF_OPEN;
    }

    /**
     * A connection in SYN-RECEIVED for {@code syn}, counted in {@code listener}'s backlog, its SYN,ACK sent with ISN
     * {@code iss}; false, having changed nothing, when no buffers are available for it.
     */
    private boolean openFromSyn(final TcpListener listener, final int remoteIp, final TcpRepr syn, final int iss,
        final long nowNanos)
    {
        final TcpConnection c = newConnection(syn.destinationPort, remoteIp, syn.sourcePort, listener.settings().copy(), listener.bufferProvider());
        if (c == null)
        {
            return false;
        }
        c.listener = listener;
        listener.live++;
        c.countedInListener = true;
        listener.addHalfOpen(c);
        connections.put(c.key, c);
        counters.increment(StackCounter.TCP_PASSIVE_OPENS);
        c.acceptSyn(syn, iss, nowNanos);
        return true;
    }

    /**
     * RFC 9293 §3.6.1 (RFC 1122 4.2.2.13) and RFC 6191: a SYN (no ACK, RST or FIN) for {@code old}, a connection in
     * TIME-WAIT, opens the connection's next incarnation when a listener holds the port and the SYN is newer than
     * anything of the old one ({@link TcpConnection#newerIncarnation}). The old connection ends, and the listener takes
     * the SYN with an ISN above all the old one sent ({@link TcpConnection#nextIncarnationIss}), as Linux's
     * tcp_timewait_state_process (TCP_TW_SYN) hands it over. A client that reuses its port soon then connects at
     * once, not after the ACK, RST and SYN retransmission that TIME-WAIT otherwise costs it.
     *
     * <p>Refused, with {@code old} left in TIME-WAIT to answer the SYN as before, when the listener could only answer
     * statelessly (its backlog or the stack-wide half-open bound full: a SYN cookie is an ISN that may fall in the old
     * sequence space) or is at its connection limit. Linux lets such a SYN past its SYN queue bound; here the bounds
     * hold, and the peer's RST to our ACK ends TIME-WAIT for its next SYN as without this rule. Should the new SYN turn
     * out to be an old duplicate (the peer resets our SYN,ACK), the old connection does not return to TIME-WAIT (RFC
     * 1122's condition (2)); Linux does not either.
     *
     * @return true when the SYN was taken (and {@code old} is gone); false to process it in TIME-WAIT.
     */
    boolean reopenFromTimeWait(final TcpConnection old, final TcpRepr syn, final long nowNanos)
    {
        final TcpListener listener = listeners.get(old.localPort);
        if (listener == null || !old.newerIncarnation(syn, syn.timestampsPresent && listener.settings().timestamps)
            || cookiesOnly(listener) || listener.atConnectionLimitReplacing(old))
        {
            return false;
        }
        final int iss = old.nextIncarnationIss();
        remove(old, TcpConnection.CLOSE_NORMAL);
        if (listeners.get(old.localPort) != listener)
        {
            // The old connection's close event closed the listener: the SYN opens nothing, and TIME-WAIT is over, so
            // the peer's retransmission finds no listener and is refused.
            return true;
        }
        counters.increment(StackCounter.TCP_TIME_WAIT_REUSED);
        // Without buffers for it (its provider has none free), the SYN is dropped: TIME-WAIT is over, so the peer's
        // retransmission finds the listener, which answers it as any SYN.
        openFromSyn(listener, old.remoteIp, syn, iss, nowNanos);
        return true;
    }

    /**
     * A stateless SYN,ACK whose ISN is the cookie. Its window is the receive buffer the connection will get (the
     * listener's buffer provider's, else its settings') up to 65535 (the window of a SYN is never scaled, RFC 7323
     * §2.2): advertising more would make its right edge move left (RFC 9293 §3.8.6.2.2).
     */
    private void sendCookie(final TcpListener listener, final int localIp, final int remoteIp, final long nowNanos)
    {
        listener.cookieSent(nowNanos);
        final int peerMss = in.mss > 0 ? in.mss : 536;
        final int cookie = cookies.encode(localIp, in.destinationPort, remoteIp, in.sourcePort, in.seq,
            SynCookies.mssIndexFor(Math.min(peerMss, mss)), nowNanos);
        out.reset();
        out.sourcePort = in.destinationPort;
        out.destinationPort = in.sourcePort;
        out.seq = cookie;
        out.ack = in.seq + 1;
        out.flags = TcpHeader.SYN | TcpHeader.ACK;
        final BufferProvider provider = listener.bufferProvider();
        final TcpSettings settings = listener.settings();
        final int receiveCapacity = provider != null ? provider.receiveCapacity() : settings.receiveBufferBytes;
        out.window = Math.min(65535, receiveCapacity);
        // Our own MSS, as any SYN,ACK: the cookie's table entry bounds what we send, not what the peer may.
        out.mss = mss;
        if (in.timestampsPresent && settings.timestamps)
        {
            // The other options ride in the TSval (SynCookies.timestampWithOptions) and come back as the ACK's TSecr.
            final boolean windowScaling = in.windowScale >= 0 && settings.windowScaling;
            final boolean sack = in.sackPermitted && settings.sack;
            out.timestampsPresent = true;
            out.tsVal = SynCookies.timestampWithOptions(
                TcpConnection.timestampClock(nowNanos, timestampOffset(in.destinationPort, remoteIp, in.sourcePort)),
                windowScaling ? in.windowScale : -1, sack);
            out.tsEcr = in.tsVal;
            out.windowScale = windowScaling ? TcpConnection.windowScaleFor(receiveCapacity) : -1;
            out.sackPermitted = sack;
        }
        emitRaw(localIp, remoteIp, nowNanos);
        counters.increment(StackCounter.TCP_SYN_COOKIES_SENT);
    }

    private boolean tryCookie(final TcpListener listener, final int remoteIp, final DirectBuffer buffer, final long nowNanos)
    {
        final int localIp = ip.config().address();
        final int cookieMss = cookies.decode(localIp, in.destinationPort, remoteIp, in.sourcePort, in.seq - 1, in.ack - 1, nowNanos);
        if (cookieMss < 0)
        {
            counters.increment(StackCounter.TCP_SYN_COOKIES_FAILED);
            return false;
        }
        if (listener.acceptQueueFull() || !makeRoomForCookie(listener))
        {
            counters.increment(StackCounter.TCP_LISTEN_COOKIE_ACK_DROPPED);
            return true;
        }
        final BufferProvider provider = listener.bufferProvider();
        TcpConnection c = newConnection(in.destinationPort, remoteIp, in.sourcePort, listener.settings().copy(), provider);
        if (c == null && evictHalfOpenSharing(provider))
        {
            c = newConnection(in.destinationPort, remoteIp, in.sourcePort, listener.settings().copy(), provider);
        }
        if (c == null)
        {
            // No memory for it now (counted as TCP_BUFFER_BUDGET_EXHAUSTED) and nothing half-open holds any: the peer's
            // next segment, or its retransmission of data this one carried, tries again: the cookie stays valid.
            return true;
        }
        counters.increment(StackCounter.TCP_SYN_COOKIES_ACCEPTED);
        c.listener = listener;
        listener.live++;
        c.countedInListener = true;
        connections.put(c.key, c);
        counters.increment(StackCounter.TCP_PASSIVE_OPENS);
        c.acceptCookie(in, cookieMss, nowNanos);
        counters.increment(StackCounter.TCP_ESTABLISHED);
        established(c);
        c.onSegment(in, buffer, nowNanos);
        return true;
    }

    /**
     * Room under {@code listener}'s connection limit for a peer that completed a cookie handshake: when half-open
     * connections hold the limit, the oldest are aborted (RFC 9293 §3.10.5 ABORT in SYN-RECEIVED: a RST, their buffers
     * and their place in the limit freed), as a peer that answered our SYN,ACK beats one that has not (RFC 4987 §3.4,
     * recycling the oldest half-open TCB, here only for a proven peer). In Linux half-open requests count against no
     * accept limit, so they never stand in a completed handshake's way either.
     *
     * @return false, having aborted nothing, when synchronized connections alone fill the limit.
     */
    private boolean makeRoomForCookie(final TcpListener listener)
    {
        if (!listener.atConnectionLimit())
        {
            return true;
        }
        if (!listener.roomBesideHalfOpen())
        {
            return false;
        }
        TcpConnection oldest;
        while (listener.atConnectionLimit() && (oldest = listener.oldestHalfOpen()) != null)
        {
            counters.increment(StackCounter.TCP_HALF_OPEN_EVICTED);
            oldest.abort();
        }
        return !listener.atConnectionLimit();
    }

    /**
     * Buffers for a peer that completed a cookie handshake when none are free: the oldest half-open connection of the
     * listener with the most of them, among those taking their buffers where this one does ({@code provider}: one
     * app's pipe slots, shared by all its listeners; null: the stack's budget), is aborted, as {@link #makeRoomForCookie}
     * does within one listener. Spoofed SYNs to one listener would otherwise hold the buffers of every other listener
     * of the same app until their SYN,ACKs ran out.
     *
     * @return whether a connection was aborted.
     */
    private boolean evictHalfOpenSharing(final BufferProvider provider)
    {
        TcpListener flooded = null;
        for (final TcpListener l : listeners.values())
        {
            final TcpConnection oldest = l.oldestHalfOpen();
            if (oldest != null && oldest.bufferProvider == provider
                && (flooded == null || l.synReceived() > flooded.synReceived()))
            {
                flooded = l;
            }
        }
        if (flooded == null)
        {
            return false;
        }
        counters.increment(StackCounter.TCP_HALF_OPEN_EVICTED);
        flooded.oldestHalfOpen().abort();
        return true;
    }

    /** A passive connection reached ESTABLISHED: hand it to its listener. */
    void established(final TcpConnection c)
    {
        final TcpListener listener = c.listener;
        if (listener == null)
        {
            return;
        }
        if (c.state != TcpState.ESTABLISHED && c.state != TcpState.FIN_WAIT_1 && c.state != TcpState.CLOSE_WAIT)
        {
            return;
        }
        listener.removeHalfOpen(c);
        if (!listener.enqueue(c))
        {
            counters.increment(StackCounter.TCP_LISTEN_ESTABLISHED_RESET);
            c.abort();
        }
    }

    /** The IPv4 identification key of TCP to {@code remoteIp}, which a connection keeps. */
    long identificationKey(final int remoteIp)
    {
        return ip.identificationKey(remoteIp, Ipv4Header.PROTOCOL_TCP);
    }

    /** Send one segment of {@code c}; the payload (if any) is read from its send buffer. */
    void emit(final TcpConnection c, final TcpRepr r, final long dataOffset, final int length, final long nowNanos)
    {
        r.sourcePort = c.localPort;
        r.destinationPort = c.remotePort;
        r.payloadLength = length;
        final int headerLength = r.headerLength();
        final int total = headerLength + length;
        // The one copy of the TX path: send buffer -> frame, with the segment built in place.
        final int tos = c.settings.dscp << 2; // no ECN: its two bits stay 0 (Not-ECT)
        final MutableDirectBuffer frame = ip.claimDatagram(
            c.remoteIp, Ipv4Header.PROTOCOL_TCP, total, c.dontFragment(), c.identificationKey, tos, nowNanos);
        if (frame != null)
        {
            final boolean offload = ip.transmitChecksumOffload();
            boolean committed = false;
            try
            {
                build(c, r, dataOffset, length, frame, Ipv4.L4_OFFSET, headerLength, offload);
                ip.commitDatagram(offload ? NetDevice.TX_L4_CHECKSUM_PARTIAL : 0);
                committed = true;
            }
            finally
            {
                if (!committed)
                {
                    // The send buffer's copy threw (a provided buffer, an app's pipe in shared memory, is not ours;
                    // a read outside [start, end) throws too): the frame goes back, or the device's claim stays open
                    // for every later send on it.
                    ip.abortDatagram();
                }
            }
        }
        else
        {
            // Next hop not resolved yet: through the scratch buffer into the ARP queue.
            build(c, r, dataOffset, length, scratch, 0, headerLength, false);
            ip.send(c.remoteIp, Ipv4Header.PROTOCOL_TCP, null, 0, scratch, 0, total, c.dontFragment(), tos, nowNanos);
        }
        counters.increment(StackCounter.TCP_SEGMENTS_OUT);
    }

    private void build(
        final TcpConnection c,
        final TcpRepr r,
        final long dataOffset,
        final int length,
        final MutableDirectBuffer target,
        final int at,
        final int headerLength,
        final boolean checksumOffload)
    {
        r.emit(target, at);
        if (length > 0)
        {
            c.sendBuffer.read(dataOffset, target, at + headerLength, length);
        }
        final TcpHeader h = header.wrap(target, at, headerLength + length);
        if (checksumOffload)
        {
            h.partialChecksum(c.localIp, c.remoteIp);
        }
        else
        {
            h.updateChecksum(c.localIp, c.remoteIp);
        }
    }

    private void emitRaw(final int localIp, final int remoteIp, final long nowNanos)
    {
        out.payloadLength = 0;
        final int headerLength = out.headerLength();
        out.emit(scratch, 0);
        header.wrap(scratch, 0, headerLength).updateChecksum(localIp, remoteIp);
        // DF as on every TCP datagram (RFC 1191 §3; Linux's reset socket sets it too).
        ip.send(remoteIp, Ipv4Header.PROTOCOL_TCP, null, 0, scratch, 0, headerLength, true, 0, nowNanos);
        counters.increment(StackCounter.TCP_SEGMENTS_OUT);
    }

    /** Send a RST (with ACK when {@code withAck}) that belongs to no connection state. */
    void sendReset(
        final int localIp,
        final int localPort,
        final int remoteIp,
        final int remotePort,
        final int seq,
        final int ack,
        final boolean withAck,
        final long nowNanos)
    {
        out.reset();
        out.sourcePort = localPort;
        out.destinationPort = remotePort;
        out.seq = seq;
        out.ack = withAck ? ack : 0;
        out.flags = TcpHeader.RST | (withAck ? TcpHeader.ACK : 0);
        out.window = 0;
        emitRaw(localIp, remoteIp, nowNanos);
        counters.increment(StackCounter.TCP_RESETS_SENT);
    }

    /**
     * A connection entered TIME-WAIT, or the application closed one in TIME-WAIT: everything it sent is acknowledged and
     * it accepts no more data, so its buffers are given back now rather than after 2 MSL, and it keeps only the stream
     * positions (as Linux replaces the socket by a small timewait object). Provided buffers (an app's pipe slot, limited
     * per app) go back to their provider, which frees the slot once the app has let go too (it may still be reading the
     * last bytes from its pipe). The stack's own rings go back to the budget (and the pool) once the application has
     * closed the connection; until then it may still read them. An app that closes its connections first would
     * otherwise hold a slot, or its share of {@link #bufferBudget(long)}, per connection for a minute.
     */
    void timeWaitEntered(final TcpConnection c)
    {
        if (c.buffersDetached)
        {
            return;
        }
        if (c.bufferProvider != null)
        {
            final BufferProvider.ConnectionBuffers provided = c.buffers;
            c.detachBuffers();
            c.bufferProvider.release(provided);
        }
        else if (c.closedByApplication())
        {
            final SendBuffer send = c.sendBuffer;
            final ReceiveBuffer receive = c.receiveBuffer;
            c.detachBuffers();
            bufferBytes -= (long)send.capacity() + receive.capacity();
            pool(send, receive);
        }
        else
        {
            return;
        }
        if (c.listener != null)
        {
            // Nor does it count against its listener's connection limit any more (as Linux keeps TIME-WAIT apart):
            // maxTimeWait bounds it.
            c.listener.uncount(c);
        }
    }

    /**
     * RFC 5961 §7: send a challenge ACK unless a limit holds it back. Per connection, one per
     * {@link TcpSettings#challengeAckIntervalNanos} answers segments without data or with SYN (a flood of spoofed RSTs
     * or SYNs; a data segment cannot be part of an ACK loop), as Linux's tcp_oow_rate_limited does; then the
     * host-wide budget, which no connection can measure (CVE-2016-5696).
     *
     * @param noDataOrSyn the segment that asks for it carries no data, or has SYN set.
     */
    void challengeAck(final TcpConnection c, final boolean noDataOrSyn, final long nowNanos)
    {
        if ((noDataOrSyn && !c.challengeAckAllowed(nowNanos)) || !challengeAcks.tryAcquire(nowNanos))
        {
            counters.increment(StackCounter.TCP_CHALLENGE_ACKS_LIMITED);
            return;
        }
        counters.increment(StackCounter.TCP_CHALLENGE_ACKS);
        c.ackNow = true;
        c.markDirty();
    }

    /** Take {@code c} out of the table and tell its handler; idempotent. */
    void remove(final TcpConnection c, final int reason)
    {
        if (c.state == TcpState.CLOSED)
        {
            return;
        }
        final TcpState was = c.state;
        c.state = TcpState.CLOSED;
        c.cancelTimers();
        connections.remove(c.key);
        if (fullDestinationKnown && (c.key & ~0xFFFFL) == fullDestination)
        {
            fullDestinationKnown = false; // its local port is free now
        }
        if (c.countedInTimeWait)
        {
            c.countedInTimeWait = false;
            timeWaitCount--;
        }
        if (lastConnection == c)
        {
            lastConnection = null;
        }
        recycle(c);
        if (c.listener != null)
        {
            c.listener.forget(c, was);
        }
        if (was == TcpState.ESTABLISHED || was == TcpState.CLOSE_WAIT)
        {
            // RFC 4022 tcpEstabResets (Linux's EstabResets): straight to CLOSED from either, whoever reset it.
            counters.increment(StackCounter.TCP_ESTABLISHED_RESETS);
        }
        if (reason == TcpConnection.CLOSE_TIMED_OUT)
        {
            counters.increment(StackCounter.TCP_TIMEOUTS);
        }
        if (was == TcpState.SYN_SENT || was == TcpState.SYN_RECEIVED)
        {
            // RFC 4022 tcpAttemptFails: SYN-SENT or SYN-RECEIVED to CLOSED, and SYN-RECEIVED back to LISTEN.
            counters.increment(StackCounter.TCP_ATTEMPT_FAILS);
        }
        final TcpHandler h = c.handler;
        if (h != null)
        {
            h.onClosed(c, reason);
        }
    }

    /** {@code l} queued a connection: announce it after this burst (called once until it is announced). */
    void listenerReady(final TcpListener l)
    {
        if (readyListenerCount == readyListeners.length)
        {
            readyListeners = java.util.Arrays.copyOf(readyListeners, readyListeners.length * 2);
        }
        readyListeners[readyListenerCount++] = l;
    }

    void markDirty(final TcpConnection c)
    {
        if (dirtyCount == dirty.length)
        {
            dirty = java.util.Arrays.copyOf(dirty, dirty.length * 2);
        }
        dirty[dirtyCount++] = c;
    }

    /** End of a receive burst: events to handlers, then ACKs and data (all segments of the burst processed first). */
    public int afterBurst(final long nowNanos)
    {
        now = nowNanos;
        int n = 0;
        // Handlers may dirty more connections; the loop picks them up.
        // A handler that throws costs that call only (handlerErrors is told): the others in the lists still run.
        for (int i = 0; i < dirtyCount; i++)
        {
            final TcpConnection c = dirty[i];
            dirty[i] = null;
            try
            {
                c.afterBurst(nowNanos);
            }
            catch (final RuntimeException e)
            {
                handlerErrors.onError(e);
            }
            n++;
        }
        dirtyCount = 0;
        // A callback may make another listener ready; the loop picks it up.
        for (int i = 0; i < readyListenerCount; i++)
        {
            final TcpListener l = readyListeners[i];
            readyListeners[i] = null;
            try
            {
                l.dispatch();
            }
            catch (final RuntimeException e)
            {
                handlerErrors.onError(e);
            }
        }
        readyListenerCount = 0;
        return n;
    }

    /** Publish the per-segment counts kept in fields during a burst (see {@code NetStack.flushCounts}). */
    public void flushCounts()
    {
        if (segmentsInBurst != 0 || checksumsTrustedInBurst != 0)
        {
            counters.add(StackCounter.TCP_SEGMENTS_IN, segmentsInBurst);
            counters.add(StackCounter.RX_CHECKSUMS_TRUSTED, checksumsTrustedInBurst);
            counters.add(StackCounter.TCP_PREDICTED, predictedInBurst);
            counters.add(StackCounter.TCP_EARLY_DEMUX, earlyDemuxInBurst);
            segmentsInBurst = 0;
            checksumsTrustedInBurst = 0;
            predictedInBurst = 0;
            earlyDemuxInBurst = 0;
        }
    }

    /** Negative advice to IP for {@code remoteIp} (a connection reached R1). */
    void adviseUnreachable(final int remoteIp, final long nowNanos)
    {
        ip.adviseUnreachable(remoteIp, nowNanos);
    }

    void count(final StackCounter counter)
    {
        counters.increment(counter);
    }

    TcpRepr repr()
    {
        return out;
    }

    Timers timers()
    {
        return timers;
    }

    int mss()
    {
        return mss;
    }

    long now()
    {
        return now;
    }

    /** Advance the layer's notion of time (the application API uses it); the stack calls this each poll. */
    public void now(final long nowNanos)
    {
        now = nowNanos;
    }
}
