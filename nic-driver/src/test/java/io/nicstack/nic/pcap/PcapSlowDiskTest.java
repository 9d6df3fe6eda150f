package io.nicstack.nic.pcap;

import io.nicstack.nic.Allocations;
import io.nicstack.nic.FakeDevice;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryDevice;
import io.nicstack.nic.mem.MemoryWire;
import org.agrona.concurrent.EpochNanoClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A capture file on a slow or hung filesystem (NFS, dirty-page throttling) holds up no frame: the event loop only
 * copies each record into a bounded buffer, and a writer thread waits on the file. Records that find the buffer full
 * are left out and counted; close waits for the writer and the file then holds everything recorded and not counted
 * out, in order. Before, record() and flushCapture() wrote to the file on the event loop's thread, so one write that
 * hung stopped the whole packet path.
 */
class PcapSlowDiskTest
{
    private static final int FRAME = 1000;
    /** Twice what the 1 MiB buffer holds at 1016 bytes a record. */
    private static final int FRAMES = 2_000;
    private static final long BOUND_MS = 10_000;

    @TempDir
    Path dir;

    private final FakeDevice inner = new FakeDevice(1500);
    private long now = 1_700_000_000_000_000_000L;
    private final EpochNanoClock clock = () -> now += 1_000;

    /** A file whose writes after the file header wait until {@link #release} (at most 60 s, so nothing hangs for ever). */
    private static final class StuckChannel extends FileChannel
    {
        final FileChannel real;
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile Thread writer;
        int writes;

        StuckChannel(final FileChannel real)
        {
            this.real = real;
        }

        @Override
        public int write(final ByteBuffer src) throws IOException
        {
            if (writes++ > 0)
            {
                writer = Thread.currentThread();
                entered.countDown();
                try
                {
                    release.await(60, TimeUnit.SECONDS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
            }
            return real.write(src);
        }

        @Override public FileChannel truncate(final long size) throws IOException { real.truncate(size); return this; }
        @Override public long position() throws IOException { return real.position(); }
        @Override public long size() throws IOException { return real.size(); }
        @Override public void force(final boolean metaData) { }
        @Override protected void implCloseChannel() throws IOException { real.close(); }
        @Override public int read(final ByteBuffer dst) { throw new UnsupportedOperationException(); }
        @Override public long read(final ByteBuffer[] dsts, final int offset, final int length) { throw new UnsupportedOperationException(); }
        @Override public long write(final ByteBuffer[] srcs, final int offset, final int length) { throw new UnsupportedOperationException(); }
        @Override public FileChannel position(final long newPosition) { throw new UnsupportedOperationException(); }
        @Override public long transferTo(final long position, final long count, final WritableByteChannel target) { throw new UnsupportedOperationException(); }
        @Override public long transferFrom(final ReadableByteChannel src, final long position, final long count) { throw new UnsupportedOperationException(); }
        @Override public int read(final ByteBuffer dst, final long position) { throw new UnsupportedOperationException(); }
        @Override public int write(final ByteBuffer src, final long position) { throw new UnsupportedOperationException(); }
        @Override public MappedByteBuffer map(final MapMode mode, final long position, final long size) { throw new UnsupportedOperationException(); }
        @Override public FileLock lock(final long position, final long size, final boolean shared) { throw new UnsupportedOperationException(); }
        @Override public FileLock tryLock(final long position, final long size, final boolean shared) { throw new UnsupportedOperationException(); }
    }

    private StuckChannel stuck(final Path file) throws IOException
    {
        return new StuckChannel(FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE));
    }

    private static void commit(final PcapWritingDevice device, final int first, final int count)
    {
        for (int i = first; i < first + count; i++)
        {
            device.claim().putInt(0, i, ByteOrder.BIG_ENDIAN);
            device.commit(FRAME);
        }
    }

    @Test
    void aWriteThatHangsHoldsUpNoFrameAndWhatDoesNotFitIsCounted() throws Exception
    {
        final Path file = dir.resolve("slow.pcap");
        final StuckChannel channel = stuck(file);
        final PcapWritingDevice device = new PcapWritingDevice(inner, file, channel, clock);
        final long[] notCaptured = {-1};
        // The event loop: ten frames, the daemon's periodic flush (the file write hangs in it), then many more.
        final Thread loop = new Thread(() ->
        {
            commit(device, 0, 10);
            device.flushCapture();
            commit(device, 10, FRAMES);
            device.flushCapture();
            notCaptured[0] = device.framesNotCaptured();
        }, "event-loop");
        try
        {
            loop.start();
            loop.join(BOUND_MS);
            assertFalse(loop.isAlive(), "the event loop waited on the hung file write");
            assertTrue(channel.entered.await(BOUND_MS, TimeUnit.MILLISECONDS), "the capture wrote to the file");
            assertTrue(channel.writer != loop, "the file is written on another thread than the event loop's");
        }
        finally
        {
            channel.release.countDown();
            loop.join(BOUND_MS);
            device.close();
        }

        assertEquals(FRAMES + 10, inner.committed.size(), "every frame reached the device");
        assertTrue(notCaptured[0] > 0, "the records beyond the buffer are counted");
        assertEquals(notCaptured[0], device.framesNotCaptured(), "none lost once the file took writes again");
        final List<Integer> captured = records(file);
        assertEquals(FRAMES + 10, captured.size() + device.framesNotCaptured(), "every frame captured or counted out");
        for (int i = 0; i < captured.size(); i++)
        {
            assertEquals(i, captured.get(i), "the file holds the first frames, in order, each once");
        }
    }

    @Test
    void closeWaitsForAHungWriteAndThenWritesEveryRecord() throws Exception
    {
        final Path file = dir.resolve("tail.pcap");
        final StuckChannel channel = stuck(file);
        final PcapWritingDevice device = new PcapWritingDevice(inner, file, channel, clock);
        final Thread closer = new Thread(device::close, "close");
        try
        {
            commit(device, 0, 10);
            device.flushCapture();
            assertTrue(channel.entered.await(BOUND_MS, TimeUnit.MILLISECONDS), "the capture wrote to the file");
            commit(device, 10, 100); // recorded while the write hangs: the tail close must not lose
            closer.start();
        }
        finally
        {
            channel.release.countDown();
        }
        closer.join(BOUND_MS);
        assertFalse(closer.isAlive(), "close returned once the write did");

        assertNull(device.captureFailure());
        assertEquals(0, device.framesNotCaptured());
        final List<Integer> captured = records(file);
        assertEquals(110, captured.size(), "close wrote every record");
        for (int i = 0; i < captured.size(); i++)
        {
            assertEquals(i, captured.get(i), "in order, each once");
        }
    }

    /**
     * A close that finds the writer's head on the padding before the ring's wrap: every record after the wrap still
     * reaches the file. Agrona's read returns the messages it handled, not counting padding, and stops at the ring's
     * end, so a read that took only the padding returned 0 with the head moved; the writer took that for an empty
     * ring and, closing, returned with a ring's worth of records neither written nor counted (the race test's
     * 1,525 records under load). The writer is held in a write while the ring fills past the wrap.
     */
    @Test
    void aCloseAfterTheRingWrappedPastItsPaddingLosesNoRecord() throws Exception
    {
        final Path file = dir.resolve("wrap.pcap");
        final StuckChannel channel = stuck(file);
        final PcapWritingDevice device = new PcapWritingDevice(inner, file, channel, clock);
        final Thread closer = new Thread(device::close, "close");
        // 1200-byte frames take 1224 ring bytes a record: 856 of them end 784 bytes short of the ring's end.
        for (int i = 0; i < 856; i++)
        {
            device.claim().putInt(0, i, ByteOrder.BIG_ENDIAN);
            device.commit(1200);
        }
        device.flushCapture();
        assertTrue(channel.entered.await(BOUND_MS, TimeUnit.MILLISECONDS), "the writer is in its write");
        for (int i = 856; i < 956; i++)
        {
            device.claim().putInt(0, i, ByteOrder.BIG_ENDIAN);
            device.commit(1200);
        }
        closer.start();
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BOUND_MS);
        while (closer.getState() != Thread.State.WAITING && System.nanoTime() - deadline < 0)
        {
            Thread.sleep(1);
        }
        channel.release.countDown();
        closer.join(BOUND_MS);
        assertEquals(956, records(file).size() + device.framesNotCaptured(), "every frame captured or counted out");
    }

    /**
     * The event loop and the writer thread really race over the ring: many small frames, flushes at uneven intervals,
     * and a wait for the writer now and then so that both a full and an empty ring occur. Every frame ends up in the
     * file, in order and with its own timestamp, or counted out; the file ends at a record's end.
     */
    @Test
    void theEventLoopAndTheWriterRaceWithoutLosingOrReorderingARecord() throws Exception
    {
        final Path file = dir.resolve("race.pcap");
        final int frames = 300_000;
        final MemoryWire wire = MemoryWire.pair(1500, 256);
        final FrameHandler sink = (buffer, offset, length) -> { };
        try (PcapWritingDevice capture = new PcapWritingDevice(wire.a(), file, clock))
        {
            for (int i = 0; i < frames; i++)
            {
                capture.claim().putInt(0, i, ByteOrder.BIG_ENDIAN);
                capture.commit(60 + (i % 7) * 200);
                capture.flush();
                wire.b().receive(sink, NetDevice.BURST);
                if (i % 977 == 0)
                {
                    capture.flushCapture();
                }
                if (i % 50_021 == 0)
                {
                    assertTrue(capture.awaitWriter(BOUND_MS), "the writer thread caught up");
                }
            }
            capture.close();
            final List<Integer> captured = records(file);
            assertEquals(frames, captured.size() + capture.framesNotCaptured(), "every frame captured or counted out");
            for (int i = 1; i < captured.size(); i++)
            {
                assertTrue(captured.get(i) > captured.get(i - 1), "in order, each once, at record " + i);
            }
            assertTimestampsRise(file);
        }
    }

    /** Each record's timestamp is the clock's at record time: the test clock moves 1 us a frame, so they rise. */
    private static void assertTimestampsRise(final Path file) throws IOException
    {
        final ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        long previous = -1;
        for (int at = PcapWritingDevice.FILE_HEADER_LENGTH; at < b.limit();
            at += PcapWritingDevice.RECORD_HEADER_LENGTH + b.getInt(at + 8))
        {
            final long micros = (b.getInt(at) & 0xFFFF_FFFFL) * 1_000_000L + b.getInt(at + 4);
            assertTrue(micros > previous, "timestamps rise, at " + at);
            previous = micros;
        }
    }

    /**
     * The event loop's side of a capture to a file allocates nothing per frame after a warm-up (a memory wire, which
     * allocates nothing either, beneath it): the ring's claim and commit, the flush request.
     */
    @Test
    void recordingToAFileAllocatesNothingPerFrame() throws Exception
    {
        final MemoryWire wire = MemoryWire.pair(1500, 256);
        final FrameHandler sink = (buffer, offset, length) -> { };
        try (PcapWritingDevice device = new PcapWritingDevice(wire.a(), dir.resolve("alloc.pcap"), clock))
        {
            pump(device, wire.b(), sink, 20_000);
            final long before = Allocations.currentThread();
            pump(device, wire.b(), sink, 20_000);
            final long allocated = Allocations.currentThread() - before;
            assertTrue(allocated < 1024, () -> allocated + " B for 20000 frames captured to a file");
        }
    }

    private static void pump(final PcapWritingDevice device, final MemoryDevice b, final FrameHandler sink, final int frames)
    {
        for (int i = 0; i < frames; i++)
        {
            device.claim().putInt(0, i);
            device.commit(60);
            device.flush();
            b.receive(sink, NetDevice.BURST);
            if (i % 32 == 31)
            {
                device.flushCapture();
            }
        }
    }

    /** The first int of each record's frame; the file must end exactly at a record's end. */
    static List<Integer> records(final Path file) throws IOException
    {
        final ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(PcapWritingDevice.MAGIC, b.getInt(0));
        final List<Integer> firsts = new ArrayList<>();
        int at = PcapWritingDevice.FILE_HEADER_LENGTH;
        while (at < b.limit())
        {
            assertTrue(at + PcapWritingDevice.RECORD_HEADER_LENGTH <= b.limit(), "a torn record header at " + at);
            final int captured = b.getInt(at + 8);
            assertTrue(at + PcapWritingDevice.RECORD_HEADER_LENGTH + captured <= b.limit(), "a torn record at " + at);
            firsts.add(b.order(ByteOrder.BIG_ENDIAN).getInt(at + PcapWritingDevice.RECORD_HEADER_LENGTH));
            b.order(ByteOrder.LITTLE_ENDIAN);
            at += PcapWritingDevice.RECORD_HEADER_LENGTH + captured;
        }
        return firsts;
    }
}
