package io.nicstack.stack.udp;

import static io.nicstack.stack.Frames.PEER_IP;
import static io.nicstack.stack.Frames.PEER_MAC;
import static io.nicstack.stack.Frames.STACK_IP;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NetDeviceDecorator;
import io.nicstack.stack.Frames;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.UdpHeader;

/** {@link UdpSocket#send}: what it refuses, and that a refused send leaves nothing behind (no frame, no count). */
class UdpSendTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final int LOCAL_PORT = 40000;

    private final TestDevice device = new TestDevice(1500);
    private final StackCounters counters = StackCounters.inMemory();
    private final long now = 1_000 * SECOND;
    private final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
    private final UnsafeBuffer payload = new UnsafeBuffer(new byte[4]);
    private UdpSocket socket;

    @BeforeEach
    void setUp()
    {
        // The peer asks for us first, so its MAC is known and a datagram to it goes straight into a device frame.
        device.inject(Frames.ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.poll(now);
        device.takeSent();
        socket = stack.udp().bind(LOCAL_PORT, (s, src, srcPort, buffer, offset, length, t) -> { });
    }

    /** The UDP header of the one frame sent since the last call. */
    private UdpHeader sentDatagram()
    {
        stack.poll(now);
        final List<byte[]> sent = device.takeSent();
        assertEquals(1, sent.size(), "frames sent");
        final Ipv4Header ip = new Ipv4Header();
        assertTrue(ip.wrapChecked(new UnsafeBuffer(sent.get(0)), EthernetFrame.HEADER_LENGTH,
            sent.get(0).length - EthernetFrame.HEADER_LENGTH));
        return new UdpHeader().wrap(ip.buffer(), ip.offset() + ip.headerLength(), UdpHeader.HEADER_LENGTH);
    }

    private void assertNothingSent()
    {
        stack.poll(now);
        assertEquals(0, device.takeSent().size(), "frames sent");
        assertEquals(0, counters.get(StackCounter.UDP_OUT_DATAGRAMS));
        assertEquals(0, counters.get(StackCounter.IPV4_OUT_DATAGRAMS));
    }

    /**
     * A destination port outside 1..65535 is refused, naming the port, as Linux's udp_sendmsg refuses port 0 (EINVAL):
     * port 0 is reserved (RFC 768 uses it only as a source port, for "none"). The same for a datagram that does not fit
     * one frame. Before, the port was written as its low 16 bits: 65543 went out as port 7, and port 0 was sent.
     */
    @Test
    void aDestinationPortOutside1To65535IsRefused()
    {
        final UnsafeBuffer large = new UnsafeBuffer(new byte[3000]);
        for (final int port : new int[] {0, -1, 65536, 65536 + 7, Integer.MIN_VALUE})
        {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> socket.send(PEER_IP, port, payload, 0, payload.capacity(), now), "port " + port);
            assertTrue(e.getMessage().contains(Integer.toString(port)), e.getMessage());
            assertThrows(IllegalArgumentException.class,
                () -> socket.send(PEER_IP, port, large, 0, large.capacity(), now), "port " + port + ", fragmented");
        }
        assertNothingSent();

        for (final int port : new int[] {1, 65535})
        {
            assertTrue(socket.send(PEER_IP, port, payload, 0, payload.capacity(), now));
            assertEquals(port, sentDatagram().destinationPort());
        }
    }

    /**
     * Binding port 0 takes an unused port of the dynamic range (RFC 6335), as bind(2) and Tcp.listen(0) do, for a
     * client that only needs a source port; its datagrams leave from it. Before, port 0 was refused.
     */
    @Test
    void bindingPortZeroTakesAnUnusedPortOfTheDynamicRange()
    {
        final java.util.Set<Integer> ports = new java.util.HashSet<>();
        for (int i = 0; i < 50; i++)
        {
            final UdpSocket client = stack.udp().bind(0, 1 << 16);
            assertTrue(client.port() >= 49152 && client.port() <= 65535, "port " + client.port());
            assertTrue(ports.add(client.port()), "a port already bound: " + client.port());
        }
        final UdpSocket client = stack.udp().bind(0, (s, src, srcPort, buffer, offset, length, t) -> { });
        assertTrue(client.send(PEER_IP, 9, payload, 0, payload.capacity(), now));
        assertEquals(client.port(), sentDatagram().sourcePort());
    }

    /**
     * A payload range outside the caller's buffer is refused with IndexOutOfBoundsException before anything is claimed
     * or counted, whichever way the datagram would leave (straight into a device frame, through ARP's queue, in
     * fragments), and the next datagram goes out. Before, a datagram that fit a frame to a known peer was counted in
     * IPV4_OUT_DATAGRAMS and its frame claimed, then the copy threw, leaving the claim neither committed nor aborted:
     * the next send failed with "claim without commit".
     */
    @Test
    void aPayloadRangeOutsideTheBufferIsRefusedBeforeAnythingIsClaimedOrCounted()
    {
        final int unresolved = 0xC612_0007;
        final UnsafeBuffer large = new UnsafeBuffer(new byte[3000]);
        final int[][] ranges = {{0, 100}, {1, 4}, {4, 1}, {-1, 2}, {5, 0}, {Integer.MAX_VALUE, 4}};
        for (final int[] range : ranges)
        {
            final String what = "offset " + range[0] + " length " + range[1];
            assertThrows(IndexOutOfBoundsException.class, () -> socket.send(PEER_IP, 9, payload, range[0], range[1], now), what);
            assertThrows(IndexOutOfBoundsException.class, () -> socket.send(unresolved, 9, payload, range[0], range[1], now),
                what + ", waiting for ARP");
        }
        assertThrows(IndexOutOfBoundsException.class, () -> socket.send(PEER_IP, 9, large, 1, large.capacity(), now),
            "fragmented");
        assertNothingSent();

        assertTheFirstDatagramGoesOut();
    }

    /**
     * A payload whose copy fails inside its bounds (memory the caller maps from a file that shrank faults, and Unsafe
     * reports it as an InternalError) leaves no frame claimed: the error reaches the caller, nothing is sent or
     * counted, and the next datagram goes out. Before, the frame claimed for it stayed open and the next send failed
     * with "claim without commit"; the range check before the claim (above) cannot see such a failure.
     */
    @Test
    void aPayloadWhoseCopyFailsLeavesNoFrameClaimed()
    {
        final UnsafeBuffer faulting = new UnsafeBuffer(new byte[4])
        {
            @Override
            public byte[] byteArray()
            {
                throw new InternalError("test: a fault occurred in an unsafe memory access");
            }
        };
        assertThrows(InternalError.class, () -> socket.send(PEER_IP, 9, faulting, 0, faulting.capacity(), now));
        assertNothingSent();

        assertTheFirstDatagramGoesOut();
    }

    /**
     * A device that refuses a commit keeps the frame claimed (NetDevice's claim is valid until commit or abort; the
     * tap device says so), so IP still holds it when the sender aborts: the frame goes back and the next datagram
     * leaves. Before, IP forgot its claim before handing the frame to the device, and an abort after a refused commit
     * did nothing.
     */
    @Test
    void aCommitTheDeviceRefusesLeavesNoFrameClaimed()
    {
        final TestDevice inner = new TestDevice(1500);
        final boolean[] refuse = {false};
        final NetDevice refusing = new NetDeviceDecorator(inner)
        {
            @Override
            public void commit(final int length)
            {
                if (refuse[0])
                {
                    throw new IllegalStateException("test: commit refused");
                }
                inner.commit(length);
            }
        };
        final StackCounters counters = StackCounters.inMemory();
        final NetStack stack = new NetStack(refusing, StackConfig.of("198.18.0.2/24"), counters, now);
        inner.inject(Frames.ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.poll(now);
        inner.takeSent();
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, (s, src, srcPort, buffer, offset, length, t) -> { });

        refuse[0] = true;
        assertThrows(IllegalStateException.class, () -> socket.send(PEER_IP, 9, payload, 0, payload.capacity(), now));
        assertEquals(0, inner.takeSent().size());
        assertEquals(0, counters.get(StackCounter.IPV4_OUT_DATAGRAMS));

        refuse[0] = false;
        assertTrue(socket.send(PEER_IP, 9, payload, 0, payload.capacity(), now));
        assertEquals(1, inner.takeSent().size());
        assertEquals(1, counters.get(StackCounter.IPV4_OUT_DATAGRAMS));
    }

    /** A good datagram now leaves, the first one counted as sent. */
    private void assertTheFirstDatagramGoesOut()
    {
        assertTrue(socket.send(PEER_IP, 9, payload, 0, payload.capacity(), now));
        assertEquals(9, sentDatagram().destinationPort());
        assertEquals(1, counters.get(StackCounter.IPV4_OUT_DATAGRAMS));
        assertEquals(1, counters.get(StackCounter.UDP_OUT_DATAGRAMS));
    }

    /** The TOS and TTL of every IPv4 header sent since the last call, as "tos/ttl" strings. */
    private List<String> sentTosAndTtl()
    {
        stack.poll(now);
        final List<String> out = new java.util.ArrayList<>();
        for (final byte[] frame : device.takeSent())
        {
            final Ipv4Header ip = new Ipv4Header();
            assertTrue(ip.wrapChecked(new UnsafeBuffer(frame), EthernetFrame.HEADER_LENGTH,
                frame.length - EthernetFrame.HEADER_LENGTH));
            assertTrue(ip.checksumValid(), "header checksum");
            out.add(Integer.toHexString(ip.tos()) + "/" + ip.ttl());
        }
        return out;
    }

    /**
     * RFC 1122 §4.1.4 (and §4.1.3.2's TTL and TOS): an application MUST be able to set the TTL and TOS of the UDP
     * datagrams it sends, as IP_TTL and IP_TOS do; both the frame written in place and every fragment of a larger
     * datagram carry them, and -1 gives the TTL back to the stack's default. Before, every datagram went with TOS 0
     * and the stack's TTL.
     */
    @Test
    void rfc1122_4_1_4_aSocketSetsTheTtlAndTosOfItsDatagrams()
    {
        final int defaultTtl = stack.config().defaultTtl();
        socket.send(PEER_IP, 7, payload, 0, payload.capacity(), now);
        assertEquals(List.of("0/" + defaultTtl), sentTosAndTtl(), "unset: the default class and TTL");

        socket.typeOfService(0xB9).timeToLive(3);
        assertEquals(0xB9, socket.typeOfService());
        assertEquals(3, socket.timeToLive());
        socket.send(PEER_IP, 7, payload, 0, payload.capacity(), now);
        assertEquals(List.of("b9/3"), sentTosAndTtl(), "one frame, written in place");
        final UnsafeBuffer large = new UnsafeBuffer(new byte[3000]);
        socket.send(PEER_IP, 7, large, 0, large.capacity(), now);
        assertEquals(List.of("b9/3", "b9/3", "b9/3"), sentTosAndTtl(), "every fragment");

        socket.timeToLive(-1).typeOfService(0);
        assertEquals(defaultTtl, socket.timeToLive());
        socket.send(PEER_IP, 7, payload, 0, payload.capacity(), now);
        assertEquals(List.of("0/" + defaultTtl), sentTosAndTtl(), "back to the defaults");
    }

    /** A TTL of 0 (RFC 1122 §3.2.1.7: MUST NOT be sent) or outside an octet, or a TOS outside one, is refused. */
    @Test
    void aTtlOrTosOutsideItsRangeIsRefused()
    {
        for (final int ttl : new int[] {0, 256, -2})
        {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> socket.timeToLive(ttl));
            assertTrue(e.getMessage().contains(Integer.toString(ttl)), e.getMessage());
        }
        for (final int tos : new int[] {-1, 256})
        {
            assertThrows(IllegalArgumentException.class, () -> socket.typeOfService(tos));
        }
        assertEquals(stack.config().defaultTtl(), socket.timeToLive(), "unchanged");
        assertEquals(0, socket.typeOfService(), "unchanged");
    }
}
