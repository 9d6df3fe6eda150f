package io.nicstack.stack;

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

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.storage.Reassembler;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.UdpHeader;

/**
 * A storm of hostile fragments into one stack: random offsets (most near the start, so they meet), MF flags,
 * identifications (a few, so they collide), header lengths, protocols and on-link sources, some carrying a plausible UDP
 * header for the echo port, while time moves by up to the reassembly timeout. No exception escapes, every frame ends in
 * a counter, the reassembler stays within its bounds and holds nothing once the timeout has passed, and a datagram in
 * fragments still reassembles afterwards. A test of existing behaviour, adopted from a review's probe. Rerun one case
 * with {@code -Dnicstack.fuzz.seed=<seed>}, a longer one with {@code -Dnicstack.fuzz.fragments=<count>}.
 */
class FragmentStormTest
{
    private static final int FRAGMENTS = Integer.getInteger("nicstack.fuzz.fragments", 60_000);
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    private static final long SECOND = 1_000_000_000L;
    private static final int[] PROTOCOLS = {
        Ipv4Header.PROTOCOL_ICMP, Ipv4Header.PROTOCOL_TCP, Ipv4Header.PROTOCOL_UDP, Ipv4Header.PROTOCOL_UDP,
        Ipv4Header.PROTOCOL_UDP, 99};

    @Test
    void aStormOfHostileFragmentsIsAccountedForAndLeavesReassemblyWorking()
    {
        try
        {
            storm(new SplittableRandom(SEED));
        }
        catch (final Throwable t)
        {
            System.err.println("fragment storm failed with -Dnicstack.fuzz.seed=" + SEED);
            throw new AssertionError("seed " + SEED + ": " + t.getMessage(), t);
        }
    }

    private static void storm(final SplittableRandom random)
    {
        final TestDevice device = new TestDevice(1500);
        final StackCounters counters = StackCounters.inMemory();
        long now = 1_000 * SECOND;
        final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
        final long mac = stack.config().mac();
        final Reassembler reassembler = stack.ipv4().reassembler();
        final byte[][] echoed = new byte[1][];
        stack.udp().bind(7, (s, a, p, b, o, l, t) ->
        {
            echoed[0] = new byte[l];
            b.getBytes(o, echoed[0]);
            s.send(a, p, b, o, l, t);
        });
        for (int i = 0; i < FRAGMENTS; i++)
        {
            device.inject(fromPeer(mac, hostileFragment(random)));
            if (random.nextInt(16) == 0)
            {
                // Now and then past the reassembly timeout (the timer wheel catching up on 31 s is the costly part).
                now += random.nextInt(16) == 0 ? 31 * SECOND : random.nextInt((int)SECOND);
                stack.poll(now);
                device.takeSent();
                assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS), "internal errors");
                assertEquals(0, counters.unaccountedFrames(), "frames in no counter");
                assertTrue(reassembler.bytesHeld() >= 0, "bytes held " + reassembler.bytesHeld());
                assertTrue(reassembler.active() >= 0 && reassembler.active() <= stack.config().reassemblyMaxDatagrams(),
                    "datagrams in progress " + reassembler.active());
            }
        }
        // A poll takes one burst: the frames still waiting go in before the clock passes the timeout.
        for (int i = 0; i < FRAGMENTS && device.awaitReadable(0); i++)
        {
            stack.poll(now);
        }
        now += 31 * SECOND;
        stack.poll(now);
        device.takeSent();
        assertEquals(0, reassembler.active(), "datagrams in progress after the timeout");
        assertEquals(0, reassembler.bytesHeld(), "bytes held after the timeout");
        assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS), "internal errors");
        // Thousands of each in a storm of this size: it reached the reassembler's discards and its timer.
        assertTrue(counters.get(StackCounter.IPV4_DROP_FRAGMENT_OVERLAP) > 0, "no overlap in the storm");
        assertTrue(counters.get(StackCounter.IPV4_REASSEMBLY_TIMEOUTS) > 0, "no timeout in the storm");

        // Afterwards the peer's datagram in two fragments (an identification the storm never used) is reassembled.
        device.inject(ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)));
        final byte[] data = new byte[100];
        Arrays.fill(data, (byte)0x5A);
        final byte[] datagram = udp(PEER_IP, STACK_IP, 40000, 7, data);
        device.inject(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 1000, false, 48,
            Arrays.copyOfRange(datagram, 48, datagram.length))));
        device.inject(fromPeer(mac, ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 1000, true, 0,
            Arrays.copyOfRange(datagram, 0, 48))));
        echoed[0] = null;
        final long reassembled = counters.get(StackCounter.IPV4_REASSEMBLED);
        stack.poll(now);
        assertEquals(reassembled + 1, counters.get(StackCounter.IPV4_REASSEMBLED));
        assertTrue(Arrays.equals(data, echoed[0]), "the datagram reached the echo port whole");
        // Besides the ARP reply, what waited for the peer's MAC leaves now (answers to the storm's datagrams from it).
        final List<byte[]> sent = device.takeSent();
        assertEquals(1, sent.stream().filter(FragmentStormTest::isEchoToPeer).count(), "the echo to the peer");
        assertEquals(0, counters.unaccountedFrames(), "frames in no counter");
    }

    private static boolean isEchoToPeer(final byte[] frame)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(frame);
        final Ipv4Header ip = new Ipv4Header();
        if (new EthernetFrame().wrap(buffer, 0, frame.length).etherType() != EthernetFrame.ETHERTYPE_IPV4
            || !ip.wrapChecked(buffer, EthernetFrame.HEADER_LENGTH, frame.length - EthernetFrame.HEADER_LENGTH)
            || ip.destination() != PEER_IP || ip.protocol() != Ipv4Header.PROTOCOL_UDP)
        {
            return false;
        }
        final UdpHeader udp = new UdpHeader().wrap(buffer, ip.offset() + ip.headerLength(), UdpHeader.HEADER_LENGTH);
        return udp.sourcePort() == 7 && udp.destinationPort() == 40000;
    }

    /** An IPv4 fragment (or not: MF clear at offset 0) from 198.18.0.1 to .3 (.2 being ours) to us. */
    private static byte[] hostileFragment(final SplittableRandom random)
    {
        final int source = 0xC612_0000 | (1 + random.nextInt(3));
        final int ihl = random.nextInt(4) == 0 ? 5 + random.nextInt(11) : 5;
        final int headerLength = ihl * 4;
        final int length = random.nextInt(3) == 0 ? 8 * random.nextInt(8) : random.nextInt(1500 - headerLength + 1);
        final int offset = random.nextInt(3) == 0 ? 8 * random.nextInt(8192) : 8 * random.nextInt(16);
        final byte[] ip = new byte[headerLength + length];
        for (int k = Ipv4Header.MIN_HEADER_LENGTH; k < headerLength; k++)
        {
            ip[k] = 1;
        }
        final byte[] payload = new byte[length];
        random.nextBytes(payload);
        if (length >= 8 && random.nextInt(4) == 0)
        {
            // A plausible UDP header to the echo port, with no checksum.
            payload[2] = 0;
            payload[3] = 7;
            payload[6] = 0;
            payload[7] = 0;
        }
        System.arraycopy(payload, 0, ip, headerLength, length);
        new Ipv4Header().wrap(new UnsafeBuffer(ip), 0, ip.length).versionAndIhl(ihl).tos(0).totalLength(ip.length)
            .identification(random.nextInt(4)).flagsAndFragmentOffset(false, random.nextBoolean(), offset).ttl(64)
            .protocol(PROTOCOLS[random.nextInt(PROTOCOLS.length)]).source(source).destination(STACK_IP).updateChecksum();
        return ip;
    }
}
