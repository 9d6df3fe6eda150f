package io.nicstack.jmh;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.SystemEpochClock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.daemon.pipes.PipeCounter;
import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.daemon.pipes.PipeServer;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.PipeListener;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;

/**
 * What one idle round of the pipe server costs with {@code idle} established connections of one app that does
 * nothing: the real {@link PipeServer} on stack A, the connections opened from stack B over a {@link MemoryWire}, the
 * app the real client library (it accepted them all, then waits). The benchmark is one {@link PipeServer#doWork()}
 * with the round's clock read as the daemon's loop reads it, so the housekeeping ticks (and their safety-net sweeps,
 * where there are doorbells) fall in the measurement at their real rate. With 0 it is the cost of a round itself.
 *
 * <p>Run: {@code mvn -pl jmh -am -DskipTests package}, then {@code java --add-exports
 * java.base/jdk.internal.misc=ALL-UNNAMED -jar jmh/target/benchmarks.jar IdleConnectionsBenchmark} (add
 * {@code -bm sample -tu us -p idle=15000} for the distribution: the sweep's rounds are in its tail). It uses public
 * API only, so the same file measures a build from before the doorbells.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx3g"})
public class IdleConnectionsBenchmark
{
    private static final int PORT = 8080;
    private static final int A_IP = 0xC612_0002; // 198.18.0.2

    @Param({"0", "15000"})
    int idle;

    private Path shm;
    private NetStack a;
    private NetStack b;
    private final PipeCounters counters = PipeCounters.inMemory();
    private final CachedNanoClock clock = new CachedNanoClock();
    private PipeServer server;
    private Thread app;
    private volatile boolean stop;
    private final AtomicReference<Throwable> appFailure = new AtomicReference<>();

    @Setup(Level.Trial)
    public void setUp() throws Exception
    {
        shm = Files.createTempDirectory("nicstack-idle-");
        final MemoryWire wire = MemoryWire.pair(1500, 4096, true);
        final long now = System.nanoTime();
        clock.update(now);
        a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        b.tcp().defaults().sendBufferBytes = 1024;
        b.tcp().defaults().receiveBufferBytes = 1024;
        server = new PipeServer(a, shm, counters, clock, new SystemEpochClock(), 1L << 31,
            new PrintStream(OutputStream.nullOutputStream())).start();

        // The app, on a thread of its own (its calls wait for the daemon, which this thread runs): attach, listen,
        // accept every connection, then hold the client until the trial ends.
        final AtomicInteger accepted = new AtomicInteger();
        final AtomicInteger listening = new AtomicInteger();
        app = new Thread(() ->
        {
            final ClientOptions options = new ClientOptions();
            options.maxConnections = idle + 16;
            options.pipeCapacity = 4096;
            options.ringCapacity = 1 << 20;
            options.attachTimeoutMillis = 60_000;
            try (NicstackClient client = NicstackClient.attach(shm, "idle", options))
            {
                final PipeListener listener = client.listen(PORT, 4096);
                listening.set(1);
                for (int i = 0; i < idle; i++)
                {
                    listener.accept();
                    accepted.incrementAndGet();
                }
                while (!stop)
                {
                    java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L); // idle: no core taken from the loop
                }
            }
            catch (final Throwable t)
            {
                appFailure.set(t);
            }
        }, "idle-app");
        app.start();
        final TcpHandler none = new TcpHandler()
        {
        };
        int connected = 0;
        final long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (accepted.get() < idle || listening.get() == 0)
        {
            if (appFailure.get() != null || System.nanoTime() - deadline > 0)
            {
                throw new IllegalStateException("setting up " + idle + " connections: accepted " + accepted.get(),
                    appFailure.get());
            }
            if (listening.get() == 1 && connected < idle && connected - accepted.get() < 500)
            {
                final TcpConnection c = b.tcp().connect(A_IP, PORT, none, null);
                if (c != null)
                {
                    connected++;
                }
            }
            round();
        }
        // Settle: the last ACKs and window updates, and a few housekeeping ticks.
        final long settle = System.nanoTime() + 300_000_000L;
        while (System.nanoTime() - settle < 0)
        {
            round();
        }
    }

    private void round()
    {
        final long now = System.nanoTime();
        clock.update(now);
        server.doWork();
        a.poll(now);
        b.poll(now);
    }

    /** One idle round of the pipe server, as the daemon's loop runs it (the clock read once per round). */
    @Benchmark
    public int idleRound()
    {
        clock.update(System.nanoTime());
        return server.doWork();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException, InterruptedException
    {
        System.out.println("\n" + idle + " idle connections: doorbells " + counters.get(PipeCounter.DOORBELLS)
            + ", connections accepted " + counters.get(PipeCounter.CONNECTIONS_ACCEPTED));
        stop = true;
        app.join();
        server.close();
        try (Stream<Path> files = Files.walk(shm))
        {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
