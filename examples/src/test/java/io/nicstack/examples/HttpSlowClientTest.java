package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.daemon.pipes.PipeCounter;
import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.pipes.client.PipeListener;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpSettings;

/**
 * The HTTP app against slow clients, over an in-process daemon (a PipeServer on stack A, its event loop on a thread of
 * its own) and raw TCP clients on stack B, no kernel interface. The app runs on the test's thread with a clock moved
 * by hand: a slowloris (a request head never finished) and a reader that reads nothing must lose their connections
 * when their deadlines pass, not before.
 */
class HttpSlowClientTest
{
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    private static final int READER_WINDOW = 32 * 1024;

    @TempDir
    Path tmp;

    private final AtomicLong appNow = new AtomicLong(1_000 * S);
    @AutoClose
    private InProcessApp app;
    private PipeCounters counters;

    static final class Client implements TcpHandler
    {
        final String initial;
        volatile int closedReason = -1;
        volatile boolean peerClosed;
        /** Stack B's end, touched on the loop thread only. */
        volatile TcpConnection connection;

        Client(final String initial)
        {
            this.initial = initial;
        }

        @Override
        public void onConnected(final TcpConnection c)
        {
            connection = c;
            final byte[] b = initial.getBytes(StandardCharsets.ISO_8859_1);
            c.write(new UnsafeBuffer(b), 0, b.length);
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            peerClosed = true;
        }

        @Override
        public void onClosed(final TcpConnection c, final int reason)
        {
            closedReason = reason;
        }
    }

    /** The app serving a root that holds a.txt ("hello\n"), bodies copied. */
    private void startWithOneSmallFile() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        Files.write(root.resolve("a.txt"), "hello\n".getBytes(StandardCharsets.US_ASCII));
        start(root, false);
    }

    /** {@code client} connects, and the app has it and has done all it can with what the client sent. */
    private void connectAndSettle(final Client client) throws Exception
    {
        app.daemon.connect(8080, client, null);
        app.spinUntil("one connection", () -> app.connections() == 1);
        app.spinUntilQuiet();
    }

    /**
     * An in-process daemon (stack A; its loop also polls stack B), the HTTP app over it serving {@code root} with
     * SEND_FILE or not, on the hand clock, 64 KiB pipes.
     */
    private void start(final Path root, final boolean sendFiles) throws Exception
    {
        app = new InProcessApp(tmp, "http", InProcessApp.options(16, 64 * 1024));
        counters = app.daemon.counters();
        final HttpApp http = new HttpApp(new StaticFiles(root), sendFiles);
        app.serve(8080, 16, http::handler, appNow::get);
    }

    /** Whether the daemon has acknowledged every byte {@code c} sent (its SYN counts one, as in bytesAcked). */
    private boolean acknowledgedAll(final Client c)
    {
        return c.connection != null && app.daemon.onLoop(() -> c.connection.bytesAcked()) == 1 + c.initial.length();
    }

    /** The bytes the client on stack B has received and not read. */
    private long unread(final Client c)
    {
        return app.daemon.onLoop(() -> (long)c.connection.readable());
    }

    @Test
    void slowlorisAndAReaderOfNothingLoseTheirConnectionsWhenTheirDeadlinesPass() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        Files.write(root.resolve("big.bin"), new byte[16 << 20]);
        start(root, false);

        final Client loris = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\nX-A: ");
        final Client reader = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, loris, null);
        app.daemon.connect(8080, reader, readerSettings());
        app.spinUntil("two connections", () -> app.connections() == 2);
        // Both stuck, proved rather than waited for, clock still at t0: the loris's head bytes in the app's RX pipe (the
        // daemon acknowledged them), the reader's window full and its last acknowledgement taken by the daemon, so
        // nothing moves until the reader reads; then the app's passes until quiet read the head and see the last release
        // at t0. Before, the reader had a 256 KiB window and a delayed ACK (40 ms on the daemon thread's real clock), and
        // under load its last acknowledgement came after 200 quiet passes: the release was stamped at t0 + 29 s or
        // t0 + 59 s, and t0 + 61 s was no longer past the send deadline.
        app.spinUntil("the loris's head acknowledged", () -> acknowledgedAll(loris));
        windowFull(reader);
        final long t0 = appNow.get();

        appNow.set(t0 + HttpDeadlines.HEADER_TIMEOUT_NANOS - S);
        app.spinUntilQuiet();
        assertEquals(2, app.connections(), "a deadline passed early");

        appNow.set(t0 + HttpDeadlines.HEADER_TIMEOUT_NANOS + S);
        app.spinUntil("the slowloris reset", () -> loris.closedReason != -1);
        assertEquals(1, app.connections());
        assertEquals(-1, reader.closedReason);

        appNow.set(t0 + HttpDeadlines.SEND_TIMEOUT_NANOS - S);
        app.spinUntilQuiet();
        assertEquals(1, app.connections(), "the send deadline passed early");

        appNow.set(t0 + HttpDeadlines.SEND_TIMEOUT_NANOS + S);
        app.spinUntil("the reader reset", () -> reader.closedReason != -1);
        assertEquals(0, app.connections());
        assertTrue(loris.closedReason != 0, "reset, not closed: " + loris.closedReason);
    }

    /**
     * A body the daemon sends itself (SEND_FILE) is under the same send deadline: the app watches the TX pipe's head
     * (what the peer acknowledged) while the file is in flight. A peer that reads nothing loses its connection 60 s
     * after its last acknowledgement; one that reads a little now and then keeps it, long past 60 s from the start.
     */
    @Test
    void aSendFileReaderOfNothingLosesItsConnectionAndASlowButMovingOneDoesNot() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        Files.write(root.resolve("big.bin"), new byte[16 << 20]);
        start(root, true);

        final Client stuck = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        final Client slow = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, stuck, readerSettings());
        app.daemon.connect(8080, slow, readerSettings());
        app.spinUntil("two connections", () -> app.connections() == 2);
        // Both windows closed on bodies the daemon is sending, every byte acknowledged: the clock has not moved yet.
        windowFull(stuck);
        windowFull(slow);
        assertTrue(counters.get(PipeCounter.FILE_BYTES) > 0, "the bodies go by SEND_FILE");
        assertEquals(0, counters.get(PipeCounter.FILES_SENT), "neither file is wholly in its pipe");
        final long t0 = appNow.get();

        // The slow reader takes 16 KiB at t0 + 40 s: its window opens, the daemon sends more, which it acknowledges.
        readSome(slow, t0 + 40 * S);

        appNow.set(t0 + HttpDeadlines.SEND_TIMEOUT_NANOS - S);
        app.spinUntilQuiet();
        assertEquals(2, app.connections(), "the send deadline passed early");

        appNow.set(t0 + HttpDeadlines.SEND_TIMEOUT_NANOS + S);
        app.spinUntil("the reader of nothing reset", () -> stuck.closedReason != -1);
        assertTrue(stuck.closedReason != 0, "reset, not closed: " + stuck.closedReason);
        assertEquals(1, app.connections());

        // The deadline is time without progress, not the whole transfer: the slow reader goes on as long as it reads.
        readSome(slow, t0 + 80 * S);
        readSome(slow, t0 + 120 * S);
        appNow.set(t0 + 120 * S + HttpDeadlines.SEND_TIMEOUT_NANOS - S);
        app.spinUntilQuiet();
        assertEquals(1, app.connections(), "the slow reader kept its connection");
        assertEquals(-1, slow.closedReason);
        assertEquals(0, counters.get(PipeCounter.FILES_SENT), "still sending its file");

        // Until it stops reading too.
        appNow.set(t0 + 120 * S + HttpDeadlines.SEND_TIMEOUT_NANOS + S);
        app.spinUntil("the slow reader reset", () -> slow.closedReason != -1);
        assertEquals(0, app.connections());
    }

    /**
     * The copy path (no SEND_FILE) too: the app refills the TX pipe only once a chunk is free, so between refills the
     * peer's acknowledgements are the progress. A reader that takes 8 KiB at +40 s and 4 KiB at +55 s keeps its
     * connection past +60 s (before, it was reset at 60 s from the last refill), and loses it 60 s after its last read.
     */
    @Test
    void aCopiedBodysSlowButMovingReaderKeepsItsConnection() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        Files.write(root.resolve("big.bin"), new byte[16 << 20]);
        start(root, false);
        final Client slow = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, slow, readerSettings());
        app.spinUntil("one connection", () -> app.connections() == 1);
        windowFull(slow);
        final long t0 = appNow.get();
        readN(slow, t0 + 40 * S, 8 * 1024);
        readN(slow, t0 + 55 * S, 4 * 1024);
        appNow.set(t0 + 61 * S);
        app.spinUntilQuiet();
        assertEquals(1, app.connections(), "reset while the reader was moving");
        assertEquals(-1, slow.closedReason);

        appNow.set(t0 + 55 * S + HttpDeadlines.SEND_TIMEOUT_NANOS + S);
        app.spinUntil("the reader reset once it stopped", () -> slow.closedReason != -1);
        assertEquals(0, app.connections());
    }

    /**
     * Blank lines between keep-alive requests (RFC 9112 §2.2: a server SHOULD ignore them) start no request-head
     * deadline: a client that sends a stray CRLF after its request and then idles is closed by the idle timeout like
     * any other, not reset at 30 s.
     */
    @Test
    void aStrayCrlfAfterARequestStartsNoHeadDeadline() throws Exception
    {
        startWithOneSmallFile();
        final Client plain = new Client("GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n");
        final Client crlf = new Client("GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n\r\n");
        app.daemon.connect(8080, plain, null);
        app.daemon.connect(8080, crlf, null);
        app.spinUntil("two connections", () -> app.connections() == 2);
        app.spinUntilQuiet();
        final long t0 = appNow.get();
        appNow.set(t0 + HttpDeadlines.HEADER_TIMEOUT_NANOS + S);
        app.spinUntilQuiet();
        assertEquals(2, app.connections(), "the stray CRLF's connection was reset: " + crlf.closedReason);
        assertEquals(-1, crlf.closedReason);
    }

    /**
     * Empty lines before a request line are skipped (RFC 9112 §2.2) and start no head deadline, and they are no
     * activity either: a client that drips "\r\n" every 20 s never sends a request, and is closed (FIN) by the idle
     * timeout 60 s after it connected. Before, every byte read restarted the idle timer, so the drip held the
     * connection until 8 KiB of empty lines, days later.
     */
    @Test
    void aDripOfEmptyLinesIsNoActivityAndTheIdleTimeoutClosesItsConnection() throws Exception
    {
        startWithOneSmallFile();
        final Client drip = new Client("\r\n");
        connectAndSettle(drip);
        final long t0 = appNow.get();
        final UnsafeBuffer crlf = new UnsafeBuffer(new byte[] {'\r', '\n'});
        for (long t = 20 * S; t <= HttpApp.IDLE_TIMEOUT_NANOS; t += 20 * S)
        {
            appNow.set(t0 + t);
            assertEquals(2, (int)app.daemon.onLoop(() -> drip.connection.write(crlf, 0, 2)));
            app.spinUntilQuiet();
        }
        assertEquals(1, app.connections(), "closed before the idle timeout passed");
        assertFalse(drip.peerClosed, "closed before the idle timeout passed");

        appNow.set(t0 + HttpApp.IDLE_TIMEOUT_NANOS + S);
        app.spinUntilQuiet();
        assertTrue(drip.peerClosed, "the drip of empty lines kept the connection open past the idle timeout");
        assertEquals(-1, drip.closedReason, "an idle close is a FIN, not a reset");
    }

    /**
     * A request body is read after its response, and each of its bytes is activity: dripped a byte every 10 s, it held
     * the connection for good (the idle timeout never passed). Now it has {@link HttpDeadlines#BODY_TIMEOUT_NANOS} from
     * the end of the response, however the bytes trickle, and then the connection is reset as a slowloris's.
     */
    @Test
    void aDrippedRequestBodyLosesItsConnectionWhenTheBodyDeadlinePasses() throws Exception
    {
        startWithOneSmallFile();
        final Client drip = new Client("GET /a.txt HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n");
        connectAndSettle(drip);
        assertTrue(received(drip).startsWith("HTTP/1.1 200 OK\r\n"));
        final long t0 = appNow.get();

        final UnsafeBuffer one = new UnsafeBuffer(new byte[] {'x'});
        for (long t = 10 * S; t < HttpDeadlines.BODY_TIMEOUT_NANOS; t += 10 * S)
        {
            appNow.set(t0 + t);
            assertEquals(1, (int)app.daemon.onLoop(() -> drip.connection.write(one, 0, 1)));
            app.spinUntilQuiet();
        }
        appNow.set(t0 + HttpDeadlines.BODY_TIMEOUT_NANOS - S);
        app.spinUntilQuiet();
        assertEquals(1, app.connections(), "the body deadline passed early");

        appNow.set(t0 + HttpDeadlines.BODY_TIMEOUT_NANOS + S);
        app.spinUntil("the dripper reset", () -> drip.closedReason != -1);
        assertTrue(drip.closedReason != 0, "reset, not closed: " + drip.closedReason);
        assertEquals(0, app.connections());
    }

    /** A body read to its end ends its deadline: the request behind it is answered, the connection kept past it. */
    @Test
    void aWholeRequestBodyEndsItsDeadline() throws Exception
    {
        startWithOneSmallFile();
        final Client c = new Client("GET /a.txt HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" +
            "GET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n");
        connectAndSettle(c);
        final String responses = received(c);
        assertEquals(2, responses.split("HTTP/1.1 200 OK\r\n", -1).length - 1, responses);

        appNow.set(appNow.get() + HttpDeadlines.BODY_TIMEOUT_NANOS + S);
        app.spinUntilQuiet();
        assertEquals(1, app.connections(), "reset: " + c.closedReason);
        assertEquals(-1, c.closedReason);
    }

    /**
     * A Content-Length over {@link HttpRequestParser#MAX_BODY_BYTES} is answered 413 and the connection closed (FIN)
     * without reading the body: before, a GET declaring 10^12 bytes was answered 200 and its body read for good.
     */
    @Test
    void aRequestBodyOverTheLimitIs413AndTheConnectionIsClosed() throws Exception
    {
        startWithOneSmallFile();
        final Client c = new Client("GET /a.txt HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000000\r\n\r\nxyz");
        app.daemon.connect(8080, c, null);
        app.spinUntil("the app's FIN", () -> c.peerClosed);
        final String response = received(c);
        assertTrue(response.startsWith("HTTP/1.1 413 Content Too Large\r\n"), response);
        assertTrue(response.contains("\r\nConnection: close\r\n"), response);
    }

    /**
     * A GET with a chunked body (RFC 9112 §7.1, which it answered 501) is answered and the connection closed: the
     * body's end is not looked for, so the request pipelined behind it gets no answer (the client sends it again).
     */
    @Test
    void aChunkedRequestIsAnsweredAndTheConnectionClosed() throws Exception
    {
        startWithOneSmallFile();
        final Client c = new Client("GET /a.txt HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" +
            "5\r\nhello\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, c, null);
        app.spinUntil("the app's FIN", () -> c.peerClosed);
        final String response = received(c);
        assertTrue(response.startsWith("HTTP/1.1 200 OK\r\n"), response);
        assertTrue(response.contains("\r\nConnection: close\r\n"), response);
        assertTrue(response.endsWith("\r\n\r\nhello\n"), "one response: " + response);
    }

    /** /sub is a 301 to /sub/ (its query kept), on a connection kept alive for the request that follows it. */
    @Test
    void aDirectoryNamedWithoutItsSlashIsRedirectedToIt() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        Files.createDirectory(root.resolve("sub"));
        Files.writeString(root.resolve("sub").resolve("index.html"), "<a href=x.html>x</a>\n");
        start(root, false);
        final Client c = new Client("GET /sub?x=1 HTTP/1.1\r\nHost: h\r\n\r\n" +
            "GET /sub/?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        connectAndSettle(c);
        final String responses = received(c);
        assertTrue(responses.startsWith("HTTP/1.1 301 Moved Permanently\r\n"), responses);
        assertTrue(responses.contains("\r\nLocation: /sub/?x=1\r\n"), responses);
        assertTrue(responses.contains("\r\n\r\n301 Moved Permanently\nHTTP/1.1 200 OK\r\n"), responses);
        assertTrue(responses.endsWith("\r\n\r\n<a href=x.html>x</a>\n"), responses);
        assertEquals(1, app.connections());
    }

    /**
     * A file truncated before the daemon read a byte of it: the daemon answers its SEND_FILE as it answers a refusal
     * (FILE_UNREADABLE, 0 bytes), and the app took that for one and copied every body from then on. That response is
     * reset (its head promised the old length); the next body, the file whole again, still goes by SEND_FILE.
     */
    @Test
    void aFileTruncatedUnderItsSendFileResetsThatResponseAndSendFileGoesOn() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        final byte[] content = new byte[HttpApp.SEND_FILE_MIN + 8 * 1024];
        final Path big = Files.write(root.resolve("big.bin"), content);
        start(root, true);
        final Client first = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, first, null);
        app.spinUntil("the first body sent by the daemon", () -> counters.get(PipeCounter.FILES_SENT) == 1);
        app.spinUntilQuiet();

        Files.write(big, new byte[0]); // truncated in place while its cache entry is trusted
        final Client second = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, second, null);
        app.spinUntil("the second response reset", () -> second.closedReason != -1);
        assertTrue(second.closedReason != 0, "reset, not closed: " + second.closedReason);

        Files.write(big, content);
        appNow.addAndGet(HttpApp.CACHE_REVALIDATE_NANOS + S);
        final Client third = new Client("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
        app.daemon.connect(8080, third, null);
        app.spinUntil("the third response", () -> third.connection != null && unread(third) > content.length);
        assertEquals(2, counters.get(PipeCounter.FILES_SENT), "the third body goes by SEND_FILE");
    }

    /** What {@code c} has received and not read, read now. */
    private String received(final Client c) throws Exception
    {
        final UnsafeBuffer sink = new UnsafeBuffer(new byte[64 * 1024]);
        final int n = app.daemon.onLoop(() -> c.connection.read(sink, 0, sink.capacity()));
        return new String(sink.byteArray(), 0, Math.max(n, 0), StandardCharsets.ISO_8859_1);
    }

    private void readN(final Client c, final long now, final int n) throws Exception
    {
        appNow.set(now);
        final UnsafeBuffer sink = new UnsafeBuffer(new byte[n]);
        assertEquals(n, (int)app.daemon.onLoop(() -> c.connection.read(sink, 0, n)));
        windowFull(c);
    }

    /**
     * The real client library and daemon: an app sends a file with SEND_FILE and closes its client at once, as a
     * process that exits after sendfile(2) and close(2). The peer gets the whole file, byte-exact, then FIN. Before,
     * the client aborted a connection with a file in flight at its close, and the peer got part of the file and a
     * reset.
     */
    @Test
    void aFileInFlightWhenTheAppClosesItsClientReachesThePeerWholeThenFin() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        final byte[] content = new byte[8 << 20];
        new java.util.Random(81).nextBytes(content);
        final Path big = Files.write(root.resolve("big.bin"), content);
        start(root, true);
        final PipeListener raw = app.client.listen(8081, 4);
        final java.security.MessageDigest digest = java.security.MessageDigest.getInstance("SHA-256");
        final AtomicLong received = new AtomicLong();
        final java.util.concurrent.atomic.AtomicBoolean fin = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicInteger closedReason = new java.util.concurrent.atomic.AtomicInteger(-1);
        final TcpHandler peer = new TcpHandler()
        {
            final UnsafeBuffer sink = new UnsafeBuffer(new byte[64 << 10]);

            @Override
            public void onReadable(final TcpConnection c)
            {
                int n;
                while ((n = c.read(sink, 0, sink.capacity())) > 0)
                {
                    digest.update(sink.byteArray(), 0, n);
                    received.addAndGet(n);
                }
            }

            @Override
            public void onPeerClosed(final TcpConnection c)
            {
                onReadable(c);
                fin.set(true);
            }

            @Override
            public void onClosed(final TcpConnection c, final int reason)
            {
                closedReason.set(reason);
            }
        };
        app.daemon.connect(8081, peer, null);
        final io.nicstack.pipes.client.PipeConnection[] accepted = new io.nicstack.pipes.client.PipeConnection[1];
        app.spinUntil("the raw connection", () ->
        {
            try
            {
                return (accepted[0] = raw.accept()) != null;
            }
            catch (final io.nicstack.pipes.client.NicstackException e)
            {
                throw new IllegalStateException(e);
            }
        });
        try (io.nicstack.pipes.client.SendableFile file = io.nicstack.pipes.client.SendableFile.open(big))
        {
            accepted[0].sendFile(file, 0, content.length);
        }
        app.server.stop();
        app.client.close();
        final long giveUp = System.nanoTime() + 60 * S;
        while (!fin.get() && closedReason.get() == -1)
        {
            assertTrue(System.nanoTime() - giveUp < 0, "timed out: " + received.get() + " bytes received");
            LockSupport.parkNanos(1_000_000L);
        }
        assertTrue(fin.get(), "FIN, not a reset (closed reason " + closedReason.get() + ") after " + received.get() + " bytes");
        assertEquals(content.length, received.get());
        assertTrue(java.util.Arrays.equals(java.security.MessageDigest.getInstance("SHA-256").digest(content), digest.digest()),
            "the file, byte-exact");
        assertEquals(1, counters.get(PipeCounter.FILES_SENT));
    }

    /**
     * A reader's end on stack B: a receive buffer of {@link #READER_WINDOW} (window scale 0, so a full buffer is a
     * zero window) that acknowledges at once: when the buffer is full, the daemon has every acknowledgement.
     */
    private static TcpSettings readerSettings()
    {
        final TcpSettings settings = new TcpSettings();
        settings.receiveBufferBytes = READER_WINDOW;
        settings.delayedAckNanos = 0;
        return settings;
    }

    /** Until {@code c}'s receive buffer is full and the daemon has its acknowledgement; then app passes until quiet. */
    private void windowFull(final Client c) throws Exception
    {
        // The last bytes may wait for the daemon's SWS override timeout (200 ms, RFC 9293 §3.8.6.2.1).
        app.spinUntil("a full window", () -> c.connection != null && unread(c) == READER_WINDOW);
        app.settle(); // the ACK sent, and the daemon's round that took it
    }

    /** At {@code now} on the app's clock, {@code c} reads half its window; until the daemon has filled it again. */
    private void readSome(final Client c, final long now) throws Exception
    {
        appNow.set(now);
        final UnsafeBuffer sink = new UnsafeBuffer(new byte[READER_WINDOW / 2]);
        assertEquals(sink.capacity(), (int)app.daemon.onLoop(() -> c.connection.read(sink, 0, sink.capacity())));
        windowFull(c);
    }
}
