package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.pipes.Pipe;
import io.nicstack.pipes.PipeDescriptor;

import static io.nicstack.jmh.BenchFrames.check;

/**
 * Bulk transfer of one 64 KB chunk through a shared-memory pipe, in one thread (producer then consumer), beside a
 * plain copy of the same 64 KB, two copies (the floor for copy-in plus copy-out), and Agrona's
 * {@link OneToOneRingBuffer} moving the same bytes as one record.
 *
 * <ul>
 *     <li>{@code pipeCopyInCopyOut}: the app's {@code claim}/{@code putBytes}/{@code commit} into a 256 KB pipe, then
 *     the consumer's {@code peek}/{@code getBytes}/{@code release} into a destination buffer. The pipe's positions
 *     start 1000 bytes off the 64 KB grid, so one chunk in four is split at the wrap (two spans each way; 1.25
 *     spans per op on average).</li>
 *     <li>{@code pipeCopyInConsumeInPlace}: the same producer; the consumer reads one long per span in place and
 *     releases (how the daemon reads TX bytes straight into frames, or an app parses in place).</li>
 *     <li>{@code ringBufferWriteRead}: {@code write(type, src, 0, 64 KB)} then {@code read} with a handler that
 *     copies the record out, on a ring of 1 MB (its maximum record is an eighth of that).</li>
 * </ul>
 *
 * One operation moves 65536 bytes; GB/s = 65536 / (ns per op).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class PipeBenchmark
{
    static final int CHUNK = 64 * 1024;
    static final int PIPE_CAPACITY = 256 * 1024;
    static final int RING_CAPACITY = 1024 * 1024;

    private UnsafeBuffer source;
    private UnsafeBuffer middle;
    private UnsafeBuffer destination;
    private Pipe producer;
    private Pipe consumer;
    private OneToOneRingBuffer ring;
    private final CopyOut copyOut = new CopyOut();

    @Setup(Level.Trial)
    public void setUp()
    {
        source = new UnsafeBuffer(ByteBuffer.allocateDirect(CHUNK));
        middle = new UnsafeBuffer(ByteBuffer.allocateDirect(CHUNK));
        destination = new UnsafeBuffer(ByteBuffer.allocateDirect(CHUNK));
        final SplittableRandom random = new SplittableRandom(64);
        for (int i = 0; i < CHUNK; i++)
        {
            source.putByte(i, (byte)random.nextInt(256));
        }

        final UnsafeBuffer pipeRegion = new UnsafeBuffer(ByteBuffer.allocateDirect(PipeDescriptor.length(PIPE_CAPACITY)));
        producer = new Pipe().wrap(pipeRegion);
        consumer = new Pipe().wrap(pipeRegion);
        // Off the chunk grid, so the wrap splits chunks.
        producer.publishTail(1000);
        consumer.release(1000);

        ring = new OneToOneRingBuffer(new UnsafeBuffer(
            ByteBuffer.allocateDirect(RING_CAPACITY + RingBufferDescriptor.TRAILER_LENGTH)));
        copyOut.destination = destination;

        for (int i = 0; i < 8; i++)
        {
            destination.setMemory(0, CHUNK, (byte)0);
            pipeCopyInCopyOut();
            check(destination.compareTo(source) == 0, "pipe delivered other bytes");
            destination.setMemory(0, CHUNK, (byte)0);
            ringBufferWriteRead();
            check(destination.compareTo(source) == 0, "ring buffer delivered other bytes");
        }
    }

    @Benchmark
    public void pipeCopyInCopyOut()
    {
        produce();
        int moved = 0;
        while (moved < CHUNK)
        {
            final int span = consumer.peek();
            consumer.buffer().getBytes(consumer.peekIndex(), destination, moved, span);
            consumer.release(span);
            moved += span;
        }
    }

    @Benchmark
    public long pipeCopyInConsumeInPlace()
    {
        produce();
        long sum = 0;
        int moved = 0;
        while (moved < CHUNK)
        {
            final int span = consumer.peek();
            sum += consumer.buffer().getLong(consumer.peekIndex());
            consumer.release(span);
            moved += span;
        }
        return sum;
    }

    @Benchmark
    public int ringBufferWriteRead()
    {
        ring.write(1, source, 0, CHUNK);
        return ring.read(copyOut);
    }

    @Benchmark
    public void baselineCopy()
    {
        destination.putBytes(0, source, 0, CHUNK);
    }

    @Benchmark
    public void baselineTwoCopies()
    {
        middle.putBytes(0, source, 0, CHUNK);
        destination.putBytes(0, middle, 0, CHUNK);
    }

    private void produce()
    {
        int written = 0;
        while (written < CHUNK)
        {
            final int span = producer.claim(CHUNK - written);
            producer.buffer().putBytes(producer.claimIndex(), source, written, span);
            producer.commit(span);
            written += span;
        }
    }

    static final class CopyOut implements MessageHandler
    {
        MutableDirectBuffer destination;

        @Override
        public void onMessage(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length)
        {
            destination.putBytes(0, buffer, index, length);
        }
    }
}
