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
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.daemon.pipes.PipeReceiveBuffer;
import io.nicstack.daemon.pipes.PipeSendBuffer;
import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpState;
import io.nicstack.stack.wire.TcpRepr;

import static io.nicstack.jmh.BenchFrames.*;
import static io.nicstack.jmh.TcpBenchPeer.*;

/**
 * {@link TcpReceiveBenchmark}'s receive path under load: one poll takes a burst of {@value #BURST} in-order 1448-byte
 * segments (as a NIC's RX ring or the tap hands them over when data streams in), the application drains what arrived
 * once after the burst, and the stack sends one ACK for the burst (RFC 9293 §3.8.6.3: all queued segments are
 * processed before an ACK). Reported per segment ({@code @OperationsPerInvocation}). Setup and teardown check that
 * every byte arrived and was read, one ACK per burst left, and nothing was dropped.
 *
 * <p>{@code nic}: where the burst's frames come from. {@code ring}, the NIC's work is done before the invocation and
 * not timed ({@code Level.Invocation}): {@value #BURST} distinct frames, each with the next sequence number, TSval and
 * checksum, are written into the device's RX ring slots ({@link LoopbackSinkDevice#fillRing}), as DMA places them
 * before a driver polls; the stack reads each from its own slot. {@code patchInLoop}, the way this benchmark ran
 * before: one frame, patched in place before each delivery inside the timed poll
 * ({@code TcpReceiveBenchmark.patchFrame} measures that patching alone).
 *
 * <p>{@code consume}: {@code copy}, the application {@code read}s every byte out of the stack's heap ring (a copy that
 * is the application's, not the receive path's); {@code inPlace}, the connection's receive buffer is an RX pipe
 * ({@link PipeReceiveBuffer} in direct memory, as the daemon gives its apps) and the application consumes in place:
 * it moves the pipe's head and the stack is told as the daemon tells it after a doorbell
 * ({@code receiveBufferConsumed}). {@code inPlace} is the receive path as issue 3 defines it (parse, validate, state
 * update, payload into the receive ring, ACK decision) plus the one ACK per burst.
 *
 * <p>Baselines for the same run: {@code TcpReceiveBenchmark.baselineCopy} (the payload copied between two buffers that
 * stay in L1) and {@code RingCopyBenchmark.rxRingToPipe} (the copy this path makes, from the same RX ring into a pipe
 * of the same size, under the same per-invocation ring fill).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class TcpReceiveBurstBenchmark
{
    static final int BURST = 32;
    private static final int PEER_WINDOW = 502;

    /** As in {@link TcpReceiveBenchmark}: software checksums, or the device's offload. */
    @Param({"false", "true"})
    public boolean checksumOffload;

    @Param({"copy", "inPlace"})
    public String consume;

    @Param({"ring", "patchInLoop"})
    public String nic;

    private LoopbackSinkDevice device;
    private NetStack stack;
    private TcpConnection connection;
    private Cursor cursor;
    private TcpReceiveBenchmark.Drain drain;
    private long segmentsOutAtStart;
    private long injectedAtStart;
    private long pollsAtStart;
    private long polls;
    private TcpBenchPeer.FastPathStart fastPathAtStart;
    private boolean ringMode;

    @Setup(Level.Trial)
    public void setUp()
    {
        final boolean inPlace = consume.equals("inPlace");
        final TcpBenchPeer peer = TcpBenchPeer.onNewStack(checksumOffload, PEER_WINDOW, inPlace ? new PipeBuffers() : null);
        device = peer.device;
        stack = peer.stack;
        connection = peer.connection;
        drain = inPlace ? new InPlaceDrain() : new TcpReceiveBenchmark.Drain();
        connection.handler(drain);

        final TcpRepr data = peer.nextSegment(PEER_WINDOW);
        final byte[] frame = tcpFrame(stack.config().mac(), data, pattern(SEGMENT_PAYLOAD));
        device.load(new UnsafeBuffer(frame), 0, frame.length);
        cursor = peer.dataCursor(device.rxBuffer());
        device.burst(BURST, cursor::next);

        for (int i = 0; i < 64; i++)
        {
            poll();
        }
        check(cursor.checksumValid(frame.length), "the patched frame's TCP checksum is wrong");
        check(drain.bytes == cursor.count * SEGMENT_PAYLOAD && connection.readable() == 0, "every byte read in setup");
        final TcpRepr ack = lastSegment(device, "ACK after a burst");
        check(ack.ack == peer.peerNextSeq + (int)(cursor.count * SEGMENT_PAYLOAD), "the ACK covers the whole burst: " + ack);
        check(ack.window > 0, "the window stays open: " + ack);
        checkNoTcpTrouble(stack.counters());
        ringMode = ringMode(nic);
        segmentsOutAtStart = stack.counters().get(StackCounter.TCP_SEGMENTS_OUT);
        injectedAtStart = cursor.count;
        pollsAtStart = polls;
        fastPathAtStart = TcpBenchPeer.FastPathStart.of(stack.counters());
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
        check(connection.state() == TcpState.ESTABLISHED, "state " + connection.state());
        final long bytes = cursor.count * SEGMENT_PAYLOAD;
        check(connection.bytesReceived() == bytes && drain.bytes == bytes && connection.readable() == 0,
            "bytes received " + connection.bytesReceived() + ", read " + drain.bytes + ", injected " + bytes);
        final long acks = counters.get(StackCounter.TCP_SEGMENTS_OUT) - segmentsOutAtStart;
        check(acks == polls - pollsAtStart, "one ACK per burst: " + acks + " ACKs for " + (polls - pollsAtStart) + " bursts");
        check(cursor.count - injectedAtStart == (polls - pollsAtStart) * BURST, "every poll took a whole burst");
        fastPathAtStart.checkEverySegmentTookTheFastPath(counters, cursor.count - injectedAtStart, "segment");
    }

    /** Buffers as the daemon's pipe slots are: an RX pipe and a TX pipe in direct memory, of the stack's default size. */
    static final class PipeBuffers implements BufferProvider, BufferProvider.ConnectionBuffers
    {
        static final int CAPACITY = 256 * 1024;
        final UnsafeBuffer rxPipe = new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(CAPACITY)));
        final PipeReceiveBuffer rx = new PipeReceiveBuffer(rxPipe, CAPACITY, 16);
        final PipeSendBuffer tx = new PipeSendBuffer(
            new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(CAPACITY))), CAPACITY);

        @Override
        public ConnectionBuffers allocate()
        {
            rx.reset();
            tx.reset();
            return this;
        }

        @Override
        public int receiveCapacity()
        {
            return CAPACITY;
        }

        @Override
        public void release(final ConnectionBuffers buffers)
        {
        }

        @Override
        public PipeSendBuffer sendBuffer()
        {
            return tx;
        }

        @Override
        public PipeReceiveBuffer receiveBuffer()
        {
            return rx;
        }
    }

    /** The app consumes in place: it moves the RX pipe's head over what arrived; the stack hears of it as from a doorbell. */
    static final class InPlaceDrain extends TcpReceiveBenchmark.Drain
    {
        @Override
        public void onReadable(final TcpConnection connection)
        {
            events++;
            final PipeBuffers buffers = (PipeBuffers)connection.buffers();
            final long head = buffers.rx.readPosition();
            final long end = buffers.rx.contiguousEnd();
            buffers.rxPipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, end);
            bytes += end - head;
            connection.receiveBufferConsumed();
        }
    }

    /** Not timed: the NIC places the next burst in its RX ring ({@code nic=ring}). */
    @Setup(Level.Invocation)
    public void fillRing()
    {
        if (ringMode)
        {
            device.fillRing(BURST);
        }
    }

    /** One burst of 32 in-order segments through one poll; the time is reported per segment. */
    @Benchmark
    @OperationsPerInvocation(BURST)
    public int receiveBurst()
    {
        return poll();
    }
}
