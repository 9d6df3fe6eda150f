package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.stack.tcp.TcpSettings;

/**
 * What a bulk source reports as sent, against a peer on an in-process daemon that reads nothing, then resets: the
 * bytes the peer acknowledged (the TX pipe's head), not the bytes the app committed, of which a whole TX pipe may
 * never have left the daemon.
 */
class BulkSourceReportTest
{
    private static final int PORT = 5002;
    private static final int PEER_WINDOW = 32 * 1024;
    private static final int PIPE = 64 * 1024;

    @TempDir
    Path tmp;

    @AutoClose
    private InProcessApp app;

    @Test
    void aSourceReportsTheBytesThePeerAcknowledged() throws Exception
    {
        app = new InProcessApp(tmp, "bulk", InProcessApp.options(4, PIPE));
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final BulkApp.Config config =
            new BulkApp.Config(true, 0, 0, false, 0, new PrintStream(out, true, StandardCharsets.UTF_8));
        app.serve(PORT, 4, c -> BulkApp.handler(c, config));

        // A peer whose receive buffer (window scale 0) fills and stays full, every byte in it acknowledged at once.
        final TcpSettings reader = new TcpSettings();
        reader.receiveBufferBytes = PEER_WINDOW;
        reader.delayedAckNanos = 0;
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(reader, false);
        app.daemon.connect(PORT, peer);
        app.spinUntil("the peer's window full",
            () -> app.daemon.onLoop(() -> peer.connection == null ? 0 : peer.connection.readable()) == PEER_WINDOW);
        app.daemon.awaitTwoRounds(); // its last ACK sent, and taken by the daemon
        for (int pass = 0; pass < 200; pass++)
        {
            app.server.doWork(); // the TX pipe refilled as far as it goes
        }

        app.daemon.onLoop(() -> peer.connection.abort());
        app.spinUntil("the source's report", () -> out.toString(StandardCharsets.UTF_8).contains("\n"));
        final String line = out.toString(StandardCharsets.UTF_8).strip();
        assertTrue(line.startsWith("bulk source "), line);
        assertTrue(line.contains(" ended=abnormal"), line);
        final Matcher acked = Pattern.compile(" acked=(\\d+) ").matcher(line);
        assertTrue(acked.find(), "the figure says what it is: " + line);
        assertEquals(PEER_WINDOW, Long.parseLong(acked.group(1)), "what the peer acknowledged: " + line);
        final Matcher committed = Pattern.compile(" committed=(\\d+) ").matcher(line);
        assertTrue(committed.find(), line);
        assertTrue(Long.parseLong(committed.group(1)) >= PEER_WINDOW + PIPE / 2,
            "more was handed to the daemon than acknowledged: " + line);
    }
}
