package io.nicstack.examples;

import java.io.PrintStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

/**
 * Bulk source and sink for benchmarks. A source sends the deterministic stream
 * {@code byte[i] = i % 251} (offset i from the start of the connection) until the peer closes;
 * a sink reads and counts (optionally at a limited rate, to play a slow application, and
 * optionally hashing what it read, optionally stalling at first). A connection on which nothing moves (no input read,
 * no output acknowledged) for the idle timeout is closed ({@link ConnectionHandler#closeIdle}). When a connection ends
 * each prints one line, {@code ended=idle} at its end when the idle timeout closed it, {@code ended=abnormal} when it
 * was otherwise reset or given up:
 * <ul>
 * <li>{@code bulk sink conn=<id> peer=<a.b.c.d:port> bytes=<n> seconds=<s> MBps=<MB/s> [sha256=<hex>]}: {@code bytes}
 * read from the stream;</li>
 * <li>{@code bulk source conn=<id> peer=<a.b.c.d:port> acked=<n> committed=<n> seconds=<s> MBps=<MB/s>}: {@code acked}
 * bytes the peer acknowledged by then ({@link PipeConnection#txReleased()}), which {@code MBps} is of; {@code committed}
 * bytes handed to the daemon, up to a TX pipe and the peer's window more, which a peer that resets never gets.</li>
 * </ul>
 */
final class BulkApp
{
    /** The period of the source's pattern: a prime, so misplaced bytes show. */
    static final int PERIOD = 251;
    private static final int CHUNK = 64 * 1024;
    private static final byte[] PATTERN = new byte[PERIOD + CHUNK];

    static
    {
        for (int i = 0; i < PATTERN.length; i++)
        {
            PATTERN[i] = (byte)(i % PERIOD);
        }
    }

    /**
     * Options of a bulk app. Sink only: {@code rate} in bytes per second (0 = unlimited); {@code pauseMillis}
     * reads nothing for that long after the connection opens (a stalled application: the RX pipe fills and
     * the advertised window drops to zero); {@code digest} hashes the stream. Both: {@code idleTimeoutNanos}, how long
     * a connection may be idle ({@link IdleTimeout}; 0: for ever).
     */
    record Config(boolean source, long rate, long pauseMillis, boolean digest, long idleTimeoutNanos, PrintStream out)
    {
    }

    private BulkApp()
    {
    }

    static ConnectionHandler handler(final PipeConnection conn, final Config config)
    {
        return config.source() ? new Source(conn, config) : new Sink(conn, config);
    }

    /** The byte the source sends at stream offset {@code offset}. */
    static byte patternAt(final long offset)
    {
        return (byte)(offset % PERIOD);
    }

    private abstract static class Bulk extends ConnectionHandler
    {
        final Config config;
        final long started = System.nanoTime();
        /** Bytes read by a sink; bytes committed to the TX pipe by a source. */
        long bytes;
        boolean reported;
        /** The server's clock at the first turn: a sink's pause and rate run on it, as its idle timeout does. */
        private boolean turned;
        private long firstTurn;

        Bulk(final PipeConnection conn, final Config config)
        {
            super(conn, config.idleTimeoutNanos());
            this.config = config;
        }

        String extra()
        {
            return "";
        }

        /** {@code nowNanos} less that of the connection's first turn. */
        final long sinceFirstTurn(final long nowNanos)
        {
            if (!turned)
            {
                turned = true;
                firstTurn = nowNanos;
            }
            return nowNanos - firstTurn;
        }

        /** The bytes that moved, which the rate is of: read by a sink, acknowledged by a source's peer. */
        abstract long moved();

        /** The byte counts of the report, each named for what it counts. */
        abstract String counts(long moved);

        @Override
        protected void onEnd(final boolean abnormal)
        {
            if (reported)
            {
                return;
            }
            reported = true;
            final double seconds = Math.max(1e-9, (System.nanoTime() - started) / 1e9);
            final long moved = moved();
            config.out().printf("bulk %s conn=%d peer=%s %s seconds=%.3f MBps=%.1f%s%s%n",
                config.source() ? "source" : "sink", conn.id(), peer(), counts(moved), seconds, moved / seconds / 1e6,
                extra(), idleClosed() ? " ended=idle" : abnormal ? " ended=abnormal" : "");
            config.out().flush();
        }
    }

    private static final class Source extends Bulk
    {
        Source(final PipeConnection conn, final Config config)
        {
            super(conn, config);
        }

        /**
         * What the peer acknowledged: the TX pipe's head, which the daemon moves as acknowledgements come (and
         * {@link #bytes}, what was committed, is ahead of it by what is queued or in flight). Read before the
         * connection is closed, as {@link #onEnd} is.
         */
        @Override
        long moved()
        {
            return conn.txReleased();
        }

        @Override
        String counts(final long moved)
        {
            return "acked=" + moved + " committed=" + bytes;
        }

        @Override
        protected int serviceOpen(final long nowNanos) throws NicstackException
        {
            int work = 0;
            int n;
            while ((n = conn.peek()) > 0)
            {
                conn.release(n); // whatever the peer sends is discarded
                idleActivity(nowNanos);
                work++;
            }
            if (n < 0 || conn.isPeerClosed())
            {
                onEnd(false);
                shutdownAndLinger(nowNanos);
                return work + 1;
            }
            for (int turn = 0; turn < 16; turn++)
            {
                final int writable = conn.claim(Integer.MAX_VALUE);
                if (writable <= 0)
                {
                    break;
                }
                final MutableDirectBuffer tx = conn.txBuffer();
                final int index = conn.txIndex();
                int done = 0;
                while (done < writable)
                {
                    final int len = Math.min(CHUNK, writable - done);
                    tx.putBytes(index + done, PATTERN, (int)((bytes + done) % PERIOD), len);
                    done += len;
                }
                conn.commit(writable);
                bytes += writable;
                work++;
                hurry(); // a stream: park only briefly while bytes flow
            }
            return work;
        }
    }

    private static final class Sink extends Bulk
    {
        private final MessageDigest sha;
        private final byte[] scratch;

        Sink(final PipeConnection conn, final Config config)
        {
            super(conn, config);
            MessageDigest md = null;
            if (config.digest())
            {
                try
                {
                    md = MessageDigest.getInstance("SHA-256");
                }
                catch (final NoSuchAlgorithmException e)
                {
                    throw new IllegalStateException(e);
                }
            }
            sha = md;
            scratch = md != null ? new byte[CHUNK] : null;
        }

        @Override
        long moved()
        {
            return bytes;
        }

        @Override
        String counts(final long moved)
        {
            return "bytes=" + moved;
        }

        @Override
        String extra()
        {
            return sha != null ? " sha256=" + HexFormat.of().formatHex(sha.digest()) : "";
        }

        @Override
        protected int serviceOpen(final long nowNanos) throws NicstackException
        {
            final long since = sinceFirstTurn(nowNanos);
            int work = 0;
            for (int turn = 0; turn < 64; turn++)
            {
                final int readable = conn.peek();
                if (readable < 0)
                {
                    onEnd(false);
                    shutdownAndLinger(nowNanos);
                    return work + 1;
                }
                if (readable == 0)
                {
                    break;
                }
                int n = readable;
                final long readingNanos = since - config.pauseMillis() * 1_000_000L;
                if (readingNanos < 0)
                {
                    idleActivity(nowNanos); // the app holds the input back, not the peer
                    break; // still "stalled"
                }
                if (config.rate() > 0)
                {
                    final long allowed = (long)(readingNanos / 1e9 * config.rate()) - bytes;
                    if (allowed <= 0)
                    {
                        idleActivity(nowNanos); // the app holds the input back, not the peer
                        break; // a slow reader: leave the bytes in the pipe, the window shrinks
                    }
                    n = (int)Math.min(n, allowed);
                }
                if (sha != null)
                {
                    final DirectBuffer rx = conn.rxBuffer();
                    final int index = conn.rxIndex();
                    for (int done = 0; done < n;)
                    {
                        final int len = Math.min(scratch.length, n - done);
                        rx.getBytes(index + done, scratch, 0, len);
                        sha.update(scratch, 0, len);
                        done += len;
                    }
                }
                conn.release(n);
                bytes += n;
                idleActivity(nowNanos);
                work++;
                hurry(); // a stream: park only briefly while bytes flow
            }
            return work;
        }
    }
}
