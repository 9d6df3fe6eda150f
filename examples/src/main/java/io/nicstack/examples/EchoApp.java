package io.nicstack.examples;

import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

/**
 * Echo server (RFC 862 over TCP) on the pipes, zero-copy: the readable span of the RX pipe is
 * copied straight into claimed space of the TX pipe, committed, and only then released, so a
 * client that does not read its echo back-pressures its own sending. After the peer's FIN and
 * once everything has been echoed, the connection sends its own FIN. A connection on which nothing moves (no input, and
 * no echo acknowledged) for the idle timeout is closed ({@link ConnectionHandler#closeIdle}).
 */
final class EchoApp
{
    private EchoApp()
    {
    }

    static ConnectionHandler handler(final PipeConnection conn)
    {
        return handler(conn, IdleTimeout.DEFAULT_NANOS);
    }

    /** @param idleTimeoutNanos how long the connection may be idle ({@link IdleTimeout}); 0: for ever. */
    static ConnectionHandler handler(final PipeConnection conn, final long idleTimeoutNanos)
    {
        return new Handler(conn, idleTimeoutNanos);
    }

    static final class Handler extends ConnectionHandler
    {
        long echoed;
        Handler(final PipeConnection conn, final long idleTimeoutNanos)
        {
            super(conn, idleTimeoutNanos);
        }

        @Override
        protected int serviceOpen(final long nowNanos) throws NicstackException
        {
            int work = 0;
            for (int turn = 0; turn < 16; turn++)
            {
                final int readable = conn.peek();
                if (readable < 0)
                {
                    shutdownAndLinger(nowNanos); // peer's FIN, and every byte before it echoed
                    return work + 1;
                }
                if (readable == 0)
                {
                    break;
                }
                final int writable = conn.claim(readable);
                if (writable <= 0)
                {
                    break; // TX pipe full: leave the bytes in the RX pipe (its window closes)
                }
                final int n = Math.min(readable, writable);
                conn.txBuffer().putBytes(conn.txIndex(), conn.rxBuffer(), conn.rxIndex(), n);
                conn.commit(n);
                conn.release(n);
                echoed += n;
                idleActivity(nowNanos);
                work++;
                hurry(); // a stream: park only briefly while bytes flow
            }
            return work;
        }
    }
}
