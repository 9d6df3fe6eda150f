package io.nicstack.nic.tap;

import io.nicstack.nic.Allocations;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NicException;
import io.nicstack.nic.linux.NetNamespace;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;

import static io.nicstack.nic.tap.KernelSupport.PYTHON;
import static io.nicstack.nic.tap.KernelSupport.addNamespace;
import static io.nicstack.nic.tap.KernelSupport.inNamespace;
import static io.nicstack.nic.tap.KernelSupport.run;
import static io.nicstack.nic.tap.KernelSupport.runQuietly;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A tap in a private network namespace, with the kernel as the peer (TESTING.md: own namespace, 198.18.0.0/15 only).
 *
 * <p>The kernel side is 198.18.0.1/24; this test plays 198.18.0.2 with a hand-built ARP reply and ICMP echo requests,
 * with and without checksum offload (ICMP is never offloaded, so both must behave alike; see
 * {@link TapChecksumOffloadKernelTest} for TCP and UDP).
 */
@Tag("kernel")
@Timeout(60)
class TapDeviceKernelTest
{
    private static final String TAP = "nsttap0";
    private static final byte[] OUR_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x02 };
    private static final String OUR_MAC_TEXT = "02:00:5e:12:00:02";
    private static final byte[] KERNEL_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x01 };
    private static final String KERNEL_MAC_TEXT = "02:00:5e:12:00:01";
    private static final int OUR_IP = 0xC6120002;    // 198.18.0.2
    private static final int KERNEL_IP = 0xC6120001; // 198.18.0.1
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(3);

    @ParameterizedTest(name = "checksumOffload={0}")
    @ValueSource(booleans = { true, false })
    void kernelResolvesUsByArpAndAnswersPings(final boolean checksumOffload) throws Exception
    {
        final String ns = addNamespace();
        try
        {
            try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, checksumOffload)))
            {
                assertTrue(tap.created());
                assertEquals(1500, tap.mtu());
                assertEquals("tap:" + TAP, tap.name());
                assertEquals(checksumOffload, tap.transmitChecksumOffload());

                run("ip", "-n", ns, "addr", "add", "198.18.0.1/24", "dev", TAP);
                run("ip", "-n", ns, "link", "set", TAP, "up");

                final Process ping = new ProcessBuilder(
                    "ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", "198.18.0.2")
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                final byte[] kernelMac;
                try
                {
                    kernelMac = awaitArpRequestFor(tap, OUR_IP);
                    transmitArpReply(tap, kernelMac);
                    awaitNeighbour(ns);
                }
                finally
                {
                    ping.destroy();
                    ping.waitFor();
                }

                final Pinger pinger = new Pinger(tap, kernelMac);
                pinger.ping(2_000);
                final long before = Allocations.currentThread();
                pinger.ping(10_000);
                final long allocated = Allocations.currentThread() - before;
                assertTrue(allocated < 4096, "allocated " + allocated + " bytes for 10,000 echo round trips");
                assertEquals(0, tap.droppedFrames());
            }

            assertFalse(runQuietly("ip", "-n", ns, "link", "show", TAP), "a tap we created goes away with its fd");
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    @Test
    void attachesToAnExistingTapAndReportsKernelRefusals() throws Exception
    {
        final String ns = addNamespace();
        try
        {
            run("ip", "-n", ns, "tuntap", "add", "dev", TAP, "mode", "tap");
            try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP)))
            {
                assertFalse(tap.created());
                assertTrue(tap.transmitChecksumOffload(), "checksum offload is the default");

                final NicException busy =
                    assertThrows(NicException.class, () -> inNamespace(ns, () -> TapDevice.open(TAP)));
                assertEquals("tap nsttap0 is busy: another fd is attached to it", busy.getMessage());
            }

            final NicException notTap =
                assertThrows(NicException.class, () -> inNamespace(ns, () -> TapDevice.open("lo")));
            assertEquals("interface lo exists and is not a single-queue tap", notTap.getMessage());

            final NicException noNs = assertThrows(NicException.class, () -> NetNamespace.enter(ns + "-missing"));
            assertTrue(noNs.getMessage().startsWith("network namespace " + ns + "-missing does not exist"));
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /**
     * An MTU asked for at open is the link's before the device sizes itself: the kernel, {@link TapDevice#mtu()} and
     * the frames delivered agree on it, so the kernel's 3042-byte echo requests (ping -s 3000, DF) arrive whole.
     */
    @Test
    void anMtuSetAtOpenIsTheLinksAndFramesUpToItAreDelivered() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, true, 9000)))
        {
            assertEquals(9000, tap.mtu());
            assertEquals(9014, tap.maxFrameLength());
            assertTrue(run("ip", "-n", ns, "link", "show", "dev", TAP).contains(" mtu 9000 "), "the kernel side's MTU");

            run("ip", "-n", ns, "link", "set", "dev", TAP, "address", KERNEL_MAC_TEXT);
            run("ip", "-n", ns, "addr", "add", "198.18.0.1/24", "dev", TAP);
            run("ip", "-n", ns, "link", "set", TAP, "up");
            run("ip", "-n", ns, "neigh", "replace", "198.18.0.2", "lladdr", OUR_MAC_TEXT, "dev", TAP, "nud", "permanent");
            // Nobody answers: ping gives up after its requests are in the tap's queue.
            KernelSupport.bounded(5, "ip", "netns", "exec", ns, "ping", "-n", "-M", "do", "-c", "3", "-i", "0.2", "-W",
                "1", "-s", "3000", "198.18.0.2");

            final int[] jumbo = new int[1];
            final FrameHandler handler = (buffer, offset, length) ->
            {
                if (length == 14 + 20 + 8 + 3000 && buffer.getByte(offset + 23) == 1 && buffer.getByte(offset + 34) == 8)
                {
                    jumbo[0]++;
                }
            };
            final long deadline = System.nanoTime() + DEADLINE_NANOS;
            for (int round = 0; round < 300 && jumbo[0] < 3 && System.nanoTime() < deadline; round++)
            {
                if (tap.awaitReadable(10_000_000))
                {
                    tap.receive(handler, NetDevice.BURST);
                }
            }
            assertEquals(3, jumbo[0], "echo requests of 3042 bytes delivered");
            assertEquals(0, tap.droppedFrames());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /** An MTU a tap cannot have is refused with what a tap takes, and a tap created for the attempt goes away. */
    @ParameterizedTest(name = "mtu {0}")
    @ValueSource(ints = { 67, 65536 })
    void anMtuTheKernelRefusesIsAnArgumentError(final int mtu) throws Exception
    {
        final String ns = addNamespace();
        try
        {
            final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> inNamespace(ns, () -> TapDevice.open(TAP, true, mtu)));
            assertEquals("tap " + TAP + " refuses MTU " + mtu + " (a tap takes 68..65535)", refused.getMessage());
            assertFalse(runQuietly("ip", "-n", ns, "link", "show", TAP), "the tap made for the attempt is gone");
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /**
     * NetDevice: the claimed buffer is valid until commit or abort, so a flush in between sends only the frame
     * committed before it, and the kernel then receives the claimed frame as written. No IP: the frames are of a local
     * experimental EtherType, read back by a packet socket in the namespace.
     */
    @ParameterizedTest(name = "checksumOffload={0}")
    @ValueSource(booleans = { true, false })
    void flushBetweenClaimAndCommitSendsTheClaimedFrame(final boolean checksumOffload) throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, checksumOffload)))
        {
            run("ip", "-n", ns, "link", "set", "dev", TAP, "address", KERNEL_MAC_TEXT);
            run("ip", "-n", ns, "link", "set", TAP, "up");
            final Process receiver = new ProcessBuilder("ip", "netns", "exec", ns, "timeout", "10", PYTHON, "-c",
                "import socket\n" +
                "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b5))\n" +
                "s.bind(('" + TAP + "', 0x88b5))\n" +
                "s.settimeout(5)\n" +
                "print('ready', flush=True)\n" +
                "for _ in range(2):\n" +
                "    try:\n" +
                "        print(s.recv(2048).hex(), flush=True)\n" +
                "    except socket.timeout:\n" +
                "        print('timeout', flush=True)\n" +
                "        break\n")
                .redirectErrorStream(true).start();
            try
            {
                final BufferedReader lines =
                    new BufferedReader(new InputStreamReader(receiver.getInputStream(), StandardCharsets.UTF_8));
                assertEquals("ready", lines.readLine());
                final byte[] a = Frames.localExperimental(KERNEL_MAC, OUR_MAC, 60, (byte)0xAA);
                final byte[] b = Frames.localExperimental(KERNEL_MAC, OUR_MAC, 60, (byte)0xBB);

                tap.claim().putBytes(0, a);
                tap.commit(a.length);
                tap.claim().putBytes(0, b);
                assertEquals(1, tap.flush(), "the committed frame, not the claimed one");
                tap.commit(b.length);
                assertEquals(1, tap.flush());

                assertEquals(HexFormat.of().formatHex(a), lines.readLine(), "first frame the kernel received");
                assertEquals(HexFormat.of().formatHex(b), lines.readLine(), "second frame the kernel received");
                assertTrue(receiver.waitFor(10, TimeUnit.SECONDS));
                assertEquals(0, tap.droppedFrames());
            }
            finally
            {
                receiver.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    private static byte[] awaitArpRequestFor(final TapDevice tap, final int targetIp)
    {
        final byte[] senderMac = new byte[6];
        final boolean[] seen = new boolean[1];
        final FrameHandler handler = (buffer, offset, length) ->
        {
            // RFC 826 request over Ethernet: htype 1, ptype 0x0800, op 1 at byte 20, target IP at byte 38.
            if (length >= 42 &&
                buffer.getShort(offset + 12, ByteOrder.BIG_ENDIAN) == 0x0806 &&
                buffer.getShort(offset + 20, ByteOrder.BIG_ENDIAN) == 1 &&
                buffer.getInt(offset + 38, ByteOrder.BIG_ENDIAN) == targetIp)
            {
                buffer.getBytes(offset + 22, senderMac);
                seen[0] = true;
            }
        };

        final long deadline = System.nanoTime() + DEADLINE_NANOS;
        for (int round = 0; round < 300 && !seen[0] && System.nanoTime() < deadline; round++)
        {
            if (tap.awaitReadable(10_000_000))
            {
                tap.receive(handler, NetDevice.BURST);
            }
        }

        assertTrue(seen[0], "no ARP request for 198.18.0.2 within 3 s (is iputils-ping installed?)");
        return senderMac;
    }

    private static void transmitArpReply(final TapDevice tap, final byte[] kernelMac)
    {
        final MutableDirectBuffer frame = tap.claim();
        frame.putBytes(0, kernelMac);
        frame.putBytes(6, OUR_MAC);
        frame.putShort(12, (short)0x0806, ByteOrder.BIG_ENDIAN);
        frame.putShort(14, (short)1, ByteOrder.BIG_ENDIAN);       // htype Ethernet
        frame.putShort(16, (short)0x0800, ByteOrder.BIG_ENDIAN);  // ptype IPv4
        frame.putByte(18, (byte)6);
        frame.putByte(19, (byte)4);
        frame.putShort(20, (short)2, ByteOrder.BIG_ENDIAN);       // op reply
        frame.putBytes(22, OUR_MAC);
        frame.putInt(28, OUR_IP, ByteOrder.BIG_ENDIAN);
        frame.putBytes(32, kernelMac);
        frame.putInt(38, KERNEL_IP, ByteOrder.BIG_ENDIAN);
        tap.commit(42);
        assertEquals(1, tap.flush());
    }

    private static void awaitNeighbour(final String ns) throws IOException, InterruptedException
    {
        String neighbours = "";
        final long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (System.nanoTime() < deadline)
        {
            neighbours = run("ip", "-n", ns, "neigh", "show", "198.18.0.2");
            if (neighbours.contains("lladdr " + OUR_MAC_TEXT))
            {
                return;
            }
            Thread.onSpinWait();
        }
        fail("kernel did not learn 198.18.0.2 at " + OUR_MAC_TEXT + ": '" + neighbours.trim() + "'");
    }

    /** Sends ICMP echo requests (RFC 792) one at a time and waits for each reply; allocates nothing per round trip. */
    private static final class Pinger implements FrameHandler
    {
        private static final int FRAME_LENGTH = 14 + 20 + 8 + 32;
        private static final short IDENTIFIER = 0x4e53;

        private final TapDevice tap;
        private final byte[] kernelMac;
        private int repliedSequence = -1;

        Pinger(final TapDevice tap, final byte[] kernelMac)
        {
            this.tap = tap;
            this.kernelMac = kernelMac;
        }

        void ping(final int count)
        {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            for (int sequence = 0; sequence < count; sequence++)
            {
                sendEchoRequest(sequence & 0xFFFF);
                while (repliedSequence != (sequence & 0xFFFF))
                {
                    if (System.nanoTime() > deadline)
                    {
                        fail("no echo reply for sequence " + sequence);
                    }
                    if (tap.awaitReadable(100_000_000))
                    {
                        tap.receive(this, NetDevice.BURST);
                    }
                }
            }
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            if (length >= FRAME_LENGTH &&
                buffer.getShort(offset + 12, ByteOrder.BIG_ENDIAN) == 0x0800 &&
                buffer.getByte(offset + 23) == 1 &&                                  // ICMP
                buffer.getByte(offset + 34) == 0 &&                                  // echo reply
                buffer.getShort(offset + 38, ByteOrder.BIG_ENDIAN) == IDENTIFIER)
            {
                repliedSequence = buffer.getShort(offset + 40, ByteOrder.BIG_ENDIAN) & 0xFFFF;
            }
        }

        private void sendEchoRequest(final int sequence)
        {
            final MutableDirectBuffer frame = tap.claim();
            frame.putBytes(0, kernelMac);
            frame.putBytes(6, OUR_MAC);
            frame.putShort(12, (short)0x0800, ByteOrder.BIG_ENDIAN);

            frame.putByte(14, (byte)0x45);
            frame.putByte(15, (byte)0);
            frame.putShort(16, (short)(FRAME_LENGTH - 14), ByteOrder.BIG_ENDIAN);
            frame.putShort(18, (short)sequence, ByteOrder.BIG_ENDIAN);
            frame.putShort(20, (short)0x4000, ByteOrder.BIG_ENDIAN); // DF
            frame.putByte(22, (byte)64);
            frame.putByte(23, (byte)1);
            frame.putShort(24, (short)0);
            frame.putInt(26, OUR_IP, ByteOrder.BIG_ENDIAN);
            frame.putInt(30, KERNEL_IP, ByteOrder.BIG_ENDIAN);
            frame.putShort(24, checksum(frame, 14, 20), ByteOrder.BIG_ENDIAN);

            frame.putByte(34, (byte)8);
            frame.putByte(35, (byte)0);
            frame.putShort(36, (short)0);
            frame.putShort(38, IDENTIFIER, ByteOrder.BIG_ENDIAN);
            frame.putShort(40, (short)sequence, ByteOrder.BIG_ENDIAN);
            frame.setMemory(42, FRAME_LENGTH - 42, (byte)0x5a);
            frame.putShort(36, checksum(frame, 34, FRAME_LENGTH - 34), ByteOrder.BIG_ENDIAN);

            tap.commit(FRAME_LENGTH);
            tap.flush();
        }

        /** RFC 1071 Internet checksum of an even number of bytes. */
        private static short checksum(final DirectBuffer buffer, final int offset, final int length)
        {
            int sum = 0;
            for (int i = 0; i < length; i += 2)
            {
                sum += buffer.getShort(offset + i, ByteOrder.BIG_ENDIAN) & 0xFFFF;
            }
            while ((sum >>> 16) != 0)
            {
                sum = (sum & 0xFFFF) + (sum >>> 16);
            }
            return (short)~sum;
        }
    }
}
