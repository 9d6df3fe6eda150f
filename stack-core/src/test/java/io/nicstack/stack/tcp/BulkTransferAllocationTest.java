package io.nicstack.stack.tcp;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Arrays;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounter;

/**
 * The whole of two stacks' polling (RX, TCP, timers, TX, the memory wire and the fault injector) allocates nothing per
 * segment in a bulk transfer's steady state, with and without loss: measured with the JVM's per-thread allocation
 * counter around rounds of a fixed number of {@link TwoStacks#step()}s, after a warm-up. Both stacks poll on this
 * thread, on simulated time, with seeded faults and fixed ISN and cookie secrets: every run makes the same segments.
 */
class BulkTransferAllocationTest
{
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();

    /** Writes whenever it may, from one buffer, for ever. */
    static final class Source implements TcpHandler
    {
        final UnsafeBuffer chunk = new UnsafeBuffer(ByteBuffer.allocateDirect(64 * 1024));
        long sent;

        @Override
        public void onConnected(final TcpConnection c)
        {
            onWritable(c);
        }

        @Override
        public void onWritable(final TcpConnection c)
        {
            int room;
            while ((room = Math.min(c.writable(), chunk.capacity())) > 0)
            {
                final int w = c.write(chunk, 0, room);
                if (w <= 0)
                {
                    return;
                }
                sent += w;
            }
        }
    }

    /** Reads and drops everything at once (TimerPathsAllocationTest reads with it too). */
    static final class Sink implements TcpHandler
    {
        final UnsafeBuffer chunk = new UnsafeBuffer(ByteBuffer.allocateDirect(64 * 1024));
        long received;

        @Override
        public void onReadable(final TcpConnection c)
        {
            int n;
            while ((n = c.read(chunk, 0, chunk.capacity())) > 0)
            {
                received += n;
            }
        }
    }

    static long segmentsOut(final NetStack s)
    {
        return s.counters().get(StackCounter.TCP_SEGMENTS_OUT);
    }

    /** Steps before measuring: enough for C2 to compile the paths the faults exercise (about 1.2 s simulated). */
    private static final int WARM_STEPS = 60_000;
    private static final int ROUNDS = 4;
    private static final int STEPS = 10_000;
    /** One 16-byte object per segment would be 16 B per segment; what is allowed is JIT noise. */
    private static final double ALLOWED_BYTES_PER_SEGMENT = 0.01;

    @ParameterizedTest(name = "{0} both ways={1}")
    @CsvSource(delimiter = '|', value = {
        "none|true",
        "loss=0.01,seed=11|false",
        "loss=0.02,reorder=0.02,dup=0.01,delay=200us,seed=13|true",
    })
    void bulkTransferAllocatesNothingPerSegment(final String spec, final boolean bothWays)
    {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported(), "no per-thread allocation counter");
        THREADS.setThreadAllocatedMemoryEnabled(true);
        final FaultConfig faults = "none".equals(spec) ? null : FaultConfig.parse(spec);
        final TwoStacks net = new TwoStacks(faults, new long[] {1, 2, 3, 4}, d -> d);
        final Source source = new Source();
        final Sink sink = new Sink();
        final Source backSource = new Source();
        final Sink backSink = new Sink();
        final TcpHandler server = new TcpHandler()
        {
            @Override
            public void onConnected(final TcpConnection c)
            {
                if (bothWays)
                {
                    backSource.onWritable(c);
                }
            }

            @Override
            public void onWritable(final TcpConnection c)
            {
                if (bothWays)
                {
                    backSource.onWritable(c);
                }
            }

            @Override
            public void onReadable(final TcpConnection c)
            {
                sink.onReadable(c);
            }
        };
        final TcpHandler client = new TcpHandler()
        {
            @Override
            public void onConnected(final TcpConnection c)
            {
                source.onWritable(c);
            }

            @Override
            public void onWritable(final TcpConnection c)
            {
                source.onWritable(c);
            }

            @Override
            public void onReadable(final TcpConnection c)
            {
                backSink.onReadable(c);
            }
        };
        net.a.tcp().listen(5001, 16, l ->
        {
            for (TcpConnection c = l.accept(); c != null; c = l.accept())
            {
                c.handler(server);
                server.onConnected(c);
            }
        });
        net.b.tcp().connect(TwoStacks.A_IP, 5001, client, null);

        for (int i = 0; i < WARM_STEPS; i++)
        {
            net.step();
        }
        final long[] bytes = new long[ROUNDS];
        final long[] segments = new long[ROUNDS];
        final StackCounter[] watch = {StackCounter.TCP_RETRANSMITTED_SEGMENTS, StackCounter.TCP_SACK_RECOVERIES,
            StackCounter.TCP_FAST_RETRANSMITS, StackCounter.TCP_RTO_EXPIRIES, StackCounter.TCP_LOSS_PROBES,
            StackCounter.TCP_PREDICTED};
        final long[] watchBefore = new long[watch.length];
        for (int k = 0; k < watch.length; k++)
        {
            watchBefore[k] = net.a.counters().get(watch[k]) + net.b.counters().get(watch[k]);
        }
        final long receivedBefore = sink.received;
        for (int r = 0; r < ROUNDS; r++)
        {
            final long segBefore = segmentsOut(net.a) + segmentsOut(net.b);
            final long before = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < STEPS; i++)
            {
                net.step();
            }
            bytes[r] = THREADS.getCurrentThreadAllocatedBytes() - before;
            segments[r] = segmentsOut(net.a) + segmentsOut(net.b) - segBefore;
        }
        final StringBuilder sb = new StringBuilder("[alloc] bulk ").append(spec).append(" bothWays=").append(bothWays)
            .append(": bytes per round ").append(Arrays.toString(bytes)).append(", segments per round ")
            .append(Arrays.toString(segments)).append(", received in measured rounds ")
            .append(sink.received - receivedBefore).append(" B;");
        for (int k = 0; k < watch.length; k++)
        {
            sb.append(' ').append(watch[k].name()).append('=')
                .append(net.a.counters().get(watch[k]) + net.b.counters().get(watch[k]) - watchBefore[k]);
        }
        System.out.println(sb);
        assertTrue(sink.received - receivedBefore > 0, "the transfer moved: " + sb);
        if (faults != null && faults.loss() > 0)
        {
            assertTrue(net.a.counters().get(watch[0]) + net.b.counters().get(watch[0]) - watchBefore[0] > 0,
                () -> "loss recovery ran while measured: " + sb);
        }
        long totalBytes = 0;
        long totalSegments = 0;
        for (int r = 0; r < ROUNDS; r++)
        {
            totalBytes += bytes[r];
            totalSegments += segments[r];
        }
        final double perSegment = (double)totalBytes / totalSegments;
        assertTrue(perSegment < ALLOWED_BYTES_PER_SEGMENT, () -> sb + " -> " + perSegment + " B/segment");
    }
}
