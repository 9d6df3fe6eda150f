package io.nicstack.stack.udp;

import static io.nicstack.stack.Frames.PEER_IP;
import static io.nicstack.stack.Frames.PEER_MAC;
import static io.nicstack.stack.Frames.STACK_IP;
import static io.nicstack.stack.Frames.arp;
import static io.nicstack.stack.Frames.ethernet;
import static io.nicstack.stack.Frames.fromPeer;
import static io.nicstack.stack.Frames.ipv4;
import static io.nicstack.stack.Frames.udp;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

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

/** UDP input (RFC 768, RFC 1122 §4.1.3): the length field, the optional checksum, and no error about a broadcast. */
class UdpReceiveTest
{
    private static final int PORT = 5000;

    private final TestDevice device = new TestDevice(1500);
    private final StackCounters counters = StackCounters.inMemory();
    private final long now = 1_000_000_000_000L;
    private final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
    private final long mac = stack.config().mac();
    private byte[] received;
    private int ipId;

    @BeforeEach
    void setUp()
    {
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.udp().bind(PORT, (s, src, srcPort, buffer, offset, length, t) ->
        {
            received = new byte[length];
            buffer.getBytes(offset, received);
        });
    }

    private List<byte[]> exchange(final byte[] frame)
    {
        device.inject(frame);
        stack.poll(now);
        return device.takeSent();
    }

    /** A datagram from the peer to {@link #PORT} whose length field says {@code lengthField}, checksum as given. */
    private List<byte[]> receive(final int lengthField, final boolean checksum, final byte[] data)
    {
        final UnsafeBuffer datagram = new UnsafeBuffer(new byte[UdpHeader.HEADER_LENGTH + data.length]);
        datagram.putBytes(UdpHeader.HEADER_LENGTH, data);
        final UdpHeader header = new UdpHeader().wrap(datagram, 0, datagram.capacity()).sourcePort(4000).destinationPort(PORT)
            .datagramLength(lengthField).checksum(0);
        if (checksum)
        {
            new UdpHeader().wrap(datagram, 0, lengthField).updateChecksum(PEER_IP, STACK_IP);
        }
        assertEquals(lengthField, header.datagramLength());
        received = null;
        return exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, ++ipId, false, 0, datagram.byteArray())));
    }

    /** RFC 768: an all-zero checksum means the sender computed none; the datagram is taken. */
    @Test
    void aDatagramWithoutChecksumIsDelivered()
    {
        receive(12, false, new byte[] {1, 2, 3, 4});
        assertArrayEquals(new byte[] {1, 2, 3, 4}, received);
        assertEquals(1, counters.get(StackCounter.UDP_IN_DATAGRAMS));
    }

    /**
     * RFC 768: the length field is the datagram's; an IP payload longer than it carries octets that are not UDP's (the
     * checksum covers the length field's octets only). The datagram is delivered trimmed.
     */
    @Test
    void aLengthFieldShorterThanTheIpPayloadTrimsTheDatagram()
    {
        receive(10, true, new byte[] {1, 2, 9, 9});
        assertArrayEquals(new byte[] {1, 2}, received);
        assertEquals(0, counters.get(StackCounter.UDP_DROP_BAD_CHECKSUM));
    }

    /** A length field past the IP payload, or below the header's 8 octets, is a truncated datagram: dropped, unanswered. */
    @Test
    void aLengthFieldPastThePayloadOrBelowTheHeaderIsDroppedSilently()
    {
        assertTrue(receive(13, false, new byte[4]).isEmpty(), "no ICMP error");
        assertTrue(receive(7, false, new byte[4]).isEmpty(), "no ICMP error");
        assertNull(received);
        assertEquals(2, counters.get(StackCounter.UDP_DROP_TRUNCATED));
        assertEquals(0, counters.unaccountedFrames());
    }

    /** RFC 1122 §4.1.3.1 and §3.2.2: no port unreachable about a datagram to a broadcast address. */
    @Test
    void aBroadcastToAClosedPortGetsNoPortUnreachable()
    {
        final int broadcast = 0xC612_00FF;
        assertTrue(exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4,
            ipv4(PEER_IP, broadcast, Ipv4Header.PROTOCOL_UDP, 1, false, 0, udp(PEER_IP, broadcast, 4000, PORT + 1, new byte[4]))))
            .isEmpty());
        assertEquals(1, counters.get(StackCounter.UDP_DROP_NO_PORT));
        assertEquals(0, counters.get(StackCounter.ICMP_OUT_UNREACHABLE));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * RFC 1122 §3.3.6: IPv4 accepts the old broadcast form {subnet, 0} as a broadcast, so the socket must say so too,
     * inline and queued (a reassembled datagram keeps its flag), or an echo service answers it ("fraggle"). Before,
     * {@link UdpSocket#destinationIsBroadcast} asked only for 255.255.255.255 and the subnet's all-ones address.
     */
    @Test
    void aDatagramToTheSubnetsNetworkAddressIsReportedAsBroadcastInlineAndQueued()
    {
        final int subnetZero = 0xC612_0000;
        final java.util.List<String> inline = new java.util.ArrayList<>();
        stack.udp().bind(PORT + 1, (s, src, srcPort, buffer, offset, length, t) ->
            inline.add(Integer.toHexString(s.destinationAddress()) + " " + s.destinationIsBroadcast()));
        final UdpSocket queued = stack.udp().bind(PORT + 2, 1 << 16);
        for (final int destination : new int[] {subnetZero, 0xC612_00FF, 0xFFFF_FFFF, STACK_IP})
        {
            final long frameMac = destination == STACK_IP ? mac : MacAddress.BROADCAST;
            for (final int port : new int[] {PORT + 1, PORT + 2})
            {
                exchange(ethernet(frameMac, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipv4(PEER_IP, destination,
                    Ipv4Header.PROTOCOL_UDP, ++ipId, false, 0, udp(PEER_IP, destination, 4000, port, new byte[4]))));
            }
        }
        // The same in two fragments: reassembly passes the first fragment's broadcast flag on.
        final byte[] big = udp(PEER_IP, subnetZero, 4000, PORT + 2, new byte[2000]);
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipv4(PEER_IP, subnetZero,
            Ipv4Header.PROTOCOL_UDP, 4242, true, 0, java.util.Arrays.copyOfRange(big, 0, 1480))));
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipv4(PEER_IP, subnetZero,
            Ipv4Header.PROTOCOL_UDP, 4242, false, 1480, java.util.Arrays.copyOfRange(big, 1480, big.length))));
        final java.util.List<String> drained = new java.util.ArrayList<>();
        assertEquals(5, queued.receive((s, src, srcPort, buffer, offset, length, t) ->
            drained.add(Integer.toHexString(s.destinationAddress()) + " " + s.destinationIsBroadcast()), 10, now));
        final List<String> expected = List.of("c6120000 true", "c61200ff true", "ffffffff true", "c6120002 false");
        assertEquals(expected, inline, "inline");
        final List<String> expectedQueued = new java.util.ArrayList<>(expected);
        expectedQueued.add("c6120000 true");
        assertEquals(expectedQueued, drained, "queued");
        assertEquals(9, counters.get(StackCounter.UDP_IN_DATAGRAMS));
    }

    /**
     * A receive queue larger than a ring can be (2^30 bytes) is refused with a message naming the size and the limit,
     * and the port stays free. Before, the power-of-two rounding overflowed and Agrona threw "capacity < 0".
     */
    @Test
    void aReceiveQueueLargerThanARingCanBeIsRefusedClearly()
    {
        final IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> stack.udp().bind(PORT + 1, (1 << 30) + 1));
        assertTrue(e.getMessage().contains("1073741825") && e.getMessage().contains("1073741824"), e.getMessage());
        assertEquals(PORT + 1, stack.udp().bind(PORT + 1, 1 << 20).port(), "the port is still free");
    }
}
