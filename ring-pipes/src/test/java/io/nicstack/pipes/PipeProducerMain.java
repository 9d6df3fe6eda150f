package io.nicstack.pipes;

import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.File;
import java.nio.MappedByteBuffer;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * The producer half of {@link PipeConcurrencyTest#byteExactAcrossTwoProcesses}, run in a second JVM: maps the pipe file,
 * writes {@code bytes} bytes of the {@link StreamPattern} in random chunks, then prints the CRC32C of what it wrote.
 *
 * <p>Arguments: file, capacity, bytes, seed.
 */
public final class PipeProducerMain
{
    private PipeProducerMain()
    {
    }

    public static void main(final String[] args)
    {
        final File file = new File(args[0]);
        final int capacity = Integer.parseInt(args[1]);
        final long total = Long.parseLong(args[2]);
        final long seed = Long.parseLong(args[3]);
        final long deadline = System.nanoTime() + 120_000_000_000L;

        final StreamPattern pattern = new StreamPattern(seed);
        final MappedByteBuffer mapped = IoUtil.mapExistingFile(file, "pipe");
        try
        {
            final Pipe pipe = new Pipe().wrap(new UnsafeBuffer(mapped));
            if (pipe.capacity() != capacity)
            {
                throw new IllegalStateException("capacity " + pipe.capacity() + " != " + capacity);
            }
            final SplittableRandom random = new SplittableRandom(seed);
            final CRC32C crc = new CRC32C();
            long position = 0;
            while (position < total)
            {
                final int want = (int)Math.min(total - position, 1 + random.nextInt(capacity / 2));
                final int span = pipe.claim(want);
                if (span == 0)
                {
                    if (System.nanoTime() > deadline)
                    {
                        throw new IllegalStateException("consumer stalled at " + position);
                    }
                    Thread.onSpinWait();
                    continue;
                }
                final int from = StreamPattern.offset(position);
                pipe.buffer().putBytes(pipe.claimIndex(), pattern.bytes, from, span);
                crc.update(pattern.bytes, from, span);
                pipe.commit(span);
                position += span;
            }
            System.out.println("CRC32C " + Long.toHexString(crc.getValue()) + " " + position);
        }
        finally
        {
            IoUtil.unmap(mapped);
        }
    }
}
