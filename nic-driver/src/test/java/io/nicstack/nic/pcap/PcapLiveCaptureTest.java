package io.nicstack.nic.pcap;

import io.nicstack.nic.FakeDevice;
import org.agrona.concurrent.EpochNanoClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A live capture ({@code --pcap} on a named pipe read by {@code tcpdump -r -} or {@code wireshark -k -i}) whose reader
 * stops reading holds up nothing: commits, the daemon's periodic flush and close return at once, the frames the pipe
 * cannot take are left out and counted ({@link PcapWritingDevice#framesNotCaptured()}), the capture goes on, and the
 * reader that reads again gets a valid pcap stream: the file header and whole records, in order, never a torn one.
 * Before, the writer blocked in write(2) on the full pipe: commit() (the event loop's data path), the periodic flush
 * and close() hung for as long as the reader stalled, stopping all traffic and even the daemon's shutdown.
 *
 * <p>Each blocking step runs on another thread and is given 10 s, so a regression fails instead of hanging the build.
 */
class PcapLiveCaptureTest
{
    /** More than the 1 MiB buffer and the 64 KiB pipe hold together, at 1530 bytes a record. */
    private static final int FRAMES = 2_000;
    private static final long BOUND_SECONDS = 10;

    @TempDir
    Path dir;

    private long now = 1_700_000_000_000_000_000L;
    private final EpochNanoClock clock = () -> now += 1_000;

    /** The device writing to a named pipe, and the reader's end of it. */
    private record Live(PcapWritingDevice device, FakeDevice inner, FileInputStream reader)
    {
    }

    /** Make a named pipe, open its reader (which waits for the writer) and the device on it (which waits for a reader). */
    private Live open(final int mtu) throws Exception
    {
        final Path fifo = dir.resolve("live.pcap");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        final CompletableFuture<FileInputStream> reader = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                return new FileInputStream(fifo.toFile());
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        final FakeDevice inner = new FakeDevice(mtu);
        final PcapWritingDevice device = new PcapWritingDevice(inner, fifo, clock);
        return new Live(device, inner, reader.get(BOUND_SECONDS, TimeUnit.SECONDS));
    }

    /**
     * Run {@code step} on another thread and wait for it at most {@link #BOUND_SECONDS}: if it blocked, fail, after
     * unblocking it by draining the pipe to its end (closing the device) so the test leaves no thread behind.
     */
    private static void withinBound(final Live live, final String what, final Runnable step) throws Exception
    {
        final CompletableFuture<Void> done = CompletableFuture.runAsync(step);
        try
        {
            done.get(BOUND_SECONDS, TimeUnit.SECONDS);
        }
        catch (final TimeoutException ex)
        {
            final Thread drainer = new Thread(() ->
            {
                try
                {
                    live.reader.transferTo(java.io.OutputStream.nullOutputStream());
                }
                catch (final IOException ignored)
                {
                    // Closed: nothing left to unblock.
                }
            }, "pipe-drainer");
            drainer.setDaemon(true);
            drainer.start();
            done.get(60, TimeUnit.SECONDS);
            live.device.close();
            drainer.join(10_000);
            live.reader.close();
            fail(what + " blocked for " + BOUND_SECONDS + " s writing to a named pipe whose reader does not read");
        }
    }

    /** Commit {@code count} frames of {@code length} bytes numbered from {@code first}, flushing the capture every 100. */
    private static void commit(final PcapWritingDevice device, final int first, final int count, final int length)
    {
        for (int i = first; i < first + count; i++)
        {
            device.claim().putInt(0, i, ByteOrder.BIG_ENDIAN);
            device.commit(length);
            if (i % 100 == 99)
            {
                device.flushCapture(); // the daemon's periodic flush
            }
        }
    }

    /**
     * Read what the pipe holds, flushing the capture into it, until a flush into the emptied pipe puts nothing in it:
     * every buffered record is then in the stream. Never waits: it reads only what {@code available()} (FIONREAD) says.
     */
    private static void readUntilCaughtUp(final Live live, final ByteArrayOutputStream stream) throws IOException
    {
        for (int round = 0; round < 10_000; round++)
        {
            live.device.flushCapture();
            final int available = live.reader.available();
            if (available == 0)
            {
                return;
            }
            stream.write(read(live.reader, available));
        }
        fail("the capture's backlog never drained into a pipe that was read");
    }

    @Test
    void aStalledReaderHoldsUpNoFrameAndGetsWholeRecordsWhenItReadsAgain() throws Exception
    {
        final Live live = open(1500);
        final ByteArrayOutputStream stream = new ByteArrayOutputStream();
        try (FileInputStream reader = live.reader)
        {
            withinBound(live, "commit()", () -> commit(live.device, 0, FRAMES, 1514));
            assertEquals(FRAMES, live.inner.committed.size(), "every frame reached the device");
            assertTrue(live.device.framesNotCaptured() > 0, "the frames the pipe could not take are counted");
            assertNull(live.device.captureFailure(), "a reader that falls behind does not stop the capture");

            // The reader reads again: the capture goes on, the frames after the stall are in the stream.
            readUntilCaughtUp(live, stream);
            commit(live.device, FRAMES, 10, 1514);
            readUntilCaughtUp(live, stream);
            withinBound(live, "close()", live.device::close);
            stream.write(read(reader, Integer.MAX_VALUE));
        }

        final List<Integer> captured = records(stream.toByteArray(), 1514);
        assertEquals(FRAMES + 10, captured.size() + live.device.framesNotCaptured(), "every frame captured or counted out");
        assertEquals(0, captured.get(0), "the first frames, before the pipe filled");
        assertEquals(List.of(FRAMES, FRAMES + 1, FRAMES + 2, FRAMES + 3, FRAMES + 4, FRAMES + 5, FRAMES + 6, FRAMES + 7,
            FRAMES + 8, FRAMES + 9), captured.subList(captured.size() - 10, captured.size()), "the frames after the stall");
    }

    @Test
    void closeWithAStalledReaderReturnsAndTheStreamEndsAtARecordsEnd() throws Exception
    {
        final Live live = open(1500);
        final byte[] stream;
        try (FileInputStream reader = live.reader)
        {
            withinBound(live, "commit()", () -> commit(live.device, 0, FRAMES, 1514));
            withinBound(live, "close()", live.device::close);
            stream = read(reader, Integer.MAX_VALUE);
        }
        assertTrue(live.inner.closed, "close closes the inner device");
        final List<Integer> captured = records(stream, 1514);
        assertEquals(FRAMES, captured.size() + live.device.framesNotCaptured(), "every frame captured or counted out");
    }

    /**
     * Records longer than PIPE_BUF (4096 bytes, the most a pipe is sure to take whole or not at all) go only into an
     * empty pipe, the one state in which it is sure to take them whole: a reader that stops for good in the middle of
     * the stream still gets no torn record at its end. (Written as they fit, the pipe would take the first part of one.)
     */
    @Test
    void jumboRecordsAreNeverTornEither() throws Exception
    {
        final Live live = open(9000);
        final ByteArrayOutputStream stream = new ByteArrayOutputStream();
        try (FileInputStream reader = live.reader)
        {
            // The reader has not read the file header yet: the pipe is never empty, no record goes in.
            withinBound(live, "commit()", () -> commit(live.device, 0, 300, 9014));
            stream.write(read(reader, PcapWritingDevice.FILE_HEADER_LENGTH));
            live.device.flushCapture(); // into the empty pipe: as many whole records as it holds
            // A read that frees a page or two: the pipe has room for part of a record, and is not empty.
            stream.write(read(reader, 10_000));
            live.device.flushCapture();
            withinBound(live, "close()", live.device::close);
            stream.write(read(reader, Integer.MAX_VALUE));
        }
        final List<Integer> captured = records(stream.toByteArray(), 9014);
        assertTrue(captured.size() > 0, "the records an empty pipe took");
        assertEquals(300, captured.size() + live.device.framesNotCaptured(), "every frame captured or counted out");
    }

    /**
     * A reader that goes away (EPIPE, "Broken pipe"; the JVM ignores SIGPIPE) stops the capture, as a full disk does, and no frame: the
     * rest are counted as not captured.
     */
    @Test
    void aReaderThatGoesAwayStopsTheCaptureNotTheTraffic() throws Exception
    {
        final Live live = open(1500);
        live.reader.close();
        withinBound(live, "commit()", () -> commit(live.device, 0, 1_000, 1514));
        assertTrue(live.device.captureFailure().contains("EPIPE (Broken pipe)"), live.device.captureFailure());
        assertEquals(1_000, live.inner.committed.size(), "every frame reached the device");
        assertEquals(1_000, live.device.framesNotCaptured());
        live.device.close();
    }

    /**
     * Read {@code length} bytes from the pipe, or up to its end. (FileInputStream's readNBytes and readAllBytes ask
     * for the file's position first, which a pipe has not: ESPIPE.)
     */
    private static byte[] read(final InputStream in, final int length) throws IOException
    {
        final ByteArrayOutputStream read = new ByteArrayOutputStream();
        final byte[] chunk = new byte[1 << 16];
        while (read.size() < length)
        {
            final int n = in.read(chunk, 0, Math.min(chunk.length, length - read.size()));
            if (n < 0)
            {
                break;
            }
            read.write(chunk, 0, n);
        }
        return read.toByteArray();
    }

    /** The frame numbers of a pcap stream's records, checking the header, each record whole, and their order. */
    private static List<Integer> records(final byte[] stream, final int frameLength)
    {
        final ByteBuffer b = ByteBuffer.wrap(stream).order(ByteOrder.LITTLE_ENDIAN);
        assertTrue(stream.length >= PcapWritingDevice.FILE_HEADER_LENGTH, "the file header");
        assertEquals(PcapWritingDevice.MAGIC, b.getInt(0));
        assertEquals(PcapWritingDevice.LINKTYPE_ETHERNET, b.getInt(20));
        final List<Integer> numbers = new ArrayList<>();
        int at = PcapWritingDevice.FILE_HEADER_LENGTH;
        while (at < stream.length)
        {
            assertTrue(at + PcapWritingDevice.RECORD_HEADER_LENGTH <= stream.length, "a torn record header at " + at);
            assertEquals(frameLength, b.getInt(at + 8), "captured length of the record at " + at);
            assertEquals(frameLength, b.getInt(at + 12), "original length of the record at " + at);
            assertTrue(at + PcapWritingDevice.RECORD_HEADER_LENGTH + frameLength <= stream.length, "a torn record at " + at);
            final int number = b.order(ByteOrder.BIG_ENDIAN).getInt(at + PcapWritingDevice.RECORD_HEADER_LENGTH);
            b.order(ByteOrder.LITTLE_ENDIAN);
            assertTrue(numbers.isEmpty() || number > numbers.get(numbers.size() - 1), "records in order, each once");
            numbers.add(number);
            at += PcapWritingDevice.RECORD_HEADER_LENGTH + frameLength;
        }
        return numbers;
    }
}
