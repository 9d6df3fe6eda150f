package io.nicstack.nic.tap;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NicException;
import io.nicstack.nic.linux.Linux;
import jnr.ffi.LibraryLoader;
import jnr.ffi.annotations.Out;
import org.agrona.BufferUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static io.nicstack.nic.linux.Linux.LIBC;
import static io.nicstack.nic.linux.Linux.O_CLOEXEC;
import static io.nicstack.nic.linux.Linux.O_RDWR;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What needs no kernel interface: errors, the transmit queue over a regular file, which write(2) appends each
 * flushed frame to, and receive over one end of a datagram socket pair, whose read(2) takes one frame as a tap's does;
 * see {@link TapDeviceKernelTest} for the real thing.
 */
class TapDeviceTest
{
    /** socketpair(2), which the device itself never needs. */
    public interface SocketPair
    {
        int socketpair(int domain, int type, int protocol, @Out int[] fds);
    }

    private static final SocketPair SOCKETS = LibraryLoader.create(SocketPair.class).load("c");
    private static final int AF_UNIX = 1;
    private static final int FRAME_LENGTH = 60;
    private static final byte[] DESTINATION_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x01 };
    private static final byte[] SOURCE_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x02 };

    @TempDir
    Path dir;

    @Test
    void nameLongerThanFifteenCharactersIsRejected()
    {
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> TapDevice.open("nst-much-too-long0"));
        assertEquals("tap name 'nst-much-too-long0' is longer than 15 characters (IFNAMSIZ - 1)", ex.getMessage());
    }

    @Test
    void namesTheKernelWouldRefuseAreRejected()
    {
        for (final String name : new String[]{ "", ".", "..", "a/b", "a:1", "a b", "tap\u00e9" })
        {
            assertThrows(IllegalArgumentException.class, () -> TapDevice.validateName(name), name);
        }
        TapDevice.validateName("nsttap0-x.1_y");
    }

    /**
     * A template such as {@code nst%d} is expanded by TUNSETIFF into a name we would not know (the kernel writes it
     * back into the ifreq); every later use of the template would miss the interface, so it is refused up front.
     */
    @Test
    void aNameTemplateIsRejected()
    {
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> TapDevice.validateName("nst%d"));
        assertEquals("tap name 'nst%d' has a bad character at 3 (no '/', ':', '%', space or non-ASCII: "
            + "give the name itself, not a template)", ex.getMessage());
    }

    @Test
    void missingCloneDeviceSaysWhatToDo()
    {
        final NicException ex =
            assertThrows(NicException.class, () -> TapDevice.open("nsttap0", "/nonexistent/net/tun"));
        assertEquals("/nonexistent/net/tun is missing (load the tun module)", ex.getMessage());
    }

    @Test
    void errnoBecomesAOneLineMessage()
    {
        assertEquals("/dev/net/tun is missing (load the tun module)",
            TapDevice.openError("t0", TapDevice.TUN_PATH, Linux.ENXIO).getMessage());
        assertEquals("not permitted to open tap t0: need root or CAP_NET_ADMIN",
            TapDevice.openError("t0", TapDevice.TUN_PATH, Linux.EACCES).getMessage());
        assertEquals("not permitted to open tap t0: need root or CAP_NET_ADMIN",
            TapDevice.attachError("t0", Linux.EPERM).getMessage());
        assertEquals("ioctl(TUNSETIFF) for tap t0 failed: EMFILE (Too many open files)",
            TapDevice.attachError("t0", Linux.EMFILE).getMessage());
    }

    /** A non-blocking datagram socket pair: [0] for the device, which reads it, [1] for the test, which writes. */
    private static int[] datagramPair()
    {
        final int[] fds = new int[2];
        assertEquals(0, SOCKETS.socketpair(AF_UNIX, Linux.SOCK_DGRAM | Linux.O_NONBLOCK | Linux.SOCK_CLOEXEC, 0, fds),
            "socketpair: errno " + Linux.errno());
        return fds;
    }

    /** One datagram, as the kernel hands a tap's reader one frame (with its virtio-net header, if any). */
    private static void send(final int fd, final UnsafeBuffer bytes, final int length)
    {
        assertEquals(length, LIBC.write(fd, bytes.addressOffset(), length), "write: errno " + Linux.errno());
    }

    /**
     * Frames the device drops count toward the receive limit as frames delivered do: a flood of frames too long for
     * the MTU ends each call after at most {@code min(limit, BURST)} reads, so the event loop gets control back.
     */
    @Test
    void droppedFramesCountTowardTheReceiveLimit()
    {
        final int[] fds = datagramPair();
        final UnsafeBuffer frame = new UnsafeBuffer(BufferUtil.allocateDirectAligned(2048, 64));
        final int[] delivered = new int[1];
        final FrameHandler count = (buffer, offset, length) -> delivered[0]++;
        try (TapDevice tap = new TapDevice("pairtap0", fds[0], 1500, false, false))
        {
            final int tooLong = 40;
            for (int i = 0; i < tooLong; i++)
            {
                send(fds[1], frame, tap.maxFrameLength() + 1);
            }
            send(fds[1], frame, FRAME_LENGTH);

            assertEquals(0, tap.receive(count, NetDevice.BURST));
            assertEquals(NetDevice.BURST, tap.droppedFrames(), "one call reads at most BURST frames");
            assertEquals(0, tap.receive(count, 4));
            assertEquals(NetDevice.BURST + 4, tap.droppedFrames(), "and at most its limit");
            assertEquals(1, tap.receive(count, NetDevice.BURST), "the frame behind the flood");
            assertEquals(tooLong, tap.droppedFrames());
            assertEquals(1, delivered[0]);
        }
        finally
        {
            LIBC.close(fds[1]);
        }
    }

    /**
     * A TSO superframe the device cannot cut (here its segments would be longer than the MTU allows) counts as the
     * segments it held, as a superframe the kernel refuses on transmit counts its frames.
     */
    @Test
    void aRefusedSuperframeCountsTheSegmentsItHeld()
    {
        final int[] fds = datagramPair();
        final UnsafeBuffer datagram = new UnsafeBuffer(BufferUtil.allocateDirectAligned(8192, 64));
        try (TapDevice tap = new TapDevice("pairtap0", fds[0], 1500, false, true))
        {
            final int gsoSize = 2000;
            final int frameLength = Frames.tcp(new UnsafeBuffer(datagram, VirtioNetHeader.LENGTH, 8192 - 64),
                DESTINATION_MAC, SOURCE_MAC, 0xC6120001, 0xC6120002, 1, 40_000, 7, 1, 1, 0x10, 0xFFFF, new byte[0],
                new byte[5001], 0, 5001);
            new VirtioNetHeader().wrap(datagram, 0).gsoType(VirtioNetHeader.GSO_TCPV4).gsoSize(gsoSize)
                .headerLength(54);
            send(fds[1], datagram, VirtioNetHeader.LENGTH + frameLength);

            assertEquals(0, tap.receive((buffer, offset, length) -> fail("nothing to deliver"), NetDevice.BURST));
            assertEquals(0, tap.receiveSuperframes());
            assertEquals(3, tap.droppedFrames(), "5001 bytes of payload in segments of 2000");
        }
        finally
        {
            LIBC.close(fds[1]);
        }
    }

    /**
     * NetDevice: the claimed buffer is valid until commit or abort, so a flush in between sends only the frames
     * committed before it, and the commit after it queues exactly what was written into the claimed buffer.
     */
    @ParameterizedTest(name = "checksumOffload={0}")
    @ValueSource(booleans = { true, false })
    void flushBetweenClaimAndCommitSendsTheClaimedFrame(final boolean checksumOffload) throws Exception
    {
        final Path file = Files.createFile(dir.resolve("sent"));
        final int fd = LIBC.open(file.toString(), O_RDWR | O_CLOEXEC);
        assertTrue(fd >= 0, "open " + file);
        final byte[] a = Frames.localExperimental(DESTINATION_MAC, SOURCE_MAC, FRAME_LENGTH, (byte)0xAA);
        final byte[] b = Frames.localExperimental(DESTINATION_MAC, SOURCE_MAC, FRAME_LENGTH, (byte)0xBB);
        final byte[] c = Frames.localExperimental(DESTINATION_MAC, SOURCE_MAC, FRAME_LENGTH, (byte)0xCC);
        try (TapDevice tap = new TapDevice("filetap0", fd, 1500, false, checksumOffload))
        {
            tap.claim().putBytes(0, a);
            tap.commit(a.length);
            final MutableDirectBuffer claimed = tap.claim();
            claimed.putBytes(0, b);
            assertEquals(1, tap.flush(), "only the committed frame goes");
            assertSame(claimed, tap.claim(), "still the claimed buffer after the flush");
            assertEquals(0, tap.flush(), "nothing committed since");
            tap.commit(b.length);
            tap.claim().putBytes(0, c);
            tap.commit(c.length);
            assertEquals(2, tap.flush());
        }

        final int header = checksumOffload ? VirtioNetHeader.LENGTH : 0;
        final byte[] written = Files.readAllBytes(file);
        assertEquals(3 * (header + FRAME_LENGTH), written.length, "three frames written");
        final byte[][] expected = { a, b, c };
        for (int i = 0; i < expected.length; i++)
        {
            final int start = i * (header + FRAME_LENGTH);
            assertArrayEquals(new byte[header], Arrays.copyOfRange(written, start, start + header),
                "frame " + i + ": a virtio-net header without offloads");
            assertArrayEquals(expected[i], Arrays.copyOfRange(written, start + header, start + header + FRAME_LENGTH),
                "frame " + i + " as written into its claimed buffer");
        }
    }
}
