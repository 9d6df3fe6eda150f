package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;
import io.nicstack.stack.tcp.TcpConnection;

/**
 * How an {@link AppServer} ends a connection it gives up on, seen from the peer on an in-process daemon. An abort
 * (the handler failed, or the server stops mid-stream) is a reset (RFC 9293 §3.10.5 ABORT): a FIN would tell the
 * peer that the stream cut short is whole. A connection whose output was already shut down has its whole stream and
 * its FIN on the way: the server closes it, and the peer gets no reset.
 */
class ConnectionHandlerAbortTest
{
    private static final int PORT = 7001;

    @TempDir
    Path tmp;

    @AutoClose
    private InProcessApp app;

    private void start(final Function<PipeConnection, ConnectionHandler> factory) throws Exception
    {
        app = new InProcessApp(tmp, "abort", InProcessApp.options(16, 64 * 1024));
        app.serve(PORT, 16, factory);
    }

    /** Until {@code done}, with app passes while {@code serving}; bounded in real time. */
    private void spinUntil(final String what, final boolean serving, final BooleanSupplier done) throws Exception
    {
        InProcessDaemon.spinUntil(what, done, serving ? app.server::doWork : () -> { });
    }

    private InProcessDaemon.Peer connect() throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        app.daemon.connect(PORT, peer);
        spinUntil("the connection", true, () -> app.connections() == 1 && peer.connection != null);
        return peer;
    }

    /** A handler that reads the first bytes, commits part of an answer, then fails. */
    private static final class FailingHandler extends ConnectionHandler
    {
        FailingHandler(final PipeConnection conn)
        {
            super(conn);
        }

        @Override
        protected int serviceOpen(final long nowNanos) throws NicstackException
        {
            final int n = conn.peek();
            if (n <= 0)
            {
                return 0;
            }
            conn.release(n); // the question read (the daemon resets a connection closed with unread bytes anyway)
            final byte[] part = "the first half of an ans".getBytes(StandardCharsets.US_ASCII);
            conn.txBuffer().putBytes(conn.txIndex(), part, 0, conn.claim(part.length));
            conn.commit(part.length);
            throw new IllegalStateException("the handler's bug");
        }
    }

    /** A handler that sends its whole answer and shuts its output down (FIN), then lingers for the peer's FIN. */
    private static final class FinishedHandler extends ConnectionHandler
    {
        FinishedHandler(final PipeConnection conn)
        {
            super(conn);
        }

        @Override
        protected int serviceOpen(final long nowNanos) throws NicstackException
        {
            final byte[] whole = "the whole answer".getBytes(StandardCharsets.US_ASCII);
            conn.txBuffer().putBytes(conn.txIndex(), whole, 0, conn.claim(whole.length));
            conn.commit(whole.length);
            shutdownAndLinger(nowNanos);
            return 1;
        }
    }

    /** Before, the failed handler's connection was closed: the peer got the half answer, then a FIN. */
    @Test
    void aHandlerThatFailsResetsItsConnection() throws Exception
    {
        start(FailingHandler::new);
        final InProcessDaemon.Peer peer = connect();

        app.daemon.onLoop(() -> peer.write("question"));
        spinUntil("the end of the connection", true, peer::ended);
        assertFalse(peer.finReceived, "no FIN after a stream cut short: " + peer.received());
        spinUntil("the connection closed", true, () -> peer.closedReason != -1);
        assertEquals(TcpConnection.CLOSE_RESET, peer.closedReason);
        assertEquals(0, app.connections());
    }

    /** The server stops with a connection open mid-stream (an echo owed nothing yet, but no FIN either): reset. */
    @Test
    void aServerThatStopsResetsItsOpenConnections() throws Exception
    {
        start(EchoApp::handler);
        final InProcessDaemon.Peer peer = connect();
        app.daemon.onLoop(() -> peer.write("ping"));
        spinUntil("the echo", true, () -> peer.received().equals("ping"));

        app.server.stop();
        app.server.run(); // returns at once: the loop ends every connection
        spinUntil("the end of the connection", false, peer::ended);
        assertFalse(peer.finReceived, "no FIN: the server stopped, the stream did not end");
        spinUntil("the connection closed", false, () -> peer.closedReason != -1);
        assertEquals(TcpConnection.CLOSE_RESET, peer.closedReason);
    }

    /** A connection that had sent its whole stream and its FIN, lingering for the peer's: closed, not reset. */
    @Test
    void aServerThatStopsClosesAConnectionWhoseStreamIsWhole() throws Exception
    {
        start(FinishedHandler::new);
        final InProcessDaemon.Peer peer = connect();
        spinUntil("the answer and its FIN", true, () -> peer.finReceived);
        assertEquals("the whole answer", peer.received());

        app.server.stop();
        app.server.run();
        assertEquals(0, app.connections());
        app.daemon.onLoop(() -> peer.connection.close());
        spinUntil("the connection closed", false, () -> peer.closedReason != -1);
        assertEquals(TcpConnection.CLOSE_NORMAL, peer.closedReason, "an orderly close, no reset");
    }
}
