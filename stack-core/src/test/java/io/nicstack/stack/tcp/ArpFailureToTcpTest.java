package io.nicstack.stack.tcp;

import static io.nicstack.stack.tcp.TcpTestHarness.PEER_IP;
import static io.nicstack.stack.tcp.TcpTestHarness.PEER_PORT;
import static io.nicstack.stack.tcp.TcpTestHarness.STACK_IP;
import static io.nicstack.stack.tcp.TcpTestHarness.bytes;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static io.nicstack.stack.wire.TcpHeader.SYN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.Frames;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;

/**
 * ARP's give-up reaches TCP (RFC 1122 §2.4: the link layer SHOULD pass error indications up), as Linux's
 * arp_error_report delivers a host unreachable for each packet that waited: a connect to an on-link address nobody holds,
 * or through a gateway that does not answer, fails when ARP gives up (about 3 s) as unreachable instead of after R2 for a
 * SYN (367 s) as timed out; a synchronized connection keeps retransmitting to R2 and is then reported unreachable.
 */
class ArpFailureToTcpTest
{
    /** 198.18.0.77: on the harness's /24, held by no one. */
    private static final int SILENT = 0xC612_004D;
    /** 198.18.0.254: the gateway of {@link #gatewayConfig()}, which never answers. */
    private static final int GATEWAY = 0xC612_00FE;
    /** 198.19.0.10: off the /24, reached through the gateway. */
    private static final int REMOTE = 0xC613_000A;
    private static final int HOST_UNREACHABLE = IcmpHeader.TYPE_DESTINATION_UNREACHABLE << 8 | 1;
    private static final long STEP_MS = 100;

    private static StackConfig gatewayConfig()
    {
        return StackConfig.of("198.18.0.2/24").gateway(GATEWAY);
    }

    /** The time ARP takes to give up on an address: its requests, a retry interval apart, all unanswered. */
    private static long arpGiveUpNanos(final TcpTestHarness t)
    {
        return t.stack.config().arpRetryNanos() * t.stack.config().arpMaxRetries();
    }

    /** Advance in steps until {@code c} is closed (at most {@code limitMs}); the time it took from {@code start}, or -1. */
    private static long advanceUntilClosed(final TcpTestHarness t, final TcpConnection c, final long start, final long limitMs)
    {
        for (long ms = 0; ms < limitMs; ms += STEP_MS)
        {
            t.advanceMs(STEP_MS);
            if (c.state() == TcpState.CLOSED)
            {
                return t.now - start;
            }
        }
        return -1;
    }

    /** The ARP requests the stack sent since the last look, for {@code target}; every frame sent is taken. */
    private static int arpRequestsFor(final TcpTestHarness t, final int target)
    {
        int n = 0;
        for (final byte[] f : t.device.takeSent())
        {
            final UnsafeBuffer b = new UnsafeBuffer(f);
            if (new EthernetFrame().wrap(b, 0, f.length).etherType() != EthernetFrame.ETHERTYPE_ARP)
            {
                continue;
            }
            final ArpPacket a = new ArpPacket().wrap(b, EthernetFrame.HEADER_LENGTH, ArpPacket.LENGTH);
            if (a.operation() == ArpPacket.OP_REQUEST && a.targetProtocolAddress() == target)
            {
                n++;
            }
        }
        return n;
    }

    /** Connect to a destination the stack cannot resolve, then check it ends unreachable when ARP gives up. */
    private static void assertConnectEndsUnreachableAtArpGiveUp(final TcpTestHarness t, final int destination, final int firstHop)
    {
        final long start = t.now;
        final TcpConnection c = t.stack.tcp().connect(destination, 80, t.events, null);
        t.poll();
        final long took = advanceUntilClosed(t, c, start, 400_000);

        assertEquals(arpGiveUpNanos(t), took, "closed when ARP gave up on the first hop, not at R2 for a SYN");
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(HOST_UNREACHABLE, c.softError(), "host unreachable: reported as UNREACHABLE, not TIMED_OUT");
        assertTrue(t.counter(StackCounter.TCP_LINK_FAILURES) >= 1);
        // Each SYN handed to IP waited for ARP and was dropped, counted: none is lost silently, none is left queued.
        assertEquals(t.counter(StackCounter.TCP_SEGMENTS_OUT), t.counter(StackCounter.ARP_RESOLUTION_FAILED));
        assertEquals(0, t.stack.arp().queuedFrames());
        assertEquals(t.stack.config().arpMaxRetries(), arpRequestsFor(t, firstHop), "one resolution, then nothing");
        t.advanceMs(60_000);
        assertEquals(0, arpRequestsFor(t, firstHop), "nothing more is sent for the attempt");
    }

    @Test
    void aConnectToASilentOnLinkHostEndsUnreachableWhenArpGivesUp()
    {
        assertConnectEndsUnreachableAtArpGiveUp(new TcpTestHarness(), SILENT, SILENT);
    }

    @Test
    void aConnectThroughASilentGatewayEndsUnreachableWhenArpGivesUp()
    {
        assertConnectEndsUnreachableAtArpGiveUp(new TcpTestHarness(gatewayConfig()), REMOTE, GATEWAY);
    }

    /** A peer that answers ARP before the give-up gets the SYNs that waited, and the handshake completes as usual. */
    @Test
    void aHostThatAnswersArpLateConnectsNormally()
    {
        final TcpTestHarness t = new TcpTestHarness(StackConfig.of("198.18.0.2/24"), false);
        final long giveUp = arpGiveUpNanos(t);
        t.conn = t.stack.tcp().connect(PEER_IP, PEER_PORT, t.events, null);
        t.poll();
        // Half a retry interval before the give-up: every request but the last went unanswered.
        final long answerAt = t.now + giveUp - t.stack.config().arpRetryNanos() / 2;
        while (t.now < answerAt)
        {
            t.advanceMs(STEP_MS);
        }
        t.recvNothing();
        assertEquals(TcpState.SYN_SENT, t.conn.state());

        t.device.inject(Frames.ethernet(t.mac, Frames.PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REPLY, Frames.PEER_MAC, PEER_IP, t.mac, STACK_IP)));
        t.poll();
        final List<TcpTestHarness.Seg> syns = t.recv();
        assertTrue(!syns.isEmpty() && syns.stream().allMatch(s -> s.r.hasFlags(SYN) && !s.r.hasFlags(ACK)
            && s.r.seq == syns.get(0).r.seq), "the SYNs that waited leave");
        t.iss = syns.get(0).r.seq;
        t.localPort = syns.get(0).r.sourcePort;
        t.peerAnswersArp = true;

        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 1));
        t.recv(t.out());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertEquals(0, t.conn.softError());
        assertEquals(0, t.counter(StackCounter.TCP_LINK_FAILURES));
        assertEquals(0, t.counter(StackCounter.ARP_RESOLUTION_FAILED));
    }

    /**
     * An established connection whose peer goes silent, ARP included, keeps RFC 9293's behaviour: its retransmissions
     * go on (each waits for ARP, which gives up on it) until R2 (MUST-20), and the host unreachable is only kept as a
     * soft error (MUST-56, SHLD-25) to report the timeout as UNREACHABLE, as Linux's sk_err_soft is.
     */
    @Test
    void anEstablishedConnectionWhosePeerGoesSilentOnArpRetransmitsToR2AndEndsUnreachable()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.activeOpen();
        t.write(bytes(100, 7));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(100, 7)));
        t.peerAnswersArp = false;

        TcpState stateAtFirstLinkFailure = null;
        for (int i = 0; i < 20_000 && t.conn.state() != TcpState.CLOSED; i++)
        {
            t.advanceMs(STEP_MS);
            if (stateAtFirstLinkFailure == null && t.counter(StackCounter.TCP_LINK_FAILURES) > 0)
            {
                stateAtFirstLinkFailure = t.conn.state();
            }
        }
        assertEquals(TcpState.ESTABLISHED, stateAtFirstLinkFailure, "ARP gave up while the connection went on");
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(t.conn.settings().r2Retransmits + 1, t.counter(StackCounter.TCP_RTO_EXPIRIES), "closed at R2");
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(HOST_UNREACHABLE, t.conn.softError(), "reported as UNREACHABLE, not TIMED_OUT");
        assertTrue(t.counter(StackCounter.ARP_RESOLUTION_FAILED) > 0);
    }

    /**
     * No negative cache (as Linux, whose FAILED neighbour is resolved afresh by the next packet): a new attempt after
     * a failure asks again and waits ARP's whole time, while attempts made during one resolution share it and fail
     * with it.
     */
    @Test
    void attemptsDuringOneResolutionFailWithItAndALaterAttemptAsksAgain()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final long giveUp = arpGiveUpNanos(t);
        final long start = t.now;
        final TcpConnection first = t.stack.tcp().connect(SILENT, 80, t.events, null);
        t.poll();
        while (t.now - start < giveUp / 2)
        {
            t.advanceMs(STEP_MS);
        }
        final TcpConnection second = t.stack.tcp().connect(SILENT, 81, null, null);
        t.poll();
        assertEquals(giveUp, advanceUntilClosed(t, first, start, 10_000));
        assertEquals(TcpState.CLOSED, second.state(), "the second attempt waited on the same resolution");
        assertEquals(HOST_UNREACHABLE, second.softError());
        assertEquals(t.stack.config().arpMaxRetries(), arpRequestsFor(t, SILENT));

        final long again = t.now;
        final TcpConnection third = t.stack.tcp().connect(SILENT, 80, t.events, null);
        t.poll();
        assertEquals(1, arpRequestsFor(t, SILENT), "a new attempt asks at once");
        assertEquals(giveUp, advanceUntilClosed(t, third, again, 10_000));
        assertEquals(HOST_UNREACHABLE, third.softError());
    }

    /**
     * An application's handler that throws from inside ARP's report (its onClosed, as its attempt ends) costs no other
     * connection its report: the second attempt to the same silent host ends at the same give-up. Before, the
     * throw ended the report loop and the remaining discarded frames were freed unreported: the second attempt ran on
     * to a later give-up (10 s; a second-review probe).
     */
    @Test
    void aHandlerThatThrowsInTheReportCostsNoOtherAttemptItsReport()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final long start = t.now;
        t.stack.tcp().connect(SILENT, 80, new TcpHandler()
        {
            @Override
            public void onClosed(final TcpConnection c, final int reason)
            {
                throw new IllegalStateException("an application's bug");
            }
        }, null);
        final TcpConnection second = t.stack.tcp().connect(SILENT, 81, null, null);
        t.poll();
        for (int i = 0; i < 200 && second.state() != TcpState.CLOSED; i++)
        {
            try
            {
                t.advanceMs(STEP_MS);
            }
            catch (final RuntimeException e)
            {
                // Wherever the application's exception surfaces, the report must have gone on.
            }
        }
        assertEquals(TcpState.CLOSED, second.state());
        assertEquals(3_000_000_000L, t.now - start, "the second attempt ends at the same give-up");
        assertEquals(HOST_UNREACHABLE, second.softError());
    }
}
