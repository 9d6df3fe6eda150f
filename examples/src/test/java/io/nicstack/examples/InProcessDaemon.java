package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.SystemNanoClock;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.daemon.pipes.PipeServer;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.loop.EventLoop;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpSettings;

/**
 * A daemon in this process, no kernel interface: a {@link PipeServer} on stack A ({@link #DAEMON_IP}), its event loop
 * on a thread of its own, which also polls stack B ({@code 198.18.0.3}, the peers' stack) and runs what tests hand it.
 * {@link #stall()} blocks that thread, as a SIGSTOP would the daemon: its heartbeat stops until {@link #resume()}.
 */
final class InProcessDaemon implements AutoCloseable
{
    static final int DAEMON_IP = 0xC612_0002;

    private final Queue<Runnable> onLoop = new ConcurrentLinkedQueue<>();
    private final PipeCounters counters = PipeCounters.inMemory();
    private final Path shm;
    private final NetStack b;
    private final PipeServer server;
    private final EventLoop loop;
    private final Thread loopThread;
    private CountDownLatch resume;

    InProcessDaemon(final Path dir) throws Exception
    {
        shm = Files.createDirectory(dir.resolve("shm"));
        final SystemNanoClock clock = new SystemNanoClock();
        final MemoryWire wire = MemoryWire.pair(1500, 1024);
        final NetStack a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), clock.nanoTime());
        b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), clock.nanoTime());
        final CachedNanoClock roundClock = new CachedNanoClock();
        roundClock.update(clock.nanoTime());
        server = new PipeServer(a, shm, counters, roundClock, new SystemEpochClock(), 1L << 30,
            new PrintStream(OutputStream.nullOutputStream())).start();
        loop = new EventLoop(a, clock, roundClock, new BackoffIdleStrategy(), server, () ->
        {
            int w = 0;
            Runnable r;
            while ((r = onLoop.poll()) != null)
            {
                r.run();
                w++;
            }
            return w + b.poll(roundClock.nanoTime());
        });
        loopThread = new Thread(loop, "daemon-loop");
        loopThread.setDaemon(true);
        loopThread.start();
    }

    PipeCounters counters()
    {
        return counters;
    }

    NicstackClient attach(final String name, final ClientOptions options) throws NicstackException
    {
        return NicstackClient.attach(shm, name, options);
    }

    /** One pass of the app under test (its AppServer's doWork), or nothing. */
    interface Turn
    {
        void run() throws Exception;
    }

    /**
     * Run {@code turn} until {@code done}, parking 0.2 ms between passes while the daemon's loop runs on its thread;
     * fail naming {@code what} after 20 s.
     */
    static void spinUntil(final String what, final BooleanSupplier done, final Turn turn) throws Exception
    {
        final long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean())
        {
            if (System.nanoTime() - giveUp > 0)
            {
                fail("timed out waiting for: " + what);
            }
            turn.run();
            LockSupport.parkNanos(200_000L);
        }
    }

    /** Connect {@code peer} from stack B to the daemon's {@code port}. */
    void connect(final int port, final Peer peer)
    {
        connect(port, peer, peer.settings);
    }

    /** Connect {@code handler} from stack B to the daemon's {@code port}, with {@code settings} (null: defaults). */
    void connect(final int port, final TcpHandler handler, final TcpSettings settings)
    {
        onLoop.add(() -> b.tcp().connect(DAEMON_IP, port, handler, settings));
    }

    /**
     * Run {@code action} on the loop thread (stack B is its) and wait for its result; what it throws is thrown here. A
     * loop that does not run it within 20 s fails the test.
     */
    <T> T onLoop(final Supplier<T> action)
    {
        final CompletableFuture<T> result = new CompletableFuture<>();
        onLoop.add(() ->
        {
            try
            {
                result.complete(action.get());
            }
            catch (final Throwable t)
            {
                result.completeExceptionally(t);
            }
        });
        try
        {
            return result.get(20, TimeUnit.SECONDS);
        }
        catch (final ExecutionException e)
        {
            if (e.getCause() instanceof Error)
            {
                throw (Error)e.getCause();
            }
            if (e.getCause() instanceof RuntimeException)
            {
                throw (RuntimeException)e.getCause();
            }
            throw new IllegalStateException(e.getCause());
        }
        catch (final TimeoutException e)
        {
            return fail("the daemon's loop did not run an action in 20 s");
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** As {@link #onLoop(Supplier)}, for an action that returns nothing. */
    void onLoop(final Runnable action)
    {
        onLoop(() ->
        {
            action.run();
            return null;
        });
    }

    /**
     * Returns once the loop has gone round twice: what stack B sent in the first round (an acknowledgement, say),
     * stack A has taken in the second (it polls before stack B).
     */
    void awaitTwoRounds()
    {
        onLoop(() -> null);
        onLoop(() -> null);
    }

    /** Block the daemon's loop (its heartbeat stops, and stack B with it) until {@link #resume()}; returns once it is. */
    void stall() throws InterruptedException
    {
        final CountDownLatch stalled = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        resume = release;
        onLoop.add(() ->
        {
            stalled.countDown();
            try
            {
                assertTrue(release.await(60, TimeUnit.SECONDS), "a stall the test never ended");
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(stalled.await(20, TimeUnit.SECONDS), "the loop took the stall");
    }

    void resume()
    {
        if (resume != null)
        {
            resume.countDown();
        }
    }

    /** Daemon shutdown: every attached app learns the daemon is gone (DAEMON_GONE), then the loop ends. */
    @Override
    public void close() throws Exception
    {
        resume();
        server.close();
        loop.stop();
        loopThread.join(5000);
    }

    /**
     * A peer on stack B: writes what it is told; reads what it receives at once into {@link #received()}, or, made not
     * to read, leaves it in its receive buffer (its window closes).
     */
    static final class Peer implements TcpHandler
    {
        final TcpSettings settings;
        private final boolean reads;
        private final StringBuilder received = new StringBuilder();
        volatile TcpConnection connection;
        volatile boolean finReceived;
        /** -1 while open, else TcpConnection's CLOSE_ reason. */
        volatile int closedReason = -1;

        Peer(final TcpSettings settings, final boolean reads)
        {
            this.settings = settings;
            this.reads = reads;
        }

        @Override
        public void onConnected(final TcpConnection c)
        {
            connection = c;
        }

        @Override
        public void onReadable(final TcpConnection c)
        {
            if (reads)
            {
                final UnsafeBuffer sink = new UnsafeBuffer(new byte[4096]);
                int n;
                while ((n = c.read(sink, 0, sink.capacity())) > 0)
                {
                    synchronized (received)
                    {
                        received.append(new String(sink.byteArray(), 0, n, StandardCharsets.ISO_8859_1));
                    }
                }
            }
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            onReadable(c);
            finReceived = true;
        }

        @Override
        public void onClosed(final TcpConnection c, final int reason)
        {
            closedReason = reason;
        }

        /** Whether the daemon's side ended the stream, with a FIN or a reset. */
        boolean ended()
        {
            return finReceived || closedReason != -1;
        }

        String received()
        {
            synchronized (received)
            {
                return received.toString();
            }
        }

        /** On the loop thread: write {@code text}. */
        void write(final String text)
        {
            final byte[] bytes = text.getBytes(StandardCharsets.ISO_8859_1);
            connection.write(new UnsafeBuffer(bytes), 0, bytes.length);
        }
    }
}
