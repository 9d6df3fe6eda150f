package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.client.PipeConnection;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpSettings;

/**
 * The echo and bulk apps' idle timeout, over an in-process daemon with peers on stack B, no kernel interface. The app
 * runs on the test's thread with a clock moved by hand (it stands still while bytes move): a peer that goes silent
 * loses its connection when the timeout passes, not before; one that keeps talking never does. Before, neither app had
 * an idle timeout: a silent peer held its connection (and its pipes in the daemon) for good.
 */
class StreamAppIdleTimeoutTest
{
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    private static final long TIMEOUT = 20 * S;
    private static final int PORT = 7007;
    private static final int PIPE = 16 * 1024;
    private static final int PEER_WINDOW = 8 * 1024;

    @TempDir
    Path tmp;

    private final AtomicLong appNow = new AtomicLong(1_000 * S);
    private final ByteArrayOutputStream report = new ByteArrayOutputStream();
    @AutoClose
    private InProcessApp app;

    private void start(final Function<PipeConnection, ConnectionHandler> factory) throws Exception
    {
        app = new InProcessApp(tmp, "stream", InProcessApp.options(4, PIPE));
        app.serve(PORT, 4, factory, appNow::get);
    }

    private void startBulk(final boolean source, final long pauseMillis) throws Exception
    {
        final BulkApp.Config config = new BulkApp.Config(source, 0, pauseMillis, false, TIMEOUT,
            new PrintStream(report, true, StandardCharsets.UTF_8));
        start(c -> BulkApp.handler(c, config));
    }

    /** A peer on stack B that acknowledges at once; {@code reads}: whether it reads what it receives. */
    private static InProcessDaemon.Peer peer(final boolean reads, final int receiveBuffer)
    {
        final TcpSettings settings = new TcpSettings();
        settings.delayedAckNanos = 0;
        settings.receiveBufferBytes = receiveBuffer;
        return new InProcessDaemon.Peer(settings, reads);
    }

    private void connect(final InProcessDaemon.Peer peer) throws Exception
    {
        app.daemon.connect(PORT, peer);
        app.spinUntil("the connection", () -> peer.connection != null && app.connections() == 1);
        app.settle();
    }

    private int write(final InProcessDaemon.Peer peer, final byte[] bytes)
    {
        return app.daemon.onLoop(() -> peer.connection.write(new UnsafeBuffer(bytes), 0, bytes.length));
    }

    /** Still open at exactly the timeout after {@code last}, closed with a FIN (not a reset) just past it. */
    private void closedWithFinJustPastTheTimeout(final InProcessDaemon.Peer peer, final long last) throws Exception
    {
        appNow.set(last + TIMEOUT);
        app.spinUntilQuiet();
        assertFalse(peer.ended(), "closed before the idle timeout passed");
        assertEquals(1, app.connections());

        appNow.set(last + TIMEOUT + 1);
        app.spinUntil("the idle connection's FIN", peer::ended);
        assertTrue(peer.finReceived, "a FIN, not a reset: " + peer.closedReason);
        assertEquals(-1, peer.closedReason, "a FIN, not a reset");
        // The app lingers for the peer's FIN, then lets the connection go.
        app.daemon.onLoop(() -> peer.connection.close());
        app.spinUntil("the app to let the connection go", () -> app.connections() == 0);
    }

    /** Still open at exactly the timeout after {@code last}, reset just past it. */
    private void resetJustPastTheTimeout(final InProcessDaemon.Peer peer, final long last) throws Exception
    {
        appNow.set(last + TIMEOUT);
        app.spinUntilQuiet();
        assertFalse(peer.ended(), "closed before the idle timeout passed");
        assertEquals(1, app.connections());

        appNow.set(last + TIMEOUT + 1);
        app.spinUntil("the idle connection's reset", () -> peer.closedReason != -1);
        assertEquals(TcpConnection.CLOSE_RESET, peer.closedReason, "a reset");
        assertEquals(0, app.connections());
    }

    @Test
    void echoClosesASilentConnectionWithAFinAtTheTimeout() throws Exception
    {
        start(c -> EchoApp.handler(c, TIMEOUT));
        final InProcessDaemon.Peer silent = peer(true, 64 * 1024);
        connect(silent);
        closedWithFinJustPastTheTimeout(silent, appNow.get());
    }

    /** A peer that says something every half timeout keeps its connection for many timeouts, and loses it once silent. */
    @Test
    void echoNeverCutsAConnectionThatKeepsTalking() throws Exception
    {
        start(c -> EchoApp.handler(c, TIMEOUT));
        final InProcessDaemon.Peer talker = peer(true, 64 * 1024);
        connect(talker);
        final long t0 = appNow.get();
        final StringBuilder said = new StringBuilder();
        for (int k = 1; k <= 8; k++)
        {
            appNow.set(t0 + k * TIMEOUT / 2);
            final String line = "ping " + k + "\n";
            said.append(line);
            assertEquals(line.length(), write(talker, line.getBytes(StandardCharsets.ISO_8859_1)));
            app.spinUntil("the echo of " + line.strip(), () -> talker.received().contentEquals(said));
            app.settle();
            assertFalse(talker.ended(), "cut while talking, at " + k + " half timeouts");
        }
        closedWithFinJustPastTheTimeout(talker, t0 + 8 * TIMEOUT / 2);
    }

    /**
     * A peer that sends and never reads: its window, the TX pipe and the RX pipe fill, and nothing moves. Reset at the
     * timeout: a close with its input unread is a reset anyway, and a FIN would wait behind echo it never takes.
     */
    @Test
    void echoResetsAPeerThatSendsButNeverReadsAtTheTimeout() throws Exception
    {
        start(c -> EchoApp.handler(c, TIMEOUT));
        final InProcessDaemon.Peer deaf = peer(false, PEER_WINDOW);
        connect(deaf);
        // More than its window and the TX pipe take, less than the RX pipe adds (by more than a segment, which the
        // daemon's receive window always has room for): the peer's window full, the TX pipe full of echo it has not
        // acknowledged, and the rest of its bytes in the RX pipe, unread, every one acknowledged by the daemon.
        final int sent = PEER_WINDOW + 2 * PIPE - 4096;
        assertEquals(sent, write(deaf, new byte[sent]));
        app.spinUntil("every byte of the peer's taken by the daemon, its window full", () ->
            app.daemon.onLoop(() -> deaf.connection.bytesAcked() == 1 + sent
                && deaf.connection.readable() == PEER_WINDOW));
        app.settle();
        resetJustPastTheTimeout(deaf, appNow.get());
    }

    @Test
    void bulkSinkClosesASilentConnectionWithAFinAndReportsWhy() throws Exception
    {
        startBulk(false, 0);
        final InProcessDaemon.Peer peer = peer(true, 64 * 1024);
        connect(peer);
        final long t0 = appNow.get();
        appNow.set(t0 + TIMEOUT / 2);
        assertEquals(1000, write(peer, new byte[1000]));
        app.settle();
        closedWithFinJustPastTheTimeout(peer, t0 + TIMEOUT / 2);
        final String line = report.toString(StandardCharsets.UTF_8).strip();
        assertTrue(line.startsWith("bulk sink ") && line.contains(" bytes=1000 ") && line.endsWith(" ended=idle"), line);
    }

    /**
     * A sink that pauses (--pause-ms) longer than the timeout holds its input back itself: not idle, whatever the peer
     * does meanwhile. Once it reads, the timeout runs from its last read.
     */
    @Test
    void bulkSinkPausedPastTheTimeoutIsNotIdle() throws Exception
    {
        startBulk(false, TimeUnit.NANOSECONDS.toMillis(3 * TIMEOUT));
        final InProcessDaemon.Peer peer = peer(true, 64 * 1024);
        connect(peer);
        final long t0 = appNow.get();
        assertEquals(1000, write(peer, new byte[1000]));
        app.settle();
        appNow.set(t0 + 3 * TIMEOUT - S); // the peer silent for longer than the timeout, the app still paused
        app.spinUntilQuiet();
        assertFalse(peer.ended(), "closed while the app paused");
        assertEquals("", report.toString(StandardCharsets.UTF_8));

        appNow.set(t0 + 3 * TIMEOUT + S); // the pause over: it reads
        app.settle();
        closedWithFinJustPastTheTimeout(peer, t0 + 3 * TIMEOUT + S);
        final String line = report.toString(StandardCharsets.UTF_8).strip();
        assertTrue(line.contains(" bytes=1000 ") && line.endsWith(" ended=idle"), line);
    }

    /** A source whose peer reads nothing: its window and the TX pipe full, nothing moves; reset at the timeout. */
    @Test
    void bulkSourceResetsAPeerThatReadsNothingAndReportsWhy() throws Exception
    {
        startBulk(true, 0);
        final InProcessDaemon.Peer peer = peer(false, PEER_WINDOW);
        app.daemon.connect(PORT, peer);
        app.spinUntil("the peer's window full", () -> peer.connection != null
            && app.daemon.onLoop(() -> peer.connection.readable()) == PEER_WINDOW);
        app.settle();
        resetJustPastTheTimeout(peer, appNow.get());
        final String line = report.toString(StandardCharsets.UTF_8).strip();
        assertTrue(line.startsWith("bulk source ") && line.contains(" acked=" + PEER_WINDOW + " ")
            && line.endsWith(" ended=idle"), line);
    }
}
