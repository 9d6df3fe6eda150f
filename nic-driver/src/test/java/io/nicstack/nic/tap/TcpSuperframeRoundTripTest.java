package io.nicstack.nic.tap;

import io.nicstack.nic.NetDevice;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.stream.LongStream;

import static io.nicstack.nic.linux.Linux.LIBC;
import static io.nicstack.nic.linux.Linux.O_CLOEXEC;
import static io.nicstack.nic.linux.Linux.O_RDWR;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The splitter and the joiner undo each other: a superframe as the kernel hands it over (random options, flags, DF or
 * not, gso_size and segment count), cut by {@link TcpSuperframeSplitter}, committed segment by segment to a
 * {@link TapDevice} with {@link NetDevice#TX_L4_CHECKSUM_PARTIAL} and flushed, goes out as one superframe
 * ({@link TcpSuperframeJoiner}) equal to the original byte for byte, behind the virtio-net header the kernel gives such a
 * superframe. The device writes to a regular file, which takes the writev(2) as a tap takes it. Adopted from the
 * nic-driver review's probe, which passed.
 */
class TcpSuperframeRoundTripTest
{
    private static final int SUPERFRAMES = 200;
    private static final int ETHERNET = 14;
    private static final int V = VirtioNetHeader.LENGTH;

    @TempDir
    Path dir;

    /** Fixed seeds, and one new each run ({@code -Dnicstack.fuzz.seed=N} replays it); the seed names each run. */
    static LongStream seeds()
    {
        return LongStream.of(1, 2, 3, Long.getLong("nicstack.fuzz.seed", System.nanoTime()));
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void splitThenJoinGivesBackTheSuperframe(final long seed) throws Exception
    {
        final SplittableRandom r = new SplittableRandom(seed);
        for (int run = 0; run < SUPERFRAMES; run++)
        {
            final int mtu = r.nextBoolean() ? 1500 : 9000;
            final int ipOptions = r.nextInt(4) == 0 ? 4 * r.nextInt(11) : 0;
            final int tcpOptions = 4 * r.nextInt(11);
            final int headers = ETHERNET + 20 + ipOptions + 20 + tcpOptions;
            final int gso = r.nextBoolean() ? mtu + ETHERNET - headers : 1 + r.nextInt(mtu + ETHERNET - headers);
            // At most a burst's segments within 64 KiB, as the joiner joins.
            final int maxSegments = Math.min(NetDevice.BURST, (65_535 - (headers - ETHERNET)) / gso);
            if (maxSegments < 2)
            {
                continue;
            }
            final int segments = 2 + r.nextInt(maxSegments - 1);
            final int payload = (segments - 1) * gso + 1 + r.nextInt(gso);
            final int tcpFlags = 0x10 | (r.nextBoolean() ? 0x08 : 0) | (r.nextInt(4) == 0 ? 0x01 : 0)
                | (r.nextInt(4) == 0 ? 0x40 : 0); // ACK, PSH, FIN, ECE
            final UnsafeBuffer superframe = superframe(r, ipOptions, tcpOptions, payload, tcpFlags);
            final byte[] original = superframe.byteArray().clone(); // the splitter cuts in place
            final String where = "seed " + seed + " run " + run + " segments " + segments + " gso " + gso
                + " headers " + headers;

            final Path file = Files.createFile(dir.resolve("superframe" + run));
            final int fd = LIBC.open(file.toString(), O_RDWR | O_CLOEXEC);
            assertTrue(fd >= 0, where);
            final TcpSuperframeSplitter splitter = new TcpSuperframeSplitter();
            assertTrue(splitter.start(superframe, V, superframe.capacity() - V, gso, mtu + ETHERNET), where);
            try (TapDevice tap = new TapDevice("filetap0", fd, mtu, false, true))
            {
                while (splitter.hasNext())
                {
                    final int offset = splitter.next();
                    tap.claim().putBytes(0, superframe, offset, splitter.length());
                    tap.commit(splitter.length(), NetDevice.TX_L4_CHECKSUM_PARTIAL);
                }
                assertEquals(segments, tap.flush(), where);
                assertEquals(1, tap.transmitSuperframes(), where);
            }

            final UnsafeBuffer written = new UnsafeBuffer(Files.readAllBytes(file));
            assertEquals(original.length, written.capacity(), where + ": length");
            final VirtioNetHeader header = new VirtioNetHeader().wrap(written, 0);
            assertEquals(VirtioNetHeader.F_NEEDS_CSUM, header.flags(), where);
            assertEquals(VirtioNetHeader.GSO_TCPV4, header.gsoType(), where);
            assertEquals(gso, header.gsoSize(), where);
            assertEquals(headers, header.headerLength(), where);
            assertEquals(ETHERNET + 20 + ipOptions, header.checksumStart(), where);
            assertEquals(16, header.checksumOffset(), where);
            for (int i = V; i < original.length; i++)
            {
                if (original[i] != written.getByte(i))
                {
                    fail(where + ": byte " + (i - V) + " " + original[i] + " came back as " + written.getByte(i));
                }
            }
        }
    }

    /**
     * A superframe as the kernel hands it over, after room for the virtio-net header: valid IPv4 checksum, DF or not,
     * the pseudo-header sum in the TCP checksum.
     */
    private static UnsafeBuffer superframe(final SplittableRandom r, final int ipOptions, final int tcpOptions,
        final int payload, final int tcpFlags)
    {
        final int ipLength = 20 + ipOptions;
        final int total = ipLength + 20 + tcpOptions + payload;
        final UnsafeBuffer b = new UnsafeBuffer(new byte[V + ETHERNET + total]);
        for (int i = V; i < b.capacity(); i++)
        {
            b.putByte(i, (byte)r.nextInt(256));
        }
        final int ip = V + ETHERNET;
        b.putShort(V + 12, (short)0x0800, ByteOrder.BIG_ENDIAN);
        b.putByte(ip, (byte)(0x40 | ipLength / 4));
        b.putShort(ip + 2, (short)total, ByteOrder.BIG_ENDIAN);
        b.putShort(ip + 6, (short)(r.nextBoolean() ? 0x4000 : 0), ByteOrder.BIG_ENDIAN);
        b.putByte(ip + 9, (byte)6);
        b.putShort(ip + 10, (short)0);
        b.putShort(ip + 10, (short)(~Frames.fold(Frames.sum(b, ip, ipLength)) & 0xFFFF), ByteOrder.BIG_ENDIAN);
        final int tcp = ip + ipLength;
        b.putByte(tcp + 12, (byte)((20 + tcpOptions) / 4 << 4));
        b.putByte(tcp + 13, (byte)tcpFlags);
        b.putShort(tcp + 16, (short)Frames.pseudoHeaderSum(b, V), ByteOrder.BIG_ENDIAN);
        return b;
    }
}
