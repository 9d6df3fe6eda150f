package io.nicstack.stack.iface;

import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

import static io.nicstack.stack.Frames.*;
import static org.junit.jupiter.api.Assertions.*;

/** The ARP cache under pressure: a full cache, spoofed sources, and replies that contradict one another. */
class ArpCacheTest
{
    private static final long SECOND = 1_000_000_000L;
    /** Spoofed on-link sources start here (198.18.16.0, on the /16). */
    private static final int SPOOFED = 0xC612_1000;

    private TestDevice device;
    private StackCounters counters;
    private NetStack stack;
    private long now = 1_000 * SECOND;
    private long mac;

    @BeforeEach
    void setUp()
    {
        build(StackConfig.of("198.18.0.2/16"));
    }

    private void build(final StackConfig config)
    {
        device = new TestDevice(1500);
        counters = StackCounters.inMemory();
        stack = new NetStack(device, config, counters, now);
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

    /** An echo request from the spoofed on-link source number {@code i}: its reply needs that source resolved. */
    private byte[] echoFromSpoofed(final int i)
    {
        return fromPeer(mac, ipv4(SPOOFED + i, STACK_IP, Ipv4Header.PROTOCOL_ICMP, i, false, 0,
            icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, i, new byte[8])));
    }

    private static int etherType(final byte[] frame)
    {
        return new EthernetFrame().wrap(new UnsafeBuffer(frame), 0, frame.length).etherType();
    }

    /** The target of an ARP request, or 0 when {@code frame} is not one. */
    private static int arpRequestTarget(final byte[] frame)
    {
        final UnsafeBuffer b = new UnsafeBuffer(frame);
        if (new EthernetFrame().wrap(b, 0, frame.length).etherType() != EthernetFrame.ETHERTYPE_ARP)
        {
            return 0;
        }
        final ArpPacket a = new ArpPacket().wrap(b, EthernetFrame.HEADER_LENGTH, ArpPacket.LENGTH);
        return a.operation() == ArpPacket.OP_REQUEST ? a.targetProtocolAddress() : 0;
    }

    /**
     * RFC 1122 2.3.2.1 (MUST prevent ARP flooding: at most one request per second per destination), with echo requests
     * from twice as many spoofed on-link sources as the cache holds, five rounds 0.1 s apart. Waiting entries are never
     * evicted (each holds when its address was last asked); once the cache is full of them a new resolution is refused,
     * its frame dropped and counted, and no request sent. Before, each new source evicted a waiting entry round-robin and
     * broadcast at once: every one of the 2560 frames became a request, five for each destination within 0.5 s.
     */
    @Test
    void rfc1122_atMostOneRequestPerSecondPerDestinationWhileSpoofedSourcesOverflowTheCache()
    {
        final int n = stack.config().arpCacheSize();
        final int sources = 2 * n;
        final int[] requests = new int[sources];
        int frames = 0;
        for (int round = 0; round < 5; round++)
        {
            for (int i = 0; i < sources; i++)
            {
                for (final byte[] f : exchange(echoFromSpoofed(i)))
                {
                    final int target = arpRequestTarget(f);
                    if (target != 0)
                    {
                        requests[target - SPOOFED]++;
                    }
                }
                frames++;
            }
            now += 100_000_000L;
        }
        for (int i = 0; i < sources; i++)
        {
            assertTrue(requests[i] <= 1, "requests for source " + i + " within 0.5 s: " + requests[i]);
        }
        assertEquals(n, counters.get(StackCounter.ARP_OUT_REQUESTS), "one request for each entry the cache holds");
        assertEquals(5 * n, counters.get(StackCounter.ARP_RESOLUTION_REFUSED), "every frame of the sources with no entry");

        // The waiting entries give up after their retries; then the cache takes new destinations again.
        for (int retry = 0; retry < stack.config().arpMaxRetries(); retry++)
        {
            now += stack.config().arpRetryNanos();
            stack.poll(now);
        }
        device.takeSent();
        assertEquals(SPOOFED + sources, exchange(echoFromSpoofed(sources)).stream().mapToInt(ArpCacheTest::arpRequestTarget)
            .filter(t -> t != 0).findFirst().orElse(0), "a new source is asked for once the cache has room");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * A reply to our own request is learned while the cache is full: its waiting entry is still there, as waiting
     * entries are not evicted. Before, spoofed sources evicted it, and the reply, finding no entry and no free slot,
     * was dropped unlearned, with the frame that waited for it.
     */
    @Test
    void aReplyToOurRequestIsLearnedWhileSpoofedSourcesFillTheCache()
    {
        final int n = stack.config().arpCacheSize();
        for (int i = 0; i < 2 * n; i++)
        {
            exchange(echoFromSpoofed(i));
        }
        // The last source that got an entry: its frame is among the newest the queue keeps.
        final int source = SPOOFED + n - 1;
        final long sourceMac = 0x0A00_0000_1000L;
        final List<byte[]> sent = exchange(ethernet(mac, sourceMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, sourceMac, source, mac, STACK_IP)));
        assertEquals(sourceMac, stack.arp().lookup(source), "learned");
        assertTrue(sent.stream().anyMatch(f -> etherType(f) == EthernetFrame.ETHERTYPE_IPV4), "its echo reply left");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * ARP lock time, as Linux's arp_process (override = time_after(jiffies, n->updated + LOCKTIME) || is_garp): a
     * packet giving another MAC for an address whose entry changed under a second ago is ignored, counted, so of two
     * answers to one request the first stays (the second is most likely a poisoner racing the true host). After the
     * second has passed it replaces the MAC; a gratuitous announcement (sender and target address the same; for a reply,
     * target hardware address the sender's too) replaces it at once. Before, a second reply 10 ms after the first
     * replaced the MAC.
     */
    @Test
    void anotherMacWithinTheLockTimeIsIgnoredUnlessGratuitous()
    {
        final long evil = 0x0A00_0000_0BADL;
        final long moved = 0x0A00_0000_0C0DL;
        final var socket = stack.udp().bind(6000, 1 << 16);
        assertTrue(socket.send(PEER_IP, 9, new UnsafeBuffer(new byte[16]), 0, 16, now));
        stack.poll(now);
        device.takeSent();
        exchange(ethernet(mac, PEER_MAC, EthernetFrame.ETHERTYPE_ARP, arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, mac, STACK_IP)));
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP));

        now += 10_000_000L;
        exchange(ethernet(mac, evil, EthernetFrame.ETHERTYPE_ARP, arp(ArpPacket.OP_REPLY, evil, PEER_IP, mac, STACK_IP)));
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "a second reply 10 ms later");
        final List<byte[]> answered = exchange(ethernet(MacAddress.BROADCAST, evil, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, evil, PEER_IP, 0, STACK_IP)));
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "a request naming another MAC, too");
        assertEquals(1, answered.size(), "the request is answered all the same");
        // A broadcast reply for the peer's address to the peer's address, but not to its own MAC: no announcement.
        exchange(ethernet(MacAddress.BROADCAST, evil, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, evil, PEER_IP, MacAddress.BROADCAST, PEER_IP)));
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "a reply that is not gratuitous");
        assertEquals(3, counters.get(StackCounter.ARP_LOCKTIME_IGNORED));

        exchange(ethernet(MacAddress.BROADCAST, moved, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, moved, PEER_IP, 0, PEER_IP)));
        assertEquals(moved, stack.arp().lookup(PEER_IP), "a gratuitous request is taken within the lock time");
        now += 10_000_000L;
        exchange(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, PEER_MAC, PEER_IP)));
        assertEquals(PEER_MAC, stack.arp().lookup(PEER_IP), "so is a gratuitous reply");

        now += Arp.LOCKTIME_NANOS;
        exchange(ethernet(mac, evil, EthernetFrame.ETHERTYPE_ARP, arp(ArpPacket.OP_REPLY, evil, PEER_IP, mac, STACK_IP)));
        assertEquals(evil, stack.arp().lookup(PEER_IP), "past the lock time another MAC replaces the entry's");
        assertEquals(3, counters.get(StackCounter.ARP_LOCKTIME_IGNORED));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * The cache's indexes (address map, retry timer id to slot, free slot stack, count of waiting entries) agree with
     * its entries through seeded random churn in a small cache: resolutions, replies, requests from peers, negative
     * advice, time passing (retries, give-ups, aging). Observed against a model: an address resolves to its own MAC or
     * to nothing, and no address is asked twice within a retry interval until it is heard from (also across eviction). When the churn stops,
     * every waiting entry gives up and no timer is left.
     */
    @Test
    void theCacheIndexesStayConsistentThroughRandomChurn()
    {
        final long seed = 0x5EED_A4BL;
        final java.util.Random random = new java.util.Random(seed);
        build(StackConfig.of("198.18.0.2/16").arpCacheSize(16));
        final Arp arp = stack.arp();
        final int pool = 48;
        final long[] lastAsked = new long[pool];
        java.util.Arrays.fill(lastAsked, Long.MIN_VALUE);
        final long retry = stack.config().arpRetryNanos();
        for (int step = 0; step < 20_000; step++)
        {
            final int i = random.nextInt(pool);
            final int ip = SPOOFED + i;
            final long hostMac = 0x0A00_0000_0000L + i + 1;
            final int op = random.nextInt(6);
            if (op == 2 || op == 3)
            {
                // The host is heard from: the pacing of requests to an address that does not answer is over.
                lastAsked[i] = Long.MIN_VALUE;
            }
            switch (op)
            {
                case 0, 1 -> arp.resolve(ip, now);
                case 2 -> device.inject(ethernet(mac, hostMac, EthernetFrame.ETHERTYPE_ARP,
                    arp(ArpPacket.OP_REPLY, hostMac, ip, mac, STACK_IP)));
                case 3 -> device.inject(ethernet(MacAddress.BROADCAST, hostMac, EthernetFrame.ETHERTYPE_ARP,
                    arp(ArpPacket.OP_REQUEST, hostMac, ip, 0, STACK_IP)));
                case 4 -> arp.adviseUnreachable(ip, now);
                default -> now += random.nextInt(700) * 1_000_000L;
            }
            stack.poll(now);
            for (final byte[] f : device.takeSent())
            {
                final int target = arpRequestTarget(f);
                if (target != 0)
                {
                    final int k = target - SPOOFED;
                    assertTrue(lastAsked[k] == Long.MIN_VALUE || now - lastAsked[k] >= retry,
                        "seed " + seed + " step " + step + ": " + k + " asked again after " + (now - lastAsked[k]) + " ns");
                    lastAsked[k] = now;
                }
            }
            final int finalStep = step;
            assertDoesNotThrow(arp::checkConsistency, () -> "seed " + seed + " step " + finalStep);
            final long known = arp.lookup(ip);
            assertTrue(known == -1 || known == hostMac, "seed " + seed + " step " + step + ": " + Long.toHexString(known));
        }
        assertTrue(counters.get(StackCounter.ARP_CACHE_FULL) > 0, "entries were evicted");
        assertTrue(counters.get(StackCounter.ARP_RESOLUTION_FAILED) + counters.get(StackCounter.ARP_OUT_REQUESTS) > 0);
        for (int k = 0; k < stack.config().arpMaxRetries(); k++)
        {
            now += retry;
            stack.poll(now);
        }
        arp.checkConsistency();
        assertFalse(arp.toString().contains("incomplete"), "every waiting entry gave up:\n" + arp);
    }
}
