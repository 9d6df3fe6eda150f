package io.nicstack.examples;

import java.util.concurrent.TimeUnit;

/**
 * The deadlines that keep a slow client from holding an HTTP connection (and its open file) for good; both HTTP
 * apps use them, on their own clock ({@code now} in nanoseconds, compared modulo 2^64).
 *
 * <ul>
 *   <li><b>Request head</b>: from the first byte of a request until its head is complete, at most
 *       {@link #HEADER_TIMEOUT_NANOS}, however the bytes trickle in ("slowloris"). nginx's client_header_timeout
 *       (60 s) and Apache's mod_reqtimeout (header=20-40, growing with the data rate) bound the same thing; nginx
 *       closes the connection without an answer, and so do we.</li>
 *   <li><b>Request body</b>: from the end of the response, when the app starts reading the request's body to
 *       discard it, until its last byte, at most {@link #BODY_TIMEOUT_NANOS}, however the bytes trickle: a body
 *       dripped a byte a minute would otherwise hold the connection for good (each byte is activity, so the idle
 *       timeout never passes). Apache's mod_reqtimeout bounds the body too (body=20, growing with the data rate);
 *       its size is bounded apart ({@link HttpRequestParser#MAX_BODY_BYTES}).</li>
 *   <li><b>Response</b>: while a response is being written, at most {@link #SEND_TIMEOUT_NANOS} without progress
 *       (nothing more taken by the socket or the TX pipe, nor {@link #released acknowledged} while the daemon sends a
 *       file body itself): a peer that reads nothing. As nginx's send_timeout (60 s), the time between two successful
 *       writes, not the whole transfer: a slow but moving download goes on.</li>
 * </ul>
 * A connection idle between requests has its own timeout ({@link HttpApp#IDLE_TIMEOUT_NANOS}).
 */
final class HttpDeadlines
{
    static final long HEADER_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);
    static final long SEND_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);
    static final long BODY_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);

    enum Expired
    {
        REQUEST_HEAD,
        REQUEST_BODY,
        RESPONSE
    }

    private boolean inRequest;
    private long requestStart;
    private boolean inBody;
    private long bodyStart;
    private boolean sending;
    private long lastProgress;
    private long released;

    /** Bytes of a request head arrived and the head is not complete: the head's deadline starts (if not yet). */
    void requestBytes(final long now)
    {
        if (!inRequest)
        {
            inRequest = true;
            requestStart = now;
        }
    }

    /** The head is complete (or refused): no head deadline until the next request's first byte. */
    void requestDone()
    {
        inRequest = false;
    }

    /** The app starts reading a request body (after its response): the body's deadline starts. */
    void bodyStarted(final long now)
    {
        inBody = true;
        bodyStart = now;
    }

    /** The body is read to its end: no body deadline until the next one. */
    void bodyDone()
    {
        inBody = false;
    }

    /** A response starts: its progress is timed from now. */
    void responseStarted(final long now)
    {
        sending = true;
        lastProgress = now;
    }

    /** Some of the response was written. */
    void progress(final long now)
    {
        lastProgress = now;
    }

    /**
     * The stream is released (acknowledged by the peer) up to {@code position}, a count that only grows
     * ({@link io.nicstack.pipes.client.PipeConnection#txReleased()}): a move since the last call is progress. The
     * progress of a body the app does not write itself (SEND_FILE: the daemon reads the file into the TX pipe).
     */
    void released(final long position, final long now)
    {
        if (position != released)
        {
            released = position;
            lastProgress = now;
        }
    }

    /** The response is fully written (or handed over). */
    void responseDone()
    {
        sending = false;
    }

    /** Which deadline has passed at {@code now}, or null. */
    Expired expired(final long now)
    {
        if (sending && now - lastProgress > SEND_TIMEOUT_NANOS)
        {
            return Expired.RESPONSE;
        }
        if (inRequest && now - requestStart > HEADER_TIMEOUT_NANOS)
        {
            return Expired.REQUEST_HEAD;
        }
        if (inBody && now - bodyStart > BODY_TIMEOUT_NANOS)
        {
            return Expired.REQUEST_BODY;
        }
        return null;
    }
}
