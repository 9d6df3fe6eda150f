package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The client and threads: a NicstackClient is single-threaded, except that closes may come from another thread (see
 * {@link CloseFromAnotherThreadTest} for closes racing a blocked call in a JVM of its own).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClientThreadsTest
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2; // 198.18.0.2

    @TempDir
    Path dir;

    private FakeDaemon daemon;
    private NicstackClient client;
    private Thread blocked;

    @AfterEach
    void tearDown() throws InterruptedException
    {
        if (daemon != null)
        {
            daemon.readControl = true;
            daemon.drainTx(true);
        }
        if (blocked != null)
        {
            blocked.join(10_000);
        }
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
        return options;
    }

    private void attach() throws NicstackException
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "threads", options());
    }

    private PipeConnection accepted(final PipeListener listener, final int remotePort) throws NicstackException
    {
        return daemon.accepted(listener, PEER, remotePort);
    }

    /** Start {@code call} on a thread of its own; its outcome ("returned ..." or what it threw) goes to {@code outcome}. */
    private Thread start(final String name, final Call call, final AtomicReference<Object> outcome)
    {
        final Thread thread = new Thread(() ->
        {
            try
            {
                outcome.set("returned " + call.run());
            }
            catch (final Throwable ex)
            {
                outcome.set(ex);
            }
        }, name);
        thread.start();
        return thread;
    }

    /** Wait until the thread parks in its idle strategy: it is in the blocking call. */
    private static void awaitParked(final Thread thread) throws InterruptedException
    {
        awaitCondition("thread " + thread.getName() + " parked", () -> thread.getState() == Thread.State.TIMED_WAITING);
    }

    private static void awaitCondition(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > deadline)
            {
                fail("timed out waiting for: " + what);
            }
            Thread.sleep(1);
        }
    }

    /** Poll on this thread until {@code condition} holds: messages that waited in the client go out. */
    private void pollUntil(final String what, final BooleanSupplier condition) throws Exception
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > deadline)
            {
                fail("timed out waiting for: " + what);
            }
            client.poll();
            Thread.sleep(1);
        }
    }

    /** Fill the control ring with records of a type the daemon ignores until it takes no more. */
    private void fillControlRing()
    {
        final OneToOneRingBuffer ring = client.file().controlRing();
        final UnsafeBuffer junk = new UnsafeBuffer(new byte[Protocol.CONTROL_LENGTH]);
        while (ring.write(99, junk, 0, Protocol.CONTROL_LENGTH))
        {
            Thread.onSpinWait();
        }
    }

    interface Call
    {
        Object run() throws Exception;
    }

    // ---- closes from another thread -------------------------------------------------------------

    /**
     * A connection and a listener closed from another thread while a thread is blocked in a read and the control ring
     * is full: each close returns at once, handing its CLOSE or UNLISTEN to the blocked thread (two threads never poll
     * or write the control ring at once), which sends them once the ring has room; its read goes on.
     */
    @Test
    void closesFromAnotherThreadAreHandedToTheBlockedThread() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection reading = accepted(listener, 50000);
        final PipeConnection other = accepted(listener, 50001);
        final AtomicReference<Object> read = new AtomicReference<>();
        blocked = start("reader", () -> reading.inputStream().read(), read);
        awaitParked(blocked);
        daemon.pauseControl();
        fillControlRing();

        final AtomicReference<Object> closed = new AtomicReference<>();
        final Thread closer = start("closer", () ->
        {
            other.close();
            listener.close();
            return "closed";
        }, closed);
        closer.join(1000);
        assertFalse(closer.isAlive(), "closes from another thread waited for room in the control ring");
        assertEquals("returned closed", closed.get());

        daemon.readControl = true;
        awaitCondition("CLOSE and UNLISTEN read", () -> daemon.controlsOfType(Protocol.CLOSE).size() == 1 &&
            daemon.controlsOfType(Protocol.UNLISTEN).size() == 1);
        assertEquals(other.id(), daemon.controlsOfType(Protocol.CLOSE).get(0).l0());
        assertEquals(8080, daemon.controlsOfType(Protocol.UNLISTEN).get(0).i8());
        assertTrue(blocked.isAlive(), "the read went on: " + read.get());
        daemon.call(d -> d.sendRx(reading.id(), new byte[] {'x'}));
        blocked.join(5000);
        assertEquals("returned " + (int)'x', read.get());
    }

    /** The types of the control messages the daemon read for {@code id}, in order. */
    private String controlsOf(final long id)
    {
        final StringBuilder types = new StringBuilder();
        for (final FakeDaemon.Control control : daemon.controls)
        {
            if (control.l0() == id)
            {
                types.append(types.length() == 0 ? "" : " ").append(control.type() == Protocol.CLOSE ? "CLOSE" :
                    control.type() == Protocol.ABORT ? "ABORT" : control.type() == Protocol.SEND_FILE ? "SEND_FILE" :
                    control.type() == Protocol.SET_OPTION ? "SET_OPTION" : "type " + control.type());
            }
        }
        return types.toString();
    }

    /**
     * A sendFile, or setOption, that waits for room in the control ring while another thread closes its connection:
     * the blocked thread does the close at its next turn, and its call then throws as on a closed connection. Before,
     * the call wrote its SEND_FILE behind the CLOSE and returned, the file in flight on a connection the client had
     * forgotten: no FILE_SENT could reach it, and the file's descriptor stayed open for the life of the process.
     */
    @Test
    void aSendFileWaitingForRoomThrowsWhenAnotherThreadClosesItsConnection() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection sending = accepted(listener, 50000);
        final PipeConnection setting = accepted(listener, 50001);
        final SendableFile file = SendableFile.open(Files.write(dir.resolve("body"), new byte[100]));
        daemon.pauseControl();
        fillControlRing();

        final AtomicReference<Object> sent = new AtomicReference<>();
        blocked = start("sender", () ->
        {
            sending.sendFile(file, 0, 100);
            return "sent";
        }, sent);
        awaitParked(blocked);
        sending.close(); // from this thread: the sender does it
        daemon.readControl = true;
        blocked.join(5000);
        awaitCondition("the daemon read the CLOSE", () -> !controlsOf(sending.id()).isEmpty());
        file.close();
        assertTrue(sent.get() instanceof NicstackException, "sendFile on a connection closed while it waited: " +
            sent.get() + "; the daemon read " + controlsOf(sending.id()));
        assertEquals("CLOSE", controlsOf(sending.id()));
        assertFalse(sending.isSendingFile());
        assertEquals(0, file.references(), "the file's descriptor is released");

        daemon.pauseControl();
        fillControlRing();
        final AtomicReference<Object> set = new AtomicReference<>();
        blocked = start("setter", () ->
        {
            setting.setOption(Protocol.OPTION_NO_DELAY, 1);
            return "set";
        }, set);
        awaitParked(blocked);
        setting.close();
        daemon.readControl = true;
        blocked.join(5000);
        awaitCondition("the daemon read the CLOSE", () -> !controlsOf(setting.id()).isEmpty());
        assertTrue(set.get() instanceof NicstackException, "setOption on a connection closed while it waited: " +
            set.get() + "; the daemon read " + controlsOf(setting.id()));
        assertEquals("CLOSE", controlsOf(setting.id()));
    }

    /**
     * A close from another thread that finds the client free, while the control ring is full, does not wait for room:
     * its CLOSE waits in the client, and the owning thread's next poll sends it. Before, it held the client until the
     * daemon read on (without bound while the daemon beat and did not read), and meanwhile a blocking call of the
     * owning thread spun at its start and did not end on an interrupt.
     */
    @Test
    void aCloseFromAnotherThreadThatFindsTheClientFreeDoesNotWaitForRoom() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection reading = accepted(listener, 50000);
        final PipeConnection other = accepted(listener, 50001);
        daemon.pauseControl();
        fillControlRing();

        final AtomicReference<Object> closed = new AtomicReference<>();
        final Thread closer = start("closer", () ->
        {
            other.close();
            return "closed";
        }, closed);
        closer.join(2000);
        final boolean closerWaited = closer.isAlive();
        final AtomicReference<Object> read = new AtomicReference<>();
        final AtomicReference<Boolean> readerInterrupted = new AtomicReference<>();
        blocked = startInterruptible("reader", () -> reading.inputStream().read(), read, readerInterrupted);
        Thread.sleep(100);
        blocked.interrupt();
        blocked.join(2000);
        final boolean readerStuck = blocked.isAlive();
        daemon.readControl = true;
        closer.join(5000);
        daemon.call(d -> d.sendRx(reading.id(), new byte[] {'x'}));
        blocked.join(5000);

        assertFalse(closerWaited, "a close from another thread waited for room in the control ring");
        assertFalse(readerStuck, "an interrupted read stayed blocked behind another thread's close: " + read.get());
        assertTrue(read.get() instanceof InterruptedIOException, String.valueOf(read.get()));
        assertEquals(Boolean.TRUE, readerInterrupted.get());
        assertTrue(other.isClosed());
        pollUntil("the daemon read the CLOSE that waited", () -> controlsOf(other.id()).equals("CLOSE"));
    }

    /**
     * The owning thread's close of a connection, in no blocking call, while another thread closes another connection
     * and the control ring is full: the connection is closed when close() returns. Before, the close only asked the
     * other thread, which held the client until the daemon read on: the connection stayed open, its TX pipe took bytes.
     */
    @Test
    void theOwnersCloseIsDoneWhenItReturnsWhileAnotherThreadCloses() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection mine = accepted(listener, 50000);
        final PipeConnection other = accepted(listener, 50001);
        daemon.pauseControl();
        fillControlRing();
        final AtomicReference<Object> closed = new AtomicReference<>();
        blocked = start("closer", () ->
        {
            other.close();
            return "closed";
        }, closed);
        awaitCondition("the other close parked or returned", () -> blocked.getState() == Thread.State.TIMED_WAITING ||
            blocked.getState() == Thread.State.TERMINATED);

        mine.close();
        final boolean closedOnReturn = mine.isClosed();
        Object claim;
        try
        {
            claim = mine.claim(16);
        }
        catch (final NicstackException ex)
        {
            claim = ex;
        }
        assertTrue(closedOnReturn, "the owner's close returned with the connection open");
        assertTrue(claim instanceof NicstackException, "claim after close: " + claim);
        daemon.readControl = true;
        pollUntil("the daemon read both CLOSEs", () -> controlsOf(mine.id()).equals("CLOSE") &&
            controlsOf(other.id()).equals("CLOSE"));
    }

    // ---- interrupts ------------------------------------------------------------------------------

    /**
     * Interrupt {@code thread}, blocked in a call, and assert the call ended within 2 s (before, it spun on a park that
     * returned at once); if it did not, {@code unblock} ends it so the test can end.
     */
    private static void interruptAndExpectTheEnd(final Thread thread, final Runnable unblock) throws InterruptedException
    {
        awaitParked(thread);
        thread.interrupt();
        thread.join(2000);
        final boolean stuck = thread.isAlive();
        if (stuck)
        {
            unblock.run();
            thread.join(10_000);
        }
        assertFalse(stuck, "the interrupted call of " + thread.getName() + " neither returned nor threw within 2 s");
    }

    /** Run {@code call}, then say whether the thread's interrupt status is still set after it ended as it did. */
    private Thread startInterruptible(final String name, final Call call, final AtomicReference<Object> outcome,
        final AtomicReference<Boolean> stillInterrupted)
    {
        return start(name, () ->
        {
            try
            {
                return call.run();
            }
            finally
            {
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        }, outcome);
    }

    /** A stream read, or write, that waits ends with InterruptedIOException when its thread is interrupted. */
    @Test
    void anInterruptEndsABlockedStreamReadOrWrite() throws Exception
    {
        attach();
        final PipeConnection c = accepted(client.listen(8080, 16), 50000);
        final AtomicReference<Object> read = new AtomicReference<>();
        final AtomicReference<Boolean> readerInterrupted = new AtomicReference<>();
        blocked = startInterruptible("reader", () -> c.inputStream().read(), read, readerInterrupted);
        interruptAndExpectTheEnd(blocked, () -> daemon.call(d -> d.sendRx(c.id(), new byte[] {'x'})));
        assertTrue(read.get() instanceof InterruptedIOException, String.valueOf(read.get()));
        assertEquals(Boolean.TRUE, readerInterrupted.get(), "the reader's interrupt status was kept");
        daemon.call(d -> d.sendRx(c.id(), new byte[] {'x'}));
        assertEquals('x', c.inputStream().read(), "the connection is whole: no byte was taken");

        daemon.drainTx(false);
        final byte[] bytes = new byte[1 << 20]; // 16 pipes full
        final AtomicReference<Object> wrote = new AtomicReference<>();
        final AtomicReference<Boolean> writerInterrupted = new AtomicReference<>();
        blocked = startInterruptible("writer", () ->
        {
            c.outputStream().write(bytes);
            return "all";
        }, wrote, writerInterrupted);
        interruptAndExpectTheEnd(blocked, () -> daemon.drainTx(true));
        assertTrue(wrote.get() instanceof InterruptedIOException, String.valueOf(wrote.get()));
        assertEquals(Boolean.TRUE, writerInterrupted.get(), "the writer's interrupt status was kept");
        assertEquals(c.txCapacity(), ((InterruptedIOException)wrote.get()).bytesTransferred,
            "bytes of the array committed: one pipe full");
    }

    /**
     * awaitReadable, accept, and listen waiting for an answer end with a NicstackException when the thread is
     * interrupted, the status kept set.
     */
    @Test
    void anInterruptEndsAwaitReadableAcceptAndListen() throws Exception
    {
        attach();
        final PipeListener listener = client.listen(8080, 16);
        final PipeConnection c = accepted(listener, 50000);

        final AtomicReference<Object> awaited = new AtomicReference<>();
        final AtomicReference<Boolean> awaiterInterrupted = new AtomicReference<>();
        blocked = startInterruptible("awaiter", () -> c.awaitReadable(5000), awaited, awaiterInterrupted);
        interruptAndExpectTheEnd(blocked, () -> { });
        assertTrue(awaited.get() instanceof NicstackException, String.valueOf(awaited.get()));
        assertTrue(((Throwable)awaited.get()).getMessage().contains("interrupted"), String.valueOf(awaited.get()));
        assertEquals(Boolean.TRUE, awaiterInterrupted.get());

        final AtomicReference<Object> acceptedOutcome = new AtomicReference<>();
        final AtomicReference<Boolean> acceptorInterrupted = new AtomicReference<>();
        blocked = startInterruptible("acceptor", listener::accept, acceptedOutcome, acceptorInterrupted);
        interruptAndExpectTheEnd(blocked, () -> daemon.call(d -> d.accept(8080, PEER, 50001)));
        assertTrue(acceptedOutcome.get() instanceof NicstackException, String.valueOf(acceptedOutcome.get()));
        assertTrue(((Throwable)acceptedOutcome.get()).getMessage().contains("interrupted"));
        assertEquals(Boolean.TRUE, acceptorInterrupted.get());

        daemon.pauseControl(); // no answer to LISTEN
        final AtomicReference<Object> listened = new AtomicReference<>();
        final AtomicReference<Boolean> listenerInterrupted = new AtomicReference<>();
        blocked = startInterruptible("listener", () -> client.listen(8081, 1), listened, listenerInterrupted);
        interruptAndExpectTheEnd(blocked, () -> daemon.readControl = true);
        assertTrue(listened.get() instanceof NicstackException, String.valueOf(listened.get()));
        assertTrue(((Throwable)listened.get()).getMessage().contains("interrupted"));
        assertEquals(Boolean.TRUE, listenerInterrupted.get());
    }

    // ---- a second thread ---------------------------------------------------------------------------

    private static void assertToldSingleThreaded(final Object outcome, final String user, final String other,
        final String doing)
    {
        assertTrue(outcome instanceof IllegalStateException, "thread " + user + ": " + outcome);
        assertEquals("client threads used from thread \"" + user + "\" while thread \"" + other + "\" " + doing +
            "; a NicstackClient is single-threaded (only close may come from another thread)",
            ((Throwable)outcome).getMessage());
    }

    /**
     * A second thread that polls, or makes a blocking call, while a thread waits in a blocking call is told the client is
     * single-threaded, naming both threads; before, it polled beside it, or was told about a re-entrant poll.
     */
    @Test
    void aSecondThreadIsToldTheClientIsSingleThreaded() throws Exception
    {
        attach();
        final PipeConnection c = accepted(client.listen(8080, 16), 50000);
        final AtomicReference<Object> read = new AtomicReference<>();
        blocked = start("first", () -> c.inputStream().read(), read);
        awaitParked(blocked);

        final AtomicReference<Object> polled = new AtomicReference<>();
        final Thread second = start("second", () -> client.poll(), polled);
        second.join(5000);
        final AtomicReference<Object> secondRead = new AtomicReference<>();
        final Thread third = start("third", () -> c.inputStream().read(), secondRead);
        third.join(2000);
        final boolean stuck = third.isAlive();
        daemon.call(d -> d.sendRx(c.id(), new byte[] {'x', 'y'}));
        blocked.join(5000);
        third.join(5000);

        assertToldSingleThreaded(polled.get(), "second", "first", "waits in a blocking call");
        assertFalse(stuck, "a second thread's read waited beside the first");
        assertToldSingleThreaded(secondRead.get(), "third", "first", "waits in a blocking call");
        assertEquals("returned " + (int)'x', read.get());
    }

    /** A thread that polls while another thread is inside a poll of its own is told so, naming both threads. */
    @Test
    void aPollDuringAnotherThreadsPollIsToldTheClientIsSingleThreaded() throws Exception
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        final GateClock clock = new GateClock();
        final ClientOptions options = options();
        options.clock = clock;
        client = NicstackClient.attach(dir, "threads", options);

        final AtomicReference<Object> firstPoll = new AtomicReference<>();
        final Thread first = new Thread(() ->
        {
            try
            {
                firstPoll.set("returned " + client.poll());
            }
            catch (final Throwable ex)
            {
                firstPoll.set(ex);
            }
        }, "first");
        clock.gated = first;
        first.start();
        assertTrue(clock.entered.await(10, TimeUnit.SECONDS), "the first poll reads the clock");
        final AtomicReference<Object> secondPoll = new AtomicReference<>();
        final Thread second = start("second", () -> client.poll(), secondPoll);
        second.join(5000);
        clock.release.countDown();
        first.join(5000);

        assertToldSingleThreaded(secondPoll.get(), "second", "first", "polls");
        assertTrue(String.valueOf(firstPoll.get()).startsWith("returned"), String.valueOf(firstPoll.get()));
    }

    /** The system's clock, that holds its {@link #gated} thread inside nanoTime until released. */
    private static final class GateClock implements NanoClock
    {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile Thread gated;

        @Override
        public long nanoTime()
        {
            if (Thread.currentThread() == gated)
            {
                entered.countDown();
                try
                {
                    release.await(10, TimeUnit.SECONDS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
            }
            return System.nanoTime();
        }
    }
}
