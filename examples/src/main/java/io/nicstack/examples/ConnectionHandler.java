package io.nicstack.examples;

import java.util.concurrent.TimeUnit;

import io.nicstack.pipes.Protocol;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

/**
 * One accepted connection of an {@link AppServer}: non-blocking work driven by the server's single
 * thread. Subclasses do their protocol in {@link #serviceOpen(long)}; this class does the graceful
 * end (FIN, then read and discard until the peer's FIN, bounded, then close: the daemon still sends
 * what was committed) and the abortive one (a reset, RFC 9293 ABORT: the peer must not take a stream cut short for a
 * whole one).
 */
abstract class ConnectionHandler
{
    /** How long a connection whose output is shut down waits for the peer to finish. */
    static final long LINGER_NANOS = TimeUnit.SECONDS.toNanos(30);

    protected final PipeConnection conn;
    private boolean outputShut;
    private boolean done;
    private boolean hurry;
    private boolean idleClosed;
    private long lingerDeadline;
    /** The idle timeout of a stream app's connection (echo, bulk), or null: the HTTP apps keep their own deadlines. */
    private final IdleTimeout idle;

    ConnectionHandler(final PipeConnection conn)
    {
        this.conn = conn;
        this.idle = null;
    }

    /** A handler whose open connection is closed when idle for {@code idleTimeoutNanos} ({@link IdleTimeout}; 0: never). */
    ConnectionHandler(final PipeConnection conn, final long idleTimeoutNanos)
    {
        this.conn = conn;
        this.idle = new IdleTimeout(idleTimeoutNanos);
    }

    /** Make progress without blocking; returns the amount of work done (0 when idle). */
    final int service(final long nowNanos) throws NicstackException
    {
        if (done)
        {
            return 0;
        }
        if (conn.isClosed())
        {
            // Reset by the peer, timed out, or fully closed: nothing more can be sent or read.
            onEnd(conn.closeReason() != Protocol.Reason.NONE);
            finish(false);
            return 1;
        }
        if (outputShut)
        {
            return linger(nowNanos);
        }
        if (idle == null)
        {
            return serviceOpen(nowNanos);
        }
        idle.released(conn.txReleased(), nowNanos); // the peer taking what was sent; the first turn starts the clock
        final int work = serviceOpen(nowNanos);
        if (work == 0 && idle.expired(nowNanos))
        {
            closeIdle(nowNanos);
            return 1;
        }
        return work;
    }

    /**
     * Protocol work for an open connection. A handler with an idle timeout tells of input it took, or held back on
     * purpose, with {@link #idleActivity}; a turn that does no work past the timeout closes the connection.
     */
    protected abstract int serviceOpen(long nowNanos) throws NicstackException;

    /** Something moved on an open connection at {@code nowNanos}: input read, or held back by the app on purpose. */
    protected final void idleActivity(final long nowNanos)
    {
        idle.activity(nowNanos);
    }

    /**
     * Called when the connection ends; {@code abnormal} when it was reset/aborted rather than finished. A connection that
     * shut its output down and lingers may be told again when the linger ends.
     */
    protected void onEnd(final boolean abnormal)
    {
    }

    /** Release resources other than the connection (files). */
    protected void releaseResources()
    {
    }

    /** Send FIN after everything committed so far; then discard input until the connection is finished. */
    protected final void shutdownAndLinger(final long nowNanos) throws NicstackException
    {
        if (!outputShut)
        {
            outputShut = true;
            lingerDeadline = nowNanos + LINGER_NANOS;
            conn.shutdownOutput();
        }
    }

    protected final boolean outputShut()
    {
        return outputShut;
    }

    /**
     * End a connection idle past its timeout ({@link IdleTimeout}). With nothing left either way, a FIN: the peer learns
     * the stream ended whole, and its input is then read and discarded until its own FIN, at most
     * {@link #LINGER_NANOS}, as after any {@link #shutdownAndLinger}. With input unread in the RX pipe, or output the
     * peer has not acknowledged in the TX pipe (it reads nothing), a reset (RFC 9293 ABORT): a close with unread input
     * is a reset anyway (RFC 9293 §3.6.1, SHLD-3; Linux's tcp_close), and a FIN queued behind bytes the peer does not
     * take would hold the connection, and its pipes in the daemon, until the daemon's own no-progress reset. Either
     * way {@link #onEnd} learns of the end at once, and {@link #idleClosed()} is true from then on.
     */
    private void closeIdle(final long nowNanos) throws NicstackException
    {
        idleClosed = true;
        if (conn.peek() > 0 || conn.txFree() < conn.txCapacity())
        {
            reset();
        }
        else
        {
            onEnd(false);
            shutdownAndLinger(nowNanos);
        }
    }

    /** Whether {@link #closeIdle} ended this connection. */
    protected final boolean idleClosed()
    {
        return idleClosed;
    }

    /**
     * Ask the server to park for shorter: this connection is moving a stream that a long park would
     * hold up (a TX pipe that drained, or an RX pipe that filled, far during the last park).
     */
    protected final void hurry()
    {
        hurry = true;
    }

    /** Whether {@link #hurry()} was called since the last call of this method. */
    final boolean takeHurry()
    {
        final boolean h = hurry;
        hurry = false;
        return h;
    }

    private int linger(final long nowNanos) throws NicstackException
    {
        int work = 0;
        int n;
        while ((n = conn.peek()) > 0)
        {
            conn.release(n);
            work++;
        }
        // The peer's FIN (or the daemon's CLOSED): closing now loses nothing, the daemon still sends
        // everything committed before our FIN. Without it, give up after the linger time.
        if (n < 0 || nowNanos - lingerDeadline > 0)
        {
            onEnd(n >= 0);
            finish(false);
            work++;
        }
        return work;
    }

    /**
     * Give the connection up now (its handler failed, or the server stops): a reset (RFC 9293 §3.10.5 ABORT), for a FIN
     * would pass the stream cut short off as whole. A connection whose output is already shut down sent its whole
     * stream and its FIN is queued behind it: closed, so the peer gets them rather than a reset that drops what it
     * has not acknowledged.
     */
    final void abort(final Throwable cause)
    {
        if (!done)
        {
            onEnd(true);
            finish(!outputShut);
        }
    }

    /**
     * End the connection with a reset (RFC 9293 ABORT), not a FIN: for a stream that cannot be completed as promised
     * (a body shorter than its Content-Length), which a FIN would pass off as whole.
     */
    final void reset()
    {
        if (!done)
        {
            onEnd(true);
            finish(true);
        }
    }

    /** Done: resources released, the connection closed (a FIN after what was committed) or reset. */
    private void finish(final boolean reset)
    {
        done = true;
        releaseResources();
        if (reset)
        {
            conn.abort();
        }
        else
        {
            conn.close();
        }
    }

    final boolean done()
    {
        return done;
    }

    static String address(final int ipv4)
    {
        return ((ipv4 >>> 24) & 0xFF) + "." + ((ipv4 >>> 16) & 0xFF) + "." + ((ipv4 >>> 8) & 0xFF) + "." + (ipv4 & 0xFF);
    }

    final String peer()
    {
        return address(conn.remoteAddress()) + ":" + conn.remotePort();
    }
}
