package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import static io.nicstack.jmh.BenchFrames.pattern;
import static io.nicstack.jmh.TcpBenchPeer.SEGMENT_PAYLOAD;

/**
 * A 1448-byte payload copied where the receive path puts it: into a 256 KiB ring (the size of the daemon's RX pipe,
 * {@link TcpReceiveBurstBenchmark.PipeBuffers}) at the next stream offset, so the destination streams through the
 * cache as the connection's RX pipe does. Context for {@link TcpReceiveBurstBenchmark}: the baseline
 * ({@code TcpReceiveBenchmark.baselineCopy}) copies into one 1448-byte buffer that stays in L1. (This was
 * {@code TcpReceiveBurstBenchmark.baselineRingCopy}; it has a class of its own so that it is not timed per invocation
 * like the receive benchmark.)
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class RingCopyBenchmark
{
    private static final int CAPACITY = TcpReceiveBurstBenchmark.PipeBuffers.CAPACITY;

    private UnsafeBuffer ring;
    private UnsafeBuffer payload;
    private int ringAt;

    @Setup
    public void setUp()
    {
        ring = new UnsafeBuffer(ByteBuffer.allocateDirect(CAPACITY));
        payload = new UnsafeBuffer(ByteBuffer.allocateDirect(SEGMENT_PAYLOAD));
        payload.putBytes(0, pattern(SEGMENT_PAYLOAD));
    }

    @Benchmark
    public void ringCopy()
    {
        final int at = ringAt;
        final int first = Math.min(SEGMENT_PAYLOAD, CAPACITY - at);
        ring.putBytes(at, payload, 0, first);
        if (first < SEGMENT_PAYLOAD)
        {
            ring.putBytes(0, payload, first, SEGMENT_PAYLOAD - first);
        }
        ringAt = (at + SEGMENT_PAYLOAD) & (CAPACITY - 1);
    }
}
