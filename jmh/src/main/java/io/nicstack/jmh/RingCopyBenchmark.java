package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.nic.FrameHandler;

import static io.nicstack.jmh.BenchFrames.MTU;
import static io.nicstack.jmh.BenchFrames.check;
import static io.nicstack.jmh.BenchFrames.pattern;
import static io.nicstack.jmh.TcpBenchPeer.PAYLOAD_AT;
import static io.nicstack.jmh.TcpBenchPeer.SEGMENT_PAYLOAD;

/**
 * A 1448-byte payload copied where the receive path puts it: into a 256 KiB ring (the size of the daemon's RX pipe,
 * {@link TcpReceiveBurstBenchmark.PipeBuffers}) at the next stream offset, so the destination streams through the
 * cache as the connection's RX pipe does. Context for {@link TcpReceiveBurstBenchmark}: the baseline
 * ({@code TcpReceiveBenchmark.baselineCopy}) copies into one 1448-byte buffer that stays in L1. (This was
 * {@code TcpReceiveBurstBenchmark.baselineRingCopy}; it has a class of its own so that it is not timed per invocation
 * like the receive benchmark.)
 *
 * <p>{@link #rxRingToPipe} is the copy the receive path makes, under the conditions {@link TcpReceiveBurstBenchmark}
 * ({@code nic=ring}) makes it in: the same RX ring of {@link LoopbackSinkDevice}, filled with {@value #BURST}
 * full-sized frames before each invocation and not timed, drained by one {@code receive} of the device, each frame's
 * 1448-byte payload copied into the 256 KiB pipe at the next offset. It pays what the receive path pays besides its
 * own work (the driver's loop over the ring, one call per frame, JMH's per-invocation timestamps), and nothing else.
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
    static final int BURST = TcpReceiveBurstBenchmark.BURST;

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
        ringAt = copyIntoRing(ring, ringAt, payload, 0);
    }

    /** One burst of {@value #BURST} frames from the NIC's RX ring, each payload into the pipe; reported per frame. */
    @Benchmark
    @OperationsPerInvocation(BURST)
    public int rxRingToPipe(final RxRing rx)
    {
        return rx.device.receive(rx, BURST);
    }

    /** Copy one segment's payload from {@code source} into {@code ring} at {@code at}, wrapping; the next offset. */
    static int copyIntoRing(final UnsafeBuffer ring, final int at, final UnsafeBuffer source, final int sourceAt)
    {
        final int first = Math.min(SEGMENT_PAYLOAD, CAPACITY - at);
        ring.putBytes(at, source, sourceAt, first);
        if (first < SEGMENT_PAYLOAD)
        {
            ring.putBytes(0, source, sourceAt + first, SEGMENT_PAYLOAD - first);
        }
        return (at + SEGMENT_PAYLOAD) & (CAPACITY - 1);
    }

    /**
     * A NIC RX ring ({@link LoopbackSinkDevice#fillRing}) whose frames are consumed by copying their payload into a
     * 256 KiB pipe, and nothing else. The frames are as long as a full-sized TCP segment with timestamps; their content
     * does not matter to a copy.
     */
    @State(Scope.Thread)
    public static class RxRing implements FrameHandler
    {
        final LoopbackSinkDevice device = new LoopbackSinkDevice(MTU, true);
        final UnsafeBuffer pipe = new UnsafeBuffer(ByteBuffer.allocateDirect(CAPACITY));
        int pipeAt;
        long frames;

        @Setup(Level.Trial)
        public void setUp()
        {
            final byte[] frame = pattern(PAYLOAD_AT + SEGMENT_PAYLOAD);
            device.load(new UnsafeBuffer(frame), 0, frame.length);
            device.burst(BURST, () -> { });
        }

        /** Not timed: the NIC places the next burst in its RX ring. */
        @Setup(Level.Invocation)
        public void fillRing()
        {
            device.fillRing(BURST);
        }

        @TearDown(Level.Trial)
        public void tearDown()
        {
            check(frames > 0 && device.received() == frames, "every frame placed in the ring was copied: "
                + frames + " copied, " + device.received() + " received");
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            frames++;
            pipeAt = copyIntoRing(pipe, pipeAt, (UnsafeBuffer)buffer, offset + PAYLOAD_AT);
        }
    }
}
