package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.DaemonGoneException;

/**
 * The echo app over an in-process daemon whose loop the test blocks (a stall, as a SIGSTOP of the daemon would be),
 * the client's clock moved by hand past its daemon timeout. The client keeps the session through a stall shorter than
 * {@link ClientOptions#daemonLossMillis}; so must the app: its connections stay and go on once the daemon beats again.
 * It ends only when the session is lost.
 */
class AppServerDaemonStallTest
{
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    private static final int PORT = 7000;

    @TempDir
    Path tmp;

    /** The client's clock, by which it times the daemon's heartbeat. */
    private final AtomicLong clientNow = new AtomicLong(1_000 * S);
    /** Closed after each test, a stalled daemon resumed first. */
    @AutoClose
    private InProcessApp app;

    @BeforeEach
    void setUp() throws Exception
    {
        final ClientOptions options = InProcessApp.options(16, 64 * 1024);
        options.clock = clientNow::get;
        app = new InProcessApp(tmp, "echo", options);
        app.serve(PORT, 16, EchoApp::handler);
    }

    /** A peer connected to the echo app, which has echoed its first words. */
    private InProcessDaemon.Peer echoingPeer() throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        app.daemon.connect(PORT, peer);
        app.spinUntil("one connection", () -> app.connections() == 1 && peer.connection != null);
        app.daemon.onLoop(() -> peer.write("before "));
        app.spinUntil("the first echo", () -> peer.received().equals("before "));
        return peer;
    }

    /**
     * The reviewer's probe (SIGSTOP of the daemon for 3 s): the app's next poll failed with the client's stall
     * exception, which ended the app and closed every connection, the peer's unechoed bytes with it. Now the app rides
     * the stall out.
     */
    @Test
    void aStallShorterThanTheLossBoundKeepsEveryConnection() throws Exception
    {
        final InProcessDaemon.Peer peer = echoingPeer();

        app.daemon.stall();
        clientNow.addAndGet(3 * S); // past the 2 s daemon timeout, well within the 10 s loss bound
        for (int pass = 0; pass < 10; pass++)
        {
            assertEquals(0, app.server.doWork(), "nothing moves while the daemon stalls");
        }
        assertEquals(1, app.connections(), "the connection is kept through the stall");

        app.daemon.resume();
        app.daemon.onLoop(() -> peer.write("after"));
        app.spinUntil("the echo after the stall", () -> peer.received().equals("before after") || peer.ended());
        assertEquals("before after", peer.received());
        assertFalse(peer.ended(), "neither FIN nor reset: the connection goes on");
        assertEquals(1, app.connections());
    }

    /** A stall past the loss bound (after a poll reported it) is a loss: the app ends, as when the daemon is gone. */
    @Test
    void aStallPastTheLossBoundEndsTheApp() throws Exception
    {
        echoingPeer();

        app.daemon.stall();
        clientNow.addAndGet(3 * S);
        assertEquals(0, app.server.doWork());
        clientNow.addAndGet(10 * S);
        assertThrows(DaemonGoneException.class, app.server::doWork);
        assertThrows(DaemonGoneException.class, app.server::doWork, "and stays lost");
    }

    @Test
    void aDaemonThatShutDownEndsTheApp() throws Exception
    {
        echoingPeer();

        app.daemon.close(); // DAEMON_GONE
        assertThrows(DaemonGoneException.class, app.server::doWork);
    }
}
