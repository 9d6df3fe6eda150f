package io.nicstack.jmh;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.SystemNanoClock;

import io.nicstack.daemon.pipes.PipeCounter;
import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.daemon.TcpServices;
import io.nicstack.daemon.pipes.PipeServer;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.loop.EventLoop;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpListener;

/**
 * The daemon side of {@link PipeRoundTripBenchmark}, in this JVM: stack A (198.18.0.2) with the real
 * {@link PipeServer} on a temporary {@code --shm} directory, and stack B (198.18.0.3) running an inline TCP echo on
 * port 7 (as the daemon's {@code TcpServices} echo, with TCP_NODELAY), joined by a {@link MemoryWire} that offloads
 * checksums as NICs do. One background thread drives all three through the daemon's own {@link EventLoop} in
 * busy-poll mode ({@code --busy-poll}): per round the pipe server, then stack B (the far end, as a loop task), then
 * stack A; the clock is read after a round with work and every few idle rounds. After {@link #reflect()} a
 * {@link TcpEchoReflector} answers instead of stack B.
 */
final class RoundTripDaemon
{
    static final String A_ADDRESS = "198.18.0.2/24";
    static final String B_ADDRESS = "198.18.0.3/24";
    static final String B_IP = "198.18.0.3";
    static final int ECHO_PORT = 7;

    final Path shm;
    final NetStack a;
    final NetStack b;
    final PipeCounters pipeCounters = PipeCounters.inMemory();
    final PipeServer server;
    private final NetDevice wireB;
    /** Set once by {@link #reflect()}: from then on it answers A instead of stack B. */
    private volatile TcpEchoReflector reflector;
    private volatile boolean running;
    private Thread thread;
    private volatile Throwable failure;
    long rounds;
    /** As in the daemon's EventLoop: the clock is read once per round and the pipe server sees that reading. */
    private final CachedNanoClock roundClock = new CachedNanoClock();

    RoundTripDaemon() throws IOException
    {
        shm = Files.createTempDirectory("nicstack-rtt-");
        final SystemNanoClock clock = new SystemNanoClock();
        // The wire stands in for NICs and the network: TCP/UDP checksums offloaded on both ends, as the daemon
        // runs on its tap by default (a NIC does them in hardware). 256 slots, a NIC ring's size: at most two
        // frames are ever in flight here, and 4096 slots (6 MB) made every slot a cache miss.
        final MemoryWire wire = MemoryWire.pair(1500, 256, true);
        wireB = wire.b();
        final long now = clock.nanoTime();
        a = new NetStack(wire.a(), StackConfig.of(A_ADDRESS), StackCounters.inMemory(), now);
        b = new NetStack(wire.b(), StackConfig.of(B_ADDRESS), StackCounters.inMemory(), now);
        roundClock.update(now);
        server = new PipeServer(a, shm, pipeCounters, roundClock, new SystemEpochClock(), 1L << 30,
            new PrintStream(OutputStream.nullOutputStream())).start();
        final TcpListener listener = b.tcp().listen(ECHO_PORT, 8, l ->
        {
            TcpConnection c;
            while ((c = l.accept()) != null)
            {
                c.handler(echo);
            }
        });
        listener.settings().noDelay = true;
    }

    /** The daemon's own flow-controlled TCP echo. */
    private final TcpHandler echo = new TcpServices().echoHandler();

    void start()
    {
        running = true;
        thread = new Thread(this::run, "nicstack-rtt-daemon");
        thread.setDaemon(true);
        thread.start();
    }

    private void run()
    {
        try
        {
            // The daemon's own EventLoop in busy-poll mode (the daemon's --busy-poll): the pipe server and stack
            // B (the remote host, polled as a task with the round's clock) run before stack A in each round.
            // No stack.start(): its gratuitous ARP would be dropped by the other stack as "target not ours",
            // spoiling the no-drop check; the first connect resolves B by ARP as usual.
            final EventLoop loop = new EventLoop(a, new SystemNanoClock(), roundClock, new BusySpinIdleStrategy(),
                server, () ->
                {
                    final TcpEchoReflector r = reflector;
                    return r != null ? r.poll() : b.poll(roundClock.nanoTime());
                });
            while (running)
            {
                final int work = loop.doWork();
                rounds++;
                if (work == 0)
                {
                    Thread.onSpinWait(); // what BusySpinIdleStrategy.idle() does
                }
            }
        }
        catch (final Throwable t)
        {
            failure = t;
        }
    }

    /**
     * Hand the far end of the established echo connection over to a {@link TcpEchoReflector} on B's side of the
     * wire; stack B is not polled again. Call with nothing in flight (after a round trip completed).
     */
    void reflect()
    {
        reflector = new TcpEchoReflector(wireB);
    }

    TcpEchoReflector reflector()
    {
        return reflector;
    }

    void stop() throws InterruptedException
    {
        running = false;
        if (thread != null)
        {
            thread.join(10_000);
            if (thread.isAlive())
            {
                throw new IllegalStateException("daemon thread did not stop");
            }
        }
        checkAlive();
    }

    void checkAlive()
    {
        if (failure != null)
        {
            throw new IllegalStateException("daemon thread failed", failure);
        }
    }

    /**
     * After {@link #stop()}: nothing dropped, reset or reaped anywhere on the path, and, unless
     * {@code allowRetransmissions}, no retransmission and no RTO expiry on either stack. The wire drops nothing, so a
     * retransmission means a thread stalled past a timer (an RTO is at least the 200 ms minimum) or a spurious repair,
     * and the latency percentiles of such a run include that stall, not only the path.
     *
     * @throws IllegalStateException naming what was found ({@link #retransmissions()} for the counts).
     */
    void checkClean(final boolean allowRetransmissions)
    {
        for (final NetStack s : new NetStack[] {a, b})
        {
            final StackCounters c = s.counters();
            check(c.totalDrops() == 0, "drops: " + c);
            check(c.unaccountedFrames() == 0, "unaccounted frames: " + c);
            check(c.get(StackCounter.DEVICE_DROPS) == 0, "device drops: " + c);
            check(c.get(StackCounter.TCP_ESTABLISHED_RESETS) == 0, "resets: " + c);
        }
        for (final PipeCounter p : new PipeCounter[] {PipeCounter.BAD_CONTROL_MESSAGES, PipeCounter.UNKNOWN_CONNECTION_IDS,
            PipeCounter.EVENTS_DEFERRED, PipeCounter.APPS_REAPED_DEAD, PipeCounter.APPS_REAPED_BROKEN,
            PipeCounter.APPS_REJECTED, PipeCounter.CONNECTIONS_RESET_APP_GONE})
        {
            check(pipeCounters.get(p) == 0, p.label() + ": " + pipeCounters);
        }
        if (!allowRetransmissions)
        {
            long found = 0;
            for (final NetStack s : new NetStack[] {a, b})
            {
                found += s.counters().get(StackCounter.TCP_RETRANSMITTED_SEGMENTS) + s.counters().get(StackCounter.TCP_RTO_EXPIRIES);
            }
            check(found == 0, "the run retransmitted: " + retransmissions() +
                " (PipeRoundTripBenchmark's allowRetransmissions=true accepts this)");
        }
    }

    String retransmissions()
    {
        return "retransmitted segments A/B " + a.counters().get(StackCounter.TCP_RETRANSMITTED_SEGMENTS) + "/" +
            b.counters().get(StackCounter.TCP_RETRANSMITTED_SEGMENTS) + ", RTO expiries A/B " +
            a.counters().get(StackCounter.TCP_RTO_EXPIRIES) + "/" + b.counters().get(StackCounter.TCP_RTO_EXPIRIES);
    }

    /** After {@link #stop()}: close the server (this thread now owns it) and remove the shm directory. */
    void close()
    {
        server.close();
        try (Stream<Path> paths = Files.walk(shm))
        {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        catch (final IOException ignore)
        {
            // A temp directory; nothing else to do.
        }
    }

    static void check(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalStateException(message);
        }
    }
}
