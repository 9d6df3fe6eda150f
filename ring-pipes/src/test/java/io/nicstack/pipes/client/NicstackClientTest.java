package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NicstackClientTest
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2; // 198.18.0.2

    @TempDir
    Path dir;

    private FakeDaemon daemon;
    private NicstackClient client;

    @AfterEach
    void tearDown()
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

    private static ClientOptions options()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 8;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        options.daemonTimeoutMillis = 300;
        options.attachTimeoutMillis = 3000;
        return options;
    }

    private NicstackClient attach(final FakeDaemon.Mode mode) throws NicstackException
    {
        daemon = new FakeDaemon(dir, mode);
        client = NicstackClient.attach(dir, "test-app", options());
        return client;
    }

    private void pollUntil(final BooleanSupplier condition) throws NicstackException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            client.poll();
            assertTrue(System.nanoTime() < deadline, "condition not met in time");
            Thread.onSpinWait();
        }
    }

    @Test
    void listenAcceptReceiveSendAndClose() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        final Path appFile = client.appFile();
        assertEquals(dir.resolve("apps").resolve("test-app-" + ProcessHandle.current().pid() + ".app"), appFile);
        assertEquals(AppFileDescriptor.STATE_ATTACHED, daemon.<Integer>call(d -> d.file().state()));

        final PipeListener listener = client.listen(8080, 16);
        assertEquals(8080, listener.port());
        final FakeDaemon.Control listen = daemon.controlsOfType(Protocol.LISTEN).get(0);
        assertTrue(listen.l0() < 0, "request ids have the top bit set");
        assertEquals(16, listen.i12());
        assertNull(listener.tryAccept());

        final long id = daemon.call(d -> d.accept(8080, PEER, 50000));
        final PipeConnection connection = listener.accept();
        assertEquals(id, connection.id());
        assertEquals(8080, connection.localPort());
        assertEquals(PEER, connection.remoteAddress());
        assertEquals(50000, connection.remotePort());
        assertEquals(0, connection.peek());

        // Zero-copy receive.
        daemon.call(d -> d.sendRx(id, "hello".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(5, connection.awaitReadable(5000));
        final byte[] got = new byte[5];
        connection.rxBuffer().getBytes(connection.rxIndex(), got);
        assertEquals("hello", new String(got, StandardCharsets.US_ASCII));
        connection.release(5);
        assertEquals(0, connection.peek());
        pollUntil(() -> connection.notifiedTail() == 5);

        // Zero-copy send: the daemon sees exactly what was committed.
        final int span = connection.claim(100);
        assertEquals(100, span);
        connection.txBuffer().putStringWithoutLengthAscii(connection.txIndex(), "world");
        connection.commit(5);
        pollUntil(() -> Arrays.equals("world".getBytes(StandardCharsets.US_ASCII), daemon.call(d -> d.received(id))));

        // Streams, each moving more than a pipe holds, so both sides wrap and wait for each other.
        final byte[] big = new byte[1_000_000];
        new Random(5).nextBytes(big);
        final OutputStream out = connection.outputStream();
        out.write(big, 0, 1000);
        out.write(big, 1000, big.length - 1000);
        out.flush();
        pollUntil(() -> daemon.call(d -> d.received(id)).length == 5 + big.length);
        assertArrayEquals(big, Arrays.copyOfRange(daemon.<byte[]>call(d -> d.received(id)), 5, 5 + big.length));

        daemon.call(d -> d.sendRx(id, big));
        final InputStream in = connection.inputStream();
        final byte[] back = new byte[big.length];
        int n = 0;
        back[n++] = (byte)in.read();
        while (n < back.length)
        {
            n += in.read(back, n, back.length - n);
        }
        assertArrayEquals(big, back);
        pollUntil(() -> daemon.call(d -> d.rxBacklogDone(id)));

        // R1 reached twice (two episodes of unanswered retransmissions): counted, the connection unharmed.
        assertEquals(0, connection.deliveryProblems());
        daemon.call(d -> d.event(Protocol.DELIVERY_PROBLEM, id, 0));
        daemon.call(d -> d.event(Protocol.DELIVERY_PROBLEM, id, 0));
        pollUntil(() -> connection.deliveryProblems() == 2);
        assertFalse(connection.isClosed());

        // FIN from the peer: the end of the stream after everything was consumed.
        daemon.call(d -> d.sendRx(id, new byte[] {42}));
        pollUntil(() -> daemon.call(d -> d.rxBacklogDone(id)));
        daemon.call(d -> d.event(Protocol.PEER_CLOSED, id, 0));
        pollUntil(connection::isPeerClosed);
        assertEquals(1, connection.peek());
        assertEquals(42, in.read());
        assertEquals(-1, connection.peek());
        assertEquals(-1, in.read());
        assertFalse(connection.isClosed());

        // Half-close, then close: SHUTDOWN and CLOSE reach the daemon with the connection id.
        connection.shutdownOutput();
        assertThrows(NicstackException.class, () -> connection.claim(1));
        connection.setOption(Protocol.OPTION_NO_DELAY, 1);
        connection.close();
        assertTrue(connection.isClosed());
        assertThrows(NicstackException.class, connection::peek);
        assertThrows(IllegalStateException.class, () -> connection.release(0));
        pollUntil(() -> !daemon.controlsOfType(Protocol.CLOSE).isEmpty());
        assertEquals(id, daemon.controlsOfType(Protocol.SHUTDOWN).get(0).l0());
        final FakeDaemon.Control option = daemon.controlsOfType(Protocol.SET_OPTION).get(0);
        assertEquals(id, option.l0());
        assertEquals(Protocol.OPTION_NO_DELAY, option.i8());
        assertEquals(1, option.l16());
        assertEquals(id, daemon.controlsOfType(Protocol.CLOSE).get(0).l0());

        // The slot comes back with a new generation; the old id is stale and ignored.
        final long id2 = daemon.call(d -> d.accept(8080, PEER, 50001));
        assertEquals(Protocol.slotOf(id), Protocol.slotOf(id2));
        final PipeConnection second = listener.accept();
        assertEquals(id2, second.id());
        daemon.call(d -> d.event(Protocol.PEER_CLOSED, id, 0));
        daemon.call(d -> d.notify(id, 1000));
        client.poll();
        client.poll();
        assertFalse(second.isPeerClosed());
        assertEquals(0, second.notifiedTail());

        listener.close();
        pollUntil(() -> !daemon.controlsOfType(Protocol.UNLISTEN).isEmpty());
        assertEquals(8080, daemon.controlsOfType(Protocol.UNLISTEN).get(0).i8());

        client.close();
        client = null;
        assertEquals(AppFileDescriptor.STATE_DETACHED, daemon.<Integer>call(d -> d.file().state()));
        assertFalse(Files.exists(appFile));
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (daemon.controlsOfType(Protocol.CLOSE).stream().noneMatch(c -> c.l0() == id2))
        {
            assertTrue(System.nanoTime() < deadline, "close() sends CLOSE for every connection");
            Thread.yield();
        }
    }

    @Test
    void sendFileLeavesTheTxPipeToTheDaemonUntilItAnswers() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        final PipeListener listener = client.listen(8080, 16);
        daemon.call(d -> d.accept(8080, PEER, 50000));
        final PipeConnection connection = listener.accept();
        final long id = connection.id();
        final Path body = Files.writeString(dir.resolve("body.txt"), "BODY");

        assertEquals(4, connection.claim(4));
        connection.txBuffer().putStringWithoutLengthAscii(connection.txIndex(), "head");
        connection.commit(4);
        final SendableFile file = SendableFile.open(body);
        connection.sendFile(file, 1, 3);
        pollUntil(() -> !daemon.controlsOfType(Protocol.SEND_FILE).isEmpty());
        final FakeDaemon.Control request = daemon.controlsOfType(Protocol.SEND_FILE).get(0);
        assertEquals(id, request.l0());
        assertEquals(1, request.l16());
        assertEquals(3, request.l24());
        final Path fd = Path.of("/proc/self/fd/" + request.i8());
        assertEquals(body.toRealPath(), fd.toRealPath(), "the descriptor named is the file's");

        // Until the answer the TX tail is the daemon's.
        assertTrue(connection.isSendingFile());
        assertEquals(0, connection.claim(100));
        assertEquals(0, connection.txFree());
        assertThrows(IllegalStateException.class, () -> connection.commit(1));
        assertThrows(IllegalStateException.class, () -> connection.sendFile(file, 0, 1));
        // Closing the file and the connection now takes effect after the answer: the daemon may not have taken
        // the descriptor yet, and the file's bytes come before the FIN.
        file.close();
        connection.shutdownOutput();
        connection.close();
        for (int i = 0; i < 100; i++)
        {
            client.poll();
        }
        assertTrue(Files.exists(fd), "descriptor kept open while the daemon may still take it");
        assertTrue(daemon.controlsOfType(Protocol.SHUTDOWN).isEmpty() && daemon.controlsOfType(Protocol.CLOSE).isEmpty());

        daemon.call(d -> d.fileSent(id, Protocol.Reason.NONE, "ODY".getBytes(StandardCharsets.US_ASCII)));
        pollUntil(() -> !daemon.controlsOfType(Protocol.CLOSE).isEmpty());
        assertFalse(connection.isSendingFile());
        assertEquals(Protocol.Reason.NONE, connection.fileReason());
        assertEquals(3, connection.fileBytes());
        assertFalse(Files.exists(fd) && fd.toRealPath().equals(body.toRealPath()), "descriptor closed after the answer");
        pollUntil(() -> Arrays.equals("headODY".getBytes(StandardCharsets.US_ASCII), daemon.call(d -> d.received(id))));

        // A refused file leaves the connection as it was: the app sends the bytes itself.
        daemon.call(d -> d.accept(8080, PEER, 50001));
        final PipeConnection second = listener.accept();
        final long id2 = second.id();
        try (SendableFile again = SendableFile.open(body))
        {
            second.sendFile(again, 0, 4);
            daemon.call(d -> d.fileSent(id2, Protocol.Reason.FILE_UNREADABLE, new byte[0]));
            pollUntil(() -> !second.isSendingFile());
        }
        assertEquals(Protocol.Reason.FILE_UNREADABLE, second.fileReason());
        assertEquals(0, second.fileBytes());
        assertEquals(4, second.claim(4));
        second.txBuffer().putStringWithoutLengthAscii(second.txIndex(), "BODY");
        second.commit(4);
        pollUntil(() -> Arrays.equals("BODY".getBytes(StandardCharsets.US_ASCII), daemon.call(d -> d.received(id2))));
        final SendableFile closed = SendableFile.open(body);
        closed.close();
        assertThrows(IllegalStateException.class, () -> second.sendFile(closed, 0, 1));

        // A daemon that no longer knows the id answers ERROR, never FILE_SENT: the wait ends there too.
        final SendableFile last = SendableFile.open(body);
        second.sendFile(last, 0, 4);
        last.close();
        daemon.call(d -> d.event(Protocol.ERROR, id2, Protocol.Reason.UNKNOWN_CONNECTION));
        pollUntil(() -> !second.isSendingFile());
        assertEquals(Protocol.Reason.UNKNOWN_CONNECTION, second.fileReason());
        assertTrue(second.isClosed());
    }

    /**
     * txReleased is the TX pipe's head: what the daemon released (the peer acknowledged), not what was committed; and
     * it moves while a file is in flight, before FILE_SENT, so the app can see a SEND_FILE's progress.
     */
    @Test
    void txReleasedCountsWhatTheDaemonReleasedAndMovesWhileAFileIsInFlight() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        final PipeListener listener = client.listen(8080, 16);
        daemon.call(d -> d.accept(8080, PEER, 50000));
        final PipeConnection connection = listener.accept();
        final long id = connection.id();
        final Path body = Files.writeString(dir.resolve("body.txt"), "BODY");
        assertEquals(0, connection.txReleased());

        daemon.drainTx(false);
        assertEquals(4, connection.claim(4));
        connection.txBuffer().putStringWithoutLengthAscii(connection.txIndex(), "head");
        connection.commit(4);
        daemon.call(d -> null);
        daemon.call(d -> null); // a whole round saw the commit
        assertEquals(0, connection.txReleased(), "committed, not released");
        daemon.drainTx(true);
        pollUntil(() -> connection.txReleased() == 4);

        try (SendableFile file = SendableFile.open(body))
        {
            connection.sendFile(file, 0, 4);
            daemon.call(d -> d.appendTx(id, "BO".getBytes(StandardCharsets.US_ASCII))); // half the file read in
            pollUntil(() -> connection.txReleased() == 6);
            assertTrue(connection.isSendingFile(), "moved before FILE_SENT");
            daemon.call(d -> d.fileSent(id, Protocol.Reason.NONE, "DY".getBytes(StandardCharsets.US_ASCII)));
            pollUntil(() -> !connection.isSendingFile() && connection.txReleased() == 8);
        }
        assertTrue(Arrays.equals("headBODY".getBytes(StandardCharsets.US_ASCII), daemon.call(d -> d.received(id))));

        connection.close();
        assertThrows(IllegalStateException.class, connection::txReleased, "the slot may be another's");
    }

    /**
     * A file the daemon could not (wholly) send after the app ended its output: ABORT, never the FIN that would pass a
     * short stream off as whole. An older daemon's ERROR (BAD_MESSAGE) ends the wait. Closing the client with a file
     * in flight lets its descriptor go.
     */
    @Test
    void sendFileFailuresNeverEndInAFin() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        final PipeListener listener = client.listen(8080, 16);
        final Path body = Files.writeString(dir.resolve("body.txt"), "BODY");

        daemon.call(d -> d.accept(8080, PEER, 50000));
        final PipeConnection first = listener.accept();
        try (SendableFile file = SendableFile.open(body))
        {
            first.sendFile(file, 0, 4);
            first.shutdownOutput();
            daemon.call(d -> d.fileSent(first.id(), Protocol.Reason.FILE_UNREADABLE, new byte[0]));
            pollUntil(() -> !daemon.controlsOfType(Protocol.ABORT).isEmpty());
        }
        assertEquals(first.id(), daemon.controlsOfType(Protocol.ABORT).get(0).l0());
        assertTrue(daemon.controlsOfType(Protocol.SHUTDOWN).isEmpty(), "no FIN after a missing body");
        assertTrue(first.isClosed());

        daemon.call(d -> d.accept(8080, PEER, 50001));
        final PipeConnection second = listener.accept();
        try (SendableFile file = SendableFile.open(body))
        {
            second.sendFile(file, 0, 4);
            daemon.call(d -> d.event(Protocol.ERROR, second.id(), Protocol.Reason.BAD_MESSAGE));
            pollUntil(() -> !second.isSendingFile());
        }
        assertEquals(Protocol.Reason.BAD_MESSAGE, second.fileReason());
        assertEquals(1, second.claim(1), "the TX pipe is the app's again");

        second.abort();
        pollUntil(() -> daemon.controlsOfType(Protocol.ABORT).size() == 2);
        assertThrows(NicstackException.class, () -> second.claim(1));

        daemon.call(d -> d.accept(8080, PEER, 50002));
        final PipeConnection third = listener.accept();
        final SendableFile last = SendableFile.open(body);
        third.sendFile(last, 0, 4);
        pollUntil(() -> !daemon.controlsOfType(Protocol.SEND_FILE).isEmpty() &&
            daemon.controlsOfType(Protocol.SEND_FILE).size() == 3);
        final Path fd = Path.of("/proc/self/fd/" + daemon.controlsOfType(Protocol.SEND_FILE).get(2).i8());
        last.close();
        assertTrue(Files.exists(fd), "kept while the daemon may take it");
        client.close();
        client = null;
        assertFalse(Files.exists(fd) && fd.toRealPath().equals(body.toRealPath()), "let go when the client closes");
    }

    @Test
    void connectRefusedPortInUseAndReset() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        assertEquals(Protocol.Reason.PORT_IN_USE,
            assertThrows(PortInUseException.class, () -> client.listen(FakeDaemon.BUSY_PORT, 1)).reason());
        assertThrows(ConnectionRefusedException.class, () -> client.connect("198.18.0.2", FakeDaemon.REFUSING_PORT));
        assertThrows(NicstackException.class, () -> client.connect("198.18.0.256", 80));
        assertThrows(NicstackException.class, () -> client.connect("example.com", 80));

        final PipeConnection connection = client.connect("198.18.0.2", 443);
        final FakeDaemon.Control connect = daemon.controlsOfType(Protocol.CONNECT).get(daemon.controlsOfType(Protocol.CONNECT).size() - 1);
        assertEquals(PEER, connect.i8());
        assertEquals(443, connect.i12());
        assertEquals(PEER, connection.remoteAddress());
        assertEquals(443, connection.remotePort());
        assertEquals(49152, connection.localPort());

        daemon.call(d -> d.event(Protocol.RESET, connection.id(), 0));
        pollUntil(connection::isClosed);
        assertEquals(Protocol.Reason.RESET, connection.closeReason());
        assertThrows(ConnectionResetException.class, connection::peek);
        assertThrows(ConnectionResetException.class, () -> connection.claim(1));
        assertThrows(ConnectionResetException.class, () -> connection.inputStream().read());
        assertThrows(ConnectionResetException.class, () -> connection.outputStream().write(1));

        final PipeConnection timedOut = client.connect("198.18.0.3", 80);
        daemon.call(d -> d.event(Protocol.CLOSED, timedOut.id(), 3)); // TcpConnection.CLOSE_TIMED_OUT
        pollUntil(timedOut::isClosed);
        assertThrows(ConnectionTimedOutException.class, timedOut::peek);
        assertEquals(Protocol.Reason.TIMED_OUT, timedOut.closeReason());

        // Timed out after ICMP host unreachable: UNREACHABLE, still a ConnectionTimedOutException.
        final PipeConnection unreachable = client.connect("198.18.0.5", 80);
        daemon.call(d -> d.closed(unreachable.id(), 3, 0x0301));
        pollUntil(unreachable::isClosed);
        assertEquals(Protocol.Reason.UNREACHABLE, unreachable.closeReason());
        assertEquals(Protocol.Reason.UNREACHABLE,
            assertThrows(ConnectionTimedOutException.class, unreachable::peek).reason());

        final PipeConnection orderly = client.connect("198.18.0.4", 80);
        daemon.call(d -> d.sendRx(orderly.id(), new byte[] {1, 2}));
        pollUntil(() -> daemon.call(d -> d.rxBacklogDone(orderly.id())));
        daemon.call(d -> d.event(Protocol.CLOSED, orderly.id(), 0));
        pollUntil(orderly::isClosed);
        assertEquals(2, orderly.peek());
        orderly.release(2);
        assertEquals(-1, orderly.peek());
        assertThrows(NicstackException.class, () -> orderly.claim(1));
    }

    @Test
    void peekClaimCommitReleaseDoNotAllocate() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        final PipeConnection connection = client.connect("198.18.0.2", 7);
        final com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long threadId = Thread.currentThread().getId();
        long allocated = Long.MAX_VALUE;
        for (int round = 0; round < 10; round++)
        {
            final long before = threads.getThreadAllocatedBytes(threadId);
            for (int i = 0; i < 100_000; i++)
            {
                final int span = connection.claim(64);
                if (span > 0)
                {
                    connection.txBuffer().putLong(connection.txIndex(), i);
                    connection.commit(Math.min(span, 8));
                }
                final int readable = connection.peek();
                if (readable > 0)
                {
                    connection.release(readable);
                }
            }
            // The least of the rounds: compilation settling in early rounds may allocate a few bytes once.
            allocated = Math.min(allocated, threads.getThreadAllocatedBytes(threadId) - before);
        }
        assertEquals(0, allocated, "bytes allocated by 100k claim/commit/peek/release after warm-up");
    }

    @Test
    void heartbeatThreadKeepsABusyAppAlive() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        Thread.sleep(400); // busy elsewhere: no poll
        final long age = System.currentTimeMillis() - daemon.call(d -> d.file().appHeartbeat());
        assertTrue(age <= 150, "app heartbeat is " + age + " ms old");
    }

    @Test
    void nobodyAnswersMeansDaemonNotRunning() throws Exception
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.IGNORE);
        final ClientOptions options = options();
        options.attachTimeoutMillis = 200;
        options.idleStrategy = new BusySpinIdleStrategy();
        final long start = System.nanoTime();
        assertThrows(DaemonNotRunningException.class, () -> NicstackClient.attach(dir, "lonely", options));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(3));
        try (var files = Files.list(dir.resolve("apps")))
        {
            assertEquals(0, files.count(), "the app file is removed");
        }
        assertThrows(DaemonNotRunningException.class,
            () -> NicstackClient.attach(dir.resolve("no-such-dir"), "lonely", options));
    }

    @Test
    void daemonRejectingTheVersionGivesVersionMismatch()
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.REJECT_VERSION);
        final VersionMismatchException ex = assertThrows(
            VersionMismatchException.class, () -> NicstackClient.attach(dir, "old-app", options()));
        assertEquals(Protocol.Reason.VERSION_MISMATCH, ex.reason());
    }

    @Test
    void silentDaemonHeartbeatGivesDaemonGone() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        final PipeListener listener = client.listen(0, 1);
        assertEquals(40000, listener.port());
        final long id = daemon.call(d -> d.accept(40000, PEER, 1234));
        final PipeConnection connection = listener.accept();
        assertEquals(id, connection.id());
        client.poll();

        daemon.heartbeat = false;
        final long start = System.nanoTime();
        assertThrows(DaemonGoneException.class, listener::accept); // blocking, yet bounded by the liveness check
        final long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(waitedMillis < 2000, "noticed after " + waitedMillis + " ms");
        assertThrows(DaemonGoneException.class, client::poll);
        // Its process lives: a stall, not a loss. The connection is kept.
        assertEquals(0, connection.peek());
        assertFalse(connection.isClosed());

        client.close(); // still cleans up without a daemon
        assertFalse(Files.exists(client.appFile()));
        client = null;
    }

    @Test
    void daemonGoneStateIsNoticedAtOnce() throws Exception
    {
        attach(FakeDaemon.Mode.ATTACH);
        daemon.call(d ->
        {
            d.file().state(AppFileDescriptor.STATE_DAEMON_GONE);
            return null;
        });
        final DaemonGoneException ex = assertThrows(DaemonGoneException.class, () -> client.listen(8080, 1));
        assertTrue(ex.getMessage().contains("shut down"), ex.getMessage());
        assertSame(ex, assertThrows(DaemonGoneException.class, client::poll));
    }
}
