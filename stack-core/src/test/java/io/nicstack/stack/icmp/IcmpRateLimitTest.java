package io.nicstack.stack.icmp;

import static io.nicstack.stack.Frames.PEER_IP;
import static io.nicstack.stack.Frames.PEER_MAC;
import static io.nicstack.stack.Frames.STACK_IP;
import static io.nicstack.stack.Frames.arp;
import static io.nicstack.stack.Frames.ethernet;
import static io.nicstack.stack.Frames.fromPeer;
import static io.nicstack.stack.Frames.ipv4;
import static io.nicstack.stack.Frames.udp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.isn.IsnGenerator;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

/**
 * The per-peer limit on ICMP errors beside the global one (Linux: icmp_ratelimit per destination, icmp_msgs_per_sec
 * for all): UDP to a closed port from peers behind the gateway, each answered with Port Unreachable, or not.
 */
class IcmpRateLimitTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final long MS = 1_000_000L;
    /** Off-link peers in 198.19.0.0/16, reached through the gateway (PEER_IP). */
    private static final int NOISY = 0xC613_0101;
    private static final int QUIET = 0xC613_0202;

    private TestDevice device;
    private StackCounters counters;
    private NetStack stack;
    private long now = 1_000 * SECOND;
    private long mac;
    private int id;

    private void start(final int perSecond, final int burst)
    {
        device = new TestDevice(1500);
        counters = StackCounters.inMemory();
        // The fixed secrets of repeatable runs: which peers share a set is the same every run.
        stack = new NetStack(device, StackConfig.of("198.18.0.2/24").gateway(PEER_IP).icmpErrorRate(perSecond, burst),
            counters, now, new IsnGenerator(1, 2), new SynCookies(3, 4));
        mac = stack.config().mac();
        device.inject(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.poll(now);
        device.takeSent();
    }

    /** UDP from {@code peer} to a closed port: the number of Port Unreachables to {@code peer} it brought (0 or 1). */
    private int provoke(final int peer)
    {
        device.inject(fromPeer(mac, ipv4(peer, STACK_IP, Ipv4Header.PROTOCOL_UDP, ++id & 0xFFFF, false, 0,
            udp(peer, STACK_IP, 40000, 9, new byte[4]))));
        stack.poll(now);
        final List<byte[]> sent = new ArrayList<>();
        for (int round = 0; round < 3; round++)
        {
            // The gateway's ARP entry ages as the clock moves on: answer the stack's ARP requests, as the gateway would.
            boolean asked = false;
            for (final byte[] frame : device.takeSent())
            {
                if ((new UnsafeBuffer(frame).getShort(12, ByteOrder.BIG_ENDIAN) & 0xFFFF) == EthernetFrame.ETHERTYPE_ARP)
                {
                    device.inject(ethernet(mac, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
                        arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, mac, STACK_IP)));
                    asked = true;
                }
                else
                {
                    sent.add(frame);
                }
            }
            if (!asked)
            {
                break;
            }
            stack.poll(now);
        }
        for (final byte[] frame : sent)
        {
            final Ipv4Header ip = new Ipv4Header();
            assertTrue(ip.wrapChecked(new UnsafeBuffer(frame), 14, frame.length - 14));
            assertEquals(peer, ip.destination());
            final IcmpHeader icmp = new IcmpHeader();
            assertTrue(icmp.wrapChecked(new UnsafeBuffer(frame), 14 + ip.headerLength(), ip.totalLength() - ip.headerLength()));
            assertEquals(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, icmp.type());
            assertEquals(IcmpHeader.CODE_PORT_UNREACHABLE, icmp.code());
        }
        assertTrue(sent.size() <= 1);
        return sent.size();
    }

    private int provoke(final int peer, final int times)
    {
        int answered = 0;
        for (int i = 0; i < times; i++)
        {
            answered += provoke(peer);
        }
        return answered;
    }

    /**
     * One peer provoking errors at line rate must not take the errors of every other: a legitimate client still hears
     * Port Unreachable. Before, the one global bucket went to the noisy peer and the quiet one got nothing.
     */
    @Test
    void aNoisyPeerDoesNotStarveAnother()
    {
        start(100, 50);
        for (int round = 0; round < 5; round++)
        {
            // 1,000 errors provoked in 10 ms; then the quiet peer asks once.
            for (int i = 0; i < 1_000; i++)
            {
                now += 10_000;
                provoke(NOISY);
            }
            assertEquals(1, provoke(QUIET), "round " + round + ": the quiet peer gets its error");
            now += SECOND;
        }
        assertEquals(0, counters.unaccountedFrames());
    }

    /** A single peer gets its own burst (6) at once, then one error a second, whatever the global budget allows. */
    @Test
    void aSinglePeerIsLimitedToItsOwnBurstAndRate()
    {
        start(1_000_000, 1_000_000);
        assertEquals(Icmp.PEER_BURST, provoke(NOISY, 100));
        assertEquals(100 - Icmp.PEER_BURST, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED_PEER));
        assertEquals(0, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED), "the global limit never refused");
        now += Icmp.PEER_NANOS_PER_TOKEN - 1;
        assertEquals(0, provoke(NOISY, 10), "no token before a second has passed");
        now += 1;
        assertEquals(1, provoke(NOISY, 10), "one token a second");
        now += 3 * Icmp.PEER_NANOS_PER_TOKEN;
        assertEquals(3, provoke(NOISY, 10), "three seconds, three tokens");
        now += 3_600 * SECOND;
        assertEquals(Icmp.PEER_BURST, provoke(NOISY, 10), "a long quiet spell refills the burst, no more");
        assertEquals(1, provoke(QUIET), "another peer has its own bucket");
    }

    /** The global limit still bounds what all peers get together: its burst at once, then its rate. */
    @Test
    void theGlobalLimitStillHoldsOverManyPeers()
    {
        start(100, 50);
        int answered = 0;
        for (int peer = 0; peer < 500; peer++)
        {
            answered += provoke(0xC613_0000 + peer);
        }
        assertEquals(50, answered, "the global burst");
        assertEquals(450, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED));
        assertEquals(0, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED_PEER));
        answered = 0;
        for (int peer = 500; peer < 1_500; peer++)
        {
            now += MS;
            answered += provoke(0xC613_0000 + peer);
        }
        assertEquals(100, answered, "100 a second for a second");
    }

    /**
     * Many more peers than the table holds, one a millisecond (about 16 to a set over 4 s, fewer than its four buckets
     * hold and refill): its size stays fixed, every new peer gets its first error, and a peer being limited stays
     * limited however many others pass (only the entry with the most tokens of a set makes room, and the newcomer takes
     * over that bucket, not a fresh one): one error a second, as its own bucket gives.
     */
    @Test
    void evictionUnderManyPeersKeepsTheTableBoundedAndLimitedPeersLimited()
    {
        start(1_000_000, 1_000_000);
        assertEquals(Icmp.PEER_BURST, provoke(NOISY, 50));
        final long drainedAt = now;
        int noisyAnswered = 0;
        final int capacity = Icmp.PEER_SETS * Icmp.PEER_WAYS;
        for (int peer = 0; peer < 4 * capacity; peer++)
        {
            now += MS;
            assertEquals(1, provoke(0xC613_1000 + peer), "a new peer gets its first error");
            noisyAnswered += provoke(NOISY);
            assertTrue(stack.icmp().trackedPeers() <= capacity);
        }
        assertEquals(capacity, stack.icmp().trackedPeers());
        assertEquals((now - drainedAt) / Icmp.PEER_NANOS_PER_TOKEN, noisyAnswered, "the churn did not free the noisy peer");
        assertEquals(0, provoke(NOISY, 10));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * Random peers (a few noisy, many passing, over 65,536 addresses) at random times: a noisy peer never gets more
     * than its burst plus one a second since it was first seen, all together never more than the global limit allows,
     * every error provoked is sent or counted once as suppressed, the table stays within its size, and nothing throws.
     * The seed is printed on failure.
     */
    @Test
    void randomizedPeersNeverGetMoreThanTheirBucketAllows()
    {
        final long seed = System.nanoTime();
        try
        {
            randomized(new SplittableRandom(seed));
        }
        catch (final Throwable t)
        {
            throw new AssertionError("seed " + seed + ": " + t.getMessage(), t);
        }
    }

    private void randomized(final SplittableRandom random)
    {
        start(1_000, 50);
        final long startedAt = now;
        final int[] noisy = new int[8];
        final int noisyBase = 0xC613_0000 | random.nextInt((1 << 16) - noisy.length);
        for (int i = 0; i < noisy.length; i++)
        {
            // Eight addresses, in eight sets or a few sharing one: the passing peers, whose buckets hold more tokens,
            // make room before any of them.
            noisy[i] = noisyBase + i;
        }
        final Map<Integer, Long> firstSeen = new HashMap<>();
        final Map<Integer, Integer> answeredTo = new HashMap<>();
        int answered = 0;
        for (int step = 0; step < 30_000; step++)
        {
            now += random.nextInt(4) == 0 ? random.nextLong(20 * MS) : random.nextLong(50_000);
            final int peer = random.nextInt(3) == 0 ? 0xC613_0000 | random.nextInt(1 << 16) : noisy[random.nextInt(noisy.length)];
            firstSeen.putIfAbsent(peer, now);
            final int got = provoke(peer);
            answered += got;
            final int total = answeredTo.merge(peer, got, Integer::sum);
            final long allowed = Icmp.PEER_BURST + (now - firstSeen.get(peer)) / Icmp.PEER_NANOS_PER_TOKEN;
            // An evicted peer comes back with the bucket of the one it displaces, perhaps fuller than its own was:
            // bounded per stay in the table, so check the noisy ones, which (limited, near empty) the passing peers
            // do not evict.
            if (peer - noisyBase >= 0 && peer - noisyBase < noisy.length)
            {
                assertTrue(total <= allowed, "peer " + Integer.toHexString(peer) + " got " + total + " > " + allowed);
            }
        }
        final long globalAllowed = 50 + (now - startedAt) * 1_000 / SECOND;
        assertTrue(answered <= globalAllowed, answered + " errors > the global " + globalAllowed);
        assertEquals(answered, counters.get(StackCounter.ICMP_OUT_UNREACHABLE));
        assertEquals(30_000 - answered, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED)
            + counters.get(StackCounter.ICMP_OUT_RATE_LIMITED_PEER), "every suppressed error counted once");
        assertTrue(stack.icmp().trackedPeers() <= Icmp.PEER_SETS * Icmp.PEER_WAYS);
        assertEquals(0, counters.unaccountedFrames());
    }
}
