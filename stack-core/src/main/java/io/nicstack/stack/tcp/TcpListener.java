package io.nicstack.stack.tcp;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.function.Consumer;

import io.nicstack.stack.storage.BufferProvider;

/**
 * A listening port: a bounded backlog of half-open connections (beyond it, SYN cookies answer) and
 * a bounded queue of established connections waiting for {@link #accept()}.
 */
public final class TcpListener
{
    private final Tcp tcp;
    private final int port;
    private final int backlog;
    private final TcpSettings settings;
    private final Consumer<TcpListener> onAcceptable;
    private final ArrayDeque<TcpConnection> acceptQueue;
    /**
     * Connections in SYN-RECEIVED, oldest first, for {@link #close} to end and {@link #oldestHalfOpen} to evict. A list,
     * not links in each connection: it holds at most the backlog, and {@link Tcp#MAX_HALF_OPEN} over all listeners,
     * while connections may number 100,000s.
     */
    private final ArrayList<TcpConnection> halfOpen = new ArrayList<>();
    /** Connections that came through this listener and are not closed yet (half-open, queued, accepted). */
    int live;
    private int maxConnections = 65_536;
    private boolean acceptable;
    private boolean open = true;
    private BufferProvider bufferProvider;
    private boolean cookiesSent;
    private long lastCookieNanos;

    TcpListener(final Tcp tcp, final int port, final int backlog, final TcpSettings settings, final Consumer<TcpListener> onAcceptable)
    {
        this.tcp = tcp;
        this.port = port;
        this.backlog = backlog;
        this.settings = settings;
        this.onAcceptable = onAcceptable;
        this.acceptQueue = new ArrayDeque<>(backlog);
    }

    /** A SYN cookie went out for this listener at {@code nowNanos}. */
    void cookieSent(final long nowNanos)
    {
        cookiesSent = true;
        lastCookieNanos = nowNanos;
    }

    /** Whether this listener sent a SYN cookie at or after {@code sinceNanos}. */
    boolean sentCookiesSince(final long sinceNanos)
    {
        return cookiesSent && lastCookieNanos - sinceNanos >= 0;
    }

    public int port()
    {
        return port;
    }

    /** Settings given to each accepted connection (change before connections arrive). */
    public TcpSettings settings()
    {
        return settings;
    }

    /**
     * Take the buffers of connections arriving from now on from {@code provider} (null: the stack's
     * own rings); a SYN finding none free is answered with a SYN cookie.
     */
    public TcpListener bufferProvider(final BufferProvider provider)
    {
        this.bufferProvider = provider;
        return this;
    }

    BufferProvider bufferProvider()
    {
        return bufferProvider;
    }

    /** The next established connection, or null. */
    public TcpConnection accept()
    {
        final TcpConnection c = acceptQueue.poll();
        if (c != null)
        {
            c.handedToApplication = true;
        }
        return c;
    }

    /** Established connections waiting for accept. */
    public int pending()
    {
        return acceptQueue.size();
    }

    /** Half-open connections. */
    public int synReceived()
    {
        return halfOpen.size();
    }

    /** Stop listening; established connections already accepted live on, queued and half-open ones are reset. */
    public void close()
    {
        if (!open)
        {
            return;
        }
        open = false;
        tcp.unlisten(this);
        TcpConnection c;
        while ((c = acceptQueue.poll()) != null)
        {
            c.abort();
        }
        // RFC 9293 §3.10.5: ABORT in SYN-RECEIVED sends <SEQ=SND.NXT><CTL=RST>. Left alone, a half-open connection would
        // resend its SYN,ACK for a port no longer listening, outside the stack-wide half-open bound. Each abort takes the
        // last one out of the list (forget).
        for (int i = halfOpen.size() - 1; i >= 0; i--)
        {
            halfOpen.get(i).abort();
        }
    }

    /**
     * Bound the connections alive through this listener at once. Beyond it a SYN is refused with a reset, unless
     * half-open connections hold part of the limit: then it gets a SYN cookie, whose completed handshake takes the
     * place of the oldest half-open connection.
     */
    public void maxConnections(final int max)
    {
        if (max < 1)
        {
            throw new IllegalArgumentException("maxConnections must be positive: " + max);
        }
        maxConnections = max;
    }

    public int liveConnections()
    {
        return live;
    }

    boolean atConnectionLimit()
    {
        return live >= maxConnections;
    }

    /**
     * Whether synchronized connections alone leave room under {@link #maxConnections}: when the limit is reached, it is
     * then half-open connections that reach it, and evicting them makes room for a peer that completed its handshake.
     */
    boolean roomBesideHalfOpen()
    {
        return live - halfOpen.size() < maxConnections;
    }

    /** The half-open connection that entered SYN-RECEIVED first, or null. */
    TcpConnection oldestHalfOpen()
    {
        return halfOpen.isEmpty() ? null : halfOpen.get(0);
    }

    /** Whether a connection replacing {@code old} (one in TIME-WAIT, about to end) would be beyond {@link #maxConnections}. */
    boolean atConnectionLimitReplacing(final TcpConnection old)
    {
        return live - (old.countedInListener && old.listener == this ? 1 : 0) >= maxConnections;
    }

    boolean full()
    {
        return halfOpen.size() + acceptQueue.size() >= backlog;
    }

    boolean acceptQueueFull()
    {
        return acceptQueue.size() >= backlog;
    }

    boolean enqueue(final TcpConnection c)
    {
        if (!open || acceptQueue.size() >= backlog)
        {
            return false;
        }
        acceptQueue.add(c);
        if (!acceptable)
        {
            acceptable = true;
            tcp.listenerReady(this);
        }
        return true;
    }

    /** {@code c} entered SYN-RECEIVED through this listener: it holds a backlog slot until established or gone. */
    void addHalfOpen(final TcpConnection c)
    {
        c.inSynBacklog = true;
        halfOpen.add(c);
    }

    /** {@code c} left SYN-RECEIVED (established or gone): the backlog slot it held is free. */
    void removeHalfOpen(final TcpConnection c)
    {
        if (c.inSynBacklog)
        {
            c.inSynBacklog = false;
            halfOpen.remove(c);
        }
    }

    /** {@code c} stops counting against {@link #maxConnections} (when it ends, or enters TIME-WAIT without buffers). */
    void uncount(final TcpConnection c)
    {
        if (c.countedInListener)
        {
            live--;
            c.countedInListener = false;
        }
    }

    void forget(final TcpConnection c, final TcpState was)
    {
        uncount(c);
        removeHalfOpen(c);
        acceptQueue.remove(c);
    }

    void dispatch()
    {
        if (acceptable)
        {
            acceptable = false;
            if (onAcceptable != null && !acceptQueue.isEmpty())
            {
                onAcceptable.accept(this);
            }
        }
    }
}
