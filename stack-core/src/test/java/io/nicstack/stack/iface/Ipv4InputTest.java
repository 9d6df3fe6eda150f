package io.nicstack.stack.iface;

import static io.nicstack.stack.Frames.PEER_IP;
import static io.nicstack.stack.Frames.PEER_MAC;
import static io.nicstack.stack.Frames.STACK_IP;
import static io.nicstack.stack.Frames.arp;
import static io.nicstack.stack.Frames.ethernet;
import static io.nicstack.stack.Frames.fromPeer;
import static io.nicstack.stack.Frames.icmpEcho;
import static io.nicstack.stack.Frames.ipv4;
import static io.nicstack.stack.Frames.tcpSyn;
import static io.nicstack.stack.Frames.udp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpListener;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

/**
 * IPv4 input: source address validation (RFC 1122 3.2.1.3). The stack has a gateway, the peer, whose MAC it knows, so
 * an answer to any source address, on the subnet or not, would leave at once: a test that sees nothing sent has seen a
 * drop, not a datagram waiting for ARP or without a route.
 */
class Ipv4InputTest
{
    private static final long NOW = 1_000_000_000_000L;
    private static final int ECHO_PORT = 7;
    private static final int HTTP_PORT = 80;

    private TestDevice device;
    private StackCounters counters;
    private NetStack stack;
    private long mac;
    private int udpDelivered;

    @BeforeEach
    void setUp()
    {
        device = new TestDevice(1500);
        counters = StackCounters.inMemory();
        stack = new NetStack(device, StackConfig.of("198.18.0.2/24").gateway(PEER_IP), counters, NOW);
        mac = stack.config().mac();
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.udp().bind(ECHO_PORT, (socket, src, srcPort, buffer, offset, length, t) ->
        {
            udpDelivered++;
            socket.send(src, srcPort, buffer, offset, length, t);
        });
    }

    private List<byte[]> exchange(final byte[] frame)
    {
        device.inject(frame);
        stack.poll(NOW);
        return device.takeSent();
    }

    /** Send {@code datagram} from the peer's MAC; assert it ends in the bad-source drop and nothing answers it. */
    private void assertBadSource(final String source, final byte[] datagram)
    {
        final long before = counters.get(StackCounter.IPV4_DROP_BAD_SOURCE);
        final List<byte[]> sent = exchange(fromPeer(mac, datagram));
        assertEquals(before + 1, counters.get(StackCounter.IPV4_DROP_BAD_SOURCE), "counted drop from " + source);
        assertTrue(sent.isEmpty(), "nothing sent for a datagram from " + source);
        assertEquals(0, counters.unaccountedFrames());
    }

    private static byte[] echoRequest(final int source)
    {
        return ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 1, false, 0,
            icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 0x1234, 1, "ping".getBytes()));
    }

    private static byte[] syn(final int source, final int port)
    {
        return ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_TCP, 1, false, 0, tcpSyn(source, STACK_IP, 40000, port));
    }

    /**
     * RFC 1122 3.2.1.3: {0, any} (no DHCP/BOOTP here), {127, any}, limited and subnet broadcast, the subnet's network
     * address {subnet, 0} (its old broadcast form, RFC 1122 3.3.6), class D and E, and (RFC 1812 5.3.7, a LAND spoof) our
     * own address: each is a source no host sends from. Before, an echo request from the network address 198.18.0.0 was
     * answered, the reply waiting for an ARP reply that could never be taken (ARP learns no network address).
     */
    @ParameterizedTest
    @ValueSource(strings = {
        "0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.0.9", "255.255.255.255", "198.18.0.255", "198.18.0.0",
        "224.0.0.1", "239.255.255.250", "240.0.0.1", "254.1.2.3", "198.18.0.2"})
    void datagramFromInvalidSourceIsDroppedCountedAndUnanswered(final String source)
    {
        final int address = Ipv4Address.parse(source);
        final TcpListener listener = stack.tcp().listen(HTTP_PORT, 8, l -> { });

        assertBadSource(source, echoRequest(address));
        assertEquals(0, counters.get(StackCounter.ICMP_IN_ECHO_REQUESTS), "no echo request reached ICMP");

        assertBadSource(source, ipv4(address, STACK_IP, Ipv4Header.PROTOCOL_UDP, 2, false, 0,
            udp(address, STACK_IP, 40000, ECHO_PORT, "hello".getBytes())));
        assertEquals(0, udpDelivered, "no datagram reached the bound socket");
        // A closed port: no ICMP port unreachable to the invalid source either.
        assertBadSource(source, ipv4(address, STACK_IP, Ipv4Header.PROTOCOL_UDP, 3, false, 0,
            udp(address, STACK_IP, 40000, 9999, "hello".getBytes())));

        assertBadSource(source, syn(address, HTTP_PORT));
        assertEquals(0, listener.synReceived(), "no SYN reached the listener");
        // A closed port: no RST either.
        assertBadSource(source, syn(address, 9999));
    }

    /** The neighbours of every invalid range, on the subnet and through the gateway, are answered. */
    @ParameterizedTest
    @ValueSource(strings = {
        "198.18.0.1", "198.18.0.3", "198.18.0.254", "1.0.0.0", "126.255.255.255", "128.0.0.0", "223.255.255.255",
        "203.0.113.7"})
    void datagramFromValidSourceIsAnswered(final String source)
    {
        final int address = Ipv4Address.parse(source);
        if (address != PEER_IP && stack.config().onLink(address))
        {
            // An answer on the subnet would wait for ARP: the source asks for us first, which teaches us its MAC.
            exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
                arp(ArpPacket.OP_REQUEST, PEER_MAC, address, 0, STACK_IP)));
        }
        final TcpListener listener = stack.tcp().listen(HTTP_PORT, 8, l -> { });

        final List<byte[]> echoReply = exchange(fromPeer(mac, echoRequest(address)));
        assertEquals(1, echoReply.size(), "echo reply to " + source);
        assertEquals(address, destinationOf(echoReply.get(0)));

        final List<byte[]> udpEcho = exchange(fromPeer(mac, ipv4(address, STACK_IP, Ipv4Header.PROTOCOL_UDP, 2, false, 0,
            udp(address, STACK_IP, 40000, ECHO_PORT, "hello".getBytes()))));
        assertEquals(1, udpDelivered);
        assertEquals(1, udpEcho.size(), "udp echo to " + source);
        assertEquals(address, destinationOf(udpEcho.get(0)));

        final List<byte[]> synAck = exchange(fromPeer(mac, syn(address, HTTP_PORT)));
        assertEquals(1, synAck.size(), "SYN-ACK to " + source);
        assertEquals(address, destinationOf(synAck.get(0)));
        assertEquals(1, listener.synReceived());

        assertEquals(0, counters.get(StackCounter.IPV4_DROP_BAD_SOURCE));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * The subnet's network and broadcast addresses follow its prefix (StackConfig takes /1 to /30, so every subnet has
     * both, RFC 3021 making exceptions only of /31 and /32): no host holds them, and the addresses next to them are
     * hosts'. Before, the network address was taken for a host's.
     */
    @ParameterizedTest
    @ValueSource(strings = {"198.18.5.2/16:198.18.0.0:198.18.255.255", "198.18.0.5/30:198.18.0.4:198.18.0.7",
        "198.18.0.130/25:198.18.0.128:198.18.0.255"})
    void theSubnetsNetworkAndBroadcastAddressesAreNoHosts(final String subnet)
    {
        final String[] parts = subnet.split(":");
        final Ipv4 ip = new NetStack(new TestDevice(1500), StackConfig.of(parts[0]), StackCounters.inMemory(), NOW).ipv4();
        final int network = Ipv4Address.parse(parts[1]);
        final int broadcast = Ipv4Address.parse(parts[2]);
        assertTrue(ip.isMartian(network), "network address of " + parts[0]);
        assertTrue(ip.isMartian(broadcast), "broadcast address of " + parts[0]);
        // In a /30 one of the two is our own address (a LAND source).
        assertEquals(network + 1 == ip.config().address(), ip.isMartian(network + 1), "first host of " + parts[0]);
        assertEquals(broadcast - 1 == ip.config().address(), ip.isMartian(broadcast - 1), "last host of " + parts[0]);
        assertFalse(ip.isMartian(network - 1), "the host below the subnet");
        assertFalse(ip.isMartian(broadcast + 1), "the host above the subnet");
    }

    private static int destinationOf(final byte[] frame)
    {
        final Ipv4Header ip = new Ipv4Header();
        assertTrue(ip.wrapChecked(new UnsafeBuffer(frame), EthernetFrame.HEADER_LENGTH, frame.length - EthernetFrame.HEADER_LENGTH));
        assertEquals(STACK_IP, ip.source());
        return ip.destination();
    }
}
