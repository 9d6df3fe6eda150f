package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Libc;
import io.nicstack.pipes.Protocol;
import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The client where the daemon is behind, the rings are full, or the app lets go of things early: descriptors of
 * SEND_FILEs, re-entrant polls, closes with answers unread, and use after close.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClientFailureModesTest
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2; // 198.18.0.2

    private static volatile int fence;

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
        final ClientOptions options = FakeDaemon.smallOptions();
        options.daemonTimeoutMillis = 300;
        return options;
    }

    private void attach() throws NicstackException
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "failure-modes", options());
    }

    private PipeConnection accepted(final PipeListener listener, final int remotePort) throws NicstackException
    {
        return daemon.accepted(listener, PEER, remotePort);
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

    /** Fill the control ring with records of a type the daemon ignores until it takes no more; returns how many. */
    private int fillControlRing()
    {
        final OneToOneRingBuffer ring = client.file().controlRing();
        final UnsafeBuffer junk = new UnsafeBuffer(new byte[Protocol.CONTROL_LENGTH]);
        int n = 0;
        while (ring.write(99, junk, 0, Protocol.CONTROL_LENGTH))
        {
            n++;
        }
        return n;
    }

    private static String realPath(final Path path) throws Exception
    {
        return path.toRealPath().toString();
    }

    // ---- SEND_FILE descriptors --------------------------------------------------------------

    /**
     * abort() with a SEND_FILE the daemon has not read yet, its file closed by the app: the descriptor stays open until
     * the daemon has read the request, so the next open(2) cannot get its number and the daemon takes the right file.
     */
    @Test
    void abortKeepsTheDescriptorUntilTheDaemonReadTheSendFile() throws Exception
    {
        attach();
        final PipeConnection c = accepted(client.listen(8080, 16), 50000);
        final Path body = Files.writeString(dir.resolve("public.html"), "PUBLIC");
        final Path secret = Files.writeString(dir.resolve("secret.key"), "SECRET");

        daemon.pauseControl();
        try (SendableFile file = SendableFile.open(body))
        {
            c.sendFile(file, 0, 6);
        }
        c.abort();
        final int next = Libc.calls().open(secret.toString(), Libc.O_RDONLY | Libc.O_CLOEXEC);
        try
        {
            daemon.readControl = true;
            pollUntil(() -> !daemon.controlsOfType(Protocol.ABORT).isEmpty());
            final int named = daemon.controlsOfType(Protocol.SEND_FILE).get(0).i8();
            assertNotEquals(named, next, "the number named in the unread SEND_FILE was given to the next open(2)");
            assertEquals(List.of(realPath(body)), List.copyOf(daemon.filesTaken));
            final Path fd = Path.of("/proc/self/fd/" + named);
            pollUntil(() -> !Files.exists(fd)); // and let go once the daemon has read it
        }
        finally
        {
            Libc.calls().close(next);
        }
    }

    /**
     * client.close() with a SEND_FILE still unread and a daemon that stopped reading the control ring: the descriptor
     * is left open rather than closed under the request (a leak is better than another file sent).
     */
    @Test
    void closeKeepsTheDescriptorOfAnUnreadSendFile() throws Exception
    {
        attach();
        final PipeConnection c = accepted(client.listen(8080, 16), 50000);
        final Path body = Files.writeString(dir.resolve("public.html"), "PUBLIC");

        daemon.pauseControl();
        try (SendableFile file = SendableFile.open(body))
        {
            c.sendFile(file, 0, 6);
        }
        client.close(); // the daemon's head does not move: given up after daemonTimeoutMillis
        client = null;
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (daemon.filesTaken.isEmpty()) // the fake daemon reads a detached app's control ring regardless
        {
            assertTrue(System.nanoTime() < deadline, "SEND_FILE not read");
            Thread.onSpinWait();
        }
        assertEquals(List.of(realPath(body)), List.copyOf(daemon.filesTaken));
    }

    /**
     * Only a regular file can be sent. A FIFO put where the app stat'ed a file is refused at once instead of blocking
     * the open until some writer comes (before, open(2) without O_NONBLOCK waited for good); a directory is refused.
     */
    @Test
    void aSendableFileIsARegularFileAndAFifoIsRefusedWithoutWaiting() throws Exception
    {
        final Path fifo = dir.resolve("swapped");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        final IOException refused = assertTimeoutPreemptively(Duration.ofSeconds(10),
            () -> assertThrows(IOException.class, () -> SendableFile.open(fifo)));
        assertTrue(refused.getMessage().contains("not a regular file"), refused.getMessage());
        assertThrows(IOException.class, () -> SendableFile.open(dir));
        try (SendableFile file = SendableFile.open(Files.writeString(dir.resolve("plain"), "PLAIN")))
        {
            assertTrue(file.isOpen());
        }
    }

    /** One SendableFile shared by threads: every hold and release counts, and the descriptor closes once, at the end. */
    @Test
    void sendableFileHoldsAreCountedAcrossThreads() throws Exception
    {
        final Path body = Files.writeString(dir.resolve("body"), "BODY");
        final SendableFile file = SendableFile.open(body);
        final int rounds = 1_000_000;
        final int fd = file.acquire();
        for (int i = 1; i < 2 * rounds; i++)
        {
            file.acquire();
        }
        final CyclicBarrier start = new CyclicBarrier(2);
        final Runnable releases = () ->
        {
            try
            {
                start.await();
            }
            catch (final Exception ex)
            {
                throw new AssertionError(ex);
            }
            for (int i = 0; i < rounds; i++)
            {
                file.release();
                fence = i; // a volatile store: the releases are not merged into one
            }
        };
        final Thread a = new Thread(releases);
        final Thread b = new Thread(releases);
        a.start();
        b.start();
        a.join();
        b.join();
        final Path path = Path.of("/proc/self/fd/" + fd);
        assertTrue(Files.exists(path), "still held by the app");
        file.close();
        assertFalse(Files.exists(path) && realPath(path).equals(realPath(body)), "closed with the last hold");
    }

    // ---- event handling is not re-entrant ---------------------------------------------------

    /**
     * A handler's control message that finds the ring full (CLOSE after a FILE_SENT, the daemon behind) waits for the
     * end of the batch instead of polling from inside the poll: no event is handled twice, so the CONNECTED of the
     * same batch gives connect() a connection nobody closed.
     */
    @Test
    void aControlMessageOfAnEventHandlerNeverPollsAgain() throws Exception
    {
        attach();
        final PipeConnection c = accepted(client.listen(8080, 16), 50000);
        final Path body = Files.writeString(dir.resolve("body"), "BODY");
        try (SendableFile file = SendableFile.open(body))
        {
            c.sendFile(file, 0, 4);
        }
        pollUntil(() -> !daemon.controlsOfType(Protocol.SEND_FILE).isEmpty());
        c.close(); // its CLOSE waits for FILE_SENT

        daemon.pauseControl();
        final long requestId = daemon.controlsOfType(Protocol.LISTEN).get(0).l0() + 1; // the connect's, next below
        // In the event ring when the app next polls: the file is done, and the connect succeeded.
        daemon.call(d -> d.fileSent(c.id(), Protocol.Reason.NONE, "BODY".getBytes(StandardCharsets.US_ASCII)));
        final long connectedId = daemon.call(d -> d.connected(requestId, PEER, 443));
        assertTrue(fillControlRing() > 0);
        // The daemon reads its control ring again once the app has taken both events.
        final OneToOneRingBuffer events = client.file().eventRing();
        final Thread resume = new Thread(() ->
        {
            while (events.consumerPosition() != events.producerPosition())
            {
                Thread.onSpinWait();
            }
            daemon.readControl = true;
        });
        resume.start();
        // Not a CONNECT the fake daemon answers with CONNECTED (its ERROR comes after the answer already taken).
        final PipeConnection connection = client.connect("198.18.0.2", FakeDaemon.REFUSING_PORT);
        resume.join();
        assertEquals(connectedId, connection.id());
        assertFalse(connection.isClosed());
        pollUntil(() -> !daemon.controlsOfType(Protocol.CONNECT).isEmpty());
        assertEquals(List.of(c.id()), daemon.controlsOfType(Protocol.CLOSE).stream().map(FakeDaemon.Control::l0).toList(),
            "CLOSE for the file's connection only, before the CONNECT");
        assertEquals(0, connection.claim(0));
    }

    /**
     * An ACCEPTED for a listener the app closed, and a CONNECTED nobody waits for, read while the control ring is full:
     * their CLOSEs wait and go, or the slots would leak.
     */
    @Test
    void theCloseOfAnUnwantedConnectionWaitsForRoomInTheRing() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        listener.close();
        pollUntil(() -> !daemon.controlsOfType(Protocol.UNLISTEN).isEmpty());
        daemon.pauseControl();
        assertTrue(fillControlRing() > 0);
        final long accepted = daemon.call(d -> d.accept(8080, PEER, 50000)); // raced the UNLISTEN
        final long connected = daemon.call(d -> d.connected(Long.MIN_VALUE | 12345, PEER, 443)); // a stale answer
        client.poll();
        daemon.readControl = true;
        pollUntil(() -> daemon.controlsOfType(Protocol.CLOSE).size() == 2);
        assertEquals(List.of(accepted, connected),
            daemon.controlsOfType(Protocol.CLOSE).stream().map(FakeDaemon.Control::l0).toList());
    }

    // ---- client.close() ---------------------------------------------------------------------

    /**
     * client.close() while the daemon beats but does not read its control ring, which is full: the close waits for the
     * daemon timeout without progress, at most, then drops the UNLISTEN and CLOSE that found no room and detaches (the
     * daemon resets what the app did not close at the detach). Before, the CLOSE spun in the ring for as long as the
     * daemon beat.
     */
    @Test
    void closeWithAFullRingAndALiveDaemonWaitsForTheDaemonTimeoutAtMost() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        accepted(listener, 50000);
        final Path appFile = client.appFile();
        daemon.pauseControl();
        assertTrue(fillControlRing() > 0);

        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread closer = new Thread(() ->
        {
            try
            {
                client.close();
            }
            catch (final Throwable ex)
            {
                failure.set(ex);
            }
        }, "closer");
        final long start = System.nanoTime();
        closer.start();
        closer.join(5000); // the daemon timeout is 300 ms
        final boolean waiting = closer.isAlive();
        final long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        daemon.readControl = true;
        closer.join(10_000);
        assertFalse(waiting, "client.close() still waits 5 s in, the daemon timeout 300 ms");
        assertEquals(null, failure.get());
        assertTrue(tookMillis >= 300, "gave up before the daemon timeout: " + tookMillis + " ms");
        assertFalse(Files.exists(appFile), "detached and deleted");
        client = null;
    }

    /**
     * client.close() ends every connection, so the daemon does not reset them at the detach: one whose FILE_SENT was
     * written but not polled yet gets its CLOSE (the answer is taken first, and the body is in the stream); one whose
     * file is still in flight gets its CLOSE too, behind the SEND_FILE (the daemon sends FIN after the whole file, or
     * resets the connection if it refuses or cannot finish the file), and not the ABORT it got before.
     */
    @Test
    void closeClosesConnectionsWithAFileAnsweredOrInFlight() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection answered = accepted(listener, 50000);
        final PipeConnection inFlight = accepted(listener, 50001);
        final Path body = Files.writeString(dir.resolve("body"), "BODY");
        assertEquals(4, answered.claim(4));
        answered.txBuffer().putStringWithoutLengthAscii(answered.txIndex(), "HEAD");
        answered.commit(4);
        try (SendableFile file = SendableFile.open(body))
        {
            answered.sendFile(file, 0, 4);
            inFlight.sendFile(file, 0, 4);
        }
        pollUntil(() -> daemon.controlsOfType(Protocol.SEND_FILE).size() == 2);
        daemon.call(d -> d.fileSent(answered.id(), Protocol.Reason.NONE, "BODY".getBytes(StandardCharsets.US_ASCII)));

        client.close();
        client = null;
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        // Read from the detached app's control ring.
        while (daemon.controlsOfType(Protocol.CLOSE).size() < 2)
        {
            assertTrue(System.nanoTime() < deadline, "CLOSEs read: " + daemon.controlsOfType(Protocol.CLOSE));
            Thread.onSpinWait();
        }
        assertEquals(java.util.Set.of(answered.id(), inFlight.id()),
            daemon.controlsOfType(Protocol.CLOSE).stream().map(FakeDaemon.Control::l0).collect(java.util.stream.Collectors.toSet()));
        assertTrue(daemon.controlsOfType(Protocol.ABORT).isEmpty(), "nothing aborted");
        assertTrue(daemon.controlsOfType(Protocol.SHUTDOWN).isEmpty());
        assertEquals("HEADBODY", new String(daemon.call(d -> d.received(answered.id())), StandardCharsets.US_ASCII));
    }

    // ---- use after close --------------------------------------------------------------------

    /**
     * After client.close() the pipes are unmapped: every accessor of their memory throws IllegalStateException
     * instead (in a JVM of its own, since a read of unmapped memory is a SIGSEGV).
     */
    @Test
    void pipeAccessorsAfterClientCloseThrowInsteadOfFaulting(@TempDir final Path errors) throws Exception
    {
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        final Path output = errors.resolve("child.out");
        final Process child = new ProcessBuilder(List.of(java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=" + errors.resolve("hs_err_%p.log"), "-cp", classpath,
            UnmappedAccessMain.class.getName(), errors.toString()))
            .redirectErrorStream(true).redirectOutput(output.toFile()).start();
        // Its output goes to a file, not a pipe: a read of a pipe blocks past @Timeout (which cannot interrupt it) when
        // the child hangs, and so would the fork until surefire's kill. A bounded wait, then a kill, fails in time.
        if (!child.waitFor(30, TimeUnit.SECONDS))
        {
            child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            fail("the child JVM did not exit within 30 s (killed):\n"
                + Files.readString(output, StandardCharsets.UTF_8));
        }
        final String out = Files.readString(output, StandardCharsets.UTF_8);
        assertEquals(0, child.exitValue(), out);
        for (final String accessor : List.of("rxIndex", "txIndex", "rxBuffer", "txBuffer", "txFree", "release"))
        {
            assertTrue(out.contains(accessor + ": IllegalStateException"), out);
        }
    }

    // ---- the daemon's verdicts --------------------------------------------------------------

    /** An app the daemon reaped (REJECTED with a reason) learns it at the next poll, with the reason, not as a timeout. */
    @Test
    void aReapedAppIsToldWhyAtOnce() throws Exception
    {
        attach();
        daemon.call(d ->
        {
            d.file().reason(Protocol.Reason.BAD_MESSAGE);
            d.file().state(AppFileDescriptor.STATE_REJECTED);
            return null;
        });
        final DaemonGoneException ex = assertThrows(DaemonGoneException.class, client::poll);
        assertEquals(Protocol.Reason.BAD_MESSAGE, ex.reason());
        assertTrue(ex.getMessage().contains(Protocol.Reason.describe(Protocol.Reason.BAD_MESSAGE)), ex.getMessage());
        assertSame(ex, assertThrows(DaemonGoneException.class, client::poll));
    }

    /**
     * commit() after shutdownOutput(), or once a reset was polled, throws as claim() and write() do: the daemon froze
     * the TX end at SHUTDOWN, or has no connection any more, and the bytes would silently never be sent.
     */
    @Test
    void commitAfterTheOutputEndedThrows() throws Exception
    {
        attach();
        final PipeConnection shut = client.connect("198.18.0.2", 80);
        final int room = shut.claim(5);
        shut.txBuffer().putStringWithoutLengthAscii(shut.txIndex(), "LATE!");
        shut.shutdownOutput();
        assertEquals(Protocol.Reason.BAD_ARGUMENT, assertThrows(NicstackException.class, () -> shut.commit(room)).reason());

        final PipeConnection reset = client.connect("198.18.0.2", 81);
        final int span = reset.claim(5);
        reset.txBuffer().putStringWithoutLengthAscii(reset.txIndex(), "LATE!");
        daemon.call(d -> d.event(Protocol.RESET, reset.id(), 0));
        pollUntil(reset::isClosed);
        assertThrows(ConnectionResetException.class, () -> reset.commit(span));
        assertThrows(ConnectionResetException.class, () -> reset.outputStream().write(1));
    }

    /**
     * setOption refuses an unknown option, and a DSCP out of 0..63, at the call (IllegalArgumentException), sending
     * nothing; before, both went to the daemon, and its ERROR failed the next, valid, setOption instead. What the daemon
     * does refuse still fails the next setOption on the connection, once a poll has read it.
     */
    @Test
    void setOptionRefusesBadArgumentsAtTheCall() throws Exception
    {
        attach();
        final PipeConnection c = client.connect("198.18.0.2", 80);
        assertThrows(IllegalArgumentException.class, () -> c.setOption(Protocol.OPTION_DSCP, 64));
        assertThrows(IllegalArgumentException.class, () -> c.setOption(Protocol.OPTION_DSCP, -1));
        assertThrows(IllegalArgumentException.class, () -> c.setOption(12345, 1));
        c.setOption(Protocol.OPTION_DSCP, 63);
        c.setOption(Protocol.OPTION_KEEP_ALIVE, 1);
        pollUntil(() -> daemon.controlsOfType(Protocol.SET_OPTION).size() == 2);
        assertEquals(List.of(Protocol.OPTION_DSCP, Protocol.OPTION_KEEP_ALIVE),
            daemon.controlsOfType(Protocol.SET_OPTION).stream().map(FakeDaemon.Control::i8).toList());

        daemon.call(d -> d.event(Protocol.ERROR, c.id(), Protocol.Reason.BAD_ARGUMENT));
        daemon.call(d -> d.event(Protocol.PEER_CLOSED, c.id(), 0)); // read after the ERROR
        pollUntil(c::isPeerClosed);
        final NicstackException late = assertThrows(NicstackException.class, () -> c.setOption(Protocol.OPTION_NO_DELAY, 1));
        assertEquals(Protocol.Reason.BAD_ARGUMENT, late.reason());
        assertTrue(late.getMessage().contains("an earlier request"), late.getMessage());
        c.setOption(Protocol.OPTION_NO_DELAY, 1);
    }

    /**
     * After client.close() every call of the client, its listeners and connections throws the NicstackException its
     * javadoc declares, as a closed socket's calls throw SocketException.
     */
    @Test
    void callsAfterClientCloseThrowNicstackException() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection c = client.connect("198.18.0.2", 80);
        client.close();
        assertThrows(NicstackException.class, () -> client.listen(8081, 1));
        assertThrows(NicstackException.class, () -> client.connect("198.18.0.2", 81));
        assertThrows(NicstackException.class, client::poll);
        assertThrows(NicstackException.class, listener::accept);
        assertThrows(NicstackException.class, listener::tryAccept);
        assertThrows(NicstackException.class, c::peek);
        assertThrows(NicstackException.class, () -> c.claim(1));
        assertThrows(NicstackException.class, () -> c.inputStream().read());
        client = null;
    }

    /** A record length past the end of the event ring: a poll fails with the session lost, instead of losing events. */
    @Test
    void anEventLengthPastTheRingFailsThePoll() throws Exception
    {
        corruptEventLength(1 << 20);
    }

    /** A negative record length no producer writes: a poll fails, instead of stopping the ring and hanging accept(). */
    @Test
    void aNegativeEventLengthFailsThePoll() throws Exception
    {
        corruptEventLength(-1);
    }

    private void corruptEventLength(final int length) throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        daemon.call(d ->
        {
            final OneToOneRingBuffer ring = d.file().eventRing();
            final int index = (int)ring.producerPosition() & (ring.capacity() - 1);
            ring.write(Protocol.RESET, new UnsafeBuffer(new byte[Protocol.EVENT_LENGTH]), 0, Protocol.EVENT_LENGTH);
            ring.buffer().putIntVolatile(index, length); // the record's length word
            return null;
        });
        final DaemonGoneException ex = assertThrows(DaemonGoneException.class, client::poll);
        assertEquals(Protocol.Reason.BAD_MESSAGE, ex.reason());
        assertTrue(ex.getMessage().contains("event ring"), ex.getMessage());
        assertThrows(DaemonGoneException.class, listener::accept);
    }

    /**
     * A daemon whose heartbeat stops moving for the daemon timeout (on the client's own clock) fails polls while it
     * stalls; once it beats again polls go on and the connections are still there. What its heartbeat says in wall-clock
     * time does not matter, only that it moves.
     */
    @Test
    void aStalledDaemonIsBackOnceItsHeartbeatMoves() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "stall", options);
        final PipeConnection c = client.connect("198.18.0.2", 80);
        daemon.heartbeat = false;
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(1); // a wall clock far behind: it moved, so the daemon is alive
            return null;
        });
        client.poll();

        clock.advance(TimeUnit.MILLISECONDS.toNanos(options.daemonTimeoutMillis + 1));
        final DaemonGoneException stalled = assertThrows(DaemonGoneException.class, client::poll);
        assertTrue(stalled.getMessage().contains("has not moved"), stalled.getMessage());
        assertEquals(0, c.peek(), "the session is kept while the daemon's process lives");

        daemon.call(d ->
        {
            d.file().daemonHeartbeat(2);
            return null;
        });
        client.poll();
        assertFalse(c.isClosed());
        assertEquals(1, c.claim(1));
    }

    /**
     * A daemon that never beats again while a process with its pid lives (the pid reused, PID 1 of another PID
     * namespace, or a reap that wrote no final state): past {@link ClientOptions#daemonLossMillis} the stall is a loss,
     * and the session is gone with its connections.
     */
    @Test
    void aHeartbeatStoppedPastTheLossBoundLosesTheSession() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        options.daemonLossMillis = 3000;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "never-again", options);
        final PipeConnection c = client.connect("198.18.0.2", 80);
        daemon.heartbeat = false;
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(1);
            return null;
        });
        client.poll();

        clock.advance(TimeUnit.MILLISECONDS.toNanos(options.daemonLossMillis - 1));
        assertThrows(DaemonGoneException.class, client::poll);
        assertEquals(0, c.peek(), "a stall within the loss bound keeps the session");

        clock.advance(TimeUnit.MILLISECONDS.toNanos(2));
        final DaemonGoneException lost = assertThrows(DaemonGoneException.class, client::poll);
        assertTrue(lost.getMessage().contains("loss bound"), lost.getMessage());
        assertTrue(client.isGone());
        assertTrue(c.isClosed());
        assertThrows(DaemonGoneException.class, c::peek);
        assertThrows(DaemonGoneException.class, () -> c.claim(16));
        assertSame(lost, assertThrows(DaemonGoneException.class, client::poll), "the loss is for good");
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(2);
            return null;
        });
        assertSame(lost, assertThrows(DaemonGoneException.class, client::poll), "even if it beats again");
    }

    /**
     * Both processes frozen together for longer than the loss bound (a cgroup freezer, a VM pause: the monotonic clock
     * runs on), the app first to run after the thaw: its first poll reports a stall and keeps the session, and once the
     * daemon beats again polls go on. A loss needs a stall a poll reported first.
     */
    @Test
    void aSilenceNoPollWatchedIsAStallFirstNotALoss() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        options.daemonLossMillis = 3000;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "frozen", options);
        final PipeConnection c = client.connect("198.18.0.2", 80);
        daemon.heartbeat = false;
        beat(1);
        client.poll();
        clock.advance(TimeUnit.MILLISECONDS.toNanos(options.daemonLossMillis + 1)); // the freeze
        final DaemonGoneException stall = assertThrows(DaemonGoneException.class, client::poll);
        assertTrue(stall.getMessage().contains("session is kept"), stall.getMessage());
        assertFalse(client.isGone());
        beat(2); // the daemon thaws
        client.poll();
        assertFalse(c.isClosed());
        assertEquals(0, c.peek());
    }

    /**
     * An app that raised daemonTimeoutMillis above the default loss bound still has a stall it can ride out: the loss
     * bound is at least twice the timeout.
     */
    @Test
    void aRaisedDaemonTimeoutKeepsARecoverableStall() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        options.daemonTimeoutMillis = 30_000; // daemonLossMillis left at its default, 10 s
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "patient", options);
        daemon.heartbeat = false;
        beat(1);
        client.poll();
        clock.advance(TimeUnit.MILLISECONDS.toNanos(30_001));
        assertThrows(DaemonGoneException.class, client::poll);
        assertFalse(client.isGone(), "a stall past the raised timeout keeps the session");
        clock.advance(TimeUnit.MILLISECONDS.toNanos(25_000));
        assertThrows(DaemonGoneException.class, client::poll);
        assertFalse(client.isGone(), "still under twice the timeout");
        beat(2);
        client.poll();
        assertFalse(client.isGone());
    }

    private void beat(final long value)
    {
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(value);
            return null;
        });
    }

    /** Stop the daemon's heartbeat (its process lives) and let the client see it, then the daemon timeout pass. */
    private void stallPastTheTimeout(final CachedNanoClock clock, final ClientOptions options) throws Exception
    {
        daemon.heartbeat = false;
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(1);
            return null;
        });
        client.poll();
        clock.advance(TimeUnit.MILLISECONDS.toNanos(options.daemonTimeoutMillis + 1));
        assertThrows(DaemonGoneException.class, client::poll);
    }

    /** The stalled daemon is back: its heartbeat has moved by the time this returns, and it reads control again. */
    private void beatAgainAndReadControl()
    {
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(2);
            return null;
        });
        daemon.heartbeat = true;
        daemon.readControl = true;
    }

    /**
     * CLOSE, ABORT and SHUTDOWN asked for while the daemon stalls with the control ring full: the session is kept, so
     * they wait for room and reach the daemon, in order, once it reads again.
     */
    @Test
    void closeAbortAndShutdownDuringAStallWithAFullRingAreSentOnceItReadsAgain() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "stall-close", options);
        final PipeConnection closed = client.connect("198.18.0.2", 80);
        final PipeConnection aborted = client.connect("198.18.0.2", 81);
        final PipeConnection shut = client.connect("198.18.0.2", 82);
        daemon.pauseControl();
        final int junk = fillControlRing();
        stallPastTheTimeout(clock, options);

        closed.close();
        aborted.abort();
        shut.shutdownOutput();
        assertFalse(client.isGone());

        beatAgainAndReadControl();
        pollUntil(() -> daemon.controlsOfType(Protocol.SHUTDOWN).size() == 1);
        assertEquals(junk, daemon.controlsOfType(99).size());
        assertEquals(List.of(closed.id()), daemon.controlsOfType(Protocol.CLOSE).stream().map(FakeDaemon.Control::l0).toList());
        assertEquals(List.of(aborted.id()), daemon.controlsOfType(Protocol.ABORT).stream().map(FakeDaemon.Control::l0).toList());
        assertEquals(shut.id(), daemon.controlsOfType(Protocol.SHUTDOWN).get(0).l0());
        final List<Integer> order = daemon.controls.stream().map(FakeDaemon.Control::type)
            .filter(type -> type != 99 && type != Protocol.CONNECT).toList();
        assertEquals(List.of(Protocol.CLOSE, Protocol.ABORT, Protocol.SHUTDOWN), order);
        assertFalse(client.isGone());
    }

    /**
     * Messages deferred while the daemon stalls are bounded (two per slot and per listener the daemon allows): one more
     * loses the session, rather than let the client's view of the daemon's state drift.
     */
    @Test
    void deferredMessagesPastTheBoundLoseTheSession() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "stall-overflow", options);
        final int bound = 2 * options.maxConnections + 2 * 64;
        final List<PipeListener> listeners = new java.util.ArrayList<>();
        for (int i = 0; i <= bound; i++)
        {
            listeners.add(client.listen(10000 + i, 1));
        }
        daemon.pauseControl();
        fillControlRing();
        stallPastTheTimeout(clock, options);

        for (int i = 0; i < bound; i++)
        {
            listeners.get(i).close();
        }
        assertFalse(client.isGone(), "up to the bound the messages wait");
        listeners.get(bound).close();
        assertTrue(client.isGone());
        final DaemonGoneException lost = assertThrows(DaemonGoneException.class, client::poll);
        assertTrue(lost.getMessage().contains("control messages"), lost.getMessage());
        daemon.readControl = true; // close() waits for the control ring on the frozen clock while it moves
    }

    /**
     * listen() given up in a stall: the LISTENING that comes once the daemon reads again is answered with UNLISTEN, so
     * the daemon holds no listener nobody has, and a retried listen on the port is not refused for the whole session.
     */
    @Test
    void aLateListeningIsAnsweredWithUnlisten() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "late-listening", options);
        daemon.pauseControl();
        stallPastTheTimeout(clock, options);
        assertThrows(DaemonGoneException.class, () -> client.listen(8080, 16)); // LISTEN sent, no answer yet

        beatAgainAndReadControl();
        pollUntil(() -> !daemon.controlsOfType(Protocol.UNLISTEN).isEmpty());
        assertEquals(8080, daemon.controlsOfType(Protocol.UNLISTEN).get(0).i8());
        final PipeListener listener = client.listen(8080, 16);
        assertEquals(8080, listener.port());
        final List<Integer> order = daemon.controls.stream().map(FakeDaemon.Control::type).toList();
        assertEquals(List.of(Protocol.LISTEN, Protocol.UNLISTEN, Protocol.LISTEN), order);
    }

    /**
     * The poll that reads CONNECTED also finds the daemon stalled: connect() returns the connection rather than throw
     * and leave the daemon's slot with nobody to close it.
     */
    @Test
    void anAnswerReadByAPollThatFindsAStallIsKept() throws Exception
    {
        final CachedNanoClock clock = new CachedNanoClock();
        final ClientOptions options = options();
        options.clock = clock;
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "answer-in-stall", options);
        daemon.pauseControl();
        daemon.heartbeat = false;
        daemon.call(d ->
        {
            d.file().daemonHeartbeat(1);
            return null;
        });
        client.poll();
        // The answer to the session's first request, already written when the stall is seen.
        final long id = daemon.call(d -> d.connected(Long.MIN_VALUE | 1, PEER, 80));
        clock.advance(TimeUnit.MILLISECONDS.toNanos(options.daemonTimeoutMillis + 1));

        final PipeConnection c = client.connect("198.18.0.2", 80);
        assertEquals(id, c.id());
        assertFalse(c.isClosed());
        assertThrows(DaemonGoneException.class, client::poll, "the stall shows at the next poll");

        beatAgainAndReadControl();
        c.close();
        pollUntil(() -> !daemon.controlsOfType(Protocol.CLOSE).isEmpty());
        assertEquals(id, daemon.controlsOfType(Protocol.CLOSE).get(0).l0());
    }
}
