package io.nicstack.nic.pcap;

import io.nicstack.nic.FakeDevice;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.EpochNanoClock;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

class PcapWritingDeviceTest
{
    private static final long T0 = 1_700_000_000_123_456_789L;

    /** ARP request who-has 198.18.0.2 tell 198.18.0.1 (RFC 826), broadcast. */
    private static final byte[] ARP_REQUEST = {
        -1, -1, -1, -1, -1, -1, 0x02, 0, 0x5e, 0x12, 0, 0x01, 0x08, 0x06,
        0, 1, 0x08, 0, 6, 4, 0, 1,
        0x02, 0, 0x5e, 0x12, 0, 0x01, (byte)198, 18, 0, 1,
        0, 0, 0, 0, 0, 0, (byte)198, 18, 0, 2 };

    /** pcap-savefile(5) file header, little-endian. */
    private static final byte[] FILE_HEADER = {
        (byte)0xd4, (byte)0xc3, (byte)0xb2, (byte)0xa1, 2, 0, 4, 0, // magic, version 2.4
        0, 0, 0, 0, 0, 0, 0, 0,                                     // thiszone, sigfigs
        (byte)0xff, (byte)0xff, 0, 0, 1, 0, 0, 0 };                 // snaplen 65535, LINKTYPE_ETHERNET

    @TempDir
    Path dir;

    private final FakeDevice inner = new FakeDevice(1500);
    private long now = T0;
    private final EpochNanoClock clock = () -> now;

    @Test
    void writesHeaderAndOneRecordPerFrameInEachDirection() throws IOException
    {
        final Path file = dir.resolve("a.pcap");
        final byte[] tx = new byte[100];
        Arrays.fill(tx, (byte)0xA5);

        try (PcapWritingDevice device = new PcapWritingDevice(inner, file, clock))
        {
            inner.toReceive.add(ARP_REQUEST);
            assertEquals(1, device.receive((buffer, offset, length) -> {}, NetDevice.BURST));

            now += 2_000_001_000L;
            device.claim().putBytes(0, tx);
            device.commit(tx.length);
            device.flush();

            device.claim();
            device.abort();
        }

        final byte[] bytes = Files.readAllBytes(file);
        assertEquals(24 + 16 + ARP_REQUEST.length + 16 + tx.length, bytes.length);
        assertArrayEquals(FILE_HEADER, Arrays.copyOfRange(bytes, 0, 24));

        final ByteBuffer records = ByteBuffer.wrap(bytes, 24, bytes.length - 24).slice().order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(1_700_000_000, records.getInt(0));
        assertEquals(123_456, records.getInt(4));
        assertEquals(ARP_REQUEST.length, records.getInt(8));
        assertEquals(ARP_REQUEST.length, records.getInt(12));
        assertArrayEquals(ARP_REQUEST, Arrays.copyOfRange(bytes, 40, 40 + ARP_REQUEST.length));

        final int second = 16 + ARP_REQUEST.length;
        assertEquals(1_700_000_002, records.getInt(second));
        assertEquals(123_457, records.getInt(second + 4));
        assertEquals(100, records.getInt(second + 8));
        assertEquals(100, records.getInt(second + 12));
        assertArrayEquals(tx, Arrays.copyOfRange(bytes, 24 + second + 16, bytes.length));

        assertEquals(1, inner.committed.size());
        assertTrue(inner.closed, "close closes the inner device");
    }

    /**
     * A process killed before close (SIGKILL, a crash) leaves a file readers accept: the file header is written when
     * the device is made, records that were still buffered are lost.
     */
    @Test
    void fileHeaderIsInTheFileAsSoonAsTheDeviceIsMade() throws IOException, InterruptedException
    {
        final Path file = dir.resolve("open.pcap");
        try (PcapWritingDevice device = new PcapWritingDevice(inner, file, clock))
        {
            assertArrayEquals(FILE_HEADER, Files.readAllBytes(file), "the file header, before any frame");
            for (int i = 0; i < 10; i++)
            {
                device.claim().putInt(0, i);
                device.commit(60);
            }
            assertArrayEquals(FILE_HEADER, Files.readAllBytes(file), "records stay buffered until flushCapture");

            device.flushCapture();
            assertTrue(device.awaitWriter(10_000), "the writer thread wrote the records");
            assertEquals(24 + 10 * (16 + 60), Files.size(file), "the header is not written twice");
        }

        assertEquals(24 + 10 * (16 + 60), Files.size(file));
    }

    @Test
    void receiveFlagsPassThroughAndTransmitChecksumOffloadIsNotOffered()
    {
        inner.receiveFlags = FrameHandler.RX_L4_CHECKSUM_TRUSTED;
        final int[] flagsSeen = { -1 };
        final FrameHandler handler = new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                fail("the pcap writer delivered a frame without flags");
            }

            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
            {
                flagsSeen[0] = flags;
            }
        };

        try (PcapWritingDevice device = new PcapWritingDevice(inner, dir.resolve("flags.pcap"), clock))
        {
            inner.toReceive.add(ARP_REQUEST);
            assertEquals(1, device.receive(handler, NetDevice.BURST));
            assertEquals(FrameHandler.RX_L4_CHECKSUM_TRUSTED, flagsSeen[0]);

            assertFalse(device.transmitChecksumOffload(), "recorded frames must carry their complete checksums");
            device.claim().putBytes(0, ARP_REQUEST);
            assertThrows(IllegalArgumentException.class,
                () -> device.commit(ARP_REQUEST.length, NetDevice.TX_L4_CHECKSUM_PARTIAL));
            device.abort();
        }
        assertTrue(inner.committed.isEmpty());
    }

    /**
     * The writer writes a block as soon as it holds 1 MiB of records, not only when asked to. The frames come in
     * bursts that fit in the ring, each taken by the writer before the next, so none is left out however slow the
     * writer thread is.
     */
    @Test
    void writesWhenTheBufferFills() throws IOException, InterruptedException
    {
        final Path file = dir.resolve("big.pcap");
        final int frames = 2_000;
        final int burst = 500; // 765 KB
        try (PcapWritingDevice device = new PcapWritingDevice(inner, file, clock))
        {
            for (int i = 0; i < frames; i++)
            {
                device.claim().putInt(0, i);
                device.commit(1514);
                if (i % burst == burst - 1)
                {
                    assertTrue(device.awaitWriter(10_000), "the writer thread took the burst");
                }
            }
            assertTrue(Files.size(file) > 1_000_000, "a full buffer is written before close");
            assertEquals(0, device.framesNotCaptured());
        }

        assertEquals(24 + frames * (16 + 1514L), Files.size(file));
    }

    /** The file must also satisfy an independent reader. */
    @Test
    @Tag("tools")
    void scapyReadsTheFile() throws IOException, InterruptedException
    {
        final Path python = Path.of("/usr/bin/python3");
        if (run(python.toString(), "-c", "import scapy").exitCode != 0)
        {
            fail("python3-scapy missing: run scripts/install-deps.sh");
        }

        final Path file = dir.resolve("scapy.pcap");
        try (PcapWritingDevice device = new PcapWritingDevice(inner, file, clock))
        {
            inner.toReceive.add(ARP_REQUEST);
            device.receive((buffer, offset, length) -> {}, 1);
            final MutableDirectBuffer reply = device.claim();
            reply.putBytes(0, ARP_REQUEST);
            reply.putByte(21, (byte)2); // op: reply
            device.commit(ARP_REQUEST.length);
        }

        final Result result = run(python.toString(), "-c",
            "import sys\n" +
            "from scapy.all import rdpcap, ARP\n" +
            "for p in rdpcap(sys.argv[1]):\n" +
            "    print(p.time, p[ARP].op, p[ARP].psrc, p[ARP].pdst, p.src)\n",
            file.toString());

        assertEquals(0, result.exitCode, result.output);
        assertEquals(
            "1700000000.123456 1 198.18.0.1 198.18.0.2 02:00:5e:12:00:01\n" +
            "1700000000.123456 2 198.18.0.1 198.18.0.2 02:00:5e:12:00:01\n",
            result.output);
    }

    private record Result(int exitCode, String output)
    {
    }

    /**
     * Run a command for at most 60 s (killed after that); its output is read on another thread while it runs, so
     * the time limit holds even when the command never closes its output.
     */
    private static Result run(final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final java.io.ByteArrayOutputStream output = new java.io.ByteArrayOutputStream();
        final Thread reader = new Thread(() ->
        {
            try (java.io.InputStream in = process.getInputStream())
            {
                in.transferTo(output);
            }
            catch (final IOException ignored)
            {
                // Closed under us: the process was killed.
            }
        }, "command-output");
        reader.setDaemon(true);
        reader.start();
        if (!process.waitFor(60, TimeUnit.SECONDS))
        {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            fail("timed out after 60 s: " + String.join(" ", command) + "\n" + output.toString(StandardCharsets.UTF_8));
        }
        reader.join(5_000);
        return new Result(process.exitValue(), output.toString(StandardCharsets.UTF_8));
    }
}
