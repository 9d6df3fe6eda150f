package io.nicstack.pipes.client;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.SystemNanoClock;

import java.util.concurrent.TimeUnit;

/** Sizes and timeouts of one {@link NicstackClient}; plain fields, read once by {@link NicstackClient#attach}. */
public final class ClientOptions
{
    /** Slots (concurrent connections) in the app file, at most 65536. */
    public int maxConnections = 64;
    /** Data bytes of each RX and TX pipe, a power of two of at least 4096; the RX pipe is the TCP receive window. */
    public int pipeCapacity = 256 * 1024;
    /** Message bytes of each of the control, event and notification rings, a power of two of at least 1024. */
    public int ringCapacity = 64 * 1024;
    /**
     * A daemon whose heartbeat has not moved for this long fails polls (each, until it moves again: the session is
     * kept while its process lives).
     */
    public long daemonTimeoutMillis = 2000;
    /**
     * A daemon whose heartbeat has not moved for this long is lost even though a process with its pid lives (the pid
     * was reused, or means nothing here: another PID namespace), and so is the session; never less than twice
     * {@link #daemonTimeoutMillis}. A poll must have reported the stall first (and kept the session): a silence no
     * poll watched, as when the app and the daemon were frozen together, is a stall at the next poll, not a loss.
     */
    public long daemonLossMillis = 10_000;
    /**
     * How long {@link NicstackClient#attach} waits for a running daemon to answer; where none runs (none holds the
     * directory's {@code daemon.lock}) it does not wait.
     */
    public long attachTimeoutMillis = 5000;
    /**
     * The monotonic clock the daemon's heartbeat, {@link NicstackClient#attach} and
     * {@link PipeConnection#awaitReadable} are timed on (tests move it by hand).
     */
    public NanoClock clock = SystemNanoClock.INSTANCE;
    /** How blocking calls wait between polls. */
    public IdleStrategy idleStrategy = new BackoffIdleStrategy(
        100, 10, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(1));
}
