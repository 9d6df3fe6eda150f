package io.nicstack.nic.pcap;

import io.nicstack.nic.FakeDevice;
import io.nicstack.nic.FrameHandler;
import org.agrona.DirectBuffer;
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
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A capture whose file cannot be written (a full disk) stops, as tcpdump -w stops, and takes nothing else down: every
 * frame still passes both ways, nothing is thrown from receive, commit or the daemon's periodic flush, and the file
 * ends at the last whole record it holds, readable. Before, the first failed write threw out of receive() (the
 * event loop catches nothing: the daemon died), lost the frame being received or sent, and a retry after a short write
 * wrote the buffer again after its own first part, corrupting every later record.
 */
class PcapDiskFullTest
{
    private static final int FRAME = 1000;
    private static final int FRAMES = 1100; // more than the 1 MiB buffer holds at 1016 bytes a record

    @TempDir
    Path dir;

    private final FakeDevice inner = new FakeDevice(1500);
    private long now = 1_700_000_000_000_000_000L;
    private final EpochNanoClock clock = () -> now += 1_000;

    /** A file channel whose disk holds {@code budget} more bytes: one short write, then ENOSPC as the JDK reports it. */
    private static final class FullDiskChannel extends FileChannel
    {
        final FileChannel real;
        long budget;

        FullDiskChannel(final FileChannel real, final long budget)
        {
            this.real = real;
            this.budget = budget;
        }

        @Override
        public int write(final ByteBuffer src) throws IOException
        {
            if (budget <= 0)
            {
                throw new IOException("No space left on device");
            }
            final ByteBuffer slice = src.slice();
            slice.limit((int)Math.min(budget, src.remaining()));
            final int written = real.write(slice);
            src.position(src.position() + written);
            budget -= written;
            return written;
        }

        @Override
        public FileChannel truncate(final long size) throws IOException
        {
            real.truncate(size);
            return this;
        }

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

    private static byte[] frame(final int index)
    {
        final byte[] b = new byte[FRAME];
        Arrays.fill(b, (byte)0x5A);
        ByteBuffer.wrap(b).putInt(0, index);
        return b;
    }

    @Test
    void aFullDiskStopsTheCaptureButNoFrameAndLeavesAReadableFile() throws Exception
    {
        final Path file = dir.resolve("full.pcap");
        // Room for the header and 300 records and a half: the first buffer flush is short, then ENOSPC.
        final FullDiskChannel disk = new FullDiskChannel(
            FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE),
            PcapWritingDevice.FILE_HEADER_LENGTH + 300L * (PcapWritingDevice.RECORD_HEADER_LENGTH + FRAME) + 500);
        final List<Integer> received = new ArrayList<>();
        final FrameHandler handler = new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                received.add(buffer.getInt(offset, ByteOrder.BIG_ENDIAN));
            }
        };
        try (PcapWritingDevice device = new PcapWritingDevice(inner, file, disk, clock))
        {
            for (int i = 0; i < FRAMES; i++)
            {
                inner.toReceive.add(frame(i));
            }
            while (!inner.toReceive.isEmpty())
            {
                device.receive(handler, 32);
            }
            for (int i = 0; i < FRAMES; i++)
            {
                device.claim().putBytes(0, frame(FRAMES + i));
                device.commit(FRAME);
            }
            device.flushCapture(); // the daemon's periodic flush
            assertTrue(device.awaitWriter(10_000), "the writer thread did the flush");
            assertTrue(device.captureFailure().contains("No space left on device"), device.captureFailure());
            // The disk has room again: the capture stays stopped rather than write a torn stream.
            disk.budget = Long.MAX_VALUE;
            device.flushCapture();
            assertTrue(device.awaitWriter(10_000), "the writer thread did the flush");
            assertEquals(2 * FRAMES, records(file).size() + device.framesNotCaptured(), "every frame captured or counted out");
        }
        assertEquals(FRAMES, received.size(), "every received frame reached the stack");
        assertEquals(FRAMES, inner.committed.size(), "every transmitted frame reached the device");
        final List<Integer> captured = records(file);
        for (int i = 0; i < captured.size(); i++)
        {
            assertEquals(i, captured.get(i), "the file holds the first frames, in order, each once");
        }
        assertEquals(300, captured.size(), "the whole records that fit before the disk filled");
    }

    @Test
    void aCaptureThatWritesKeepsNoFailure() throws Exception
    {
        final Path file = dir.resolve("fine.pcap");
        try (PcapWritingDevice device = new PcapWritingDevice(inner, file, clock))
        {
            for (int i = 0; i < FRAMES; i++)
            {
                device.claim().putBytes(0, frame(i));
                device.commit(FRAME);
                if (i == FRAMES / 2)
                {
                    // The writer thread takes the first half before the second comes: all of them fit in its ring.
                    assertTrue(device.awaitWriter(10_000), "the writer thread took the first half");
                }
            }
            device.flushCapture();
            assertTrue(device.awaitWriter(10_000), "the writer thread did the flush");
            assertNull(device.captureFailure());
            assertEquals(0, device.framesNotCaptured());
        }
        assertEquals(FRAMES, records(file).size());
    }

    /** The first int of each record's frame; the file must end exactly at a record's end. */
    private static List<Integer> records(final Path file) throws IOException
    {
        final ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(PcapWritingDevice.MAGIC, b.getInt(0));
        final List<Integer> firsts = new ArrayList<>();
        int at = PcapWritingDevice.FILE_HEADER_LENGTH;
        while (at < b.limit())
        {
            assertTrue(at + PcapWritingDevice.RECORD_HEADER_LENGTH <= b.limit(), "a torn record header at " + at);
            final int captured = b.getInt(at + 8);
            assertEquals(captured, b.getInt(at + 12), "record at " + at);
            assertTrue(at + PcapWritingDevice.RECORD_HEADER_LENGTH + captured <= b.limit(), "a torn record at " + at);
            firsts.add(b.order(ByteOrder.BIG_ENDIAN).getInt(at + PcapWritingDevice.RECORD_HEADER_LENGTH));
            b.order(ByteOrder.LITTLE_ENDIAN);
            at += PcapWritingDevice.RECORD_HEADER_LENGTH + captured;
        }
        return firsts;
    }
}
