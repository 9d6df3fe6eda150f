package io.nicstack.nic.pcap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.EpochNanoClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.Allocations;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryDevice;
import io.nicstack.nic.mem.MemoryWire;

/**
 * A live capture ({@code --pcap} on a named pipe) allocates nothing per frame after a warm-up: the writer asks the
 * pipe what it holds (FIONREAD) before each write, once per flush at least, and that call must not allocate. One
 * thread writes frames, flushes as the daemon does and reads the pipe empty after each flush, so every run makes the
 * same calls; no wall clock.
 */
class PcapLiveCaptureAllocationTest
{
    private static final int FRAME = 1514;
    /** 32 records of 1530 bytes are 48 KiB: a flush fits into the 64 KiB pipe the reader has just emptied. */
    private static final int FLUSH_EVERY = 32;
    private static final int WARM_FRAMES = 20_000;
    private static final int FRAMES = 20_000;
    /** JIT noise only: one allocation per flush would be 625 allocations, several KiB. */
    private static final long ALLOWED_BYTES = 1024;

    @TempDir
    Path dir;

    private long now = 1_700_000_000_000_000_000L;
    private final EpochNanoClock clock = () -> now += 1_000;
    private final byte[] chunk = new byte[8192]; // FileInputStream reads up to 8 KiB through a stack buffer
    private long read;

    @Test
    void liveCaptureAllocatesNothingPerFrame() throws Exception
    {
        final Path fifo = dir.resolve("live.pcap");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        // Opening a FIFO's reader waits for its writer and the other way round: the reader opens on another thread.
        final CompletableFuture<FileInputStream> opening = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                return new FileInputStream(fifo.toFile());
            }
            catch (final IOException ex)
            {
                throw new UncheckedIOException(ex);
            }
        });
        final MemoryWire wire = MemoryWire.pair(1500, 256);
        final PcapWritingDevice pcap = new PcapWritingDevice(wire.a(), fifo, clock);
        try (FileInputStream reader = opening.get(10, TimeUnit.SECONDS))
        {
            final MemoryDevice b = wire.b();
            final FrameHandler sink = (buffer, offset, length) -> { };
            pump(pcap, b, sink, reader, WARM_FRAMES);
            final long before = Allocations.currentThread();
            pump(pcap, b, sink, reader, FRAMES);
            final long allocated = Allocations.currentThread() - before;
            pcap.close();
            drain(reader);
            assertEquals(0, pcap.framesNotCaptured(), "the pipe took every frame");
            assertEquals(24 + (long)(WARM_FRAMES + FRAMES) * (16 + FRAME), read, "the reader got every record");
            assertTrue(allocated < ALLOWED_BYTES, () -> allocated + " B for " + FRAMES + " frames captured live ("
                + (double)allocated / FRAMES + " B per frame)");
        }
        finally
        {
            pcap.close();
        }
    }

    private void pump(final PcapWritingDevice a, final MemoryDevice b, final FrameHandler sink,
        final FileInputStream reader, final int frames) throws IOException
    {
        for (int i = 0; i < frames; i++)
        {
            a.claim().putInt(0, i);
            a.commit(FRAME);
            a.flush();
            b.receive(sink, NetDevice.BURST);
            if (i % FLUSH_EVERY == FLUSH_EVERY - 1)
            {
                a.flushCapture(); // the daemon's periodic flush
                drain(reader);
            }
        }
    }

    /** Read what the pipe holds now, never waiting: as much as FIONREAD says. */
    private void drain(final FileInputStream reader) throws IOException
    {
        int available;
        while ((available = reader.available()) > 0)
        {
            final int n = reader.read(chunk, 0, Math.min(available, chunk.length));
            if (n <= 0)
            {
                return;
            }
            read += n;
        }
    }
}
