package io.nicstack.stack.iface;

import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.udp.UdpSocket;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;

import static io.nicstack.stack.Frames.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * ICMP Redirects (RFC 1122 §3.2.2.2: a host MUST update its routing information on one, and SHOULD discard one that
 * does not come from the current first hop for the destination or names a gateway off the subnet it came through).
 * The stack's gateway is {@link io.nicstack.stack.Frames#PEER_IP}; a second router sits at {@link #ROUTER2}.
 */
class IcmpRedirectTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final int ROUTER2 = Ipv4Address.parse("198.18.0.9");
    private static final long ROUTER2_MAC = 0x0A00_0000_0009L;
    private static final int FAR = Ipv4Address.parse("198.19.7.7");
    private static final int FAR2 = Ipv4Address.parse("198.19.7.8");
    /** An on-link host that has not answered ARP (yet). */
    private static final int ROUTER3 = Ipv4Address.parse("198.18.0.77");
    private static final long ROUTER3_MAC = 0x0A00_0000_0077L;

    private TestDevice device;
    private StackCounters counters;
    private NetStack stack;
    private UdpSocket socket;
    private long mac;
    private long now = 1_000 * SECOND;
    /** Destination MACs of the ARP frames the last {@link #sendTo} removed. */
    private final List<Long> sentArpRequests = new ArrayList<>();

    @BeforeEach
    void setUp()
    {
        device = new TestDevice(1500);
        counters = StackCounters.inMemory();
        stack = new NetStack(device, StackConfig.of("198.18.0.2/24").gateway(PEER_IP), counters, now);
        mac = stack.config().mac();
        socket = stack.udp().bind(6000, 1 << 16);
        hearFrom(PEER_IP, PEER_MAC);
        hearFrom(ROUTER2, ROUTER2_MAC);
    }

    /** An ARP request for us from {@code ip}: the stack learns its MAC. */
    private void hearFrom(final int ip, final long hostMac)
    {
        device.inject(ethernet(MacAddress.BROADCAST, hostMac, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REQUEST, hostMac, ip, 0, STACK_IP)));
        stack.poll(now);
        device.takeSent();
    }

    /** Send a datagram to {@code destination}; returns its frame (ARP's confirmations of stale entries aside). */
    private byte[] sendTo(final int destination)
    {
        assertTrue(socket.send(destination, 9, new UnsafeBuffer(new byte[16]), 0, 16, now));
        stack.poll(now);
        final List<byte[]> sent = device.takeSent();
        sentArpRequests.clear();
        sent.removeIf(f ->
        {
            final EthernetFrame frame = new EthernetFrame().wrap(new UnsafeBuffer(f), 0, f.length);
            if (frame.etherType() != EthernetFrame.ETHERTYPE_ARP)
            {
                return false;
            }
            sentArpRequests.add(frame.destination());
            return true;
        });
        assertEquals(1, sent.size());
        return sent.get(0);
    }

    private static long macOf(final byte[] frame)
    {
        return new EthernetFrame().wrap(new UnsafeBuffer(frame), 0, frame.length).destination();
    }

    /** The first hop a datagram to {@code destination} goes to now, by its frame's destination MAC. */
    private long firstHopMac(final int destination)
    {
        return macOf(sendTo(destination));
    }

    /**
     * A Redirect from {@code source} quoting {@code quoted} (an Ethernet frame whose IP datagram it quotes). It is never
     * answered; the targets of the ARP requests it made are left in {@link #arpAsked}.
     */
    private void redirect(final int source, final int to, final int code, final int gateway, final byte[] quoted)
    {
        final int quoteLength = Ipv4Header.MIN_HEADER_LENGTH + 8;
        final byte[] icmp = new byte[IcmpHeader.HEADER_LENGTH + quoteLength];
        final UnsafeBuffer b = new UnsafeBuffer(icmp);
        b.putBytes(IcmpHeader.HEADER_LENGTH, quoted, EthernetFrame.HEADER_LENGTH, quoteLength);
        new IcmpHeader().wrap(b, 0, icmp.length).type(IcmpHeader.TYPE_REDIRECT).code(code).checksum(0)
            .restOfHeader(gateway).updateChecksum();
        final long sourceMac = source == PEER_IP ? PEER_MAC : ROUTER2_MAC;
        device.inject(ethernet(mac, sourceMac, EthernetFrame.ETHERTYPE_IPV4,
            ipv4(source, to, Ipv4Header.PROTOCOL_ICMP, 77, false, 0, icmp)));
        stack.poll(now);
        final List<byte[]> sent = device.takeSent();
        arpAsked.clear();
        sent.removeIf(f ->
        {
            if (new EthernetFrame().wrap(new UnsafeBuffer(f), 0, f.length).etherType() != EthernetFrame.ETHERTYPE_ARP)
            {
                return false;
            }
            arpAsked.add(new ArpPacket().wrap(new UnsafeBuffer(f), EthernetFrame.HEADER_LENGTH, ArpPacket.LENGTH)
                .targetProtocolAddress());
            return true;
        });
        assertTrue(sent.isEmpty(), "a redirect is never answered");
    }

    /** Addresses the last {@link #redirect} asked for with ARP requests. */
    private final List<Integer> arpAsked = new ArrayList<>();

    private static Ipv4Header quotedHeader(final byte[] frame)
    {
        return new Ipv4Header().wrap(new UnsafeBuffer(frame), EthernetFrame.HEADER_LENGTH, Ipv4Header.MIN_HEADER_LENGTH);
    }

    private void redirect(final int source, final int gateway, final byte[] quoted)
    {
        redirect(source, STACK_IP, 1, gateway, quoted);
    }

    private long applied()
    {
        return counters.get(StackCounter.ICMP_IN_REDIRECTS_APPLIED);
    }

    private long ignored()
    {
        return counters.get(StackCounter.ICMP_IN_REDIRECTS_IGNORED);
    }

    @Test
    void aRedirectFromTheGatewaySendsThatDestinationToTheNewFirstHopAndNoOtherDestination()
    {
        final byte[] sent = sendTo(FAR);
        assertEquals(PEER_MAC, macOf(sent), "through the default gateway");
        redirect(PEER_IP, ROUTER2, sent);
        assertEquals(1, applied());
        assertEquals(ROUTER2_MAC, firstHopMac(FAR), "the redirected destination");
        assertEquals(PEER_MAC, firstHopMac(FAR2), "another destination keeps the default gateway");
        assertEquals(0, counters.unaccountedFrames());
    }

    /** Net and type-of-service redirects (codes 0, 2, 3) are taken as host redirects (RFC 1122 §3.3.1.2). */
    @Test
    void everyRedirectCodeOfRfc792IsAHostRedirect()
    {
        for (int code = 0; code <= IcmpHeader.MAX_REDIRECT_CODE; code++)
        {
            final int far = FAR + 100 + code;
            redirect(PEER_IP, STACK_IP, code, ROUTER2, sendTo(far));
            assertEquals(ROUTER2_MAC, firstHopMac(far), "code " + code);
        }
        assertEquals(IcmpHeader.MAX_REDIRECT_CODE + 1, applied());
        redirect(PEER_IP, STACK_IP, IcmpHeader.MAX_REDIRECT_CODE + 1, ROUTER2, sendTo(FAR));
        assertEquals(1, ignored(), "a code RFC 792 does not define");
        assertEquals(PEER_MAC, firstHopMac(FAR));
    }

    @Test
    void redirectsThatAreNotFromTheFirstHopOrNameNoHostOfOurSubnetOrQuoteNoDatagramOfOursAreIgnored()
    {
        final byte[] toFar = sendTo(FAR);
        int expected = 0;
        redirect(ROUTER2, ROUTER2, toFar);
        assertEquals(++expected, ignored(), "not from the current first hop");
        redirect(PEER_IP, Ipv4Address.parse("198.20.0.1"), toFar);
        assertEquals(++expected, ignored(), "a new gateway off our subnet");
        redirect(PEER_IP, STACK_IP, toFar);
        assertEquals(++expected, ignored(), "ourselves as the new gateway");
        redirect(PEER_IP, Ipv4Address.parse("198.18.0.255"), toFar);
        assertEquals(++expected, ignored(), "the subnet's broadcast address");
        redirect(PEER_IP, Ipv4Address.parse("198.18.0.0"), toFar);
        assertEquals(++expected, ignored(), "the subnet's network address");
        redirect(PEER_IP, Ipv4Address.parse("198.18.0.255"), 1, ROUTER2, toFar);
        assertEquals(++expected, ignored(), "sent to the broadcast address");

        final byte[] notOurs = toFar.clone();
        quotedHeader(notOurs).source(Ipv4Address.parse("198.18.0.50"));
        redirect(PEER_IP, ROUTER2, notOurs);
        assertEquals(++expected, ignored(), "quoting a datagram we did not send");

        final byte[] onLink = toFar.clone();
        quotedHeader(onLink).destination(Ipv4Address.parse("198.18.0.60"));
        redirect(PEER_IP, ROUTER2, onLink);
        assertEquals(++expected, ignored(), "about a destination on our link");

        assertEquals(0, applied());
        assertEquals(PEER_MAC, firstHopMac(FAR), "still through the default gateway");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * Once redirected, the new first hop is the one router that may redirect the destination again; the old gateway
     * may not. A redirect back to the default gateway ends the host route.
     */
    @Test
    void onlyTheCurrentFirstHopRedirectsAgainAndARedirectToTheDefaultGatewayEndsTheRoute()
    {
        final byte[] toFar = sendTo(FAR);
        redirect(PEER_IP, ROUTER2, toFar);
        redirect(PEER_IP, Ipv4Address.parse("198.18.0.10"), toFar);
        assertEquals(1, ignored(), "the old gateway is no longer the first hop");
        assertEquals(ROUTER2_MAC, firstHopMac(FAR));
        redirect(ROUTER2, PEER_IP, toFar);
        assertEquals(2, applied());
        assertEquals(PEER_MAC, firstHopMac(FAR), "back to the default gateway");
    }

    /** A learned route lasts 300 s (as Linux's redirect exceptions, ip_rt_gc_timeout), then the default route holds. */
    @Test
    void aRedirectLastsFiveMinutes()
    {
        redirect(PEER_IP, ROUTER2, sendTo(FAR));
        now += Redirects.LIFETIME_SECONDS * SECOND - 1;
        assertEquals(ROUTER2_MAC, firstHopMac(FAR));
        now += 1;
        assertEquals(PEER_MAC, firstHopMac(FAR));
    }

    /**
     * Negative advice from a transport that sees no answers (RFC 1122 §3.3.1.4; TCP at R1) ends a redirected route, as
     * Linux's ipv4_negative_advice drops a redirect exception: a dead second router sends us back to the default one.
     * The first hop's link address is polled (a unicast ARP request) when it is next used.
     */
    @Test
    void negativeAdviceEndsARedirectedRouteAndPollsTheFirstHop()
    {
        redirect(PEER_IP, ROUTER2, sendTo(FAR));
        redirect(PEER_IP, ROUTER2, sendTo(FAR2));
        stack.ipv4().adviseUnreachable(FAR, now);
        assertEquals(PEER_MAC, firstHopMac(FAR), "back to the default gateway");
        assertEquals(List.of(), polls(), "the default gateway was not advised against");
        assertEquals(ROUTER2_MAC, firstHopMac(FAR2), "another destination keeps its route");
        assertEquals(List.of(ROUTER2_MAC), polls(), "but the router it goes through is polled");
        stack.ipv4().adviseUnreachable(FAR, now);
        assertEquals(PEER_MAC, firstHopMac(FAR));
        assertEquals(List.of(PEER_MAC), polls(), "the default gateway advised against in turn");
    }

    /** Destination MACs of the unicast ARP requests of the last {@link #sendTo} (polls of cached entries). */
    private List<Long> polls()
    {
        return sentArpRequests.stream().filter(m -> m != MacAddress.BROADCAST).toList();
    }

    /** The table is bounded: past its capacity a new destination replaces the one closest to expiring. */
    @Test
    void theTableIsBoundedAndANewDestinationReplacesTheOneClosestToExpiring()
    {
        final Redirects table = new Redirects();
        for (int i = 0; i < Redirects.CAPACITY; i++)
        {
            table.learn(FAR + i, ROUTER2, now + i);
        }
        table.learn(FAR, ROUTER2, now + Redirects.CAPACITY);
        assertEquals(Redirects.CAPACITY, table.size(), "a known destination is refreshed, not added");
        table.learn(FAR2 + 1000, ROUTER2, now + Redirects.CAPACITY + 1);
        assertEquals(Redirects.CAPACITY, table.size());
        assertEquals(0, table.gatewayFor(FAR + 1, now), "the entry closest to expiring gave way");
        assertEquals(ROUTER2, table.gatewayFor(FAR, now), "the refreshed one stays");
        assertEquals(ROUTER2, table.gatewayFor(FAR2 + 1000, now));
        for (int i = 2; i < Redirects.CAPACITY; i++)
        {
            assertEquals(ROUTER2, table.gatewayFor(FAR + i, now), "entry " + i);
        }
        table.forget(FAR + 5);
        assertEquals(0, table.gatewayFor(FAR + 5, now));
        assertEquals(Redirects.CAPACITY - 1, table.size());
        assertEquals(ROUTER2, table.gatewayFor(FAR + 6, now), "the others stay where they were");
    }

    /**
     * A redirect to a host whose link address we do not know is not applied: its address is asked (an ARP request),
     * and datagrams keep going to the current first hop. Once it answers, the router's next redirect applies. As Linux's
     * __ip_do_redirect, which takes a redirect only when the new gateway's neighbour entry is valid. Before, it was
     * applied at once, and a host that never answered ARP took every datagram to that destination for 300 s (UDP has
     * no negative advice to end the route).
     */
    @Test
    void aRedirectToAHostNotResolvedIsNotAppliedButItsAddressIsAsked()
    {
        final byte[] toFar = sendTo(FAR);
        redirect(PEER_IP, ROUTER3, toFar);
        assertEquals(0, applied());
        assertEquals(1, ignored());
        assertEquals(1, counters.get(StackCounter.ICMP_IN_REDIRECTS_UNRESOLVED));
        assertEquals(List.of(ROUTER3), arpAsked, "the new first hop is asked for");
        redirect(PEER_IP, ROUTER3, toFar);
        assertEquals(List.of(), arpAsked, "a second redirect while the first request waits asks nothing (RFC 1122 2.3.2.1)");
        assertEquals(2, counters.get(StackCounter.ICMP_IN_REDIRECTS_UNRESOLVED));
        for (int s = 0; s < 10; s++)
        {
            now += SECOND;
            assertEquals(PEER_MAC, firstHopMac(FAR), "still through the default gateway after " + s + " s");
        }
        redirect(PEER_IP, ROUTER3, toFar);
        assertEquals(List.of(ROUTER3), arpAsked, "asked again once the first resolution gave up");

        device.inject(ethernet(mac, ROUTER3_MAC, EthernetFrame.ETHERTYPE_ARP,
            arp(ArpPacket.OP_REPLY, ROUTER3_MAC, ROUTER3, mac, STACK_IP)));
        stack.poll(now);
        device.takeSent();
        assertEquals(PEER_MAC, firstHopMac(FAR), "an answer alone changes no route");
        redirect(PEER_IP, ROUTER3, toFar);
        assertEquals(1, applied(), "the redirect applies once its first hop resolves");
        assertEquals(ROUTER3_MAC, firstHopMac(FAR));
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * A redirected first hop that stops answering ARP (its entry aged, and the poll of it goes unanswered) loses its
     * routes: the destinations go back to the default gateway, counted. Before, the route stayed until it aged (300 s),
     * every datagram to those destinations waiting for ARP and dropped.
     */
    @Test
    void aRedirectedFirstHopThatStopsAnsweringArpLosesItsRoutes()
    {
        redirect(PEER_IP, ROUTER2, sendTo(FAR));
        redirect(PEER_IP, ROUTER2, sendTo(FAR2));
        assertEquals(2, applied());
        // Past the entry's lifetime the next datagram polls ROUTER2; the poll and its retries go unanswered.
        now += stack.config().arpEntryLifetimeNanos();
        assertEquals(ROUTER2_MAC, firstHopMac(FAR), "a stale entry is still used while it is polled");
        assertEquals(List.of(ROUTER2_MAC), polls());
        for (int i = 0; i < stack.config().arpMaxRetries(); i++)
        {
            now += stack.config().arpRetryNanos();
            stack.poll(now);
            device.takeSent();
        }
        assertEquals(-1, stack.arp().lookup(ROUTER2), "ROUTER2 given up");
        assertEquals(2, counters.get(StackCounter.IPV4_REDIRECTS_DROPPED_UNRESOLVED));
        assertEquals(PEER_MAC, firstHopMac(FAR), "back to the default gateway");
        assertEquals(PEER_MAC, firstHopMac(FAR2), "back to the default gateway");
    }
}
