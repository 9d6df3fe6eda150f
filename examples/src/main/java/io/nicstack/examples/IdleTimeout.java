package io.nicstack.examples;

import java.util.concurrent.TimeUnit;

/**
 * The idle timeout of a stream app's connection (echo, bulk): a client that connects and goes silent would otherwise
 * hold its connection slot, and its pipes in the daemon, for good, and enough of them fill the app's
 * {@code --max-connections}. The connection is idle while nothing moves either way: no input taken from the RX pipe
 * ({@link #activity}) and no output acknowledged by the peer ({@link #released}, the TX pipe's head). Time the app
 * itself holds input back on purpose (a sink's {@code --pause-ms} or {@code --rate}) is activity too: that is the
 * app's doing, not the peer's. On its own clock ({@code now} in nanoseconds, compared modulo 2^64), like
 * {@link HttpDeadlines}; a timeout of 0 never expires.
 */
final class IdleTimeout
{
    /** The default: as the HTTP apps' idle timeout ({@link HttpApp#IDLE_TIMEOUT_NANOS}). */
    static final long DEFAULT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final long timeoutNanos;
    private boolean started;
    private long lastActivity;
    private long released;

    /** @param timeoutNanos how long a connection may be idle; 0: for ever. */
    IdleTimeout(final long timeoutNanos)
    {
        if (timeoutNanos < 0)
        {
            throw new IllegalArgumentException("idle timeout " + timeoutNanos + " ns");
        }
        this.timeoutNanos = timeoutNanos;
    }

    /** Something moved at {@code now} (input read, or held back by the app on purpose). */
    void activity(final long now)
    {
        started = true;
        lastActivity = now;
    }

    /**
     * The peer has acknowledged the stream up to {@code position}, a count that only grows
     * ({@link io.nicstack.pipes.client.PipeConnection#txReleased()}): a move since the last call is activity. The first
     * call starts the clock.
     */
    void released(final long position, final long now)
    {
        if (!started || position != released)
        {
            started = true;
            released = position;
            lastActivity = now;
        }
    }

    /** Whether the connection has been idle for longer than the timeout at {@code now}. */
    boolean expired(final long now)
    {
        return started && timeoutNanos > 0 && now - lastActivity > timeoutNanos;
    }
}
