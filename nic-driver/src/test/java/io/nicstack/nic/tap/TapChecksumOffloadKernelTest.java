package io.nicstack.nic.tap;

import io.nicstack.nic.Allocations;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nicstack.nic.tap.KernelSupport.PYTHON;
import static io.nicstack.nic.tap.KernelSupport.addNamespace;
import static io.nicstack.nic.tap.KernelSupport.inNamespace;
import static io.nicstack.nic.tap.KernelSupport.run;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Checksum offload through virtio-net headers against the kernel (tuntap.rst, drivers/net/tun.c), in a private
 * namespace with addresses from 198.18.0.0/15 only (TESTING.md).
 *
 * <p>Link 1: the tap {@value #TAP}, kernel 198.18.0.1 at {@value #KERNEL_MAC_TEXT}, this test plays 198.18.0.2 at
 * {@value #OUR_MAC_TEXT} (a permanent neighbour entry, so the kernel never asks). Link 2, for forwarding: the tap
 * {@value #TAP2} without offload, kernel 198.19.0.1, and a neighbour 198.19.0.2 that this test reads frames for.
 *
 * <p>The kernel trusts a partial checksum on local delivery ({@code skb_csum_unnecessary} is true for
 * {@code CHECKSUM_PARTIAL}), so a local socket accepting such a datagram shows the header was understood, not that the
 * checksum was completed. Completion is shown by forwarding: the kernel computes the checksum where our
 * {@code csum_start}/{@code csum_offset} say when the datagram leaves through a device without offload.
 */
@Tag("kernel")
@Timeout(60)
class TapChecksumOffloadKernelTest
{
    private static final String TAP = "nsttap0";
    private static final String TAP2 = "nsttap1";
    private static final byte[] OUR_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x02 };
    private static final String OUR_MAC_TEXT = "02:00:5e:12:00:02";
    private static final byte[] KERNEL_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x01 };
    private static final String KERNEL_MAC_TEXT = "02:00:5e:12:00:01";
    private static final String KERNEL2_MAC_TEXT = "02:00:5e:13:00:01";
    private static final String NEIGHBOUR2_MAC_TEXT = "02:00:5e:13:00:02";
    private static final int OUR_IP = 0xC6120002;       // 198.18.0.2
    private static final int KERNEL_IP = 0xC6120001;    // 198.18.0.1
    private static final int NEIGHBOUR2_IP = 0xC6130002; // 198.19.0.2

    private static final int KERNEL_UDP_SOURCE_PORT = 40100;
    private static final int UDP_PORT = 40000;
    private static final int TCP_PORT = 40001;
    private static final int FORWARD_PORT = 40002;
    private static final int LOCAL_PORT = 40003;
    private static final int SEGMENTS = 20;
    private static final int SEGMENT = 1448; // a full frame with timestamps: 14 + 20 + 32 + 1448 = 1514
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(3);

    @Test
    void kernelSegmentsArriveWithPartialChecksumsAndTheTrustedFlag() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, true)))
        {
            assertTrue(tap.transmitChecksumOffload());
            setUpLink(ns);

            final Captured udp = kernelUdpDatagram(ns, tap);
            assertEquals(FrameHandler.RX_L4_CHECKSUM_TRUSTED, udp.flags);
            assertPartialChecksum(udp, VirtioNetHeader.UDP_CHECKSUM_OFFSET);

            final Captured syn = kernelTcpSyn(ns, tap);
            assertEquals(FrameHandler.RX_L4_CHECKSUM_TRUSTED, syn.flags);
            assertPartialChecksum(syn, VirtioNetHeader.TCP_CHECKSUM_OFFSET);

            assertEquals(0, tap.droppedFrames());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    @Test
    void withoutOffloadTheSameSegmentsArriveWithCompleteChecksumsAndNoFlags() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, false)))
        {
            assertFalse(tap.transmitChecksumOffload());
            setUpLink(ns);

            for (final Captured frame : List.of(kernelUdpDatagram(ns, tap), kernelTcpSyn(ns, tap)))
            {
                assertEquals(0, frame.flags);
                assertEquals(-1, frame.vnetFlags, "no virtio-net header without offload");
                assertTrue(Frames.checksumValid(frame.frame, 0), "complete checksum");
                assertEquals(Frames.fullChecksum(frame.frame, 0), Frames.checksumField(frame.frame, 0));
            }

            final MutableDirectBuffer out = tap.claim();
            final int length = Frames.udp(out, KERNEL_MAC, OUR_MAC, OUR_IP, KERNEL_IP, UDP_PORT, LOCAL_PORT, new byte[4]);
            final IllegalArgumentException ex = assertThrows(
                IllegalArgumentException.class, () -> tap.commit(length, NetDevice.TX_L4_CHECKSUM_PARTIAL));
            assertEquals("tap:nsttap0 does not offload checksums (flags 1)", ex.getMessage());
            tap.abort();
            assertEquals(0, tap.flush());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    @Test
    void kernelCompletesThePartialChecksumOfAForwardedDatagramAndOnlyWhenAsked() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, true));
            TapDevice tap2 = inNamespace(ns, () -> TapDevice.open(TAP2, false)))
        {
            setUpForwarding(ns);

            // Asked: NEEDS_CSUM with the pseudo-header sum in the field; the frame leaves link 2 complete.
            final Forwarder forwarder = new Forwarder(tap, tap2);
            final Captured completed = forwarder.forward(1, NetDevice.TX_L4_CHECKSUM_PARTIAL);
            assertEquals(0, completed.flags);
            assertEquals(63, completed.frame.getByte(14 + 8), "forwarded: TTL 64 - 1");
            assertTrue(Frames.checksumValid(completed.frame, 0), "the kernel completed the checksum");
            assertEquals(Frames.fullChecksum(completed.frame, 0), Frames.checksumField(completed.frame, 0));

            // Not asked: the same bytes with a zero header cross the router untouched, with the wrong checksum.
            final Captured untouched = forwarder.forward(2, 0);
            assertFalse(Frames.checksumValid(untouched.frame, 0), "a router does not fix checksums");
            assertEquals(Frames.pseudoHeaderSum(untouched.frame, 0), Frames.checksumField(untouched.frame, 0));

            // Nothing allocated per frame on either side, with every frame checked.
            forwarder.forwardCounted(1_000);
            final long before = Allocations.currentThread();
            forwarder.forwardCounted(5_000);
            final long allocated = Allocations.currentThread() - before;
            assertTrue(allocated < 4096, "allocated " + allocated + " bytes for 5,000 offloaded frames forwarded back");
            assertEquals(0, forwarder.incomplete, "frames that left link 2 without a complete checksum");
            assertEquals(0, tap.droppedFrames());
            assertEquals(0, tap2.droppedFrames());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /**
     * A burst of one flow's TCP segments leaves as one superframe (one writev(2)), and the kernel, forwarding it out of
     * a device without segmentation offload, cuts it back with {@code tcp_gso_segment} into the very frames the burst
     * held: the same IPv4 and TCP headers (TTL one less), the same payload in the same places, checksums complete. The
     * pure ACK at the end of the burst cannot be joined and goes out alone. Joining allocates nothing.
     */
    @Test
    void kernelCutsOurSuperframeBackIntoTheSegmentsItWasJoinedFrom() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, true));
            TapDevice tap2 = inNamespace(ns, () -> TapDevice.open(TAP2, false)))
        {
            setUpForwarding(ns);
            final SegmentBurst burst = new SegmentBurst(tap, tap2);
            final byte[][] sent = burst.send(0);
            final List<byte[]> forwarded = burst.forward(true);

            assertEquals(1, tap.transmitSuperframes());
            assertEquals(SEGMENTS, tap.transmitSuperframeSegments());
            assertForwardedAsSent(sent, forwarded);

            for (int round = 1; round <= 200; round++)
            {
                burst.send(round);
                burst.forward(false);
            }
            final long before = Allocations.currentThread();
            for (int round = 201; round <= 1_200; round++)
            {
                burst.send(round);
                burst.forward(false);
            }
            final long allocated = Allocations.currentThread() - before;
            assertTrue(allocated < 4096, "allocated " + allocated + " bytes for 1,000 superframes sent and forwarded back");
            assertEquals(1_201, tap.transmitSuperframes());
            assertEquals(0, tap.droppedFrames());
            assertEquals(0, tap2.droppedFrames());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /**
     * A superframe the kernel refuses (its header names a GSO type the kernel does not know, so writev(2) fails with
     * EINVAL) is not lost: its frames go one by one as they were committed, the kernel forwards every one of them, and
     * the device joins no more superframes.
     */
    @Test
    void aSuperframeTheKernelRefusesIsSentFrameByFrameAndJoiningStops() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, true));
            TapDevice tap2 = inNamespace(ns, () -> TapDevice.open(TAP2, false)))
        {
            setUpForwarding(ns);
            tap.superframeGsoType = 0x10;
            final SegmentBurst burst = new SegmentBurst(tap, tap2);
            final byte[][] sent = burst.send(0);
            assertForwardedAsSent(sent, burst.forward(true));
            assertEquals(1, tap.transmitSuperframesRefused());
            assertEquals(0, tap.transmitSuperframes());

            burst.send(1);
            burst.forward(false);
            assertEquals(1, tap.transmitSuperframesRefused(), "no second superframe tried");
            assertEquals(0, tap.transmitSuperframes());
            assertEquals(0, tap.droppedFrames());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /** Each frame of {@code sent} came out of link 2: past the MACs all as sent but TTL (one less) and checksums. */
    private static void assertForwardedAsSent(final byte[][] sent, final List<byte[]> forwarded)
    {
        assertEquals(sent.length, forwarded.size(), "segments forwarded out of " + TAP2);
        for (int i = 0; i < sent.length; i++)
        {
            final UnsafeBuffer out = new UnsafeBuffer(forwarded.get(i));
            assertTrue(Frames.checksumValid(out, 0), "segment " + i + ": TCP checksum completed");
            assertEquals(0xFFFF, Frames.fold(Frames.sum(out, 14, 20)), "segment " + i + ": IPv4 header checksum");
            assertEquals(63, out.getByte(14 + 8), "segment " + i + ": forwarded, TTL 64 - 1");
            final byte[] expected = Arrays.copyOfRange(sent[i], 12, sent[i].length);
            final byte[] actual = Arrays.copyOfRange(forwarded.get(i), 12, forwarded.get(i).length);
            for (final int field : new int[] { 14 + 8, 14 + 10, 14 + 11, 14 + 20 + 16, 14 + 20 + 17 })
            {
                expected[field - 12] = 0;
                actual[field - 12] = 0;
            }
            assertArrayEquals(expected, actual, "segment " + i + ": past the MACs, all but TTL and checksums as sent");
        }
    }

    @Test
    void localSocketGetsPartialAndCompleteChecksumsButNotABadOne() throws Exception
    {
        final String ns = addNamespace();
        try (TapDevice tap = inNamespace(ns, () -> TapDevice.open(TAP, true)))
        {
            setUpLink(ns);
            final Process receiver = new ProcessBuilder("ip", "netns", "exec", ns, "timeout", "10", PYTHON, "-c",
                "import socket\n" +
                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n" +
                "s.bind(('198.18.0.1', " + LOCAL_PORT + "))\n" +
                "s.settimeout(5)\n" +
                "print('ready', flush=True)\n" +
                "for _ in range(2):\n" +
                "    try:\n" +
                "        print(s.recv(2048).decode(), flush=True)\n" +
                "    except socket.timeout:\n" +
                "        print('timeout', flush=True)\n" +
                "        break\n")
                .redirectErrorStream(true).start();
            try
            {
                final BufferedReader lines =
                    new BufferedReader(new InputStreamReader(receiver.getInputStream(), StandardCharsets.UTF_8));
                assertEquals("ready", lines.readLine());
                final long csumErrorsBefore = udpInCsumErrors(ns);

                sendToKernel(tap, "bad", 0);
                sendToKernel(tap, "partial", NetDevice.TX_L4_CHECKSUM_PARTIAL);
                sendToKernel(tap, "complete", 0);
                assertEquals(3, tap.flush());

                assertEquals("partial", lines.readLine());
                assertEquals("complete", lines.readLine(), "the bad datagram is dropped, the next one delivered");
                assertTrue(receiver.waitFor(10, TimeUnit.SECONDS));
                assertEquals(0, receiver.exitValue());
                assertEquals(1, udpInCsumErrors(ns) - csumErrorsBefore, "Udp InCsumErrors counts the bad datagram");
            }
            finally
            {
                receiver.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }

            // Misuse of the flag is a stack bug, reported before anything is queued; the frame stays claimed.
            final MutableDirectBuffer arp = tap.claim();
            arp.putShort(12, (short)0x0806, ByteOrder.BIG_ENDIAN);
            final IllegalArgumentException notIp =
                assertThrows(IllegalArgumentException.class, () -> tap.commit(42, NetDevice.TX_L4_CHECKSUM_PARTIAL));
            assertEquals("cannot offload the checksum: EtherType 0x806 is not IPv4", notIp.getMessage());
            final IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> tap.commit(42, 2));
            assertEquals("unknown transmit flags 2 on tap:nsttap0", unknown.getMessage());
            assertSame(arp, tap.claim(), "still claimed");
            tap.abort();
            assertEquals(0, tap.flush());
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /** Sends the pseudo-header sum only in the checksum field: with the flag a partial, without it a bad checksum. */
    private static void sendToKernel(final TapDevice tap, final String payload, final int flags)
    {
        final MutableDirectBuffer frame = tap.claim();
        final int length = Frames.udp(frame, KERNEL_MAC, OUR_MAC, OUR_IP, KERNEL_IP, UDP_PORT, LOCAL_PORT,
            payload.getBytes(StandardCharsets.US_ASCII));
        if (payload.equals("complete"))
        {
            Frames.putFullChecksum(frame);
            assertTrue(Frames.checksumValid(frame, 0));
        }
        else
        {
            Frames.putPartialChecksum(frame);
            assertFalse(Frames.checksumValid(frame, 0), "the fixture's partial checksum must not be valid by chance");
        }
        tap.commit(length, flags);
    }

    private static void assertPartialChecksum(final Captured captured, final int checksumOffset)
    {
        final UnsafeBuffer frame = captured.frame;
        assertEquals(VirtioNetHeader.F_NEEDS_CSUM, captured.vnetFlags);
        assertEquals(VirtioNetHeader.GSO_NONE, captured.gsoType);
        assertEquals(14 + 20, captured.checksumStart);
        assertEquals(checksumOffset, captured.checksumOffset);
        assertEquals(Frames.pseudoHeaderSum(frame, 0), Frames.checksumField(frame, 0), "only the pseudo-header sum");
        assertNotEquals(Frames.fullChecksum(frame, 0), Frames.checksumField(frame, 0), "not the complete checksum");

        // What this device writes for such a frame on transmit agrees with what the kernel wrote.
        final VirtioNetHeader ours =
            new VirtioNetHeader().wrap(new UnsafeBuffer(new byte[VirtioNetHeader.LENGTH]), 0)
                .needsChecksum(frame, 0, frame.capacity());
        assertEquals(captured.checksumStart, ours.checksumStart());
        assertEquals(captured.checksumOffset, ours.checksumOffset());
    }

    /** The kernel sends a fixed UDP datagram (fixed ports and payload, so its checksums are fixed too). */
    private static Captured kernelUdpDatagram(final String ns, final TapDevice tap) throws Exception
    {
        run("ip", "netns", "exec", ns, "timeout", "5", PYTHON, "-c",
            "import socket\n" +
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n" +
            "s.bind(('198.18.0.1', " + KERNEL_UDP_SOURCE_PORT + "))\n" +
            "s.sendto(b'nicstack checksum offload', ('198.18.0.2', " + UDP_PORT + "))\n");
        return awaitFrame(tap, "UDP datagram from the kernel", (buffer, offset, length) ->
            isIpv4(buffer, offset, length, Frames.PROTOCOL_UDP) &&
            port(buffer, offset, 2) == UDP_PORT && port(buffer, offset, 0) == KERNEL_UDP_SOURCE_PORT);
    }

    /** The kernel connects to 198.18.0.2; nobody answers, the first SYN is enough. */
    private static Captured kernelTcpSyn(final String ns, final TapDevice tap) throws Exception
    {
        final Process connect = new ProcessBuilder("ip", "netns", "exec", ns, "timeout", "3", "bash", "-c",
            "exec 3<>/dev/tcp/198.18.0.2/" + TCP_PORT)
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try
        {
            return awaitFrame(tap, "TCP SYN from the kernel", (buffer, offset, length) ->
                isIpv4(buffer, offset, length, Frames.PROTOCOL_TCP) && port(buffer, offset, 2) == TCP_PORT &&
                (buffer.getByte(Frames.transportOffset(buffer, offset) + 13) & 0x12) == 0x02); // SYN, not ACK
        }
        finally
        {
            connect.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
    }

    private static void setUpLink(final String ns) throws IOException, InterruptedException
    {
        run("ip", "-n", ns, "link", "set", "dev", TAP, "address", KERNEL_MAC_TEXT);
        run("ip", "-n", ns, "addr", "add", "198.18.0.1/24", "dev", TAP);
        run("ip", "-n", ns, "link", "set", TAP, "up");
        run("ip", "-n", ns, "neigh", "replace", "198.18.0.2", "lladdr", OUR_MAC_TEXT, "dev", TAP, "nud", "permanent");
    }

    /** Link 1, and link 2 behind the kernel as a router (see the class comment). */
    private static void setUpForwarding(final String ns) throws IOException, InterruptedException
    {
        setUpLink(ns);
        run("ip", "-n", ns, "link", "set", "dev", TAP2, "address", KERNEL2_MAC_TEXT);
        run("ip", "-n", ns, "addr", "add", "198.19.0.1/24", "dev", TAP2);
        run("ip", "-n", ns, "link", "set", TAP2, "up");
        run("ip", "-n", ns, "neigh", "replace", "198.19.0.2", "lladdr", NEIGHBOUR2_MAC_TEXT, "dev", TAP2,
            "nud", "permanent");
        run("ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward");
    }

    /** {@code InCsumErrors} of the {@code Udp:} lines of /proc/net/snmp in the namespace. */
    private static long udpInCsumErrors(final String ns) throws IOException, InterruptedException
    {
        final List<String> udp = run("ip", "netns", "exec", ns, "cat", "/proc/net/snmp").lines()
            .filter((line) -> line.startsWith("Udp: ")).toList();
        assertEquals(2, udp.size(), "Udp: names and values in /proc/net/snmp");
        final List<String> names = List.of(udp.get(0).split(" "));
        final int index = names.indexOf("InCsumErrors");
        assertTrue(index > 0, udp.get(0));
        return Long.parseLong(udp.get(1).split(" ")[index]);
    }

    private static boolean isIpv4(final DirectBuffer buffer, final int offset, final int length, final int protocol)
    {
        return length >= 14 + 20 + 8 &&
            buffer.getShort(offset + 12, ByteOrder.BIG_ENDIAN) == 0x0800 &&
            Frames.protocol(buffer, offset) == protocol;
    }

    /** A port of the TCP or UDP header: source at 0, destination at 2. */
    private static int port(final DirectBuffer buffer, final int offset, final int at)
    {
        return buffer.getShort(Frames.transportOffset(buffer, offset) + at, ByteOrder.BIG_ENDIAN) & 0xFFFF;
    }

    @FunctionalInterface
    private interface FrameFilter
    {
        boolean test(DirectBuffer buffer, int offset, int length);
    }

    /** A copy of one received frame with its flags and, with offload, the fields of its virtio-net header (else -1). */
    private record Captured(
        UnsafeBuffer frame, int flags, int vnetFlags, int gsoType, int checksumStart, int checksumOffset)
    {
    }

    /** Receive until a frame passes the filter, for at most 3 s; every frame must come with the four-argument call. */
    private static Captured awaitFrame(final TapDevice tap, final String what, final FrameFilter filter)
    {
        final Captured[] seen = new Captured[1];
        final FrameHandler handler = new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                fail("the tap delivered a frame without flags");
            }

            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
            {
                if (seen[0] == null && filter.test(buffer, offset, length))
                {
                    final byte[] copy = new byte[length];
                    buffer.getBytes(offset, copy);
                    final VirtioNetHeader header = tap.transmitChecksumOffload() ? tap.rxHeader() : null;
                    seen[0] = new Captured(new UnsafeBuffer(copy), flags,
                        header == null ? -1 : header.flags(),
                        header == null ? -1 : header.gsoType(),
                        header == null ? -1 : header.checksumStart(),
                        header == null ? -1 : header.checksumOffset());
                }
            }
        };

        final long deadline = System.nanoTime() + DEADLINE_NANOS;
        for (int round = 0; round < 300 && seen[0] == null && System.nanoTime() < deadline; round++)
        {
            if (tap.awaitReadable(10_000_000))
            {
                tap.receive(handler, NetDevice.BURST);
            }
        }

        assertNotNull(seen[0], "no " + what + " within 3 s");
        return seen[0];
    }

    /**
     * Sends UDP datagrams from 198.18.0.2 to 198.19.0.2 into {@value #TAP} and reads what the kernel forwards out of
     * {@value #TAP2}; a sequence number in the payload pairs them up. Allocates nothing per datagram in
     * {@link #forwardCounted(int)}.
     */
    private static final class Forwarder implements FrameHandler
    {
        private static final int PAYLOAD_LENGTH = 64;

        private final TapDevice in;
        private final TapDevice out;
        private final UnsafeBuffer payload = new UnsafeBuffer(new byte[PAYLOAD_LENGTH]);
        private final byte[] payloadBytes = payload.byteArray();
        private int expected;
        private boolean arrived;
        private boolean copy;
        private Captured captured;
        int incomplete;

        Forwarder(final TapDevice in, final TapDevice out)
        {
            this.in = in;
            this.out = out;
            for (int i = 0; i < PAYLOAD_LENGTH; i++)
            {
                payloadBytes[i] = (byte)(0x30 + i);
            }
        }

        /** Forward one datagram committed with {@code flags} and return a copy of it as it left link 2. */
        Captured forward(final int sequence, final int flags)
        {
            copy = true;
            send(sequence, flags);
            await(sequence);
            copy = false;
            return captured;
        }

        /** Forward {@code count} datagrams with partial checksums one at a time, counting incomplete arrivals. */
        void forwardCounted(final int count)
        {
            for (int i = 0; i < count; i++)
            {
                final int sequence = 1_000 + i;
                send(sequence, NetDevice.TX_L4_CHECKSUM_PARTIAL);
                await(sequence);
            }
        }

        private void send(final int sequence, final int flags)
        {
            payload.putInt(0, sequence);
            final MutableDirectBuffer frame = in.claim();
            final int length =
                Frames.udp(frame, KERNEL_MAC, OUR_MAC, OUR_IP, NEIGHBOUR2_IP, UDP_PORT, FORWARD_PORT, payloadBytes);
            Frames.putPartialChecksum(frame);
            in.commit(length, flags);
            assertEquals(1, in.flush());
        }

        private void await(final int sequence)
        {
            expected = sequence;
            arrived = false;
            final long deadline = System.nanoTime() + DEADLINE_NANOS;
            while (!arrived)
            {
                if (System.nanoTime() > deadline)
                {
                    fail("datagram " + sequence + " was not forwarded to " + TAP2 + " within 3 s");
                }
                if (out.awaitReadable(100_000_000))
                {
                    out.receive(this, NetDevice.BURST);
                }
            }
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            fail("the tap delivered a frame without flags");
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
        {
            if (isIpv4(buffer, offset, length, Frames.PROTOCOL_UDP) &&
                port(buffer, offset, 2) == FORWARD_PORT &&
                buffer.getInt(Frames.transportOffset(buffer, offset) + 8) == expected)
            {
                arrived = true;
                if (copy)
                {
                    final byte[] bytes = new byte[length];
                    buffer.getBytes(offset, bytes);
                    captured = new Captured(new UnsafeBuffer(bytes), flags, -1, -1, -1, -1);
                }
                else if (!Frames.checksumValid(buffer, offset) || flags != 0)
                {
                    incomplete++;
                }
            }
        }
    }

    /**
     * Sends bursts of {@value #SEGMENTS} full TCP segments and a pure ACK from 198.18.0.2 to 198.19.0.2 into
     * {@value #TAP} and reads the segments the kernel forwards out of {@value #TAP2}; allocates nothing unless asked
     * for copies.
     */
    private static final class SegmentBurst implements FrameHandler
    {
        private static final byte[] TIMESTAMPS = { 1, 1, 8, 10, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08 };

        private final TapDevice in;
        private final TapDevice out;
        private final byte[] payload = new byte[SEGMENTS * SEGMENT];
        private final byte[][] sent = new byte[SEGMENTS + 1][];
        private final List<byte[]> copies = new java.util.ArrayList<>();
        private boolean copy;
        private int arrived;

        SegmentBurst(final TapDevice in, final TapDevice out)
        {
            this.in = in;
            this.out = out;
            new java.util.SplittableRandom(42).nextBytes(payload);
        }

        /** Commit and flush one burst, the stream continuing from the last; returns what was committed (round 0 only). */
        byte[][] send(final int round)
        {
            final int base = 1_000_000 + round * (SEGMENTS * SEGMENT);
            for (int i = 0; i <= SEGMENTS; i++)
            {
                final MutableDirectBuffer frame = in.claim();
                final int length = Frames.tcp(frame, KERNEL_MAC, OUR_MAC, OUR_IP, NEIGHBOUR2_IP, round * 32 + i,
                    TCP_PORT, FORWARD_PORT, base + i * SEGMENT, 77, i == SEGMENTS - 1 ? 0x18 : 0x10, 1024,
                    TIMESTAMPS, payload, i == SEGMENTS ? 0 : i * SEGMENT, i == SEGMENTS ? 0 : SEGMENT);
                if (round == 0)
                {
                    sent[i] = new byte[length];
                    frame.getBytes(0, sent[i]);
                }
                in.commit(length, NetDevice.TX_L4_CHECKSUM_PARTIAL);
            }
            assertEquals(SEGMENTS + 1, in.flush());
            return sent;
        }

        /** Receive until the burst's frames are all forwarded (3 s at most); with {@code copy}, return them. */
        List<byte[]> forward(final boolean copy)
        {
            this.copy = copy;
            copies.clear();
            arrived = 0;
            final long deadline = System.nanoTime() + DEADLINE_NANOS;
            while (arrived < SEGMENTS + 1)
            {
                if (System.nanoTime() > deadline)
                {
                    fail(arrived + " of " + (SEGMENTS + 1) + " segments forwarded out of " + TAP2 + " within 3 s");
                }
                if (out.awaitReadable(100_000_000))
                {
                    out.receive(this, NetDevice.BURST);
                }
            }
            return copies;
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            fail("the tap delivered a frame without flags");
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
        {
            if (isIpv4(buffer, offset, length, Frames.PROTOCOL_TCP) && port(buffer, offset, 2) == FORWARD_PORT)
            {
                arrived++;
                if (copy)
                {
                    final byte[] bytes = new byte[length];
                    buffer.getBytes(offset, bytes);
                    copies.add(bytes);
                }
            }
        }
    }
}
