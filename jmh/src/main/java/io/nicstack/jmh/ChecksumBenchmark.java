package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
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

import io.nicstack.stack.wire.Checksum;

import static io.nicstack.jmh.BenchFrames.check;

/**
 * The Internet checksum (RFC 1071) of {@code size} bytes in a direct buffer: the stack's
 * {@link Checksum#compute} (8 bytes per read), a plain copy of the same bytes as the baseline, and a
 * naive byte-at-a-time loop for context. 64, 576 and 1500 bytes: a minimum frame, the IPv4 minimum
 * reassembly size (RFC 791), a full MTU.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class ChecksumBenchmark
{
    @Param({"64", "576", "1500"})
    public int size;

    private UnsafeBuffer source;
    private UnsafeBuffer copyTarget;

    @Setup(Level.Trial)
    public void setUp()
    {
        source = new UnsafeBuffer(ByteBuffer.allocateDirect(size));
        copyTarget = new UnsafeBuffer(ByteBuffer.allocateDirect(size));
        final SplittableRandom random = new SplittableRandom(1071);
        for (int i = 0; i < size; i++)
        {
            source.putByte(i, (byte)random.nextInt(256));
        }
        check(Checksum.compute(source, 0, size) == naive(source, 0, size), "Checksum.compute disagrees with the naive RFC 1071 loop");
    }

    @Benchmark
    public int checksum()
    {
        return Checksum.compute(source, 0, size);
    }

    @Benchmark
    public int naiveByteLoop()
    {
        return naive(source, 0, size);
    }

    @Benchmark
    public void baselineCopy()
    {
        copyTarget.putBytes(0, source, 0, size);
    }

    /** RFC 1071 section 4.1, transcribed: 16-bit words assembled from single bytes, carries folded at the end. */
    static int naive(final UnsafeBuffer buffer, final int offset, final int length)
    {
        long sum = 0;
        int i = offset;
        final int end = offset + length;
        while (end - i > 1)
        {
            sum += ((buffer.getByte(i) & 0xFF) << 8) | (buffer.getByte(i + 1) & 0xFF);
            i += 2;
        }
        if (i < end)
        {
            sum += (buffer.getByte(i) & 0xFF) << 8;
        }
        while ((sum >>> 16) != 0)
        {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~(int)sum & 0xFFFF;
    }
}
