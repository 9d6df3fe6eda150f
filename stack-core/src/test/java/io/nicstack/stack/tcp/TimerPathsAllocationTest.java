package io.nicstack.stack.tcp;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.util.Arrays;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounter;

/**
 * Timers firing in steady state allocate nothing: keep-alive probes on an idle connection, delayed ACKs for a one-byte
 * message every 50 ms (and its RTO/TLP under loss), zero-window probes to a receiver that never reads. Two stacks on
 * one thread, simulated time, seeded faults, the JVM's per-thread allocation counter around rounds of a fixed number
 * of steps after a warm-up.
 */
class TimerPathsAllocationTest
{
    /** About 60 s simulated (idle steps are 1 ms): keep-alive, zero-window probing and loss recovery have all run. */
    private static final int WARM_STEPS = 60_000;
    private static final int ROUNDS = 4;
    /** About 25 s simulated a round. */
    private static final int STEPS = 25_000;
    /** JIT noise only. */
    private static final long ALLOWED_BYTES_PER_ROUND = 1024;
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();

    static final class Holder implements TcpHandler
    {
        TcpConnection connection;
        int closed = -1;

        @Override
        public void onConnected(final TcpConnection c)
        {
            connection = c;
        }

        @Override
        public void onClosed(final TcpConnection c, final int reason)
        {
            closed = reason;
        }
    }

    static long sum(final TwoStacks net, final StackCounter c)
    {
        return net.a.counters().get(c) + net.b.counters().get(c);
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "loss=0.05,seed=21"})
    void timersFiringAllocateNothing(final String spec)
    {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported(), "no per-thread allocation counter");
        THREADS.setThreadAllocatedMemoryEnabled(true);
        final FaultConfig faults = "none".equals(spec) ? null : FaultConfig.parse(spec);
        final TwoStacks net = new TwoStacks(faults, new long[] {5, 6, 7, 8}, d -> d);
        final BulkTransferAllocationTest.Sink reader = new BulkTransferAllocationTest.Sink();
        final TcpHandler ignore = new TcpHandler()
        {
        };
        for (int port = 5001; port <= 5003; port++)
        {
            final TcpHandler server = port == 5003 ? ignore : reader;
            net.a.tcp().listen(port, 4, l ->
            {
                for (TcpConnection c = l.accept(); c != null; c = l.accept())
                {
                    c.handler(server);
                }
            });
        }
        final TcpSettings keepAlive = new TcpSettings();
        keepAlive.keepAlive = true;
        keepAlive.keepAliveIdleNanos = 1_000_000_000L;
        keepAlive.keepAliveIntervalNanos = 1_000_000_000L;
        final Holder idle = new Holder();
        final Holder ping = new Holder();
        final BulkTransferAllocationTest.Source flood = new BulkTransferAllocationTest.Source();
        net.b.tcp().connect(TwoStacks.A_IP, 5001, idle, keepAlive);
        net.b.tcp().connect(TwoStacks.A_IP, 5002, ping, null);
        final TcpSettings small = new TcpSettings();
        small.sendBufferBytes = 16 * 1024;
        small.receiveBufferBytes = 16 * 1024;
        net.b.tcp().connect(TwoStacks.A_IP, 5003, flood, small);
        final UnsafeBuffer oneByte = new UnsafeBuffer(new byte[1]);

        final long pingEvery = 50_000_000L;
        final long[] nextPing = {net.now + pingEvery};
        final Runnable step = () ->
        {
            if (net.now - nextPing[0] >= 0 && ping.connection != null && ping.closed < 0)
            {
                ping.connection.write(oneByte, 0, 1);
                nextPing[0] += pingEvery;
            }
            net.step();
        };
        for (int i = 0; i < WARM_STEPS; i++)
        {
            step.run();
        }
        final StackCounter[] watch = {StackCounter.TCP_SEGMENTS_OUT, StackCounter.TCP_RETRANSMITTED_SEGMENTS,
            StackCounter.TCP_RTO_EXPIRIES, StackCounter.TCP_LOSS_PROBES, StackCounter.TCP_PREDICTED};
        final long[] watchBefore = new long[watch.length];
        for (int k = 0; k < watch.length; k++)
        {
            watchBefore[k] = sum(net, watch[k]);
        }
        final long receivedBefore = reader.received;
        final long simBefore = net.now;
        final long[] bytes = new long[ROUNDS];
        for (int r = 0; r < ROUNDS; r++)
        {
            final long before = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < STEPS; i++)
            {
                step.run();
            }
            bytes[r] = THREADS.getCurrentThreadAllocatedBytes() - before;
        }
        final StringBuilder sb = new StringBuilder("[alloc] timers ").append(spec).append(": bytes per round ")
            .append(Arrays.toString(bytes)).append(" over ").append((net.now - simBefore) / 1_000_000L)
            .append(" ms simulated; ping bytes received ").append(reader.received - receivedBefore)
            .append("; closed idle/ping/flood ").append(idle.closed).append('/').append(ping.closed).append(";");
        for (int k = 0; k < watch.length; k++)
        {
            sb.append(' ').append(watch[k].name()).append('=').append(sum(net, watch[k]) - watchBefore[k]);
        }
        net.b.tcp().forEachConnection(c -> sb.append("\n   B ").append(c.describe()));
        net.a.tcp().forEachConnection(c -> sb.append("\n   A ").append(c.describe()));
        System.out.println(sb);
        assertTrue(idle.closed < 0 && ping.closed < 0, () -> "connections alive: " + sb);
        assertTrue(reader.received - receivedBefore > 0, () -> "the pings arrived: " + sb);
        for (int r = 0; r < ROUNDS; r++)
        {
            assertTrue(bytes[r] <= ALLOWED_BYTES_PER_ROUND, sb::toString);
        }
    }
}
