package io.nicstack.stack;

import static io.nicstack.stack.Frames.PEER_IP;
import static io.nicstack.stack.Frames.STACK_IP;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpListener;
import io.nicstack.stack.tcp.TcpState;
import io.nicstack.stack.tcp.isn.IsnGenerator;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.udp.UdpSocket;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.TcpRepr;
import io.nicstack.stack.wire.UdpHeader;

/**
 * Hostile frames that get past the checksums to the deep parsers, into a stack with live traffic. Two stacks first talk
 * for a while (three TCP connections with timestamps and SACK echoing data both ways, UDP, pings); from that exchange
 * come the templates: the peer's real segments (their TCP timestamps mostly made fresh again, or PAWS would drop nearly
 * all of them), UDP to the echo port and to a closed one, echo requests with IPv4 options of twelve kinds (Record Route,
 * Timestamp with each flag, Router Alert, a source route, full and malformed ones), an echo request and a UDP datagram
 * in three fragments each with options in the first (sent together, in a random order, under a fresh identification,
 * so that they reassemble), ICMP errors and redirects of twelve types and codes quoting the stack's own TCP segments,
 * UDP datagrams and echo replies (the IP header and 8 octets, or up to 548), and ARP. Each frame is mutated (of a
 * group of fragments, one): truncated, extended, IPv4 header fields, option octets, header length and total length
 * lies, L4 header octets, the quoted datagram of an ICMP error, fragment fields, bit flips; three times in four its L4
 * and IPv4 checksums are then made right again. The stack gets it from a {@link TestDevice}, in a buffer of exactly its
 * length, so a read past the frame throws.
 *
 * <p>After every frame nothing has escaped ({@code INTERNAL_ERRORS}) and every frame the stack sent is well formed:
 * its IPv4 header checksum, lengths and options, and the ICMP, UDP or TCP checksum (and TCP options) of a whole
 * datagram; ARP of the right length. At the end every frame has ended in exactly one terminal counter, the mutations
 * have reached what they are for (options refused, fragments reassembled, redirects applied, errors passed to a UDP
 * socket, segments taken by early demultiplexing and past PAWS), and the stack still answers an echo request.
 *
 * <p>This goes where {@link MutatedFramesTest} does not: its templates have no options, no ICMP errors or redirects, no
 * fragments with options and no connection (so early demultiplexing never matches), and it repairs only the IPv4
 * checksum. Its storm in exactly sized buffers has nothing that this one lacks but a TCP header of zeros; its storm
 * over a {@link io.nicstack.nic.mem.MemoryWire}, in bursts, this one does not replace.
 *
 * <p>The seed is printed in every failure; {@code -Dnicstack.fuzz.seed=S} repeats a run (the stacks' secrets are
 * fixed), {@code -Dnicstack.fuzz.frames=N} runs N / 5 frames: 200,000 by default, 2 to 4 s. A long run, a million:
 * {@code mvn -q -B -o -pl stack-core -am test -Dtest=DeepFramesFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dnicstack.fuzz.frames=5000000}.
 */
class DeepFramesFuzzTest
{
    private static final int FRAMES = Integer.getInteger("nicstack.fuzz.frames", 1_000_000) / 5;
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    private static final String REPLAY = "seed " + SEED + " (-Dnicstack.fuzz.seed=" + SEED + " repeats it)";
    private static final long[] SECRETS = {
        0x0123_4567_89AB_CDEFL, 0x0FED_CBA9_8765_4321L, 0x1111_2222_3333_4444L, 0x5555_6666_7777_8888L};
    /** The peer stack; {@link Frames#PEER_IP} is the stack's gateway, the only first hop whose redirects count. */
    private static final int B_IP = 0xC612_0003;
    private static final int ETH = EthernetFrame.HEADER_LENGTH;

    /** IPv4 options for echo requests: each list a multiple of 4 octets (RFC 791 §3.1, RFC 781, RFC 2113, RFC 7126). */
    private static final byte[][] OPTIONS = {
        options(40, 7, 39, 4),                    // Record Route with room for nine
        options(12, 7, 11, 12),                   // Record Route, full
        options(40, 68, 40, 5, 0),                // Timestamp only
        options(36, 68, 36, 5, 1),                // Timestamp and address
        options(12, 68, 12, 5, 3, 198, 18, 0, 2), // prespecified: us
        options(8, 68, 8, 9, 0xF1),               // full, overflow 15
        options(4, 1, 1, 1, 0),                   // NOPs and end of list
        options(4, 0x94, 4, 0, 0),                // Router Alert
        options(8, 0x83, 7, 4, 0, 0, 0, 0),       // Loose Source Route: dropped
        options(4, 7, 3, 4, 0),                   // Record Route with no room
        options(4, 68, 4, 5, 0),                  // Timestamp with no room
        options(8, 1, 7, 7, 4, 1, 2, 3, 4),       // NOP, then Record Route of length 7 (not a whole entry)
    };

    /**
     * ICMP errors and redirects as {type, code}: destination unreachable (net, host, protocol, port, fragmentation
     * needed, administratively prohibited), source quench, time exceeded (in transit, in reassembly), parameter problem,
     * redirect (host, net).
     */
    private static final int[][] ERRORS = {{3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}, {3, 13}, {4, 0}, {11, 0}, {11, 1}, {12, 0},
        {5, 1}, {5, 0}};

    /** Datagrams the stack sent of each protocol that the errors quote. */
    private static final int QUOTES_PER_PROTOCOL = 16;

    private long now = 1_000_000_000L;
    private final TestDevice da = new TestDevice(1500);
    private final TestDevice db = new TestDevice(1500);
    private final StackCounters counters = StackCounters.inMemory();
    /** The stack under test, 198.18.0.2 behind gateway 198.18.0.1. */
    private final NetStack a =
        stack(da, StackConfig.of("198.18.0.2/24").gateway(PEER_IP).reassemblyTimeoutNanos(50_000_000L), counters);
    /** Its peer, 198.18.0.3: the templates' source. */
    private final NetStack b = stack(db, StackConfig.of("198.18.0.3/24"), StackCounters.inMemory());
    private final long macA = a.config().mac();
    private final long macB = b.config().mac();
    /** Frames each stack sent in the exchange. */
    private final List<byte[]> aToB = new ArrayList<>();
    private final List<byte[]> bToA = new ArrayList<>();
    private final UnsafeBuffer data = new UnsafeBuffer(new byte[3000]);

    /** Echoes what it reads, as far as the send buffer takes it. */
    private static final class Echo implements TcpHandler
    {
        private final UnsafeBuffer buffer = new UnsafeBuffer(new byte[65536]);

        @Override
        public void onReadable(final TcpConnection c)
        {
            final int n = c.read(buffer, 0, Math.min(c.readable(), Math.max(0, c.writable())));
            if (n > 0)
            {
                c.write(buffer, 0, n);
            }
        }
    }

    @Test
    void mutatedFramesOfLiveTrafficAreAccountedForAndEverythingSentIsWellFormed()
    {
        final TcpConnection ours = exchange();
        final List<byte[][]> templates = templates();
        a.poll(now);
        da.takeSent();
        final long framesBefore = counters.get(StackCounter.FRAMES_IN);

        try
        {
            storm(templates, ours);
        }
        catch (final RuntimeException e)
        {
            throw new AssertionError("the storm threw, " + REPLAY, e);
        }

        final String summary = " in " + FRAMES + " frames, " + REPLAY + "\n" + counters;
        assertEquals(framesBefore + FRAMES, counters.get(StackCounter.FRAMES_IN), "every frame taken" + summary);
        assertEquals(0, counters.unaccountedFrames(), "every frame ends in exactly one terminal counter" + summary);
        for (final StackCounter reached : new StackCounter[] {
            StackCounter.IPV4_DROP_BAD_OPTIONS, StackCounter.IPV4_REASSEMBLED, StackCounter.ICMP_OUT_ECHO_REPLIES,
            StackCounter.ICMP_OUT_PARAMETER_PROBLEM, StackCounter.ICMP_OUT_UNREACHABLE, StackCounter.ICMP_IN_REDIRECTS_APPLIED,
            StackCounter.UDP_ICMP_ERRORS, StackCounter.TCP_EARLY_DEMUX, StackCounter.TCP_BAD_OPTIONS})
        {
            assertTrue(counters.get(reached) > 0, "the mutations never reached " + reached + summary);
        }
        assertTrue(counters.get(StackCounter.TCP_PAWS_DROPS) < counters.get(StackCounter.TCP_SEGMENTS_IN) / 2,
            "most segments get past PAWS to the state machine" + summary);

        // Still answering: the peer's address learnt again (a mutated ARP frame may have changed it), then a ping.
        final long replies = counters.get(StackCounter.ICMP_OUT_ECHO_REPLIES);
        da.inject(Frames.ethernet(macA, macB, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REPLY, macB, B_IP, macA, STACK_IP)));
        da.inject(fromB(Frames.ipv4(B_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 1, false, 0,
            Frames.icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 9, 9, new byte[32]))));
        a.poll(now);
        checkSent(FRAMES, new byte[0]);
        assertEquals(replies + 1, counters.get(StackCounter.ICMP_OUT_ECHO_REPLIES), "an echo reply after the storm" + summary);
    }

    /**
     * Two TCP connections from B to A's echo port 80, one from A to B's port 9 (echoed back and forth), UDP from A to
     * B and pings from B, for 400 ms; what each stack sent is kept. Returns A's connection.
     */
    private TcpConnection exchange()
    {
        a.tcp().listen(80, 16, DeepFramesFuzzTest::acceptAll);
        b.tcp().listen(9, 16, DeepFramesFuzzTest::acceptAll);
        a.udp().bind(7, (s, src, port, buf, o, l, t) -> s.send(src, port, buf, o, l, t));
        b.udp().bind(7, (s, src, port, buf, o, l, t) -> { });
        final UdpSocket udpA = a.udp().bind(5555, (s, src, port, buf, o, l, t) -> { });
        final TcpConnection[] connections = {
            b.tcp().connect(STACK_IP, 80, new Echo(), null),
            b.tcp().connect(STACK_IP, 80, new Echo(), null),
            a.tcp().connect(B_IP, 9, new Echo(), null),
        };
        for (int i = 0; i < data.capacity(); i++)
        {
            data.putByte(i, (byte)i);
        }
        for (int round = 0; round < 400; round++)
        {
            if (round % 20 == 5)
            {
                for (final TcpConnection c : connections)
                {
                    if (c.writable() > 0)
                    {
                        c.write(data, 0, Math.min(c.writable(), 1 + round * 7 % 2999));
                    }
                }
                udpA.send(B_IP, 7, data, 0, 200 + round, now);
                da.inject(fromB(Frames.ipv4(B_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, round, false, 0,
                    Frames.icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 3, round, new byte[round]))));
            }
            a.poll(now);
            b.poll(now);
            cross(da, db, aToB);
            cross(db, da, bToA);
            now += 1_000_000L;
        }
        for (final TcpConnection c : connections)
        {
            assertEquals(TcpState.ESTABLISHED, c.state(), c.describe());
        }
        return connections[2];
    }

    /**
     * {@link #FRAMES} frames from the templates, one mutated of each group, polled and checked one by one; time moves
     * 1 ms every 16 frames, and A's connection is given data to send now and then.
     */
    private void storm(final List<byte[][]> templates, final TcpConnection ours)
    {
        int timestamp = 0; // the newest TSval B sent
        for (final byte[] f : bToA)
        {
            final int at = timestampValueAt(f, f.length);
            timestamp = at < 0 ? timestamp : new UnsafeBuffer(f).getInt(at, ByteOrder.BIG_ENDIAN);
        }
        final SplittableRandom random = new SplittableRandom(SEED);
        final byte[] work = new byte[4096];
        int injected = 0;
        while (injected < FRAMES)
        {
            final byte[][] group = templates.get(random.nextInt(templates.size()));
            final int first = random.nextInt(group.length);
            final int identification = random.nextInt(1 << 16);
            for (int k = 0; k < group.length && injected < FRAMES; k++)
            {
                final byte[] template = group[(first + k) % group.length];
                System.arraycopy(template, 0, work, 0, template.length);
                int length = template.length;
                if (group.length > 1)
                {
                    // Fragments of one datagram: a fresh identification, or they would meet those of earlier groups.
                    new Ipv4Header().wrap(new UnsafeBuffer(work, 0, length), ETH, length - ETH).identification(identification)
                        .updateChecksum();
                }
                final int tsVal = timestampValueAt(work, length);
                if (tsVal >= 0 && random.nextInt(4) != 0)
                {
                    // RFC 7323 §5.3: a segment whose timestamp is older than the last one taken is dropped (PAWS).
                    new UnsafeBuffer(work).putInt(tsVal, ++timestamp, ByteOrder.BIG_ENDIAN);
                    repairChecksums(work, length, true);
                }
                if (k == 0)
                {
                    length = mutate(work, length, random);
                }
                final byte[] frame = Arrays.copyOf(work, length);
                da.inject(frame);
                injected++;
                a.poll(now);
                checkSent(injected, frame);
                now += (injected & 15) == 0 ? 1_000_000L : 0;
                if ((injected & 1023) == 0 && ours.state() == TcpState.ESTABLISHED && ours.writable() > 0)
                {
                    ours.write(data, 0, Math.min(ours.writable(), 500)); // new data to send, and to retransmit
                }
            }
        }
        a.poll(now);
        checkSent(injected, new byte[0]);
    }

    private NetStack stack(final TestDevice device, final StackConfig config, final StackCounters stackCounters)
    {
        return new NetStack(device, config, stackCounters, now, new IsnGenerator(SECRETS[0], SECRETS[1]),
            new SynCookies(SECRETS[2], SECRETS[3]));
    }

    private static void acceptAll(final TcpListener listener)
    {
        TcpConnection c;
        while ((c = listener.accept()) != null)
        {
            c.handler(new Echo());
        }
    }

    /** What {@code from} sent goes to {@code to}, and is kept in {@code log}. */
    private static void cross(final TestDevice from, final TestDevice to, final List<byte[]> log)
    {
        for (final byte[] f : from.takeSent())
        {
            log.add(f);
            to.inject(f);
        }
    }

    /** The templates, each a group of frames sent together (the fragments of one datagram) or a single frame. */
    private List<byte[][]> templates()
    {
        final List<byte[][]> templates = new ArrayList<>();
        for (int i = 0; i < bToA.size(); i += Math.max(1, bToA.size() / 300))
        {
            templates.add(new byte[][] {bToA.get(i)});
        }
        final byte[] echo = Frames.icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, 1, new byte[40]);
        for (final byte[] o : OPTIONS)
        {
            templates.add(new byte[][] {fromB(Frames.ipv4(B_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 77, false, 0, o, echo))});
        }
        for (final int port : new int[] {7, 4444}) // the echo service, and a closed port
        {
            templates.add(new byte[][] {fromB(Frames.ipv4(B_IP, STACK_IP, Ipv4Header.PROTOCOL_UDP, 78, false, 0,
                Frames.udp(B_IP, STACK_IP, 999, port, new byte[32])))});
        }
        templates.add(fragments(Ipv4Header.PROTOCOL_ICMP, OPTIONS[0],
            Frames.icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 2, 2, new byte[1200])));
        templates.add(fragments(Ipv4Header.PROTOCOL_UDP, OPTIONS[2], Frames.udp(B_IP, STACK_IP, 999, 7, new byte[1000])));

        // Errors quoting the stack's own datagrams of each protocol, spread over the exchange: the header and 8 octets, or
        // up to 548.
        final List<byte[]> quoted = new ArrayList<>();
        for (final int protocol : new int[] {Ipv4Header.PROTOCOL_TCP, Ipv4Header.PROTOCOL_UDP, Ipv4Header.PROTOCOL_ICMP})
        {
            final List<byte[]> datagrams = aToB.stream()
                .filter(f -> isIpv4(f, f.length) && f[ETH + Ipv4Header.PROTOCOL_OFFSET] == protocol).toList();
            for (int i = 0; i < QUOTES_PER_PROTOCOL && i < datagrams.size(); i++)
            {
                quoted.add(datagrams.get(i * datagrams.size() / QUOTES_PER_PROTOCOL));
            }
        }
        for (int q = 0; q < quoted.size(); q++)
        {
            final byte[] f = quoted.get(q);
            final Ipv4Header ip = new Ipv4Header().wrap(new UnsafeBuffer(f), ETH, f.length - ETH);
            final int quoteLength = Math.min(ip.totalLength(), q % 3 == 0 ? ip.headerLength() + 8 : 548);
            final byte[] quote = Arrays.copyOfRange(f, ETH, ETH + quoteLength);
            for (final int[] e : ERRORS)
            {
                final int rest = switch (e[0])
                {
                    case IcmpHeader.TYPE_DESTINATION_UNREACHABLE -> e[1] == 4 && q % 2 == 0 ? 576 : 0; // RFC 1191: next-hop MTU
                    case IcmpHeader.TYPE_PARAMETER_PROBLEM -> 8 << 24; // the pointer: the TTL
                    // The better gateway: the peer, whose MAC the stack holds (a redirect applies only over a resolved
                    // first hop, as Linux's __ip_do_redirect; 198.18.0.4, never heard from, would only be asked for).
                    case IcmpHeader.TYPE_REDIRECT -> B_IP;
                    default -> 0;
                };
                // Redirects are believed only from the first hop (RFC 1122 §3.2.2.2), the others come from the peer.
                final int source = e[0] == IcmpHeader.TYPE_REDIRECT ? PEER_IP : B_IP;
                templates.add(new byte[][] {fromB(Frames.ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_ICMP, 1000 + q, false, 0,
                    Frames.icmpError(e[0], e[1], rest, quote)))});
            }
        }
        templates.add(new byte[][] {Frames.ethernet(MacAddress.BROADCAST, macB, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REQUEST, macB, B_IP, 0, STACK_IP))});
        templates.add(new byte[][] {Frames.ethernet(macA, macB, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REPLY, macB, B_IP, macA, STACK_IP))});
        return templates;
    }

    /** {@code datagram} (an L4 header and data) in three fragments from B, {@code options} in the first. */
    private byte[][] fragments(final int protocol, final byte[] options, final byte[] datagram)
    {
        final byte[][] fragments = new byte[3][];
        for (int f = 0; f < 3; f++)
        {
            final int start = f * 400;
            final byte[] part = Arrays.copyOfRange(datagram, start, f < 2 ? start + 400 : datagram.length);
            fragments[f] = fromB(Frames.ipv4(B_IP, STACK_IP, protocol, 900, f < 2, start, f == 0 ? options : new byte[0], part));
        }
        return fragments;
    }

    private byte[] fromB(final byte[] datagram)
    {
        return Frames.ethernet(macA, macB, EthernetFrame.ETHERTYPE_IPV4, datagram);
    }

    /** {@code octets}, then zeros to {@code length}. */
    private static byte[] options(final int length, final int... octets)
    {
        final byte[] o = new byte[length];
        for (int i = 0; i < octets.length; i++)
        {
            o[i] = (byte)octets[i];
        }
        return o;
    }

    private static boolean isIpv4(final byte[] f, final int length)
    {
        return length >= ETH + Ipv4Header.MIN_HEADER_LENGTH && f[12] == 0x08 && f[13] == 0x00;
    }

    /**
     * Where the TSval of a whole TCP segment's Timestamps option (RFC 7323 §3: kind 8, length 10) lies in {@code frame},
     * or -1.
     */
    private static int timestampValueAt(final byte[] frame, final int length)
    {
        if (!isIpv4(frame, length) || frame[ETH + Ipv4Header.PROTOCOL_OFFSET] != Ipv4Header.PROTOCOL_TCP)
        {
            return -1;
        }
        final int tcp = ETH + (frame[ETH] & 0x0F) * 4;
        if (tcp + TcpHeader.HEADER_LENGTH > length)
        {
            return -1;
        }
        final int end = Math.min(length, tcp + ((frame[tcp + 12] & 0xF0) >> 2));
        int i = tcp + TcpHeader.HEADER_LENGTH;
        while (i + 10 <= end && frame[i] != 0)
        {
            if (frame[i] == 8 && frame[i + 1] == 10)
            {
                return i + 2;
            }
            i += frame[i] == 1 ? 1 : Math.max(2, frame[i + 1] & 0xFF);
        }
        return -1;
    }

    /** Mutate the frame in {@code out} (of {@code length} octets) in place; returns its new length. */
    private static int mutate(final byte[] out, final int frameLength, final SplittableRandom random)
    {
        int length = frameLength;
        final int mutations = random.nextInt(10) == 0 ? 0 : 1 + random.nextInt(3);
        for (int m = 0; m < mutations; m++)
        {
            final int ihl = length > ETH ? (out[ETH] & 0x0F) * 4 : Ipv4Header.MIN_HEADER_LENGTH;
            final int l4 = ETH + ihl;
            switch (random.nextInt(12))
            {
                case 0 -> length = random.nextInt(length + 1);
                case 1 ->
                {
                    final int extra = Math.min(random.nextInt(64), out.length - length);
                    for (int i = 0; i < extra; i++)
                    {
                        out[length++] = (byte)random.nextInt();
                    }
                }
                case 2 -> setIfWithin(out, length, ETH + random.nextInt(10), (byte)random.nextInt()); // version to protocol
                case 3 ->
                {
                    if (ihl > Ipv4Header.MIN_HEADER_LENGTH && l4 <= length)
                    {
                        // An option octet: often a small value, a plausible kind, length or pointer.
                        out[ETH + Ipv4Header.MIN_HEADER_LENGTH + random.nextInt(ihl - Ipv4Header.MIN_HEADER_LENGTH)] =
                            (byte)(random.nextBoolean() ? random.nextInt() : random.nextInt(48));
                    }
                }
                case 4 -> setIfWithin(out, length, l4 + random.nextInt(64), (byte)random.nextInt()); // L4 header
                case 5 ->
                {
                    if (length > ETH)
                    {
                        out[ETH] = (byte)((out[ETH] & 0xF0) | random.nextInt(16)); // the header length
                    }
                }
                case 6 ->
                {
                    if (length > ETH + Ipv4Header.TOTAL_LENGTH_OFFSET + 1)
                    {
                        final UnsafeBuffer b = new UnsafeBuffer(out);
                        final int at = ETH + Ipv4Header.TOTAL_LENGTH_OFFSET;
                        final int total = b.getShort(at, ByteOrder.BIG_ENDIAN) + random.nextInt(-40, 41);
                        b.putShort(at, (short)total, ByteOrder.BIG_ENDIAN);
                    }
                }
                case 7 -> setIfWithin(out, length, l4 + IcmpHeader.HEADER_LENGTH + (random.nextBoolean() ? 0 : random.nextInt(4)),
                    (byte)random.nextInt()); // an ICMP error's quoted header length, version or total length
                case 8 ->
                {
                    setIfWithin(out, length, ETH + Ipv4Header.FLAGS_FRAGMENT_OFFSET, (byte)random.nextInt());
                    setIfWithin(out, length, ETH + Ipv4Header.FLAGS_FRAGMENT_OFFSET + 1, (byte)random.nextInt());
                }
                default ->
                {
                    final int flips = 1 + random.nextInt(4);
                    for (int i = 0; i < flips && length > 0; i++)
                    {
                        out[random.nextInt(length)] ^= (byte)(1 << random.nextInt(8));
                    }
                }
            }
        }
        if (random.nextInt(4) != 0)
        {
            repairChecksums(out, length, random.nextBoolean());
        }
        return length;
    }

    private static void setIfWithin(final byte[] out, final int length, final int at, final byte value)
    {
        if (at < length)
        {
            out[at] = value;
        }
    }

    /**
     * Make the checksums of the IPv4 frame in {@code out} right again, where its header length fits: the ICMP, UDP (or
     * none, unless {@code udpChecksum}) or TCP one of a whole datagram, then the header's.
     */
    private static void repairChecksums(final byte[] out, final int length, final boolean udpChecksum)
    {
        final int ihl = isIpv4(out, length) ? (out[ETH] & 0x0F) * 4 : 0;
        if (ihl < Ipv4Header.MIN_HEADER_LENGTH || ETH + ihl > length)
        {
            return;
        }
        final UnsafeBuffer b = new UnsafeBuffer(out, 0, length);
        final Ipv4Header ip = new Ipv4Header().wrap(b, ETH, length - ETH);
        final int l4 = ETH + ihl;
        final int l4Length = Math.min(ip.totalLength(), length - ETH) - ihl;
        if (!ip.isFragment())
        {
            switch (ip.protocol())
            {
                case Ipv4Header.PROTOCOL_ICMP ->
                {
                    if (l4Length >= IcmpHeader.HEADER_LENGTH)
                    {
                        new IcmpHeader().wrap(b, l4, l4Length).checksum(0).updateChecksum();
                    }
                }
                case Ipv4Header.PROTOCOL_UDP ->
                {
                    if (l4Length >= UdpHeader.HEADER_LENGTH)
                    {
                        final UdpHeader udp = new UdpHeader().wrap(b, l4, l4Length).checksum(0);
                        if (udpChecksum)
                        {
                            udp.updateChecksum(ip.source(), ip.destination());
                        }
                    }
                }
                case Ipv4Header.PROTOCOL_TCP ->
                {
                    if (l4Length >= TcpHeader.HEADER_LENGTH)
                    {
                        new TcpHeader().wrap(b, l4, l4Length).checksum(0).updateChecksum(ip.source(), ip.destination());
                    }
                }
                default ->
                {
                }
            }
        }
        ip.updateChecksum();
    }

    /** Fail, naming the frame sent and the last one in, unless every frame A sent is well formed and nothing escaped. */
    private void checkSent(final int injected, final byte[] lastIn)
    {
        final Supplier<String> where =
            () -> " after frame " + injected + " in (" + HexFormat.of().formatHex(lastIn) + "), " + REPLAY;
        assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS), () -> "an exception escaped" + where.get());
        for (final byte[] f : da.takeSent())
        {
            final String why = whyMalformed(f);
            assertTrue(why == null, () -> "sent a malformed frame (" + why + "): " + HexFormat.of().formatHex(f) + where.get());
        }
    }

    /** Why {@code f}, a frame the stack sent, is malformed, or null. */
    private static String whyMalformed(final byte[] f)
    {
        final UnsafeBuffer b = new UnsafeBuffer(f);
        final EthernetFrame eth = new EthernetFrame();
        if (!eth.wrapChecked(b, 0, f.length))
        {
            return "shorter than an Ethernet header";
        }
        if (eth.etherType() == EthernetFrame.ETHERTYPE_ARP)
        {
            return new ArpPacket().wrapChecked(b, ETH, f.length - ETH) ? null : "ARP";
        }
        final Ipv4Header ip = new Ipv4Header();
        if (eth.etherType() != EthernetFrame.ETHERTYPE_IPV4)
        {
            return "EtherType " + eth.etherType();
        }
        if (!ip.wrapChecked(b, ETH, f.length - ETH) || !ip.checksumValid())
        {
            return "IPv4 header or its checksum";
        }
        final int total = ip.totalLength();
        final int headerLength = ip.headerLength();
        if (total < headerLength || total > f.length - ETH)
        {
            return "IPv4 total length " + total;
        }
        final String options = whyOptionsMalformed(f, headerLength);
        if (options != null || ip.isFragment())
        {
            return options;
        }
        final int l4 = ETH + headerLength;
        final int l4Length = total - headerLength;
        return switch (ip.protocol())
        {
            case Ipv4Header.PROTOCOL_ICMP ->
            {
                final IcmpHeader icmp = new IcmpHeader();
                yield icmp.wrapChecked(b, l4, l4Length) && icmp.checksumValid() ? null : "ICMP checksum";
            }
            case Ipv4Header.PROTOCOL_UDP ->
            {
                final UdpHeader udp = new UdpHeader();
                final boolean valid = udp.wrapChecked(b, l4, l4Length) && udp.checksumValid(ip.source(), ip.destination());
                yield valid ? null : "UDP checksum";
            }
            case Ipv4Header.PROTOCOL_TCP ->
            {
                final TcpHeader tcp = new TcpHeader();
                if (!tcp.wrapChecked(b, l4, l4Length) || !tcp.checksumValid(ip.source(), ip.destination()))
                {
                    yield "TCP checksum";
                }
                final int status = new TcpRepr().parse(b, l4, l4Length);
                yield status == TcpRepr.OK ? null : "TCP options: " + TcpRepr.statusName(status);
            }
            default -> "protocol " + ip.protocol();
        };
    }

    /** Every option inside the header (RFC 791 §3.1), Record Route and Timestamp pointers at least 4. */
    private static String whyOptionsMalformed(final byte[] f, final int headerLength)
    {
        int i = Ipv4Header.MIN_HEADER_LENGTH;
        while (i < headerLength)
        {
            final int kind = f[ETH + i] & 0xFF;
            if (kind == 0)
            {
                return null;
            }
            if (kind == 1)
            {
                i++;
                continue;
            }
            final int length = i + 1 < headerLength ? f[ETH + i + 1] & 0xFF : 0;
            if (length < 2 || i + length > headerLength)
            {
                return "IPv4 option at " + i;
            }
            final int pointer = length > 2 ? f[ETH + i + 2] & 0xFF : 0;
            if ((kind == 7 || kind == 68) && pointer < 4)
            {
                return "IPv4 option pointer " + pointer + " of kind " + kind;
            }
            i += length;
        }
        return null;
    }
}
