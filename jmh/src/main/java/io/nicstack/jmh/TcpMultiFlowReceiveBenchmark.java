package io.nicstack.jmh;

import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpState;

import static io.nicstack.jmh.BenchFrames.*;
import static io.nicstack.jmh.TcpBenchPeer.*;

/**
 * {@link TcpReceiveBurstBenchmark}'s receive path ({@code nic=ring}, {@code consume=inPlace}, checksum offload) with the
 * burst's {@value #BURST} in-order 1448-byte segments spread round-robin over {@code flows} connections of one stack,
 * as when many flows share a NIC queue: with more than one flow, every segment belongs to another connection than the
 * one before it, so early demultiplexing ({@code Tcp.onFrame}) finds it in the connection table, not as the last
 * segment's connection. Each connection has its own RX and TX pipe; the application drains every pipe that got data
 * once after the burst. Reported per segment. Setup and teardown check that every byte arrived and was read, every
 * segment took header prediction and early demultiplexing, and nothing was dropped.
 *
 * <p>{@code flows=1} is {@code TcpReceiveBurstBenchmark.receiveBurst} with the same parameters, as a check. With 32
 * flows each connection gets one segment per burst, and so sends an ACK for every second burst (RFC 9293 §3.8.6.3:
 * at least every second full-sized segment), against one per burst and flow with 4.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class TcpMultiFlowReceiveBenchmark
{
    static final int BURST = TcpReceiveBurstBenchmark.BURST;
    private static final int PEER_WINDOW = 502;

    @Param({"1", "4", "32"})
    public int flows;

    private LoopbackSinkDevice device;
    private NetStack stack;
    private TcpBenchPeer[] peers;
    private Cursor[] cursors;
    private UnsafeBuffer[] frames;
    private int frameLength;
    /** The flow whose segment the NIC places next. */
    private int nextFlow;
    private TcpReceiveBenchmark.Drain drain;
    private long polls;
    private long pollsAtStart;
    private long segmentsOutAtStart;
    private TcpBenchPeer.FastPathStart fastPathAtStart;
    private long injectedAtStart;

    @Setup(Level.Trial)
    public void setUp()
    {
        check(flows >= 1 && BURST % flows == 0, "flows divides the burst of " + BURST + ": " + flows);
        // Every connection gets its own pipes, as the daemon gives each connection of its apps a pipe slot.
        final BufferProvider pipes = new BufferProvider()
        {
            @Override
            public ConnectionBuffers allocate()
            {
                return new TcpReceiveBurstBenchmark.PipeBuffers().allocate();
            }

            @Override
            public int receiveCapacity()
            {
                return TcpReceiveBurstBenchmark.PipeBuffers.CAPACITY;
            }

            @Override
            public void release(final ConnectionBuffers buffers)
            {
            }
        };
        peers = new TcpBenchPeer[flows];
        cursors = new Cursor[flows];
        frames = new UnsafeBuffer[flows];
        drain = new TcpReceiveBurstBenchmark.InPlaceDrain();
        peers[0] = TcpBenchPeer.onNewStack(true, PEER_WINDOW, pipes);
        device = peers[0].device;
        stack = peers[0].stack;
        for (int i = 0; i < flows; i++)
        {
            final TcpBenchPeer peer = i == 0 ? peers[0] : peers[0].another(PEER_PORT + i, PEER_WINDOW);
            peers[i] = peer;
            peer.connection.handler(drain);
            final byte[] frame = tcpFrame(stack.config().mac(), peer.nextSegment(PEER_WINDOW), pattern(SEGMENT_PAYLOAD));
            frameLength = frame.length;
            frames[i] = directCopy(frame);
            cursors[i] = peer.dataCursor(frames[i]);
        }
        check(stack.tcp().connectionCount() == flows, "connections: " + stack.tcp().connectionCount());
        device.load(frames[0], 0, frameLength);
        device.burst(BURST, this::nextFrame);

        for (int i = 0; i < 64; i++)
        {
            fillRing();
            poll();
        }
        long bytes = 0;
        for (int i = 0; i < flows; i++)
        {
            check(cursors[i].checksumValid(frameLength), "flow " + i + ": the patched frame's TCP checksum is wrong");
            check(peers[i].connection.bytesReceived() == cursors[i].count * SEGMENT_PAYLOAD
                && peers[i].connection.readable() == 0, "flow " + i + ": every byte arrived and was read in setup");
            bytes += cursors[i].count * SEGMENT_PAYLOAD;
        }
        check(drain.bytes == bytes, "read " + drain.bytes + " of " + bytes + " bytes in setup");
        checkNoTcpTrouble(stack.counters());
        pollsAtStart = polls;
        injectedAtStart = injected();
        segmentsOutAtStart = stack.counters().get(StackCounter.TCP_SEGMENTS_OUT);
        fastPathAtStart = TcpBenchPeer.FastPathStart.of(stack.counters());
    }

    /** The NIC's per-frame work (not timed): the next flow's segment, patched, becomes the frame the device places. */
    private void nextFrame()
    {
        final int flow = nextFlow;
        nextFlow = flow + 1 == flows ? 0 : flow + 1;
        cursors[flow].next();
        device.load(frames[flow], 0, frameLength);
    }

    private long injected()
    {
        long n = 0;
        for (final Cursor c : cursors)
        {
            n += c.count;
        }
        return n;
    }

    private int poll()
    {
        polls++;
        return stack.poll(NOW);
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        final StackCounters counters = stack.counters();
        checkNoTcpTrouble(counters);
        long bytes = 0;
        for (int i = 0; i < flows; i++)
        {
            final TcpBenchPeer peer = peers[i];
            check(peer.connection.state() == TcpState.ESTABLISHED, "flow " + i + ": state " + peer.connection.state());
            check(peer.connection.bytesReceived() == cursors[i].count * SEGMENT_PAYLOAD && peer.connection.readable() == 0,
                "flow " + i + ": received " + peer.connection.bytesReceived() + " of " + cursors[i].count * SEGMENT_PAYLOAD);
            bytes += cursors[i].count * SEGMENT_PAYLOAD;
        }
        check(drain.bytes == bytes, "read " + drain.bytes + " of " + bytes + " bytes");
        final long bursts = polls - pollsAtStart;
        final long segments = injected() - injectedAtStart;
        check(segments == bursts * BURST, "every poll took a whole burst: " + segments + " segments in " + bursts);
        final long acks = counters.get(StackCounter.TCP_SEGMENTS_OUT) - segmentsOutAtStart;
        final long ackEvery = BURST / flows >= 2 ? 1 : 2;
        check(Math.abs(acks - bursts * flows / ackEvery) <= flows,
            acks + " ACKs for " + bursts + " bursts of " + flows + " flows: not one per flow every " + ackEvery + " bursts");
        fastPathAtStart.checkEverySegmentTookTheFastPath(counters, segments, "segment");
    }

    /** Not timed: the NIC places the next burst in its RX ring, the flows' segments in turn. */
    @Setup(Level.Invocation)
    public void fillRing()
    {
        device.fillRing(BURST);
    }

    /** One burst of 32 in-order segments of {@code flows} connections through one poll; reported per segment. */
    @Benchmark
    @OperationsPerInvocation(BURST)
    public int receiveBurst()
    {
        return poll();
    }
}
