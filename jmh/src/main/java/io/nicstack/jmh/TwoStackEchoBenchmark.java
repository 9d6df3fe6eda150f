package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.UnsafeBuffer;
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
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.daemon.TcpServices;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpListener;
import io.nicstack.stack.tcp.TcpState;

/**
 * The TCP work of one request/response on one thread, no pipes, no handoff: 64 bytes written on an in-process
 * connection of stack A, A's poll sends them, B's poll runs the daemon's echo (receive, read, write, send), A's
 * poll receives the echo, read back (its sequence number checked). Four segment traversals plus the echo: the
 * stack share of {@code PipeRoundTripBenchmark.nicstackTcpEcho}, without its two cross-core handoffs. The memory
 * wire offloads checksums, as in that benchmark.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class TwoStackEchoBenchmark
{
    @Param({"true"})
    public boolean checksumOffload;

    private NetStack a;
    private NetStack b;
    private TcpConnection connection;
    private final UnsafeBuffer message = new UnsafeBuffer(ByteBuffer.allocateDirect(64));
    private final UnsafeBuffer back = new UnsafeBuffer(ByteBuffer.allocateDirect(64 * 1024));
    private long now = 1_000_000_000L;
    private long sequence;

    @Setup(Level.Trial)
    public void setUp()
    {
        final MemoryWire wire = MemoryWire.pair(1500, 256, checksumOffload);
        a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        final TcpHandler echo = new TcpServices().echoHandler();
        final TcpListener listener = b.tcp().listen(7, 8, l ->
        {
            TcpConnection c;
            while ((c = l.accept()) != null)
            {
                c.handler(echo);
            }
        });
        listener.settings().noDelay = true;
        connection = a.tcp().connect(0xC6120003, 7, new TcpHandler() { }, null);
        connection.settings().noDelay = true;
        for (int i = 0; i < 100 && connection.state() != TcpState.ESTABLISHED; i++)
        {
            now += 1_000;
            a.poll(now);
            b.poll(now);
        }
        if (connection.state() != TcpState.ESTABLISHED)
        {
            throw new IllegalStateException("no connection: " + connection.describe());
        }
    }

    @Benchmark
    public int roundTrip()
    {
        now += 1_000;
        message.putLong(0, ++sequence);
        connection.write(message, 0, 64);
        a.poll(now);
        b.poll(now);
        a.poll(now);
        final int n = connection.read(back, 0, back.capacity());
        if (n != 64 || back.getLong(0) != sequence)
        {
            throw new IllegalStateException("echo returned " + n + " bytes, sequence " + back.getLong(0) + " != " + sequence);
        }
        return n;
    }
}
