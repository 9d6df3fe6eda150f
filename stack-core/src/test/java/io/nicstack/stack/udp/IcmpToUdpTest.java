package io.nicstack.stack.udp;

import static io.nicstack.stack.Frames.PEER_IP;
import static io.nicstack.stack.Frames.PEER_MAC;
import static io.nicstack.stack.Frames.STACK_IP;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.Frames;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

/**
 * RFC 1122 §4.1.3.3: "UDP MUST pass to the application layer all ICMP error messages that it receives from the IP
 * layer." An error quoting a datagram one of our sockets sent reaches that socket, found by the quoted source port.
 */
class IcmpToUdpTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final int LOCAL_PORT = 6000;
    private static final int REMOTE_PORT = 53;
    private static final int OTHER_HOST = 0xC612_0003;   // 198.18.0.3

    private final TestDevice device = new TestDevice(1500);
    private final StackCounters counters = StackCounters.inMemory();
    private final long now = 1_000 * SECOND;
    private final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
    private final List<String> errors = new ArrayList<>();
    private int ipId = 100;

    /** Records each error as "type/code to address:port mtu n", and ignores datagrams. */
    private final UdpHandler recorder = new UdpHandler()
    {
        @Override
        public void onDatagram(
            final UdpSocket socket, final int sourceAddress, final int sourcePort, final DirectBuffer buffer, final int offset,
            final int length, final long t)
        {
            errors.add("datagram from " + sourcePort);
        }

        @Override
        public void onIcmpError(
            final UdpSocket socket, final int type, final int code, final int destinationAddress, final int destinationPort,
            final int nextHopMtu, final long t)
        {
            errors.add(type + "/" + code + " to " + Integer.toHexString(destinationAddress) + ":" + destinationPort
                + " mtu " + nextHopMtu + " on " + socket.port());
        }
    };

    @BeforeEach
    void learnPeer()
    {
        device.inject(Frames.ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.poll(now);
        device.takeSent();
    }

    /** The frame {@code socket} sends to the peer's {@link #REMOTE_PORT}. */
    private byte[] sentBy(final UdpSocket socket)
    {
        assertTrue(socket.send(PEER_IP, REMOTE_PORT, new UnsafeBuffer(new byte[100]), 0, 100, now));
        stack.poll(now);
        final List<byte[]> sent = device.takeSent();
        assertEquals(1, sent.size());
        return sent.get(0);
    }

    /** An ICMP error from the peer quoting the IPv4 header and first 8 octets of {@code quotedFrame} (RFC 792). */
    private byte[] icmpError(final int type, final int code, final int restOfHeader, final byte[] quotedFrame)
    {
        final int quotedLength = Ipv4Header.MIN_HEADER_LENGTH + 8;
        final UnsafeBuffer icmp = new UnsafeBuffer(new byte[IcmpHeader.HEADER_LENGTH + quotedLength]);
        icmp.putBytes(IcmpHeader.HEADER_LENGTH, quotedFrame, EthernetFrame.HEADER_LENGTH, quotedLength);
        icmp.putInt(IcmpHeader.REST_OF_HEADER_OFFSET, restOfHeader, ByteOrder.BIG_ENDIAN);
        new IcmpHeader().wrap(icmp, 0, icmp.capacity()).type(type).code(code).checksum(0).updateChecksum();
        return Frames.fromPeer(stack.config().mac(),
            Frames.ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, ipId++, false, 0, icmp.byteArray()));
    }

    private void receive(final byte[] frame)
    {
        device.inject(frame);
        stack.poll(now);
    }

    @Test
    void aPortUnreachableQuotingOurDatagramReachesTheSocketThatSentIt()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, recorder);
        receive(icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, 0, sentBy(socket)));
        assertEquals(List.of("3/3 to c6120001:53 mtu 0 on 6000"), errors);
        assertEquals(1, counters.get(StackCounter.UDP_ICMP_ERRORS));
        assertEquals(0, counters.get(StackCounter.UDP_ICMP_IGNORED));
        assertEquals(1, counters.get(StackCounter.ICMP_IN_OTHER), "still the frame's terminal counter");
        assertEquals(0, counters.get(StackCounter.ICMP_IN_ERRORS_IGNORED));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * RFC 1191 §4: fragmentation needed carries the next-hop MTU in the low 16 bits of its rest of header (the high 16
     * are unused); other errors carry no MTU, whatever their rest of header holds (parameter problem: a pointer).
     */
    @Test
    void fragmentationNeededGivesTheNextHopMtuAndOtherErrorsNone()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, recorder);
        final byte[] ours = sentBy(socket);
        receive(icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_FRAGMENTATION_NEEDED, 0xABCD_0578, ours));
        receive(icmpError(IcmpHeader.TYPE_PARAMETER_PROBLEM, 0, 0x1400_0578, ours));
        receive(icmpError(IcmpHeader.TYPE_TIME_EXCEEDED, 0, 0, ours));
        receive(icmpError(IcmpHeader.TYPE_SOURCE_QUENCH, 0, 0, ours));
        assertEquals(List.of(
            "3/4 to c6120001:53 mtu 1400 on 6000",
            "12/0 to c6120001:53 mtu 0 on 6000",
            "11/0 to c6120001:53 mtu 0 on 6000",
            "4/0 to c6120001:53 mtu 0 on 6000"), errors);
        assertEquals(4, counters.get(StackCounter.UDP_ICMP_ERRORS));
        assertEquals(0, counters.unaccountedFrames());
    }

    /** A socket without a handler gets its errors from its queue, in order with its datagrams. */
    @Test
    void aQueuedSocketReceivesTheErrorInOrderWithItsDatagrams()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, 1 << 16);
        final byte[] ours = sentBy(socket);
        receive(Frames.fromPeer(stack.config().mac(), Frames.ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, ipId++, false,
            0, Frames.udp(PEER_IP, STACK_IP, 4000, LOCAL_PORT, new byte[4]))));
        receive(icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, 0, ours));
        receive(Frames.fromPeer(stack.config().mac(), Frames.ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, ipId++, false,
            0, Frames.udp(PEER_IP, STACK_IP, 4001, LOCAL_PORT, new byte[4]))));
        assertEquals(3, socket.receive(recorder, 10, now));
        assertEquals(List.of("datagram from 4000", "3/3 to c6120001:53 mtu 0 on 6000", "datagram from 4001"), errors);
        assertEquals(1, counters.get(StackCounter.UDP_ICMP_ERRORS));
    }

    /**
     * An error that finds its socket's queue full is lost as a datagram would be, and counted as such: not as ignored
     * for want of a socket (one counter meant both before).
     */
    @Test
    void anErrorThatFindsTheQueueFullIsCountedAsLostToTheFullQueue()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, 1 << 16);
        final byte[] error = icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, 0,
            sentBy(socket));
        for (int i = 0; i < 20_000 && counters.get(StackCounter.UDP_ICMP_QUEUE_FULL) == 0; i++)
        {
            receive(error);
        }
        assertEquals(1, counters.get(StackCounter.UDP_ICMP_QUEUE_FULL), "the queue fills before 20,000 errors");
        assertEquals(0, counters.get(StackCounter.UDP_ICMP_IGNORED), "there was a socket");
        final long queued = counters.get(StackCounter.UDP_ICMP_ERRORS);
        assertEquals(queued, socket.receive(recorder, Integer.MAX_VALUE, now), "every error counted as passed on was queued");
        assertEquals(0, counters.unaccountedFrames());
    }

    /** No socket on the quoted source port (never bound, or closed since): counted as ignored, nothing delivered. */
    @Test
    void anErrorQuotingAPortNobodyHasBoundIsCountedAsIgnored()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, recorder);
        final byte[] ours = sentBy(socket);
        stack.udp().bind(LOCAL_PORT + 1, recorder);
        socket.close();
        receive(icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, 0, ours));
        assertEquals(List.of(), errors);
        assertEquals(1, counters.get(StackCounter.UDP_ICMP_IGNORED));
        assertEquals(0, counters.get(StackCounter.UDP_ICMP_QUEUE_FULL), "no queue was full");
        assertEquals(0, counters.get(StackCounter.UDP_ICMP_ERRORS));
        assertEquals(0, counters.unaccountedFrames());
    }

    /** {@code Icmp} refuses a quote of a datagram another host sent, before UDP sees it: forged or misdirected. */
    @Test
    void anErrorQuotingADatagramNotFromOurAddressIsNotDelivered()
    {
        stack.udp().bind(LOCAL_PORT, recorder);
        final byte[] notOurs = Frames.fromPeer(stack.config().mac(), Frames.ipv4(OTHER_HOST, PEER_IP,
            Ipv4Header.PROTOCOL_UDP, 1, false, 0, Frames.udp(OTHER_HOST, PEER_IP, LOCAL_PORT, REMOTE_PORT, new byte[100])));
        receive(icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, 0, notOurs));
        assertEquals(List.of(), errors);
        assertEquals(0, counters.get(StackCounter.UDP_ICMP_ERRORS));
        assertEquals(0, counters.get(StackCounter.UDP_ICMP_IGNORED), "never reached UDP");
        assertEquals(1, counters.get(StackCounter.ICMP_IN_ERRORS_IGNORED), "refused by Icmp, and counted there (RFC 5927)");
        assertEquals(1, counters.get(StackCounter.ICMP_IN_OTHER));
        assertEquals(0, counters.unaccountedFrames());
    }

    /** A handler written as a lambda, as before errors were delivered, still compiles and ignores them. */
    @Test
    void aHandlerThatOnlyTakesDatagramsIgnoresErrors()
    {
        final int[] datagrams = new int[1];
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, (s, src, srcPort, buffer, offset, length, t) -> datagrams[0]++);
        receive(icmpError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, 0, sentBy(socket)));
        assertEquals(0, datagrams[0]);
        assertEquals(1, counters.get(StackCounter.UDP_ICMP_ERRORS), "delivered; the handler chose to ignore it");
        assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS));
    }
}
