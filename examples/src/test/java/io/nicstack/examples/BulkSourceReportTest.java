package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
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

    private InProcessDaemon daemon;
    private NicstackClient client;
    private AppServer app;

    @AfterEach
    void tearDown() throws Exception
    {
        if (client != null)
        {
            client.close();
        }
        if (daemon != null)
        {
            daemon.close();
        }
    }

    private void spinUntil(final String what, final BooleanSupplier done) throws Exception
    {
        InProcessDaemon.spinUntil(what, done, app::doWork);
    }

    private int unread(final InProcessDaemon.Peer peer) throws Exception
    {
        return daemon.onLoop(() -> peer.connection == null ? 0 : peer.connection.readable());
    }

    @Test
    void aSourceReportsTheBytesThePeerAcknowledged() throws Exception
    {
        daemon = new InProcessDaemon(tmp);
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 4;
        options.pipeCapacity = PIPE;
        client = daemon.attach("bulk", options);
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final BulkApp.Config config =
            new BulkApp.Config(true, 0, 0, false, 0, new PrintStream(out, true, StandardCharsets.UTF_8));
        app = new AppServer(client, client.listen(PORT, 4), c -> BulkApp.handler(c, config));

        // A peer whose receive buffer (window scale 0) fills and stays full, every byte in it acknowledged at once.
        final TcpSettings reader = new TcpSettings();
        reader.receiveBufferBytes = PEER_WINDOW;
        reader.delayedAckNanos = 0;
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(reader, false);
        daemon.connect(PORT, peer);
        spinUntil("the peer's window full", () ->
        {
            try
            {
                return unread(peer) == PEER_WINDOW;
            }
            catch (final Exception e)
            {
                throw new IllegalStateException(e);
            }
        });
        daemon.onLoop(() -> null);
        daemon.onLoop(() -> null); // its last ACK sent, and taken by the daemon's next round
        for (int pass = 0; pass < 200; pass++)
        {
            app.doWork(); // the TX pipe refilled as far as it goes
        }

        daemon.onLoop(() ->
        {
            peer.connection.abort();
            return null;
        });
        spinUntil("the source's report", () -> out.toString(StandardCharsets.UTF_8).contains("\n"));
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
