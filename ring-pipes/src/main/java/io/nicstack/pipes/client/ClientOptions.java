package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFile;
import org.agrona.BitUtil;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.SystemNanoClock;

import java.util.concurrent.TimeUnit;

/**
 * Sizes and timeouts of one {@link NicstackClient}; plain fields, read once by {@link NicstackClient#attach}, which
 * refuses options out of their range (a {@link NicstackException}, reason BAD_ARGUMENT, naming the field).
 */
public final class ClientOptions
{
    /** Slots (concurrent connections) in the app file, 1 to 65536. */
    public int maxConnections = 64;
    /** Data bytes of each RX and TX pipe, a power of two of at least 4096; the RX pipe is the TCP receive window. */
    public int pipeCapacity = 256 * 1024;
    /** Message bytes of each of the control, event and notification rings, a power of two of at least 1024. */
    public int ringCapacity = 64 * 1024;
    /**
     * A daemon whose heartbeat has not moved for this long fails polls (each, until it moves again: the session is
     * kept while its process lives); more than 0.
     */
    public long daemonTimeoutMillis = 2000;
    /**
     * A daemon whose heartbeat has not moved for this long is lost even though a process with its pid lives (the pid
     * was reused, or means nothing here: another PID namespace), and so is the session; never less than twice
     * {@link #daemonTimeoutMillis}. A poll must have reported the stall first (and kept the session): a silence no
     * poll watched, as when the app and the daemon were frozen together, is a stall at the next poll, not a loss. Not
     * negative.
     */
    public long daemonLossMillis = 10_000;
    /**
     * How long {@link NicstackClient#attach} waits for a running daemon to answer, more than 0; where none runs (none
     * holds the directory's {@code daemon.lock}) it does not wait.
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

    /** Null when every option is in its range, else which one is not, and why. */
    String problem()
    {
        if (maxConnections < 1 || maxConnections > AppFile.MAX_CONNECTIONS)
        {
            return "ClientOptions.maxConnections must be 1 to " + AppFile.MAX_CONNECTIONS + ": " + maxConnections;
        }
        if (pipeCapacity < AppFile.MIN_PIPE_CAPACITY || !BitUtil.isPowerOfTwo(pipeCapacity))
        {
            return "ClientOptions.pipeCapacity must be a power of two of at least " + AppFile.MIN_PIPE_CAPACITY + ": " +
                pipeCapacity;
        }
        if (ringCapacity < AppFile.MIN_RING_CAPACITY || !BitUtil.isPowerOfTwo(ringCapacity))
        {
            return "ClientOptions.ringCapacity must be a power of two of at least " + AppFile.MIN_RING_CAPACITY + ": " +
                ringCapacity;
        }
        final String sizes = AppFile.checkSizes(ringCapacity, pipeCapacity, maxConnections);
        if (sizes != null)
        {
            return "ClientOptions.maxConnections " + maxConnections + " with pipeCapacity " + pipeCapacity + ": " + sizes;
        }
        if (daemonTimeoutMillis <= 0)
        {
            return "ClientOptions.daemonTimeoutMillis must be more than 0: " + daemonTimeoutMillis;
        }
        if (daemonLossMillis < 0)
        {
            return "ClientOptions.daemonLossMillis must not be negative: " + daemonLossMillis;
        }
        if (attachTimeoutMillis <= 0)
        {
            return "ClientOptions.attachTimeoutMillis must be more than 0: " + attachTimeoutMillis;
        }
        if (clock == null)
        {
            return "ClientOptions.clock is null";
        }
        if (idleStrategy == null)
        {
            return "ClientOptions.idleStrategy is null";
        }
        return null;
    }
}
