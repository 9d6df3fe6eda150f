package io.nicstack.stack;

import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.nicstack.stack.icmp.Icmp;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpListener;
import io.nicstack.stack.time.Timers;
import io.nicstack.stack.udp.Udp;
import io.nicstack.stack.wire.UdpHeader;

import static io.nicstack.stack.Frames.*;
import static org.junit.jupiter.api.Assertions.*;

/** Frame-level behaviour of ARP, IPv4, ICMP and UDP with an injected clock. */
class NetStackTest
{
    private static final long SECOND = 1_000_000_000L;

    private TestDevice device;
    private StackCounters counters;
    private NetStack stack;
    private long now = 1_000 * SECOND;
    private long mac;

    @BeforeEach
    void setUp()
    {
        device = new TestDevice(1500);
        counters = StackCounters.inMemory();
        stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
        mac = stack.config().mac();
    }

    private List<byte[]> exchange(final byte[]... frames)
    {
        for (final byte[] f : frames)
        {
            device.inject(f);
        }
        stack.poll(now);
        return device.takeSent();
    }

    private void learnPeer()
    {
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
    }

    private static Ipv4Header ipOf(final byte[] frame)
    {
        final Ipv4Header ip = new Ipv4Header();
        assertTrue(ip.wrapChecked(new UnsafeBuffer(frame), 14, frame.length - 14));
        assertTrue(ip.checksumValid(), "IPv4 header checksum");
        return ip;
    }

    @Test
    void gratuitousArpOnStart()
    {
        stack.start(now);
        final List<byte[]> sent = device.takeSent();
        assertEquals(1, sent.size());
        final ArpPacket arp = new ArpPacket();
        arp.wrap(new UnsafeBuffer(sent.get(0)), 14, 28);
        assertEquals(ArpPacket.OP_REQUEST, arp.operation());
        assertEquals(STACK_IP, arp.senderProtocolAddress());
        assertEquals(STACK_IP, arp.targetProtocolAddress());
        assertEquals(mac, arp.senderHardwareAddress());
    }

    /**
     * RFC 5227 §2.3: a host announces its address with ANNOUNCE_NUM (2) announcements ANNOUNCE_INTERVAL (2 s) apart, so
     * that one lost broadcast does not leave stale caches behind. Before, the stack sent one.
     */
    @Test
    void theAddressIsAnnouncedTwiceTwoSecondsApart()
    {
        stack.start(now);
        assertEquals(1, device.takeSent().size(), "the first announcement at start");
        now += 1_999_000_000L;
        stack.poll(now);
        assertTrue(device.takeSent().isEmpty(), "nothing before ANNOUNCE_INTERVAL");
        now += 10_000_000L;
        stack.poll(now);
        final List<byte[]> second = device.takeSent();
        assertEquals(1, second.size(), "the second announcement");
        final ArpPacket arp = new ArpPacket().wrap(new UnsafeBuffer(second.get(0)), 14, ArpPacket.LENGTH);
        assertEquals(ArpPacket.OP_REQUEST, arp.operation());
        assertEquals(STACK_IP, arp.senderProtocolAddress());
        assertEquals(STACK_IP, arp.targetProtocolAddress());
        now += 60 * SECOND;
        stack.poll(now);
        assertTrue(device.takeSent().isEmpty(), "two announcements, no more");
    }

    /**
     * An ARP packet whose sender hardware address is all zeros is no host's, and one whose sender hardware address is
     * ours is our own frame looped back (or a spoof): neither is learned nor answered, each is counted. Before, the zero
     * MAC was learned for the peer (its frames then went to 00:00:00:00:00:00) and our own announcement, looped back,
     * got a reply sent to ourselves.
     */
    @Test
    void arpFromTheZeroMacOrFromOurOwnMacIsDroppedAndCounted()
    {
        assertTrue(exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, 0L, PEER_IP, 0, STACK_IP))).isEmpty(), "no reply to the zero MAC");
        assertEquals(-1, stack.arp().lookup(PEER_IP), "the zero MAC is not learned");
        assertEquals(1, counters.get(StackCounter.ARP_DROP_MALFORMED));

        assertTrue(exchange(ethernet(MacAddress.BROADCAST, mac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, mac, STACK_IP, 0, STACK_IP))).isEmpty(), "our looped-back announcement gets no reply");
        assertTrue(exchange(ethernet(MacAddress.BROADCAST, mac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, mac, PEER_IP, 0, STACK_IP))).isEmpty(), "nor a request claiming our MAC for a peer");
        assertEquals(-1, stack.arp().lookup(PEER_IP), "our own MAC is not learned for a peer");
        assertEquals(2, counters.get(StackCounter.ARP_DROP_OWN_MAC));
        assertEquals(0, counters.unaccountedFrames());

        learnPeer();
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "a well-formed request still teaches its sender");
    }

    @Test
    void arpRequestForUsGetsReplyAndTeachesTheSender()
    {
        final List<byte[]> sent = exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        assertEquals(1, sent.size());
        final UnsafeBuffer b = new UnsafeBuffer(sent.get(0));
        final EthernetFrame eth = new EthernetFrame().wrap(b, 0, b.capacity());
        assertEquals(PEER_MAC, eth.destination());
        final ArpPacket reply = new ArpPacket().wrap(b, 14, 28);
        assertEquals(ArpPacket.OP_REPLY, reply.operation());
        assertEquals(mac, reply.senderHardwareAddress());
        assertEquals(STACK_IP, reply.senderProtocolAddress());
        assertEquals(PEER_MAC, reply.targetHardwareAddress());
        assertEquals(PEER_IP, reply.targetProtocolAddress());
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP));
        assertEquals(1, counters.get(StackCounter.ARP_IN_REQUESTS));
    }

    @Test
    void arpRequestForAnotherHostIsIgnored()
    {
        final List<byte[]> sent = exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, 0xC612_0063)));
        assertTrue(sent.isEmpty());
        assertEquals(1, counters.get(StackCounter.ARP_DROP_NOT_FOR_US));
        assertEquals(-1, stack.arp().lookup(PEER_IP), "no entry created for traffic not meant for us");
    }

    @Test
    void echoRequestFromUnknownPeerWaitsForArpThenIsAnswered()
    {
        final byte[] data = "ping-payload-0123456789".getBytes();
        final List<byte[]> first = exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 7, false, 0,
            icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 0x1234, 1, data))));
        assertEquals(1, first.size(), "only an ARP request goes out; the reply waits");
        final ArpPacket request = new ArpPacket().wrap(new UnsafeBuffer(first.get(0)), 14, 28);
        assertEquals(ArpPacket.OP_REQUEST, request.operation());
        assertEquals(PEER_IP, request.targetProtocolAddress());
        assertEquals(1, stack.arp().queuedFrames());

        final List<byte[]> second = exchange(ethernet(mac, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, mac, STACK_IP)));
        assertEquals(1, second.size());
        assertEchoReply(second.get(0), 0x1234, 1, data);
        assertEquals(0, stack.arp().queuedFrames());
    }

    private static void assertEchoReply(final byte[] frame, final int id, final int seq, final byte[] data)
    {
        final Ipv4Header ip = ipOf(frame);
        assertEquals(PEER_IP, ip.destination());
        assertEquals(STACK_IP, ip.source());
        assertEquals(Ipv4Header.PROTOCOL_ICMP, ip.protocol());
        final IcmpHeader icmp = new IcmpHeader().wrap(ip.buffer(), ip.payloadOffset(), ip.totalLength() - ip.headerLength());
        assertEquals(IcmpHeader.TYPE_ECHO_REPLY, icmp.type());
        assertTrue(icmp.checksumValid());
        assertEquals(id, icmp.identifier());
        assertEquals(seq, icmp.sequenceNumber());
        final byte[] got = new byte[data.length];
        ip.buffer().getBytes(ip.payloadOffset() + 8, got);
        assertArrayEquals(data, got);
    }

    @Test
    void fragmentedEchoRequestIsReassembledAndTheReplyFragmented()
    {
        learnPeer();
        final byte[] data = new byte[4000];
        new Random(1).nextBytes(data);
        final byte[] icmp = icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 9, 2, data);
        // Fragments of 1480 bytes, delivered last first.
        final byte[][] fragments = fragment(icmp, 1480, 77, Ipv4Header.PROTOCOL_ICMP);
        final List<byte[]> sent = exchange(fragments[2], fragments[0], fragments[1]);
        assertEquals(3, sent.size(), "4008 bytes of ICMP leave as three fragments");
        final byte[] whole = reassemble(sent);
        final UnsafeBuffer b = new UnsafeBuffer(whole);
        final IcmpHeader reply = new IcmpHeader().wrap(b, 0, whole.length);
        assertEquals(IcmpHeader.TYPE_ECHO_REPLY, reply.type());
        assertTrue(reply.checksumValid());
        assertArrayEquals(data, Arrays.copyOfRange(whole, 8, whole.length));
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLED));
        assertEquals(0, counters.unaccountedFrames());
    }

    /** Split an L4 payload into IPv4 fragment frames from the peer. */
    private byte[][] fragment(final byte[] l4, final int chunk, final int id, final int protocol)
    {
        final int n = (l4.length + chunk - 1) / chunk;
        final byte[][] frames = new byte[n][];
        for (int i = 0; i < n; i++)
        {
            final int from = i * chunk;
            final int to = Math.min(l4.length, from + chunk);
            frames[i] = fromPeer(mac, ipv4(PEER_IP, STACK_IP, protocol, id, to < l4.length, from, Arrays.copyOfRange(l4, from, to)));
        }
        return frames;
    }

    /** Reassemble our outbound fragments (checking their headers) into the L4 payload. */
    private static byte[] reassemble(final List<byte[]> frames)
    {
        int total = -1;
        final byte[] out = new byte[65536];
        int id = -1;
        for (final byte[] f : frames)
        {
            final Ipv4Header ip = ipOf(f);
            assertTrue(ip.totalLength() + 14 <= 1514, "fragment fits the MTU");
            if (id < 0)
            {
                id = ip.identification();
            }
            assertEquals(id, ip.identification());
            final int len = ip.totalLength() - 20;
            if (ip.moreFragments())
            {
                assertEquals(0, len % 8);
            }
            else
            {
                total = ip.fragmentOffset() + len;
            }
            ip.buffer().getBytes(ip.payloadOffset(), out, ip.fragmentOffset(), len);
        }
        assertTrue(total > 0);
        return Arrays.copyOf(out, total);
    }

    @Test
    void udpDatagramToBoundPortIsDeliveredAndEchoed()
    {
        learnPeer();
        stack.udp().bind(7, (socket, src, srcPort, buffer, offset, length, t) -> socket.send(src, srcPort, buffer, offset, length, t));
        final byte[] data = "hello udp".getBytes();
        final List<byte[]> sent = exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, 17, 1, false, 0, udp(PEER_IP, STACK_IP, 40000, 7, data))));
        assertEquals(1, sent.size());
        final Ipv4Header ip = ipOf(sent.get(0));
        final UdpHeader udp = new UdpHeader().wrap(ip.buffer(), ip.payloadOffset(), ip.totalLength() - 20);
        assertEquals(7, udp.sourcePort());
        assertEquals(40000, udp.destinationPort());
        assertTrue(udp.checksumValid(STACK_IP, PEER_IP));
        assertNotEquals(0, udp.checksum(), "we always send a checksum");
        final byte[] got = new byte[data.length];
        ip.buffer().getBytes(ip.payloadOffset() + 8, got);
        assertArrayEquals(data, got);
    }

    @Test
    void udpQueuedSocketReceivesInOrder()
    {
        final var socket = stack.udp().bind(5000, 1 << 16);
        for (int i = 0; i < 3; i++)
        {
            exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, 17, i, false, 0, udp(PEER_IP, STACK_IP, 4000 + i, 5000, new byte[] {(byte)i}))));
        }
        final int[] seen = new int[3];
        final int n = socket.receive((s, src, srcPort, buffer, offset, length, t) ->
        {
            assertEquals(1, length);
            seen[buffer.getByte(offset)] = srcPort;
        }, 10, now);
        assertEquals(3, n);
        assertArrayEquals(new int[] {4000, 4001, 4002}, seen);
    }

    /**
     * A queued socket takes a datagram of any size UDP allows: a queue sized for small datagrams (64 KiB) once refused
     * anything over 8 KiB (its ring's largest message) with an exception, counted as an internal error.
     */
    @Test
    void udpQueuedSocketTakesTheLargestDatagrams()
    {
        final var socket = stack.udp().bind(5000, 1 << 16);
        for (final int size : new int[] {9000, Udp.MAX_PAYLOAD})
        {
            final byte[] data = new byte[size];
            new java.util.Random(size).nextBytes(data);
            exchange(fragment(udp(PEER_IP, STACK_IP, 4000, 5000, data), 1480, size, 17));
            for (int i = 0; i < 4; i++)
            {
                stack.poll(now); // more fragments than one receive burst
            }
            assertArrayEquals(data, receiveOne(socket), "size " + size);
        }
        assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS));
    }

    /**
     * UDP datagrams and echo replies leave without DF: nothing here learns a smaller path MTU for them (only TCP acts
     * on "fragmentation needed"), so a router on a smaller link must be free to fragment them, as it is for a datagram
     * fragmented here. Before, one that fit our MTU went with DF and was dropped at such a link.
     */
    @Test
    void udpAndEchoRepliesLeaveWithoutDontFragment()
    {
        learnPeer();
        final List<byte[]> replies = exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 7, false, 0,
            icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, 1, new byte[1000]))));
        assertEquals(1, replies.size());
        assertFalse(ipOf(replies.get(0)).dontFragment(), "echo reply");
        final var socket = stack.udp().bind(6000, 1 << 16);
        assertTrue(socket.send(PEER_IP, 9, new UnsafeBuffer(new byte[1400]), 0, 1400, now));
        stack.poll(now);
        final List<byte[]> sent = device.takeSent();
        assertEquals(1, sent.size());
        assertFalse(ipOf(sent.get(0)).dontFragment(), "udp");
    }

    /** The one datagram queued on {@code socket}, its payload copied. */
    private byte[] receiveOne(final io.nicstack.stack.udp.UdpSocket socket)
    {
        final byte[][] got = new byte[1][];
        assertEquals(1, socket.receive((s, src, srcPort, buffer, offset, length, t) ->
        {
            got[0] = new byte[length];
            buffer.getBytes(offset, got[0]);
        }, 10, now));
        return got[0];
    }

    @Test
    void udpToClosedPortGetsPortUnreachableQuotingTheDatagram()
    {
        learnPeer();
        final byte[] datagram = ipv4(PEER_IP, STACK_IP, 17, 5, false, 0, udp(PEER_IP, STACK_IP, 40000, 9999, "x".getBytes()));
        final List<byte[]> sent = exchange(fromPeer(mac, datagram));
        assertEquals(1, sent.size());
        // RFC 792: the whole (short) datagram is quoted.
        assertIcmpErrorQuoting(sent.get(0), IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, datagram);
        assertEquals(1, counters.get(StackCounter.UDP_DROP_NO_PORT));
    }

    /**
     * Errors to one peer are limited by its own bucket (Icmp.PEER_BURST at once, one each Icmp.PEER_NANOS_PER_TOKEN),
     * below the global one: before the per-peer limit, one peer got the whole global burst (50). IcmpRateLimitTest
     * has the global limit and several peers.
     */
    @Test
    void icmpErrorsAreRateLimited()
    {
        learnPeer();
        final byte[] frame = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 17, 5, false, 0, udp(PEER_IP, STACK_IP, 1, 9999, new byte[0])));
        int sent = 0;
        for (int i = 0; i < 200; i++)
        {
            sent += exchange(frame).size();
        }
        final int burst = Math.min(Icmp.PEER_BURST, stack.config().icmpErrorBurst());
        assertEquals(burst, sent);
        assertEquals(200 - burst, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED)
            + counters.get(StackCounter.ICMP_OUT_RATE_LIMITED_PEER));
        now += burst * Icmp.PEER_NANOS_PER_TOKEN;
        for (int i = 0; i < 200; i++)
        {
            sent += exchange(frame).size();
        }
        assertEquals(2 * burst, sent, "time refills the bucket up to its burst size");
    }

    /**
     * RFC 1122 §3.2.1.7: a host MUST NOT discard a datagram just because it was received with a TTL below 2; TTL 0 and
     * 1 are answered like any other. Before, TTL 0 was dropped (as "never legal on the wire"), against the text.
     */
    @Test
    void aDatagramWithTtlZeroOrOneIsTakenLikeAnyOther()
    {
        learnPeer();
        for (final int ttl : new int[] {0, 1})
        {
            final byte[] request = ipv4(PEER_IP, STACK_IP, 1, 1, false, 0, icmpEcho(8, 1, ttl, new byte[8]));
            final UnsafeBuffer b = new UnsafeBuffer(request);
            new Ipv4Header().wrap(b, 0, request.length).ttl(ttl).updateChecksum();
            final List<byte[]> sent = exchange(fromPeer(mac, request));
            assertEquals(1, sent.size(), "the echo request with TTL " + ttl + " is answered");
            assertEquals(stack.config().defaultTtl(), ipOf(sent.get(0)).ttl(), "the reply goes with our own TTL");
        }
        assertEquals(2, counters.get(StackCounter.ICMP_OUT_ECHO_REPLIES));
        assertEquals(0, counters.unaccountedFrames());
    }

    @Test
    void everyMalformedIpv4HeaderHasItsOwnDropReason()
    {
        learnPeer();
        final byte[] good = ipv4(PEER_IP, STACK_IP, 1, 1, false, 0, icmpEcho(8, 1, 1, new byte[8]));
        final long truncated = counters.get(StackCounter.IPV4_DROP_TRUNCATED);
        final byte[] runt = Arrays.copyOf(fromPeer(mac, good), 14 + 19);
        assertTrue(exchange(runt).isEmpty());
        assertEquals(truncated + 1, counters.get(StackCounter.IPV4_DROP_TRUNCATED));
        assertDrop(StackCounter.IPV4_DROP_BAD_VERSION, patch(good, 0, 0x65), true);
        assertDrop(StackCounter.IPV4_DROP_BAD_HEADER_LENGTH, patch(good, 0, 0x44), true);
        assertDrop(StackCounter.IPV4_DROP_BAD_HEADER_LENGTH, patch(good, 0, 0x4F), true);
        assertDrop(StackCounter.IPV4_DROP_BAD_TOTAL_LENGTH, patch(good, 2, 0x05), true);
        assertDrop(StackCounter.IPV4_DROP_BAD_TOTAL_LENGTH, patch(patch(good, 2, 0), 3, 19), true);
        assertDrop(StackCounter.IPV4_DROP_BAD_CHECKSUM, patch(good, 10, good[10] ^ 0x01), false);
        assertDrop(StackCounter.IPV4_DROP_NOT_FOR_US, ipv4(PEER_IP, 0xC612_0009, 1, 1, false, 0, new byte[8]), false);
        assertDrop(StackCounter.IPV4_DROP_BAD_SOURCE, ipv4(0xE000_0001, STACK_IP, 1, 1, false, 0, new byte[8]), false);
        // To our subnet's broadcast address: no Protocol Unreachable either (see the next test).
        assertDrop(StackCounter.IPV4_DROP_UNKNOWN_PROTOCOL, ipv4(PEER_IP, 0xC612_00FF, 99, 1, false, 0, new byte[8]), false);
        assertDrop(StackCounter.ICMP_DROP_BAD_CHECKSUM, patch(good, 22, good[22] ^ 0x10), false);
        // Options: IHL 6 with one option of length 0, to our subnet's broadcast (to us it is answered: the next test).
        assertDrop(StackCounter.IPV4_DROP_BAD_OPTIONS, withOptions(good, 0xC612_00FF, 7, 0, 0, 0), true);
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * {@code datagram} (a 20-byte header) with the option octets given (a multiple of 4), sent to {@code destination},
     * checksum fixed.
     */
    private static byte[] withOptions(final byte[] datagram, final int destination, final int... options)
    {
        final byte[] d = new byte[datagram.length + options.length];
        System.arraycopy(datagram, 0, d, 0, 20);
        System.arraycopy(datagram, 20, d, 20 + options.length, datagram.length - 20);
        for (int i = 0; i < options.length; i++)
        {
            d[20 + i] = (byte)options[i];
        }
        d[0] = (byte)(0x40 | (20 + options.length) / 4);
        new Ipv4Header().wrap(new UnsafeBuffer(d), 0, d.length).totalLength(d.length).destination(destination).updateChecksum();
        return d;
    }

    /**
     * RFC 1122 3.2.2.6: Record Route and Timestamp options of an echo request SHOULD be updated to include this host and
     * sent back in the reply's header (Linux does: {@code ping -R}). Before, the reply had no options.
     */
    @Test
    void anEchoReplyCarriesTheRequestsRecordRouteAndTimestampWithUsAdded()
    {
        learnPeer();
        final byte[] data = "round trip".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        final byte[] request = ipv4(PEER_IP, STACK_IP, 1, 1, false, 0, icmpEcho(8, 77, 5, data));
        final int ts = 0x8000_0000 | (int)(now / 1_000_000L);
        final int[] us = {0xC6, 0x12, 0x00, 0x02};
        // Record Route with room for two, one slot already taken by a router on the way.
        assertEchoOptions(request, new int[] {7, 11, 8, 1, 2, 3, 4, 0, 0, 0, 0, 0},
            new int[] {7, 11, 12, 1, 2, 3, 4, us[0], us[1], us[2], us[3], 0}, data);
        // Record Route full: reflected unchanged. A NOP and an unknown option before it are not reflected.
        assertEchoOptions(request, new int[] {1, 0x94, 4, 0, 0, 7, 7, 8, 9, 9, 9, 9},
            new int[] {7, 7, 8, 9, 9, 9, 9, 0}, data);
        // Timestamps with addresses (flag 1), one slot.
        assertEchoOptions(request, new int[] {68, 12, 5, 0x01, 0, 0, 0, 0, 0, 0, 0, 0},
            new int[] {68, 12, 13, 0x01, us[0], us[1], us[2], us[3], ts >>> 24, ts >>> 16 & 0xFF, ts >>> 8 & 0xFF, ts & 0xFF}, data);
        // Timestamps only (flag 0), full: the overflow count goes up.
        assertEchoOptions(request, new int[] {68, 8, 9, 0x20, 1, 2, 3, 4},
            new int[] {68, 8, 9, 0x30, 1, 2, 3, 4}, data);
        // Prespecified (flag 3): our slot gets our time; a slot naming another host does not.
        assertEchoOptions(request, new int[] {68, 12, 5, 0x03, us[0], us[1], us[2], us[3], 0, 0, 0, 0},
            new int[] {68, 12, 13, 0x03, us[0], us[1], us[2], us[3], ts >>> 24, ts >>> 16 & 0xFF, ts >>> 8 & 0xFF, ts & 0xFF}, data);
        assertEchoOptions(request, new int[] {68, 12, 5, 0x03, 198, 18, 0, 9, 0, 0, 0, 0},
            new int[] {68, 12, 5, 0x03, 198, 18, 0, 9, 0, 0, 0, 0}, data);
        // Nothing to reflect: a plain reply.
        assertEchoOptions(request, new int[] {1, 1, 1, 0}, new int[0], data);
        assertEquals(0, counters.unaccountedFrames());
    }

    /** Send {@code request} with {@code options}; its reply must carry {@code expected} (empty: no options) and the data. */
    private void assertEchoOptions(final byte[] request, final int[] options, final int[] expected, final byte[] data)
    {
        final List<byte[]> sent = exchange(fromPeer(mac, withOptions(request, STACK_IP, options)));
        assertEquals(1, sent.size(), "one reply");
        final Ipv4Header ip = ipOf(sent.get(0));
        assertEquals(20 + expected.length, ip.headerLength());
        final byte[] got = new byte[expected.length];
        ip.buffer().getBytes(ip.offset() + 20, got);
        final byte[] want = new byte[expected.length];
        for (int i = 0; i < expected.length; i++)
        {
            want[i] = (byte)expected[i];
        }
        assertArrayEquals(want, got, "reply options for " + Arrays.toString(options));
        assertEchoReply(sent.get(0), 77, 5, data);
    }

    /**
     * RFC 1122 3.2.2.5: a host SHOULD send Parameter Problem for a datagram it drops for a bad parameter (Linux does, for
     * a malformed option): code 0, the pointer naming the option's first octet (RFC 792), the datagram quoted. Never
     * about a broadcast or an ICMP error (3.2.2). Before, such datagrams were dropped without an answer.
     */
    @Test
    void aDatagramWithAMalformedOptionGetsParameterProblemPointingAtIt()
    {
        learnPeer();
        final byte[] good = ipv4(PEER_IP, STACK_IP, 1, 1, false, 0, icmpEcho(8, 1, 1, new byte[8]));
        final int[][] cases = {
            {7, 0, 0, 0, 20},    // a length below 2
            {1, 7, 9, 0, 21},    // after a NOP, a length past the header
            {1, 1, 1, 68, 23},   // a kind with no room for its length octet
        };
        for (final int[] c : cases)
        {
            final byte[] datagram = withOptions(good, STACK_IP, c[0], c[1], c[2], c[3]);
            final List<byte[]> sent = exchange(fromPeer(mac, datagram));
            assertEquals(1, sent.size());
            final IcmpHeader icmp = assertIcmpErrorQuoting(sent.get(0), IcmpHeader.TYPE_PARAMETER_PROBLEM, 0, datagram);
            assertEquals(c[4], icmp.restOfHeader() >>> 24, "the pointer");
            assertEquals(0, icmp.restOfHeader() & 0xFF_FFFF, "the rest is unused");
        }
        assertEquals(3, counters.get(StackCounter.ICMP_OUT_PARAMETER_PROBLEM));
        assertEquals(3, counters.get(StackCounter.IPV4_DROP_BAD_OPTIONS));

        final byte[] error = ipv4(PEER_IP, STACK_IP, 1, 2, false, 0, icmpEcho(3, 1, 1, new byte[28]));
        assertTrue(exchange(fromPeer(mac, withOptions(error, STACK_IP, 7, 0, 0, 0))).isEmpty(), "never about an ICMP error");
        assertTrue(exchange(fromPeer(mac, withOptions(good, 0xC612_00FF, 7, 0, 0, 0))).isEmpty(), "never about a broadcast");
        assertEquals(5, counters.get(StackCounter.IPV4_DROP_BAD_OPTIONS));
        assertEquals(3, counters.get(StackCounter.ICMP_OUT_PARAMETER_PROBLEM));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * RFC 1122 3.2.2.1: a datagram for a protocol we do not support SHOULD get an ICMP Protocol Unreachable (Linux sends
     * one), through ICMP's error path: rate limited, quoting the datagram, never about a broadcast or a non-initial
     * fragment (3.2.2). The frame still ends in its one drop counter. Before, it was dropped without an answer.
     */
    @Test
    void aDatagramForAnUnsupportedProtocolGetsProtocolUnreachable()
    {
        learnPeer();
        final byte[] datagram = ipv4(PEER_IP, STACK_IP, 99, 1, false, 0, new byte[16]);
        final List<byte[]> sent = exchange(fromPeer(mac, datagram));
        assertEquals(1, sent.size());
        assertIcmpErrorQuoting(sent.get(0), IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PROTOCOL_UNREACHABLE, datagram);
        assertEquals(1, counters.get(StackCounter.ICMP_OUT_UNREACHABLE));

        assertTrue(exchange(fromPeer(mac, ipv4(PEER_IP, 0xC612_00FF, 99, 2, false, 0, new byte[16]))).isEmpty(),
            "not about a broadcast");
        assertTrue(exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, 99, 3, false, 8, new byte[16]))).isEmpty(),
            "not about a non-initial fragment");
        assertEquals(3, counters.get(StackCounter.IPV4_DROP_UNKNOWN_PROTOCOL));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * A datagram to our own address in a link-layer broadcast frame is discarded (RFC 1122 3.3.6 SHOULD), so nothing
     * answers it: no echo reply, no port unreachable (3.2.2: never an error about a link-layer broadcast). Before, the
     * Ethernet broadcast was forgotten once the frame was accepted, and both were answered. A broadcast datagram in a
     * broadcast frame is still taken.
     */
    @Test
    void aUnicastDatagramInALinkLayerBroadcastIsDiscarded()
    {
        learnPeer();
        final var socket = stack.udp().bind(5000, 1 << 16);
        final byte[][] unicast = {
            ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 1, false, 0, icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, 1, new byte[8])),
            ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 2, false, 0, udp(PEER_IP, STACK_IP, 4000, 9999, new byte[8])),
        };
        for (final byte[] d : unicast)
        {
            assertTrue(exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, d)).isEmpty());
        }
        assertEquals(2, counters.get(StackCounter.IPV4_DROP_UNICAST_IN_LINK_BROADCAST));
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4,
            ipv4(PEER_IP, 0xFFFF_FFFF, Ipv4Header.PROTOCOL_UDP, 3, false, 0, udp(PEER_IP, 0xFFFF_FFFF, 4000, 5000, new byte[8]))));
        assertEquals(1, socket.receive((s, src, srcPort, buffer, offset, length, t) -> { }, 10, now), "a broadcast datagram");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * RFC 1122 3.3.6: a host SHOULD accept the old broadcast form {subnet, 0} as the destination of an incoming
     * datagram, and treats it as the broadcast it is: a bound socket gets it, nothing answers it (no echo reply, no
     * port unreachable, 3.2.2) and a SYN to it is not a connection. Before, it was dropped as not for us.
     */
    @Test
    void theSubnetsNetworkAddressIsAcceptedAsABroadcast()
    {
        learnPeer();
        final int network = 0xC612_0000;
        final var socket = stack.udp().bind(5000, 1 << 16);
        final TcpListener listener = stack.tcp().listen(80, 8, l -> { });
        final byte[][] unanswered = {
            ipv4(PEER_IP, network, Ipv4Header.PROTOCOL_ICMP, 1, false, 0, icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, 1, new byte[8])),
            ipv4(PEER_IP, network, Ipv4Header.PROTOCOL_UDP, 2, false, 0, udp(PEER_IP, network, 4000, 9999, new byte[8])),
            ipv4(PEER_IP, network, Ipv4Header.PROTOCOL_TCP, 3, false, 0, tcpSyn(PEER_IP, network, 40000, 80)),
        };
        for (final byte[] d : unanswered)
        {
            assertTrue(exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, d)).isEmpty());
        }
        assertEquals(0, listener.synReceived(), "a SYN to a broadcast address is no connection");
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4,
            ipv4(PEER_IP, network, Ipv4Header.PROTOCOL_UDP, 4, false, 0, udp(PEER_IP, network, 4000, 5000, new byte[8]))));
        assertEquals(1, socket.receive((s, src, srcPort, buffer, offset, length, t) -> { }, 10, now), "a broadcast datagram");
        assertEquals(0, counters.get(StackCounter.IPV4_DROP_NOT_FOR_US));
        assertEquals(0, counters.unaccountedFrames());
    }

    @Test
    void ipv4OptionsAreSkipped()
    {
        learnPeer();
        final byte[] icmp = icmpEcho(8, 3, 4, new byte[16]);
        final byte[] d = new byte[24 + icmp.length];
        final byte[] base = ipv4(PEER_IP, STACK_IP, 1, 1, false, 0, icmp);
        System.arraycopy(base, 0, d, 0, 20);
        d[0] = 0x46;
        d[3] = (byte)d.length;
        d[20] = (byte)0x94; // router alert (RFC 2113), length 4
        d[21] = 4;
        System.arraycopy(icmp, 0, d, 24, icmp.length);
        final UnsafeBuffer b = new UnsafeBuffer(d);
        new Ipv4Header().wrap(b, 0, d.length).updateChecksum();
        final List<byte[]> sent = exchange(fromPeer(mac, d));
        assertEquals(1, sent.size());
        assertEchoReply(sent.get(0), 3, 4, new byte[16]);
    }

    /**
     * A datagram carrying a loose or strict source route option is dropped and counted, whether its route is still
     * unfinished (we would be an intermediate hop, and this host forwards nothing: RFC 1122 3.3.5) or ends here: RFC 7126
     * 4.3/4.4 recommend dropping both by default (they bypass filtering and let anyone on the path spoof a source that
     * gets the answers), as Linux does with accept_source_route=0. Before, both were delivered to the UDP socket.
     */
    @Test
    void aSourceRoutedDatagramIsDropped()
    {
        learnPeer();
        final int[] delivered = new int[1];
        stack.udp().bind(7, (s, src, port, b, o, l, t) -> delivered[0]++);
        // LSRR (131), length 7, pointer 4: the hop 198.51.100.9 is still to be visited; padded with EOL.
        final byte[] unfinishedLoose = {(byte)131, 7, 4, (byte)198, 51, 100, 9, 0};
        // SSRR (137), length 7, pointer 8: the route is complete, we are its final destination.
        final byte[] finishedStrict = {(byte)137, 7, 8, (byte)198, 51, 100, 9, 0};
        // NOP first: the option is found wherever it sits.
        final byte[] afterNop = {1, (byte)131, 7, 8, (byte)198, 51, 100, 9};
        for (final byte[] options : new byte[][] {unfinishedLoose, finishedStrict, afterNop})
        {
            final byte[] d = ipv4WithOptions(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, options,
                udp(PEER_IP, STACK_IP, 999, 7, new byte[4]));
            assertTrue(exchange(fromPeer(mac, d)).isEmpty(), "nothing answers it");
        }
        assertEquals(0, delivered[0], "not delivered");
        assertEquals(3, counters.get(StackCounter.IPV4_DROP_SOURCE_ROUTE));
        assertEquals(0, counters.unaccountedFrames());
        // Other options are still skipped (ipv4OptionsAreSkipped): record route (7) here.
        final byte[] recordRoute = {7, 7, 4, 0, 0, 0, 0, 0};
        exchange(fromPeer(mac, ipv4WithOptions(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, recordRoute,
            udp(PEER_IP, STACK_IP, 999, 7, new byte[4]))));
        assertEquals(1, delivered[0], "a datagram with another option is delivered");
    }

    private static byte[] ipv4WithOptions(final int src, final int dst, final int protocol, final byte[] options, final byte[] payload)
    {
        final int headerLength = 20 + options.length;
        final UnsafeBuffer b = new UnsafeBuffer(new byte[headerLength + payload.length]);
        new Ipv4Header().wrap(b, 0, b.capacity()).versionAndIhl(headerLength / 4).tos(0).totalLength(b.capacity())
            .identification(77).flagsAndFragmentOffset(false, false, 0).ttl(64).protocol(protocol).source(src)
            .destination(dst);
        b.putBytes(20, options);
        b.putBytes(headerLength, payload);
        new Ipv4Header().wrap(b, 0, b.capacity()).updateChecksum();
        return b.byteArray();
    }

    private static byte[] patch(final byte[] d, final int index, final int value)
    {
        final byte[] c = d.clone();
        c[index] = (byte)value;
        return c;
    }

    private void assertDrop(final StackCounter reason, final byte[] datagram, final boolean fixChecksum)
    {
        final byte[] d = datagram.clone();
        if (fixChecksum && d.length >= 20 && (d[0] & 0xF) >= 5 && (d[0] & 0xF) * 4 <= d.length)
        {
            final UnsafeBuffer b = new UnsafeBuffer(d);
            new Ipv4Header().wrap(b, 0, d.length).updateChecksum();
        }
        final long before = counters.get(reason);
        final List<byte[]> sent = exchange(fromPeer(mac, d));
        assertEquals(before + 1, counters.get(reason), reason.label());
        assertTrue(sent.isEmpty(), "nothing is sent for " + reason.label());
    }

    @Test
    void reassemblyTimesOutAndSendsTimeExceeded()
    {
        learnPeer();
        final byte[][] fragments = fragment(icmpEcho(8, 1, 1, new byte[3000]), 1480, 9, 1);
        exchange(fragments[0], fragments[1]);
        assertEquals(1, stack.ipv4().reassembler().active());
        now += 29 * SECOND;
        assertTrue(exchange().isEmpty());
        now += 2 * SECOND;
        final List<byte[]> sent = exchange();
        assertEquals(1, sent.size());
        final Ipv4Header ip = ipOf(sent.get(0));
        final IcmpHeader icmp = new IcmpHeader().wrap(ip.buffer(), ip.payloadOffset(), ip.totalLength() - 20);
        assertEquals(IcmpHeader.TYPE_TIME_EXCEEDED, icmp.type());
        assertEquals(1, icmp.code());
        assertEquals(0, stack.ipv4().reassembler().active());
        assertEquals(0, stack.ipv4().reassembler().bytesHeld());
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLY_TIMEOUTS));
        // The late last fragment opens a new context and never completes alone.
        exchange(fragments[2]);
        assertEquals(0, counters.get(StackCounter.IPV4_REASSEMBLED));
    }

    /**
     * An ICMP error whose fragments never all arrive gets no time exceeded either: never an error about an ICMP error
     * (RFC 1122 3.2.2), which the timeout once skipped.
     */
    @Test
    void reassemblyTimeoutIsNotReportedAboutAnIcmpError()
    {
        learnPeer();
        final byte[] unreachable = new byte[64];
        unreachable[0] = (byte)IcmpHeader.TYPE_DESTINATION_UNREACHABLE;
        unreachable[1] = 3;
        exchange(fragment(unreachable, 32, 10, Ipv4Header.PROTOCOL_ICMP)[0]);
        assertEquals(1, stack.ipv4().reassembler().active());
        now += 31 * SECOND;
        assertTrue(exchange().isEmpty());
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLY_TIMEOUTS));
        assertEquals(0, counters.get(StackCounter.ICMP_OUT_TIME_EXCEEDED));
    }

    /**
     * Fragments to a broadcast that never complete get no time exceeded (RFC 1122 3.2.2), for each form of broadcast
     * Ipv4 accepts on input: the limited one, the directed one and the old form {subnet, 0} (3.3.6), which the timeout
     * once took for a unicast address.
     */
    @Test
    void reassemblyTimeoutIsNotReportedAboutABroadcast()
    {
        learnPeer();
        int id = 20;
        for (final int destination : new int[] {0xFFFF_FFFF, 0xC612_00FF, 0xC612_0000})
        {
            final byte[] udp = Arrays.copyOf(udp(PEER_IP, destination, 4000, 9999, new byte[100]), 48);
            exchange(fromPeer(mac, ipv4(PEER_IP, destination, Ipv4Header.PROTOCOL_UDP, id++, true, 0, udp)));
            assertEquals(1, stack.ipv4().reassembler().active(), "first fragment to " + Integer.toHexString(destination));
            now += 31 * SECOND;
            assertTrue(exchange().isEmpty(), "nothing about a datagram to " + Integer.toHexString(destination));
        }
        assertEquals(3, counters.get(StackCounter.IPV4_REASSEMBLY_TIMEOUTS));
        assertEquals(0, counters.get(StackCounter.ICMP_OUT_TIME_EXCEEDED));
    }

    /**
     * Each fragment fits in 65,535 bytes with its own header, but the whole does not with the first one's: a first
     * fragment with 40 bytes of options, the rest without, the data ending at 65,515. It is dropped; before, a
     * 65,575-byte datagram was delivered with a total length field of 39 (65,575 modulo 65,536), and echoed.
     */
    @Test
    void aReassembledDatagramLongerThan65535BytesIsDropped()
    {
        learnPeer();
        final byte[] echo = icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, 1, new byte[65_515 - 8]);
        final byte[][] fragments = fragment(echo, 1480, 11, Ipv4Header.PROTOCOL_ICMP);
        fragments[0] = fromPeer(mac, withOptions(ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 11, true, 0,
            Arrays.copyOf(echo, 1480)), 40));
        for (final byte[] f : fragments)
        {
            device.inject(f);
            stack.poll(now);
        }
        assertTrue(device.takeSent().isEmpty(), "nothing echoed");
        assertEquals(0, counters.get(StackCounter.IPV4_REASSEMBLED));
        assertEquals(0, stack.ipv4().reassembler().active());
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLY_DISCARDED), "a datagram in progress given up");
        assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS));
    }

    /**
     * A datagram in progress given up for having more fragments than a context holds is counted as discarded, as one
     * given up for an overlap, a timeout or a newer datagram is; a fragment refused with no datagram in progress is not.
     */
    @Test
    void aDatagramGivenUpAtTheFragmentLimitIsCountedAsDiscarded()
    {
        learnPeer();
        final int limit = stack.config().reassemblyMaxFragments();
        for (int i = 0; i < limit; i++)
        {
            exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 16, true, 16 * i, new byte[8])));
        }
        assertEquals(1, stack.ipv4().reassembler().active());
        exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 16, true, 16 * limit, new byte[8])));
        assertEquals(0, stack.ipv4().reassembler().active());
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_REASSEMBLY_OVERFLOW));
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLY_DISCARDED));
        exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 17, false, 65_528, new byte[16])));
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_BAD_FRAGMENT));
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLY_DISCARDED), "no datagram was in progress");
        assertEquals(0, counters.unaccountedFrames());
    }

    /** {@code datagram} with {@code optionBytes} of NOP options inserted after its 20-byte header. */
    private static byte[] withOptions(final byte[] datagram, final int optionBytes)
    {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[datagram.length + optionBytes]);
        b.putBytes(0, datagram, 0, 20);
        b.setMemory(20, optionBytes, (byte)1);
        b.putBytes(20 + optionBytes, datagram, 20, datagram.length - 20);
        new Ipv4Header().wrap(b, 0, b.capacity()).versionAndIhl(5 + optionBytes / 4).totalLength(b.capacity()).updateChecksum();
        return b.byteArray();
    }

    /**
     * No source can hold every reassembly context. One that opens 64 datagrams (8-byte first fragments) keeps a
     * quarter of the contexts, its oldest given up for its newest; and when every context is taken, by 64 sources, the oldest datagram is given up for a new one. Before, both floods made
     * every other host's fragments drop for 30 s.
     */
    @Test
    void noSourceNorFloodOfSourcesKeepsOthersFromReassembling()
    {
        learnPeer();
        for (int id = 0; id < 64; id++)
        {
            exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, id, true, 0, new byte[8])));
        }
        assertEquals(16, stack.ipv4().reassembler().active(), "a quarter of the contexts for one source");
        assertReassemblesFrom(0xC612_0063, 1);

        for (int i = 0; i < 64; i++)
        {
            now += 1_000_000L;
            exchange(fromPeer(mac, ipv4(0xC612_0010 + i, STACK_IP, Ipv4Header.PROTOCOL_UDP, 7, true, 0, new byte[8])));
        }
        assertEquals(64, stack.ipv4().reassembler().active());
        assertReassemblesFrom(0xC612_0064, 2);
        assertEquals(0, counters.get(StackCounter.IPV4_DROP_REASSEMBLY_OVERFLOW));
        assertEquals(0, counters.unaccountedFrames());
    }

    /** A two-fragment UDP datagram from {@code source} to a bound port is reassembled: {@code expected} so far. */
    private void assertReassemblesFrom(final int source, final int expected)
    {
        final byte[] l4 = udp(source, STACK_IP, 1000, 7, new byte[100]);
        now += 1_000_000L;
        exchange(fromPeer(mac, ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_UDP, 1, true, 0, Arrays.copyOf(l4, 56))),
            fromPeer(mac, ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_UDP, 1, false, 56, Arrays.copyOfRange(l4, 56, l4.length))));
        assertEquals(expected, counters.get(StackCounter.IPV4_REASSEMBLED), "reassembled from " + Integer.toHexString(source));
    }

    /**
     * The largest datagram, from a sender behind a 576-byte MTU (RFC 791's minimum), comes in 552-byte fragments: 119
     * of them. It is reassembled; with at most 64 fragments per datagram, anything over 35 KB sent that way was not.
     */
    @Test
    void theLargestDatagramReassemblesFromMinimumMtuFragments()
    {
        learnPeer();
        final var socket = stack.udp().bind(5000, 1 << 16);
        final byte[] data = new byte[Udp.MAX_PAYLOAD];
        new java.util.Random(576).nextBytes(data);
        final byte[][] fragments = fragment(udp(PEER_IP, STACK_IP, 4000, 5000, data), 552, 12, Ipv4Header.PROTOCOL_UDP);
        assertEquals(119, fragments.length);
        for (final byte[] f : fragments)
        {
            exchange(f);
        }
        assertArrayEquals(data, receiveOne(socket));
    }

    @Test
    void overlappingFragmentDiscardsTheWholeDatagram()
    {
        learnPeer();
        final byte[] icmp = icmpEcho(8, 1, 1, new byte[2000]);
        final byte[][] fragments = fragment(icmp, 1024, 11, 1);
        // A fragment at offset 512 overlapping the first one's second half.
        final byte[] overlap = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 11, true, 512, new byte[512]));
        assertTrue(exchange(fragments[0], overlap, fragments[1]).isEmpty());
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_FRAGMENT_OVERLAP));
        assertEquals(0, counters.get(StackCounter.IPV4_REASSEMBLED));
        assertEquals(1, stack.ipv4().reassembler().active(), "fragment 1 opened a fresh context after the discard");
        assertEquals(0, counters.unaccountedFrames());
    }

    @Test
    void duplicateFragmentIsDroppedAndReassemblyStillCompletes()
    {
        learnPeer();
        final byte[][] fragments = fragment(icmpEcho(8, 1, 1, new byte[2000]), 1024, 12, 1);
        final List<byte[]> sent = exchange(fragments[0], fragments[0], fragments[1]);
        assertEquals(2, sent.size(), "reply of 2008 bytes in two fragments");
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_FRAGMENT_DUPLICATE));
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLED));
    }

    @Test
    void aDuplicateOfTheLastFragmentIsDroppedAndReassemblyStillCompletes()
    {
        learnPeer();
        final byte[][] fragments = fragment(icmpEcho(8, 1, 1, new byte[3000]), 1480, 13, 1);
        final List<byte[]> sent = exchange(fragments[0], fragments[2], fragments[2], fragments[1]);
        assertEquals(3, sent.size(), "reply of 3008 bytes in three fragments");
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_FRAGMENT_DUPLICATE));
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLED));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * A fragment with the range of one held but the other MF contradicts it about where the datagram ends: not a
     * duplicate but a conflict, which discards the datagram as an overlap does, counted as one. Before, it was counted
     * as a duplicate yet set the datagram's length: the real last fragment was then refused as an overlap, so a
     * datagram every fragment of which had arrived was neither delivered nor counted as discarded.
     */
    @Test
    void aFragmentRepeatingARangeWithTheOtherMoreFragmentsFlagDiscardsTheDatagram()
    {
        learnPeer();
        final byte[] echo = icmpEcho(8, 1, 1, new byte[3000]);
        final byte[][] fragments = fragment(echo, 1480, 14, 1);
        final byte[] middleAsLast = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 14, false, 1480,
            Arrays.copyOfRange(echo, 1480, 2960)));
        assertTrue(exchange(fragments[0], fragments[1], middleAsLast).isEmpty());
        assertEquals(0, stack.ipv4().reassembler().active(), "discarded at once");
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_FRAGMENT_OVERLAP));
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLY_DISCARDED));

        // The other way round: the last fragment held, then its range again with MF set.
        final byte[] lastWithMore = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 15, true, 2960,
            Arrays.copyOfRange(echo, 2960, echo.length)));
        assertTrue(exchange(fragment(echo, 1480, 15, 1)[2], lastWithMore).isEmpty());
        assertEquals(0, stack.ipv4().reassembler().active());
        assertEquals(2, counters.get(StackCounter.IPV4_DROP_FRAGMENT_OVERLAP));
        assertEquals(2, counters.get(StackCounter.IPV4_REASSEMBLY_DISCARDED));
        assertEquals(0, counters.get(StackCounter.IPV4_DROP_FRAGMENT_DUPLICATE));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * Four sources, each with four datagrams of almost 64 KiB in progress, hold 16 of the 64 contexts: another host's
     * datagram still reassembles. Before, a cap on bytes held (set to what they held) refused its fragments until the
     * four sources' datagrams timed out, since only a lack of contexts gave an old datagram up; and the cap bounded no
     * memory, every context's 64 KiB being allocated up front. The cap is gone: contexts bound the memory.
     */
    @Test
    void fourSourcesWithLargeDatagramsInProgressDoNotKeepOthersFromReassembling()
    {
        learnPeer();
        for (int source = 0; source < 4; source++)
        {
            for (int id = 0; id < 4; id++)
            {
                for (int offset = 0; offset < 65_504; offset += 1480)
                {
                    exchange(fromPeer(mac, ipv4(0xC612_0020 + source, STACK_IP, Ipv4Header.PROTOCOL_UDP, id, true, offset,
                        new byte[Math.min(1480, 65_504 - offset)])));
                }
            }
        }
        assertEquals(16, stack.ipv4().reassembler().active());
        assertEquals(16 * 65_504, stack.ipv4().reassembler().bytesHeld());
        assertReassemblesFrom(0xC612_0064, 1);
        assertEquals(0, counters.get(StackCounter.IPV4_DROP_REASSEMBLY_OVERFLOW));
        assertEquals(0, counters.unaccountedFrames());
    }

    @Test
    void emptyLastFragmentCompletesADatagram()
    {
        learnPeer();
        // An ICMP echo whose last fragment carries no payload (legal, if odd): found by the fuzz test.
        final byte[] icmp = icmpEcho(8, 1, 1, new byte[1016]);
        final byte[] first = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 21, true, 0, icmp));
        final byte[] last = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 21, false, icmp.length, new byte[0]));
        assertEquals(1, exchange(first, last).size());
        assertEquals(1, counters.get(StackCounter.IPV4_REASSEMBLED));
        assertEquals(0, stack.ipv4().reassembler().bytesHeld());
    }

    @Test
    void fragmentsBeyond65535AreMalformed()
    {
        learnPeer();
        exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 5, false, 65528, new byte[16])));
        assertEquals(1, counters.get(StackCounter.IPV4_DROP_BAD_FRAGMENT));
        exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 6, true, 0, new byte[13])));
        assertEquals(2, counters.get(StackCounter.IPV4_DROP_BAD_FRAGMENT), "non-last fragment not a multiple of 8");
    }

    @Test
    void unresolvedNextHopGivesUpAfterRetries()
    {
        final var socket = stack.udp().bind(6000, 1 << 16);
        socket.send(0xC612_0005, 9, new UnsafeBuffer(new byte[10]), 0, 10, now);
        stack.poll(now);
        assertEquals(1, device.takeSent().size(), "first ARP request");
        int requests = 0;
        for (int i = 0; i < 5; i++)
        {
            now += SECOND;
            requests += exchange().size();
        }
        assertEquals(2, requests, "three requests in all (RFC 1122 2.3.2.1 bounds them)");
        assertEquals(1, counters.get(StackCounter.ARP_RESOLUTION_FAILED));
        assertEquals(0, stack.arp().queuedFrames());
    }

    /**
     * A datagram to an address no host of ours may be sent to is refused at once and nothing goes on the wire: 0/8,
     * loopback (this stack has none), multicast (not supported: it would go to the gateway's MAC), class E, our own
     * address (RFC 1122 3.2.1.3: 127/8 must never leave a host), the subnet's network address (no host holds it: ARP
     * never learns it). The broadcast addresses stay allowed. Before, a datagram to the network address 198.18.0.0 was
     * taken, waited for ARP and was dropped as ARP_RESOLUTION_FAILED.
     */
    @Test
    void udpRefusesToSendToAddressesNoPeerHolds()
    {
        final var socket = stack.udp().bind(6000, 1 << 16);
        final UnsafeBuffer payload = new UnsafeBuffer(new byte[10]);
        for (final int refused : new int[] {0x0000_0000, 0x00A0_0001, 0x7F00_0001, 0xE000_0001, 0xF000_0001, STACK_IP, 0xC612_0000})
        {
            assertThrows(IllegalArgumentException.class, () -> socket.send(refused, 9, payload, 0, 10, now),
                Integer.toHexString(refused));
        }
        stack.poll(now);
        assertEquals(0, device.takeSent().size(), "nothing on the wire, not even an ARP request");
        assertEquals(0, counters.get(StackCounter.UDP_OUT_DATAGRAMS));

        assertTrue(socket.send(0xFFFF_FFFF, 9, payload, 0, 10, now), "limited broadcast");
        assertTrue(socket.send(0xC612_00FF, 9, payload, 0, 10, now), "the subnet's broadcast");
        stack.poll(now);
        assertEquals(2, device.takeSent().size());
        assertEquals(2, counters.get(StackCounter.UDP_OUT_DATAGRAMS));
    }

    /**
     * Echo requests from more spoofed on-link sources than the ARP cache holds (on a /16) fill it with entries waiting
     * for replies that never come; a peer that answered is never evicted for them. Before, eviction went round-robin over
     * every entry and the known peer was evicted. (Waiting entries no longer give way to one another either, RFC 1122
     * 2.3.2.1: once the cache is full of them new sources are refused, counted as ARP_RESOLUTION_REFUSED, not evicted.)
     */
    @Test
    void spoofedSourcesDoNotEvictAPeerThatAnswered()
    {
        stack = new NetStack(device, StackConfig.of("198.18.0.2/16"), counters, now);
        mac = stack.config().mac();
        learnPeer();
        final long peer = stack.arp().lookup(PEER_IP);
        assertEquals(PEER_MAC, peer);
        for (int i = 0; i < 2 * stack.config().arpCacheSize(); i++)
        {
            exchange(fromPeer(mac, ipv4(0xC612_1000 + i, STACK_IP, Ipv4Header.PROTOCOL_ICMP, i, false, 0,
                icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, i, new byte[8]))));
        }
        assertTrue(counters.get(StackCounter.ARP_RESOLUTION_REFUSED) > 0, "the cache filled");
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "the peer that answered is still known");
    }

    /**
     * ARP requests for us from more spoofed on-link senders than the cache holds (on a /16) do not evict a peer we
     * know: a request's sender gets an entry only while the cache has a free slot (RFC 826 adds it for efficiency
     * only; the reply goes to the request's sender hardware address either way). Before, each one took an entry at
     * once, evicting round-robin, and the known peer was gone after one pass.
     */
    @Test
    void arpRequestsFromSpoofedSendersDoNotEvictAKnownPeer()
    {
        stack = new NetStack(device, StackConfig.of("198.18.0.2/16"), counters, now);
        mac = stack.config().mac();
        learnPeer();
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP));
        final int n = stack.config().arpCacheSize();
        for (int i = 0; i < 2 * n; i++)
        {
            final long sha = 0x0200_0000_0000L + 0x10000 + i;
            final List<byte[]> sent = exchange(ethernet(MacAddress.BROADCAST, sha, EthernetFrame.ETHERTYPE_ARP,
                arp(ArpPacket.OP_REQUEST, sha, 0xC612_1000 + i, 0, STACK_IP)));
            assertEquals(1, sent.size(), "each request is still answered");
        }
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "the known peer is still known");
        assertEquals(0, counters.get(StackCounter.ARP_CACHE_FULL), "no entry evicted for a request's sender");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * A peer we keep sending to (a gateway) stays in a full cache while new destinations of ours take entries one after
     * another: eviction gives a second chance to entries used since the victim pointer last passed them (CLOCK). Before,
     * eviction went round-robin over every entry and the peer in use was evicted on the first pass. In a cache of two or
     * three entries a quarter is none, so any cache counted as flooded with entries waiting for replies, and with none
     * waiting the same slot, the peer's, was evicted every time.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 3, 8})
    void aPeerInUseStaysInAFullCacheWhileNewDestinationsComeAndGo(final int cacheSize)
    {
        stack = new NetStack(device, StackConfig.of("198.18.0.2/16").arpCacheSize(cacheSize), counters, now);
        mac = stack.config().mac();
        final int size = stack.config().arpCacheSize();
        learnPeer();
        for (int i = 1; i < size; i++)
        {
            final long otherMac = 0x0200_0000_0000L + i;
            exchange(ethernet(MacAddress.BROADCAST, otherMac, EthernetFrame.ETHERTYPE_ARP,
                arp(ArpPacket.OP_REQUEST, otherMac, 0xC612_2000 + i, 0, STACK_IP)));
        }
        final var socket = stack.udp().bind(6000, 1 << 16);
        final UnsafeBuffer payload = new UnsafeBuffer(new byte[10]);
        for (int i = 0; i < 4 * size; i++)
        {
            assertTrue(socket.send(PEER_IP, 9, payload, 0, 10, now));
            final int destination = 0xC612_3000 + i;
            final long destinationMac = 0x0A00_0000_3000L + i;
            assertTrue(socket.send(destination, 9, payload, 0, 10, now));
            stack.poll(now);
            device.takeSent();
            exchange(ethernet(mac, destinationMac, EthernetFrame.ETHERTYPE_ARP,
                arp(ArpPacket.OP_REPLY, destinationMac, destination, mac, STACK_IP)));
        }
        assertTrue(counters.get(StackCounter.ARP_CACHE_FULL) >= 4 * size, "the cache was full throughout");
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "the peer in use is still known");
    }

    /**
     * Identifications of datagrams a router may fragment come from a counter per destination (RFC 7739 §5.3), not one
     * for all: a host that sees its own datagrams' identifications learns nothing of another host's, so cannot count
     * our traffic to it (an idle scan) nor forge fragments that join its datagrams. Before, one counter, starting at
     * our address times 31, served every destination.
     */
    @Test
    void identificationsAreCountedPerDestination()
    {
        final int other = 0xC612_0007;
        final long otherMac = 0x0200_0000_0007L;
        learnPeer();
        exchange(ethernet(MacAddress.BROADCAST, otherMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, otherMac, other, 0, STACK_IP)));
        final var socket = stack.udp().bind(6000, 1 << 16);
        final int[] ids = new int[3];
        final int[] to = {PEER_IP, other, PEER_IP};
        for (int i = 0; i < 3; i++)
        {
            assertTrue(socket.send(to[i], 9, new UnsafeBuffer(new byte[10]), 0, 10, now));
            stack.poll(now);
            final List<byte[]> sent = device.takeSent();
            assertEquals(1, sent.size());
            ids[i] = ipOf(sent.get(0)).identification();
        }
        assertEquals((ids[0] + 1) & 0xFFFF, ids[2], "the next to the same destination");
        assertNotEquals((ids[0] + 1) & 0xFFFF, ids[1], "another destination's is not the next of one counter");
        assertNotEquals((STACK_IP * 31) & 0xFFFF, ids[0], "nor derived from our address");

        // TCP's segments (DF set) too: anyone with a connection to us must not count our segments to others.
        final TcpHandler quiet = new TcpHandler() { };
        for (int i = 0; i < 3; i++)
        {
            stack.tcp().connect(to[i], 80, quiet, null);
            stack.poll(now);
            final List<byte[]> sent = device.takeSent();
            assertEquals(1, sent.size(), "a SYN");
            assertTrue(ipOf(sent.get(0)).dontFragment());
            ids[i] = ipOf(sent.get(0)).identification();
        }
        assertEquals((ids[0] + 1) & 0xFFFF, ids[2], "the next SYN to the same destination");
        assertNotEquals((ids[0] + 1) & 0xFFFF, ids[1], "a SYN to another destination is not the next of one counter");
    }

    /**
     * Another host claiming our address (an ARP packet with our address as its sender, from another MAC) is an address
     * conflict (RFC 5227 §2.4): counted, and defended indefinitely with one announcement at most every DEFEND_INTERVAL
     * (10 s; option (c), as Arp.input says: option (b) would give the address up at a second conflict within 10 s),
     * never answered as if it were a request for us. Before it went unnoticed, and got a reply.
     */
    @Test
    void anotherHostClaimingOurAddressIsCountedAndDefendedOncePerTenSeconds()
    {
        final long intruder = 0x0A00_0000_0066L;
        final byte[] claim = ethernet(MacAddress.BROADCAST, intruder, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, intruder, STACK_IP, 0, STACK_IP));
        final List<byte[]> first = exchange(claim);
        assertEquals(1, first.size(), "one announcement");
        final ArpPacket announced = new ArpPacket().wrap(new UnsafeBuffer(first.get(0)), 14, ArpPacket.LENGTH);
        assertEquals(STACK_IP, announced.senderProtocolAddress());
        assertEquals(mac, announced.senderHardwareAddress());
        assertEquals(MacAddress.BROADCAST, new EthernetFrame().wrap(new UnsafeBuffer(first.get(0)), 0, first.get(0).length).destination());
        now += 5 * SECOND;
        assertTrue(exchange(claim).isEmpty(), "not defended again within 10 s");
        now += 5 * SECOND;
        assertEquals(1, exchange(claim).size(), "defended again after 10 s");
        assertEquals(3, counters.get(StackCounter.ARP_DROP_ADDRESS_CONFLICT));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * With the cache full of peers that answered, a burst of new destinations still gets each its entry (and its frame
     * kept until the reply): while few entries wait for replies, the cache makes room round-robin among all entries;
     * only once many wait (a quarter: a spoofed flood) do those give way to one another alone.
     */
    @Test
    void aBurstOfNewDestinationsIntoACacheOfPeersKeepsEachFrame()
    {
        stack = new NetStack(device, StackConfig.of("198.18.0.2/16"), counters, now);
        mac = stack.config().mac();
        final int size = stack.config().arpCacheSize();
        for (int i = 0; i < size; i++)
        {
            final int peer = 0xC612_2000 + i;
            final long peerMac = 0x0200_0000_0000L + i;
            exchange(ethernet(MacAddress.BROADCAST, peerMac, EthernetFrame.ETHERTYPE_ARP,
                arp(ArpPacket.OP_REQUEST, peerMac, peer, 0, STACK_IP)));
        }
        final var socket = stack.udp().bind(6000, 1 << 16);
        for (int i = 0; i < 10; i++)
        {
            socket.send(0xC612_3000 + i, 9, new UnsafeBuffer(new byte[10]), 0, 10, now); // queued until ARP answers
        }
        assertEquals(10, stack.arp().queuedFrames(), "each new destination's frame kept");
    }

    /**
     * RFC 1122 2.3.2.2: SHOULD save at least one (the latest) packet of every unresolved address. Echo requests from
     * spoofed on-link sources fill the ARP queue with replies that never resolve; a datagram to a new destination of
     * ours still gets queued, at the expense of the oldest frame of the address holding the most (here one each: the
     * oldest of all), and leaves once its destination answers. Before, the queue was one FIFO that dropped the newest
     * frame when full, so the new destination's datagram was lost.
     */
    @Test
    void aNewDestinationKeepsItsFrameWhileSpoofedSourcesFillTheArpQueue()
    {
        final int q = stack.config().arpQueueFrames();
        for (int i = 0; i < q; i++)
        {
            exchange(fromPeer(mac, ipv4(0xC612_0010 + i, STACK_IP, Ipv4Header.PROTOCOL_ICMP, i, false, 0,
                icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, i, new byte[8]))));
        }
        assertEquals(q, stack.arp().queuedFrames());
        final var socket = stack.udp().bind(6000, 1 << 16);
        final int destination = 0xC612_0005;
        final long destinationMac = 0x0A00_0000_0005L;
        assertTrue(socket.send(destination, 9, new UnsafeBuffer(new byte[10]), 0, 10, now));
        assertEquals(q, stack.arp().queuedFrames());
        assertEquals(1, counters.get(StackCounter.ARP_QUEUE_OVERFLOW), "the oldest frame gave way");
        stack.poll(now);
        device.takeSent();
        final List<byte[]> after = exchange(ethernet(mac, destinationMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, destinationMac, destination, mac, STACK_IP)));
        assertEquals(1, after.size(), "the datagram to the new destination leaves once it resolves");
        assertEquals(destination, ipOf(after.get(0)).destination());
        assertEquals(q - 1, stack.arp().queuedFrames(), "the other sources' replies still wait");
    }

    /**
     * One destination's burst fills the queue; once full, the destination holding the most frames gives way its oldest
     * frame, so a second destination gets its own and the first keeps its latest frames, in order.
     */
    @Test
    void aFullArpQueueDropsTheOldestFrameOfTheBusiestDestination()
    {
        final var socket = stack.udp().bind(6000, 1 << 16);
        final int q = stack.config().arpQueueFrames();
        final int busy = 0xC612_0005;
        final long busyMac = 0x0A00_0000_0005L;
        for (int i = 0; i < q + 3; i++)
        {
            assertTrue(socket.send(busy, 9, new UnsafeBuffer(new byte[] {(byte)i}), 0, 1, now));
        }
        final int other = 0xC612_0006;
        final long otherMac = 0x0A00_0000_0006L;
        assertTrue(socket.send(other, 9, new UnsafeBuffer(new byte[] {(byte)0xEE}), 0, 1, now));
        assertEquals(q, stack.arp().queuedFrames());
        assertEquals(4, counters.get(StackCounter.ARP_QUEUE_OVERFLOW));
        stack.poll(now);
        device.takeSent();
        final List<byte[]> busyFrames = exchange(ethernet(mac, busyMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, busyMac, busy, mac, STACK_IP)));
        assertEquals(q - 1, busyFrames.size());
        for (int i = 0; i < q - 1; i++)
        {
            assertEquals((byte)(i + 4), busyFrames.get(i)[14 + 20 + 8], "the latest, in the order they were sent");
        }
        final List<byte[]> otherFrames = exchange(ethernet(mac, otherMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, otherMac, other, mac, STACK_IP)));
        assertEquals(1, otherFrames.size());
        assertEquals((byte)0xEE, otherFrames.get(0)[14 + 20 + 8]);
        assertEquals(0, stack.arp().queuedFrames());
    }

    /**
     * A datagram whose fragments do not all fit the ARP queue is not queued at all (its fragments could never be
     * reassembled) and send reports it: false, each fragment counted as overflow, not counted as sent; the datagram that
     * fitted leaves whole once the next hop answers. Before, the fragments that fitted were queued, the rest dropped,
     * and send returned true.
     */
    @Test
    void aFragmentedDatagramIsQueuedWholeOrReportedNotSent()
    {
        final var socket = stack.udp().bind(6000, 1 << 16);
        final int destination = 0xC612_0005;
        final long destinationMac = 0x0A00_0000_0005L;
        final UnsafeBuffer big = new UnsafeBuffer(new byte[60_000]);
        assertTrue(socket.send(destination, 9, big, 0, 60_000, now));
        final int fragments = stack.arp().queuedFrames();
        assertTrue(fragments > stack.config().arpQueueFrames() / 2, "a second one cannot fit: " + fragments);
        assertFalse(socket.send(destination, 9, big, 0, 60_000, now), "reported not sent");
        assertEquals(fragments, stack.arp().queuedFrames(), "none of its fragments queued");
        assertEquals(fragments, counters.get(StackCounter.ARP_QUEUE_OVERFLOW), "each fragment counted");
        assertEquals(1, counters.get(StackCounter.UDP_OUT_DATAGRAMS));
        assertEquals(1, counters.get(StackCounter.IPV4_OUT_DATAGRAMS));
        stack.poll(now);
        device.takeSent();
        final List<byte[]> sent = exchange(ethernet(mac, destinationMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, destinationMac, destination, mac, STACK_IP)));
        assertEquals(fragments, sent.size(), "the first datagram leaves whole");
        assertFalse(ipOf(sent.get(fragments - 1)).moreFragments());
    }

    /**
     * Ipv4.send returns false (counted) when it cannot send (its contract), also when ARP cannot keep the frame until
     * the next hop resolves (here a stack configured with no waiting queue): UDP's send reports it and counts no
     * datagram out. Before, the frame was dropped and the datagram counted and reported sent.
     */
    @Test
    void sendReportsFailureWhenArpCannotKeepTheFrame()
    {
        stack = new NetStack(device, StackConfig.of("198.18.0.2/24").arpQueueFrames(0), counters, now);
        final var socket = stack.udp().bind(6000, 1 << 16);
        assertFalse(socket.send(0xC612_0005, 9, new UnsafeBuffer(new byte[10]), 0, 10, now));
        assertEquals(1, counters.get(StackCounter.ARP_QUEUE_OVERFLOW));
        assertEquals(0, counters.get(StackCounter.UDP_OUT_DATAGRAMS), "not counted as sent");
        assertEquals(0, counters.get(StackCounter.IPV4_OUT_DATAGRAMS), "not counted as sent");
    }

    @Test
    void arpQueueIsBounded()
    {
        final var socket = stack.udp().bind(6000, 1 << 16);
        final int limit = stack.config().arpQueueFrames();
        for (int i = 0; i < limit + 10; i++)
        {
            socket.send(0xC612_0005, 9, new UnsafeBuffer(new byte[10]), 0, 10, now);
        }
        assertEquals(limit, stack.arp().queuedFrames());
        assertEquals(10, counters.get(StackCounter.ARP_QUEUE_OVERFLOW));
    }

    @Test
    void framesNotForUsAreCounted()
    {
        exchange(ethernet(0x0A00_0000_0099L, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, new byte[46]));
        exchange(ethernet(mac, PEER_MAC, 0x86DD, new byte[46]));
        exchange(new byte[10]);
        assertEquals(1, counters.get(StackCounter.ETH_DROP_NOT_FOR_US));
        assertEquals(1, counters.get(StackCounter.ETH_DROP_UNKNOWN_ETHERTYPE));
        assertEquals(1, counters.get(StackCounter.ETH_DROP_TRUNCATED));
        assertEquals(0, counters.unaccountedFrames());
    }
    // ------------------------------------------------------------------------------------------
    // From the twenty-first session's review of the IP layer
    // ------------------------------------------------------------------------------------------

    /** The stack's clock starts at its constructor's time: a connect before the first poll is timed from there. */
    @Test
    void aConnectBeforeTheFirstPollSendsOneSyn()
    {
        stack.tcp().connect(PEER_IP, 80, new TcpHandler() { }, null);
        stack.poll(now);
        exchange(ethernet(mac, PEER_MAC, EthernetFrame.ETHERTYPE_ARP, arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, mac, STACK_IP)));
        assertEquals(1, counters.get(StackCounter.TCP_SEGMENTS_OUT), "one SYN with no time elapsed");
        assertEquals(0, counters.get(StackCounter.TCP_RTO_EXPIRIES));
    }

    /** RFC 1191 §3: DF on every TCP datagram, also on a segment that waited for ARP (it leaves by the slow path). */
    @Test
    void aSynThatWaitedForArpKeepsDontFragment()
    {
        stack.tcp().connect(PEER_IP, 80, new TcpHandler() { }, null);
        stack.poll(now);
        assertTrue(device.takeSent().stream().allMatch(f -> etherType(f) == EthernetFrame.ETHERTYPE_ARP), "ARP first");
        final List<byte[]> sent = exchange(ethernet(mac, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, mac, STACK_IP)));
        sent.removeIf(f -> etherType(f) != EthernetFrame.ETHERTYPE_IPV4);
        assertEquals(1, sent.size(), "the queued SYN");
        assertTrue(ipOf(sent.get(0)).dontFragment(), "DF on the SYN that waited");
    }

    /**
     * RFC 791's reserved flag must be sent as zero, but nothing tells a receiver to drop a datagram that has it (RFC
     * 1122 §1.2.2: be liberal), and Linux's ip_rcv ignores it.
     */
    @Test
    void theReservedFlagIsIgnored()
    {
        learnPeer();
        final byte[] d = ipv4(PEER_IP, STACK_IP, 1, 77, false, 0, icmpEcho(8, 1, 1, new byte[16]));
        final UnsafeBuffer b = new UnsafeBuffer(d);
        b.putByte(6, (byte)(b.getByte(6) | 0x80));
        new Ipv4Header().wrap(b, 0, d.length).updateChecksum();
        final List<byte[]> sent = exchange(fromPeer(mac, d));
        assertEquals(1, sent.size(), "an echo reply");
        assertEquals(0, counters.get(StackCounter.IPV4_DROP_BAD_FRAGMENT));
    }

    /** RFC 826's merge adds the sender of a request to us, but the subnet's broadcast and network addresses are no host. */
    @Test
    void arpDoesNotLearnTheSubnetsBroadcastOrNetworkAddress()
    {
        exchange(ethernet(MacAddress.BROADCAST, 0x0A00_0000_0007L, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, 0x0A00_0000_0007L, 0xC612_0000, 0, STACK_IP)));
        exchange(ethernet(MacAddress.BROADCAST, 0x0A00_0000_0008L, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, 0x0A00_0000_0008L, 0xC612_00FF, 0, STACK_IP)));
        assertEquals("", stack.arp().toString(), "ARP cache");
    }

    /**
     * RFC 1122 §4.1.3.5: UDP MUST pass the specific destination address up, so that an application can tell a
     * broadcast from a datagram sent to it; queued datagrams keep theirs, and are handed over at the drain's time.
     */
    @Test
    void udpPassesTheDestinationAddressUpAndQueuedDatagramsTheDrainsTime()
    {
        learnPeer();
        final int[] inline = new int[2];
        final int[] n = {0};
        stack.udp().bind(5001, (s, src, srcPort, buffer, offset, length, t) ->
        {
            assertEquals(s.destinationAddress() != STACK_IP, s.destinationIsBroadcast());
            inline[n[0]++] = s.destinationAddress();
        });
        final var queued = stack.udp().bind(5000, 1 << 16);
        for (final int destination : new int[] {STACK_IP, 0xC612_00FF})
        {
            final long frameMac = destination == STACK_IP ? mac : MacAddress.BROADCAST;
            for (final int port : new int[] {5000, 5001})
            {
                exchange(ethernet(frameMac, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4,
                    ipv4(PEER_IP, destination, Ipv4Header.PROTOCOL_UDP, port, false, 0, udp(PEER_IP, destination, 4000, port, new byte[4]))));
            }
        }
        assertArrayEquals(new int[] {STACK_IP, 0xC612_00FF}, inline, "inline");
        final long later = now + 5 * SECOND;
        final java.util.List<Integer> destinations = new java.util.ArrayList<>();
        assertEquals(2, queued.receive((s, src, srcPort, buffer, offset, length, t) ->
        {
            destinations.add(s.destinationAddress());
            assertEquals(s.destinationAddress() != STACK_IP, s.destinationIsBroadcast());
            assertEquals(later, t, "handed over at the drain's time");
        }, 10, later));
        assertEquals(java.util.List.of(STACK_IP, 0xC612_00FF), destinations, "queued");
    }

    /**
     * RFC 1122 §4.1.3.2: UDP MUST pass any IP option it receives transparently to the application (IP_RECVOPTS), inline
     * and queued; a reassembled datagram carries its first fragment's. Before, the application never saw them.
     */
    @Test
    void udpPassesTheReceivedIpOptionsUp()
    {
        learnPeer();
        final byte[] recordRoute = {7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        final java.util.List<String> inline = new java.util.ArrayList<>();
        final UnsafeBuffer into = new UnsafeBuffer(new byte[Ipv4Header.MAX_HEADER_LENGTH]);
        stack.udp().bind(5001, (s, src, srcPort, buffer, offset, length, t) ->
            inline.add(Arrays.toString(Arrays.copyOf(into.byteArray(), s.options(into, 0)))));
        final var queued = stack.udp().bind(5000, 1 << 16);
        for (final int port : new int[] {5000, 5001})
        {
            exchange(fromPeer(mac, ipv4WithOptions(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, recordRoute,
                udp(PEER_IP, STACK_IP, 4000, port, new byte[4]))));
            exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 78, false, 0,
                udp(PEER_IP, STACK_IP, 4000, port, new byte[4]))));
        }
        // Record Route is not copied into later fragments (RFC 791): the first fragment's options are the datagram's.
        final byte[] big = udp(PEER_IP, STACK_IP, 4000, 5001, new byte[2000]);
        exchange(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 79, false, 1400, Arrays.copyOfRange(big, 1400, big.length))));
        final byte[] first = ipv4WithOptions(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, recordRoute, Arrays.copyOf(big, 1400));
        final UnsafeBuffer f = new UnsafeBuffer(first);
        f.putShort(4, (short)79, java.nio.ByteOrder.BIG_ENDIAN);
        new Ipv4Header().wrap(f, 0, first.length).flagsAndFragmentOffset(false, true, 0).updateChecksum();
        exchange(fromPeer(mac, first));
        final String withRoute = Arrays.toString(recordRoute);
        assertEquals(java.util.List.of(withRoute, "[]", withRoute), inline, "inline");
        final java.util.List<String> drained = new java.util.ArrayList<>();
        assertEquals(2, queued.receive((s, src, srcPort, buffer, offset, length, t) ->
        {
            drained.add(Arrays.toString(Arrays.copyOf(into.byteArray(), s.options(into, 0))));
            assertEquals(4, length, "the payload after the options");
        }, 10, now));
        assertEquals(java.util.List.of(withRoute, "[]"), drained, "queued");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * A timer handler that throws (a bug; TCP's call the application, such as {@code TcpHandler.onClosed}) costs that
     * timer, not the daemon: it is counted and logged as an internal error, as a received frame's would be, and the
     * other timers due run in the same poll, the wheel consistent. Before, the exception left poll and the daemon
     * exited 70 on it.
     */
    @Test
    void aThrowingTimerHandlerCostsThatTimerOnly()
    {
        final Timers timers = stack.timers();
        final List<String> fired = new java.util.ArrayList<>();
        final long ms = 1_000_000L;
        timers.schedule(now + ms, (t, id) -> fired.add("before"));
        timers.schedule(now + 2 * ms, (t, id) ->
        {
            throw new IllegalStateException("a bug in a timer handler");
        });
        timers.schedule(now + 2 * ms, (t, id) -> fired.add("beside"));
        timers.schedule(now + 3 * ms, (t, id) -> fired.add("after"));
        final long armed = timers.count();
        now += 5 * ms;
        stack.poll(now);
        assertEquals(List.of("before", "beside", "after"), fired);
        assertEquals(1, counters.get(StackCounter.INTERNAL_ERRORS));
        assertEquals(armed - 4, timers.count());
        final boolean[] later = new boolean[1];
        timers.schedule(now + ms, (t, id) -> later[0] = true);
        now += 2 * ms;
        stack.poll(now);
        assertTrue(later[0], "timers keep running");
    }

    /**
     * {@code frame} is an ICMP error to the peer of {@code type} and {@code code}, its checksum valid, quoting the whole
     * of {@code datagram} after its 8 octets of header (RFC 792); returns its header.
     */
    private static IcmpHeader assertIcmpErrorQuoting(final byte[] frame, final int type, final int code, final byte[] datagram)
    {
        final Ipv4Header ip = ipOf(frame);
        assertEquals(PEER_IP, ip.destination());
        final IcmpHeader icmp = new IcmpHeader().wrap(ip.buffer(), ip.payloadOffset(), ip.totalLength() - 20);
        assertEquals(type, icmp.type());
        assertEquals(code, icmp.code());
        assertTrue(icmp.checksumValid());
        final byte[] quoted = new byte[datagram.length];
        ip.buffer().getBytes(ip.payloadOffset() + 8, quoted);
        assertArrayEquals(datagram, quoted, "the datagram quoted");
        return icmp;
    }

    private static int etherType(final byte[] frame)
    {
        return ((frame[12] & 0xFF) << 8) | (frame[13] & 0xFF);
    }
}
