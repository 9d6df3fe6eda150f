package io.nicstack.nic.tap;

import io.nicstack.nic.NicException;
import io.nicstack.nic.linux.Linux;
import org.agrona.MutableDirectBuffer;
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

/**
 * What needs no kernel interface: errors, and the transmit queue over a regular file, which write(2) appends each
 * flushed frame to; see {@link TapDeviceKernelTest} for the real thing.
 */
class TapDeviceTest
{
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
