package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.client.PipeConnection;
import io.nicstack.pipes.client.PipeListener;
import io.nicstack.stack.tcp.TcpConnection;

/**
 * How a connection's close ends its stream, as PipeConnection.close() and NicstackClient.close() say: with received
 * bytes still unread, a reset (RFC 9293 §3.6.1, SHLD-3; RFC 1122 4.2.2.13; as Linux's tcp_close), what was committed
 * and not yet sent dropped; with the input drained, or after shutdownOutput() and the peer's FIN, the committed bytes,
 * then a FIN.
 */
class ConnectionCloseTest
{
    private static final int PORT = 7000;
    private static final byte[] ANSWER = "the whole answer".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path tmp;

    /** The test's own code is the app: it drives the client and the listener itself. */
    @AutoClose
    private InProcessApp app;
    private PipeListener listener;

    @BeforeEach
    void setUp() throws Exception
    {
        app = new InProcessApp(tmp, "closer", InProcessApp.options(8, 64 * 1024));
        listener = app.client.listen(PORT, 8);
    }

    /** A peer connected to the app, which has sent it {@code question}; returns the app's side once it holds it all. */
    private PipeConnection questioned(final InProcessDaemon.Peer peer, final String question) throws Exception
    {
        app.daemon.connect(PORT, peer);
        final PipeConnection c = listener.accept();
        InProcessDaemon.spinUntil("the peer's connection", () -> peer.connection != null, app.client::poll);
        app.daemon.onLoop(() -> peer.write(question));
        final int[] readable = {0};
        InProcessDaemon.spinUntil("the question in the RX pipe", () -> readable[0] == question.length(),
            () -> readable[0] = c.awaitReadable(10));
        return c;
    }

    private void awaitTheEnd(final InProcessDaemon.Peer peer) throws Exception
    {
        InProcessDaemon.spinUntil("the end of the peer's connection", () -> peer.closedReason != -1 || peer.finReceived,
            app.client::poll);
    }

    @Test
    void closeWithUnreadInputResetsTheConnection() throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        final PipeConnection c = questioned(peer, "question");
        c.outputStream().write(ANSWER);
        c.close();

        awaitTheEnd(peer);
        assertFalse(peer.finReceived, "no FIN: the peer's bytes were not read (got " + peer.received() + ")");
        assertEquals(TcpConnection.CLOSE_RESET, peer.closedReason);
    }

    @Test
    void clientCloseWithUnreadInputResetsTheConnection() throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        final PipeConnection c = questioned(peer, "question");
        c.outputStream().write(ANSWER);
        app.client.close();

        InProcessDaemon.spinUntil("the end of the peer's connection", () -> peer.closedReason != -1 || peer.finReceived,
            () -> { });
        assertFalse(peer.finReceived, "no FIN: the peer's bytes were not read (got " + peer.received() + ")");
        assertEquals(TcpConnection.CLOSE_RESET, peer.closedReason);
    }

    @Test
    void closeAfterTheInputWasReadSendsTheCommittedBytesThenAFin() throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        final PipeConnection c = questioned(peer, "question");
        c.inputStream().readNBytes("question".length());
        c.outputStream().write(ANSWER);
        c.close();

        awaitTheEnd(peer);
        InProcessDaemon.spinUntil("the whole answer", () -> peer.received().length() == ANSWER.length,
            app.client::poll);
        assertEquals(new String(ANSWER, StandardCharsets.US_ASCII), peer.received());
        assertEquals(true, peer.finReceived, "a FIN after the answer");
        assertEquals(-1, peer.closedReason, "not reset");
    }

    /** The way to end cleanly when the peer may still send: shutdownOutput(), read to its FIN, then close(). */
    @Test
    void shutdownOutputThenReadingToThePeersFinThenCloseEndsCleanly() throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        final PipeConnection c = questioned(peer, "question");
        c.outputStream().write(ANSWER);
        c.shutdownOutput();
        InProcessDaemon.spinUntil("the answer and its FIN", () -> peer.finReceived, app.client::poll);
        app.daemon.onLoop(() ->
        {
            peer.write(" and more");
            peer.connection.close();
        });
        assertEquals("question and more", new String(c.inputStream().readAllBytes(), StandardCharsets.US_ASCII));
        c.close();

        InProcessDaemon.spinUntil("the peer's connection closed", () -> peer.closedReason != -1, app.client::poll);
        assertEquals(TcpConnection.CLOSE_NORMAL, peer.closedReason);
        assertEquals(new String(ANSWER, StandardCharsets.US_ASCII), peer.received());
    }
}
