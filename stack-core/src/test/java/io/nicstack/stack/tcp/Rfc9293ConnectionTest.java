package io.nicstack.stack.tcp;

import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * RFC 9293 §3.4-§3.6, §3.9.2, §3.10.7: ISN selection, opening, reset generation and processing,
 * closing and TIME-WAIT, address validation (Appendix B "ISN Selection", "Opening Connections",
 * "Closing Connections", "Address Validation").
 */
class Rfc9293ConnectionTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    // ------------------------------------------------------------------------------------------
    // ISN selection (§3.4.1)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_must8_isnIsClockDriven()
    {
        t.passiveOpen();
        final int first = t.iss;
        t.send(t.in().flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());

        // The same connection tuple one second later: M, the 4 µs timer, has moved by 250 000.
        t.advance(SECOND);
        t.conn = null;
        t.send(t.peerSyn());
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        assertEquals(250_000, synAck.r.seq - first);
    }

    @Test
    void rfc9293_must9_isnNotComputableFromOutside()
    {
        // Two hosts at the same instant give unrelated ISNs for the same tuple (secret key), and
        // neighbouring tuples on one host are not a fixed offset apart.
        final TcpTestHarness other = new TcpTestHarness();
        t.passiveOpen();
        other.passiveOpen();
        assertNotEquals(t.iss, other.iss);

        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        final int iss41 = t.recv().get(0).r.seq;
        other.peerPort = PEER_PORT + 1;
        other.send(other.peerSyn());
        final int otherIss41 = other.recv().get(0).r.seq;
        assertNotEquals(iss41 - t.iss, otherIss41 - other.iss, "the per-tuple offset depends on each host's secret");
    }

    // ------------------------------------------------------------------------------------------
    // Opening (§3.5)
    // ------------------------------------------------------------------------------------------

    /**
     * bytes_acked (what `nicstack conns` shows, Linux's tcpi_bytes_acked) counts the SYN as acknowledged sequence space
     * on every kind of open, as Linux's tcp_snd_una_update does; before, an active open showed 0 where a passive one
     * showed 1.
     */
    @Test
    void bytesAckedCountsOurSynOnActiveAndPassiveOpens()
    {
        t.activeOpen();
        assertEquals(1, t.conn.bytesAcked(), "active open");
        final TcpTestHarness passive = new TcpTestHarness();
        passive.passiveOpen();
        assertEquals(1, passive.conn.bytesAcked(), "passive open");
    }

    @Test
    void rfc9293_must10_simultaneousOpen()
    {
        // Figure 7: both ends send SYN; each answers the other's SYN with SYN,ACK; each ACK completes.
        t.connect();
        assertEquals(TcpState.SYN_SENT, t.conn.state());

        // 3. SYN-SENT <-- <SEQ=irs><CTL=SYN>: to SYN-RECEIVED, answer <SEQ=iss><ACK=irs+1><CTL=SYN,ACK>.
        t.send(t.peerSyn());
        t.recv(t.out().flags(SYN | ACK).seq(t.iss).ack(t.irs + 1).mss(1460));
        assertEquals(TcpState.SYN_RECEIVED, t.conn.state());

        // 6. SYN-RECEIVED <-- <SEQ=irs><ACK=iss+1><CTL=SYN,ACK>: ESTABLISHED.
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 1));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertTrue(t.events.connected);
        assertEquals(1, t.conn.bytesAcked(), "the SYN counts, as on every open");
        t.recvNothing();

        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11));
        t.write(bytes(5, 2));
        t.recv(t.out().ack(t.irs + 11).flags(ACK | PSH).payload(bytes(5, 2)));
    }

    @Test
    void rfc9293_must10_simultaneousOpenWhereTheSynAckCrossesOurAck()
    {
        // Variant: the peer's ACK (not its SYN,ACK) arrives first; the handshake still completes.
        t.connect();
        t.send(t.peerSyn());
        t.recv(t.out().flags(SYN | ACK).seq(t.iss).ack(t.irs + 1).mss(1460));
        t.send(t.in());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        t.recvNothing();
    }

    @Test
    void rfc9293_must11_synReceivedFromPassiveOpenReturnsToListen()
    {
        t.listen();
        t.send(t.peerSyn());
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        t.iss = synAck.r.seq;
        assertEquals(1, t.listener.synReceived());

        // An acceptable RST in SYN-RECEIVED of a passive open: back to LISTEN, the application is not told.
        t.send(t.in().flags(RST));
        t.recvNothing();
        assertEquals(0, t.listener.synReceived());
        assertEquals(0, t.stack.tcp().connectionCount());

        // Still listening: a new SYN is answered.
        t.irs = REMOTE_ISS + 100_000;
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        assertEquals(1, t.listener.synReceived());
    }

    /**
     * §3.10.7.4 "fourth", SYN-RECEIVED of a passive open: an in-window SYN (a peer that restarted and chose a new ISN)
     * returns the connection to LISTEN, silently; the peer's next SYN opens a fresh one. Before, the stack answered
     * with a challenge ACK (the SYN,ACK again, acknowledging the old ISN) and kept the stale half-open connection.
     */
    @Test
    void rfc9293_anInWindowSynInSynReceivedOfAPassiveOpenReturnsToListen()
    {
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        assertEquals(1, t.listener.synReceived());

        t.send(t.peerSyn().seq(t.irs + 1000));
        t.recvNothing();
        assertEquals(0, t.listener.synReceived(), "back to LISTEN");
        assertEquals(0, t.stack.tcp().connectionCount());

        t.irs = t.irs + 1000;
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.send(t.in());
        assertNotNull(t.listener.accept(), "the peer's next SYN opens a connection");
    }

    @Test
    void linux_aSynWithFinToAListenerIsDropped()
    {
        t.listen();
        t.send(t.peerSyn().flags(SYN | FIN));
        t.recvNothing();
        assertEquals(0, t.listener.synReceived());
        assertEquals(0, t.stack.tcp().connectionCount());
        assertEquals(1, t.counter(StackCounter.TCP_DROP_SYN_FIN));
        assertEquals(0, t.stack.counters().unaccountedFrames(), "one final counter per frame: the segment is counted in");
        // A SYN alone opens as usual.
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        assertEquals(1, t.listener.synReceived());
    }

    @Test
    void rfc9293_must11_synReceivedFromActiveOpenIsRefusedByReset()
    {
        // Reached SYN-RECEIVED by simultaneous open: an acceptable RST means "connection refused".
        t.connect();
        t.send(t.peerSyn());
        t.recv(t.out().flags(SYN | ACK).seq(t.iss).ack(t.irs + 1).mss(1460));
        t.send(t.in().flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_REFUSED, t.events.closedReason);
        t.recvNothing();
    }

    @Test
    void rfc9293_must22_synAckRetransmittedInSynReceived()
    {
        t.listen();
        t.send(t.peerSyn());
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        t.iss = synAck.r.seq;
        t.advanceMs(999);
        t.recvNothing();
        t.advanceMs(1);
        t.recv(t.expectedSynAck());
        // A retransmitted SYN from the peer gets the SYN,ACK again (same ISN).
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
    }

    @Test
    void linux_synAcksAnsweringTheSynAgainAreRateLimited()
    {
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        // A flood of the same SYN draws one SYN,ACK per interval (Linux's tcp_oow_rate_limited in tcp_check_req).
        for (int i = 0; i < 100; i++)
        {
            t.send(t.peerSyn());
        }
        t.recv(t.expectedSynAck());
        t.advanceMs(499);
        t.send(t.peerSyn());
        t.recvNothing();
        t.advanceMs(1);
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
    }

    @Test
    void rfc9293_must20_aHalfOpenConnectionEndsAfterItsSynAckRetriesWhateverThePeerSends()
    {
        // A peer (or anyone with its address) that sends its SYN again and again, each answered by a SYN,ACK: the
        // half-open connection still ends when it would with a quiet peer, after synAckRetransmits expiries of its timer.
        final long quietLifetime = halfOpenLifetime(new TcpTestHarness(), false);
        final long askingLifetime = halfOpenLifetime(t, true);
        assertEquals(quietLifetime, askingLifetime);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    /** How long a half-open connection lives, in 500 ms steps, while the peer sends its SYN again each step or not. */
    private static long halfOpenLifetime(final TcpTestHarness h, final boolean synEachStep)
    {
        h.listen();
        h.send(h.peerSyn());
        h.iss = h.recv(h.expectedSynAck()).get(0).r.seq;
        final long start = h.now;
        int synAcks = 0;
        while (h.now - start < 3600 * SECOND)
        {
            h.advanceMs(500);
            synAcks += h.recv().size();
            if (h.listener.synReceived() == 0)
            {
                break; // (the next SYN would open a new connection)
            }
            if (synEachStep)
            {
                h.send(h.peerSyn());
                synAcks += h.recv().size();
            }
        }
        assertEquals(0, h.listener.synReceived(), "the half-open connection ended");
        assertTrue(synAcks >= h.settings().synAckRetransmits, "SYN,ACKs sent: " + synAcks);
        return h.now - start;
    }

    @Test
    void rfc9293_must41_passiveOpenDoesNotDisturbOtherConnections()
    {
        t.activeOpen();
        final int activePort = t.localPort;
        // A LISTEN on the active connection's local port and on port 80 changes nothing for it.
        t.stack.tcp().listen(activePort + 1 > 65535 ? 1 : activePort + 1, 4, null);
        t.stack.tcp().listen(LISTEN_PORT, 4, null);
        t.send(t.in().flags(ACK | PSH).payload(bytes(30, 3)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 31));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc9293_must42_oneListeningPortServesSeveralConnections()
    {
        final TcpConnection first = t.passiveOpen();
        final int firstIss = t.iss;
        t.peerPort = PEER_PORT + 1;
        final TcpConnection second = t.passiveOpen();
        assertNotSame(first, second);
        assertEquals(LISTEN_PORT, first.localPort());
        assertEquals(LISTEN_PORT, second.localPort());
        // Data on one does not touch the other.
        t.send(t.in().flags(ACK | PSH).payload(bytes(7, 4)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 8));
        assertEquals(7, second.readable());
        assertEquals(0, first.readable());
        t.peerPort = PEER_PORT;
        t.iss = firstIss;
        t.send(t.in().flags(ACK | PSH).payload(bytes(9, 5)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 10));
        assertEquals(9, first.readable());
    }

    @Test
    void rfc9293_must44_must45_segmentsUseTheConnectionsLocalAddress()
    {
        t.activeOpen();
        t.write(bytes(100, 6));
        final Seg data = t.recv(t.out().flags(ACK | PSH).payload(bytes(100, 6))).get(0);
        assertEquals(STACK_IP, data.ipSource);
        t.passiveOpen();
    }

    /**
     * RFC 9293 §3.9.1.1 (MUST-48): the application sets the DiffServ field of a connection's segments
     * ({@code TcpSettings.dscp}, as IP_TOS): every segment of an active open with DSCP 46 (EF) carries TOS 0xB8, the
     * SYN,ACK and data of a listener's connection with DSCP 10 carry 0x28, and others 0. Before, every segment went
     * with TOS 0.
     */
    @Test
    void rfc9293_must48_theApplicationSetsTheDiffServField()
    {
        t.settings().dscp = 46;
        assertEquals(0xB8, t.connect().ipTos, "the SYN");
        t.conn.abort();
        t.recv();
        t.activeOpen();
        t.write(bytes(100, 1));
        assertEquals(0xB8, t.recv(t.out().flags(ACK | PSH).payload(bytes(100, 1))).get(0).ipTos, "data");

        final TcpTestHarness p = new TcpTestHarness();
        p.settings().dscp = 10;
        p.listen();
        p.send(p.peerSyn());
        assertEquals(0x28, p.recv().get(0).ipTos, "the SYN,ACK");
        final TcpTestHarness plain = new TcpTestHarness();
        assertEquals(0, plain.connect().ipTos, "the default class");
        t.settings().dscp = 64;
        assertThrows(IllegalArgumentException.class, () -> t.stack.tcp().connect(PEER_IP, 81, t.events, null));
    }

    /**
     * RFC 9293 §3.9.1.1 (MUST-49), RFC 1122 §3.2.1.7: the TTL of TCP's segments is configurable (the stack's, with
     * {@code StackConfig.defaultTtl}; the daemon's {@code --ttl}), 64 by default; 0 is refused. Before, it was 64, fixed.
     */
    @Test
    void rfc9293_must49_theTtlIsConfigurable()
    {
        assertEquals(64, t.connect().ipTtl, "the default");
        final TcpTestHarness h = new TcpTestHarness(io.nicstack.stack.iface.StackConfig.of("198.18.0.2/24").defaultTtl(7));
        assertEquals(7, h.connect().ipTtl, "the SYN");
        h.conn.abort();
        h.activeOpen();
        h.write(bytes(100, 1));
        assertEquals(7, h.recv(h.out().flags(ACK | PSH).payload(bytes(100, 1))).get(0).ipTtl, "data");
        for (final int bad : new int[] {0, 256})
        {
            assertThrows(IllegalArgumentException.class,
                () -> io.nicstack.stack.iface.StackConfig.of("198.18.0.2/24").defaultTtl(bad));
        }
    }

    @Test
    void rfc9293_must46_openToBroadcastOrMulticastRejected()
    {
        // Broadcast, multicast and unspecified (MUST-46), and the other addresses no peer can hold: 0/8, loopback
        // (this stack has none), class E, and our own address (the SYN would leave on the wire and never come back).
        for (final int bad : new int[] {SUBNET_BROADCAST, 0xFFFF_FFFF, 0xE000_0001, 0xEFFF_FFFA, 0, 0x0001_0203,
            0x7F00_0001, 0xF000_0001, STACK_IP})
        {
            assertThrows(IllegalArgumentException.class, () -> t.stack.tcp().connect(bad, 80, t.events, null),
                "OPEN to " + Integer.toHexString(bad));
        }
        t.poll();
        t.recvNothing();
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    @Test
    void rfc9293_must57_segmentsToBroadcastOrMulticastSilentlyDiscarded()
    {
        t.listen();
        t.send(t.peerSyn().to(SUBNET_BROADCAST));
        t.send(t.peerSyn().to(0xE000_00FB));
        t.recvNothing();
        assertEquals(0, t.listener.synReceived());
        assertEquals(1, t.counter(StackCounter.TCP_DROP_BROADCAST));
        // Not even a RST for a broadcast segment to a closed port.
        t.send(t.in().ports(PEER_PORT, 9).to(SUBNET_BROADCAST));
        t.recvNothing();
    }

    @Test
    void rfc9293_must63_synFromInvalidSourceAddressIgnored()
    {
        t.listen();
        t.send(t.peerSyn().from(SUBNET_BROADCAST));
        t.send(t.peerSyn().from(0xE000_0005));
        t.send(t.peerSyn().from(0xFFFF_FFFF));
        t.recvNothing();
        assertEquals(0, t.listener.synReceived());
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    // ------------------------------------------------------------------------------------------
    // Reset generation (§3.5.2) and processing (§3.5.3)
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_resetForSegmentToClosedPortWithAck()
    {
        // CLOSED, ACK on: <SEQ=SEG.ACK><CTL=RST>.
        t.send(t.in().ports(PEER_PORT, 9).ack(12345).payload(bytes(3, 7)));
        t.localPort = 9;
        t.recv(t.out().flags(RST).seq(12345).ack(0));
    }

    @Test
    void rfc9293_resetForSynToClosedPort()
    {
        // CLOSED, ACK off: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>, SEG.LEN counting SYN and data.
        t.localPort = 9;
        t.send(t.peerSyn().payload(bytes(5, 8)));
        t.recv(t.out().flags(RST | ACK).seq(0).ack(t.irs + 6));
    }

    @Test
    void rfc9293_noResetInReplyToReset()
    {
        t.localPort = 9;
        t.send(t.in().flags(RST));
        t.send(t.in().flags(RST | ACK));
        t.listen();
        t.localPort = LISTEN_PORT;
        t.send(t.in().flags(RST));
        t.recvNothing();
    }

    @Test
    void rfc9293_listenAnswersAnAckWithReset()
    {
        t.listen();
        t.send(t.in().ack(777));
        t.recv(t.out().flags(RST).seq(777).ack(0));
    }

    @Test
    void rfc9293_synSentAnswersUnacceptableAckWithReset()
    {
        t.connect();
        // SEG.ACK =< ISS or > SND.NXT: <SEQ=SEG.ACK><CTL=RST>, stay in SYN-SENT.
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss));
        t.recv(t.out().flags(RST).seq(t.iss).ack(0));
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 2));
        t.recv(t.out().flags(RST).seq(t.iss + 2).ack(0));
        assertEquals(TcpState.SYN_SENT, t.conn.state());
        // A RST without ACK in SYN-SENT is dropped.
        t.send(t.in().flags(RST).ack(0));
        assertEquals(TcpState.SYN_SENT, t.conn.state());
        t.recvNothing();
    }

    @Test
    void rfc9293_must12_connectionRefusedReportedToApplication()
    {
        t.connect();
        t.send(t.in().flags(RST | ACK).seq(0).ack(t.iss + 1));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_REFUSED, t.events.closedReason);
        t.recvNothing();
    }

    @Test
    void rfc9293_must12_resetOfEstablishedConnectionReportedToApplication()
    {
        t.passiveOpen();
        t.send(t.in().flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_RESET, t.events.closedReason);
        t.recvNothing();
        // The port is closed now: the next segment gets a RST.
        t.send(t.in().flags(ACK | PSH).payload(bytes(1, 9)));
        t.recv(t.out().flags(RST).ack(0));
    }

    @Test
    void rfc9293_synReceivedAnswersUnacceptableAckWithReset()
    {
        t.listen();
        t.send(t.peerSyn());
        t.iss = t.recv(t.expectedSynAck()).get(0).r.seq;
        t.send(t.in().ack(t.iss + 5));
        t.recv(t.out().flags(RST).seq(t.iss + 5).ack(0));
        assertEquals(1, t.listener.synReceived(), "the half-open connection stays");
    }

    @Test
    void rfc9293_unacceptableSegmentInEstablishedGetsAckWithRcvNxt()
    {
        t.passiveOpen();
        // Data entirely to the right of the window: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, data dropped.
        t.send(t.in().seq(t.irs + 1 + 70_000).flags(ACK | PSH).payload(bytes(10, 10)));
        t.recv(t.out());
        // An old duplicate entirely to the left: the same ACK.
        t.send(t.in().seq(t.irs - 20).payload(bytes(10, 11)));
        t.recv(t.out());
        assertEquals(0, t.conn.readable());
    }

    // ------------------------------------------------------------------------------------------
    // Closing (§3.6) and TIME-WAIT
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_may1_halfCloseStackSendsFinThenKeepsReceiving()
    {
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        assertEquals(TcpState.FIN_WAIT_1, t.conn.state());
        t.send(t.in().ack(t.iss + 2));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        t.send(t.in().ack(t.iss + 2).flags(ACK | PSH).payload(bytes(100, 12)));
        t.advanceMs(40);
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 101));
        assertArrayEquals(bytes(100, 12), t.read());
        t.send(t.in().seq(t.irs + 101).ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 102));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
    }

    /**
     * §3.10.2 queues a SEND in SYN-SENT "for transmission after entering ESTABLISHED state", and CLOSE then queues
     * the FIN after it (§3.10.4, "ESTABLISHED STATE: Queue this until all preceding SENDs have been segmentized"): the
     * connection stays, and the data and the FIN go once the peer's SYN,ACK comes. Before, close() deleted the
     * connection, reported a normal close, dropped the bytes write() had accepted, and the SYN,ACK drew a reset.
     */
    @Test
    void rfc9293_closeInSynSentSendsTheDataQueuedThenTheFinOnceEstablished()
    {
        t.connect();
        final byte[] data = bytes(100, 21);
        assertEquals(100, t.conn.write(new org.agrona.concurrent.UnsafeBuffer(data), 0, 100));
        t.conn.close();
        t.poll();
        t.recvNothing();
        assertEquals(TcpState.SYN_SENT, t.conn.state());
        assertEquals(-1, t.events.closedReason, "no close reported yet");
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 1));
        t.recv(t.out().flags(ACK | PSH | FIN).payload(data));
        assertEquals(TcpState.FIN_WAIT_1, t.conn.state());
        t.send(t.in().ack(t.iss + 102));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        t.send(t.in().ack(t.iss + 102).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 102).ack(t.irs + 2));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
    }

    /** §3.10.4 CLOSE in SYN-SENT with nothing queued: "Delete the TCB"; nothing is sent, the SYN,ACK is reset. */
    @Test
    void rfc9293_closeInSynSentWithNothingQueuedDeletesTheConnection()
    {
        t.connect();
        t.conn.close();
        t.poll();
        t.recvNothing();
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_NORMAL, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    /**
     * MAY-1 half-close in SYN-SENT: only our direction closes. The FIN goes once the handshake completes, and the
     * connection goes on receiving until the peer's FIN. Before, shutdownOutput() deleted the connection, the
     * receive side with it.
     */
    @Test
    void rfc9293_may1_halfCloseInSynSentSendsTheFinOnceEstablishedThenKeepsReceiving()
    {
        t.connect();
        t.conn.shutdownOutput();
        t.poll();
        t.recvNothing();
        assertEquals(TcpState.SYN_SENT, t.conn.state());
        t.send(t.peerSyn().flags(SYN | ACK).ack(t.iss + 1));
        t.recv(t.out().flags(ACK | FIN));
        assertTrue(t.events.connected);
        assertEquals(TcpState.FIN_WAIT_1, t.conn.state());
        t.send(t.in().ack(t.iss + 2).flags(ACK | PSH).payload(bytes(100, 22)));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        assertArrayEquals(bytes(100, 22), t.read());
        t.send(t.in().seq(t.irs + 101).ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 102));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
        assertTrue(t.events.peerClosed);
    }

    @Test
    void rfc9293_may1_halfClosePeerFinThenStackKeepsSending()
    {
        t.passiveOpen();
        t.send(t.in().flags(ACK | FIN));
        t.recv(t.out().ack(t.irs + 2));
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertTrue(t.events.peerClosed);
        t.write(bytes(200, 13));
        t.recv(t.out().ack(t.irs + 2).flags(ACK | PSH).payload(bytes(200, 13)));
        t.conn.close();
        t.poll();
        t.recv(t.out().seq(t.iss + 201).ack(t.irs + 2).flags(ACK | FIN));
        assertEquals(TcpState.LAST_ACK, t.conn.state());
        t.send(t.in().seq(t.irs + 2).ack(t.iss + 202));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_NORMAL, t.events.closedReason);
        t.recvNothing();
    }

    @Test
    void rfc9293_simultaneousCloseGoesThroughClosingToTimeWait()
    {
        t.passiveOpen();
        t.conn.close();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        // The peer's FIN crosses ours: CLOSING, then its ACK of our FIN: TIME-WAIT.
        t.send(t.in().flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));
        assertEquals(TcpState.CLOSING, t.conn.state());
        t.send(t.in().seq(t.irs + 2).ack(t.iss + 2));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
    }

    @Test
    void rfc9293_must13_timeWaitLastsTwoMsl()
    {
        final long twoMsl = t.settings().timeWaitNanos;
        assertTrue(twoMsl >= 60 * SECOND, "2*MSL with MSL = 30 s (Linux); RFC 9293 suggests MSL = 2 min");
        t.passiveOpen();
        t.closeIntoTimeWait();

        // An old duplicate ACK is answered.
        t.advance(twoMsl / 4);
        t.send(t.in().ack(t.iss + 1));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));
        t.advance(twoMsl / 4);

        // A retransmitted FIN in TIME-WAIT (our last ACK was lost) is acknowledged again and restarts the 2*MSL
        // timeout (§3.10.7.4 "eighth"), so that a third copy still finds us and gets an ACK rather than a reset.
        t.send(t.in().ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));

        t.advance(twoMsl - MS);
        assertEquals(TcpState.TIME_WAIT, t.conn.state(), "still in TIME-WAIT just before 2*MSL after the restart");
        t.advance(2 * MS);
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(0, t.stack.tcp().connectionCount());
        t.recvNothing();
    }

    @Test
    void rfc9293_shld3_closeWithUnreadDataSendsReset()
    {
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 14)));
        t.conn.close();
        t.poll();
        t.recv(t.out().flags(RST).ack(0));
        assertEquals(TcpState.CLOSED, t.conn.state());
    }

    @Test
    void rfc9293_shld3_newDataAfterCloseIsAnsweredWithReset()
    {
        t.passiveOpen();
        t.conn.close();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2).flags(ACK | PSH).payload(bytes(10, 14)));
        t.recv(t.out().seq(t.iss + 2).flags(RST).ack(0));
        assertEquals(TcpConnection.CLOSE_ABORTED, t.events.closedReason);
    }

    @Test
    void rfc9293_shld3_textAlreadyTakenResentWithTheFinAfterCloseIsAClose()
    {
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 15)));
        assertArrayEquals(bytes(100, 15), t.read());
        t.conn.close();
        t.poll();
        t.recv(t.out().ack(t.irs + 101).flags(ACK | FIN));
        // The peer did not get our ACK of its 100 octets and resends them with its FIN joined on (as Linux does):
        // nothing new for an application that closed, so no reset; the FIN takes us to TIME-WAIT.
        t.send(t.in().ack(t.iss + 2).flags(ACK | PSH | FIN).payload(bytes(100, 15)));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 102));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
    }

    @Test
    void rfc9293_must13_closeInTimeWaitWithUnreadDataKeepsTimeWait()
    {
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2).flags(ACK | PSH | FIN).payload(bytes(10, 16)));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 12));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
        // Both ends are done: a reset would tell the peer nothing, and dropping the connection would end TIME-WAIT
        // early. §3.10.4: CLOSE in TIME-WAIT is "connection closing".
        t.conn.close();
        t.poll();
        t.recvNothing();
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
        t.advance(t.settings().timeWaitNanos);
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_NORMAL, t.events.closedReason);
    }

    /**
     * Once the peer's FIN is in, reading opens no window the peer could use: no window update goes out (Linux's
     * tcp_cleanup_rbuf stops at RCV_SHUTDOWN too). Before, a late read in TIME-WAIT sent one; a peer done closing
     * answers it with a RST, and a transfer that ended cleanly was reported to the application as reset.
     */
    @Test
    void rfc9293_noWindowUpdateOnceThePeersFinIsIn()
    {
        t.peerWindowScale = 7;
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        // Most of the receive buffer, so that reading it would be worth a window update before the FIN.
        final byte[] data = bytes(t.settings().receiveBufferBytes * 3 / 4, 22);
        for (int at = 0; at < data.length; at += 1460)
        {
            final int end = Math.min(at + 1460, data.length);
            final int flags = end == data.length ? ACK | PSH | FIN : ACK;
            t.send(t.in().seq(t.irs + 1 + at).ack(t.iss + 2).flags(flags).payload(slice(data, at, end)));
        }
        t.recv();
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
        assertArrayEquals(data, t.read());
        t.poll();
        t.recvNothing();
        t.advance(t.settings().timeWaitNanos);
        assertEquals(TcpConnection.CLOSE_NORMAL, t.events.closedReason);
    }

    /**
     * §3.10.7.4 "eighth": the FIN ends the stream, so no octet after it is data. A FIN that arrives out of order fixes
     * where the stream ends; text the peer sends past it is not taken, so when the hole fills RCV.NXT stops at the
     * FIN and takes it there (before, it ran past, the FIN was never taken and its retransmission was old).
     */
    @Test
    void rfc9293_textPastAnOutOfOrderFinIsNotTakenAndTheFinIsTakenWhenTheHoleFills()
    {
        t.passiveOpen();
        final byte[] whole = bytes(150, 1);
        t.send(t.in().seq(t.irs + 51).flags(ACK | FIN).payload(slice(whole, 50, 100)));  // the FIN at 100
        t.recv(t.out().ack(t.irs + 1));
        t.send(t.in().seq(t.irs + 101).payload(slice(whole, 100, 150)));                 // past the FIN
        t.recv(t.out().ack(t.irs + 1));
        t.send(t.in().payload(slice(whole, 0, 50)));                                     // fills the hole
        t.recv(t.out().ack(t.irs + 102));
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertTrue(t.events.peerClosed);
        assertArrayEquals(slice(whole, 0, 100), t.read());
        // The FIN sent again is old now: answered with the same ACK.
        t.send(t.in().seq(t.irs + 51).flags(ACK | FIN).payload(slice(whole, 50, 100)));
        t.recv(t.out().ack(t.irs + 102));
    }

    /**
     * Bytes held out of order past a FIN that arrives later are dropped, and of two FINs at different places the lower
     * ends the stream, whatever the order they come in: as Linux, whose tcp_fin purges the out-of-order queue behind
     * the first FIN reached in sequence order. A peer that does either contradicts itself; this end stays consistent.
     */
    @Test
    void rfc9293_theLowestFinEndsTheStreamAndBytesHeldPastItAreDropped()
    {
        t.passiveOpen();
        final byte[] whole = bytes(150, 4);
        t.send(t.in().seq(t.irs + 121).payload(slice(whole, 120, 150)));    // [120,150)
        t.send(t.in().seq(t.irs + 51).flags(ACK | FIN).payload(slice(whole, 50, 100)));
        t.send(t.in().seq(t.irs + 71).flags(ACK | FIN).payload(slice(whole, 70, 80)));
        t.recv();
        t.send(t.in().payload(slice(whole, 0, 50)));
        t.recv(t.out().ack(t.irs + 82));
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertArrayEquals(slice(whole, 0, 80), t.read());
    }

    /**
     * A FIN whose text is refused (out of order, with every out-of-order range in use) is not taken before that text
     * arrives: RCV.NXT reaches the FIN's sequence number only over every octet before it.
     */
    @Test
    void rfc9293_aFinWhoseTextWasRefusedIsTakenOnlyWithThatText()
    {
        t.passiveOpen();
        final byte[] whole = bytes(410, 5);
        for (int i = 1; i <= 16; i++)
        {
            t.send(t.in().seq(t.irs + 1 + 20 * i).payload(slice(whole, 20 * i, 20 * i + 10)));
        }
        t.recv();
        t.send(t.in().seq(t.irs + 401).flags(ACK | FIN).payload(slice(whole, 400, 410)));
        t.recv(t.out().ack(t.irs + 1));
        assertEquals(1, t.counters.get(StackCounter.TCP_OUT_OF_ORDER_REJECTED));
        t.send(t.in().payload(slice(whole, 0, 400)));
        t.recv(t.out().ack(t.irs + 401));
        assertEquals(TcpState.ESTABLISHED, t.conn.state(), "the FIN waits for [400,410)");
        t.send(t.in().seq(t.irs + 401).flags(ACK | FIN).payload(slice(whole, 400, 410)));
        t.recv(t.out().ack(t.irs + 412));
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertArrayEquals(whole, t.read());
    }

    @Test
    void rfc9293_abortInTimeWaitDropsTheConnectionWithoutReset()
    {
        t.passiveOpen();
        t.closeIntoTimeWait();
        // §3.10.5: ABORT in TIME-WAIT deletes the TCB, and sends nothing.
        t.conn.abort();
        t.poll();
        t.recvNothing();
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    /**
     * §3.10.5 ABORT, "CLOSING STATE, LAST-ACK STATE, TIME-WAIT STATE: Respond with "ok" and delete the TCB": no reset,
     * as Linux's tcp_need_reset leaves these states out. Both ends have closed; the peer may already be in TIME-WAIT,
     * which a reset would end early (RFC 1337). Before, ABORT reset the peer in CLOSING and LAST-ACK.
     */
    @Test
    void rfc9293_abortInLastAckDeletesTheConnectionWithoutReset()
    {
        t.passiveOpen();
        t.send(t.in().flags(ACK | FIN));
        t.recv(t.out().ack(t.irs + 2));
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().ack(t.irs + 2).flags(ACK | FIN));
        assertEquals(TcpState.LAST_ACK, t.conn.state());
        t.conn.abort();
        t.poll();
        t.recvNothing();
        assertAbortedAndGone();
    }

    @Test
    void rfc9293_abortInClosingDeletesTheConnectionWithoutReset()
    {
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        // The peer's FIN crosses ours: CLOSING.
        t.send(t.in().flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));
        assertEquals(TcpState.CLOSING, t.conn.state());
        t.conn.abort();
        t.poll();
        t.recvNothing();
        assertAbortedAndGone();
    }

    private void assertAbortedAndGone()
    {
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_ABORTED, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
        t.advance(3600 * SECOND);
        t.recvNothing();
    }

    /**
     * close() with unread data is no ABORT: the data the peer sent was lost, and it is told so with a reset in
     * LAST-ACK too (RFC 1122 4.2.2.13, RFC 2525 §2.17), as Linux's tcp_close resets whatever the state.
     */
    @Test
    void rfc9293_shld3_closeWithUnreadDataInLastAckSendsReset()
    {
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH | FIN).payload(bytes(10, 1)));
        t.recv(t.out().ack(t.irs + 12));
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().ack(t.irs + 12).flags(ACK | FIN));
        assertEquals(TcpState.LAST_ACK, t.conn.state());
        t.conn.close();
        t.poll();
        t.recv(t.out().seq(t.iss + 2).ack(0).flags(RST));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_ABORTED, t.events.closedReason);
    }

    @Test
    void rfc9293_abortAllResetsEverySynchronizedConnection()
    {
        // A stack going away (the daemon stopped) ABORTs every connection (§3.10.5): an established peer gets a reset
        // rather than waiting on a connection nobody serves; one in TIME-WAIT goes without one.
        t.passiveOpen();
        final TcpConnection established = t.conn;
        final int establishedPeerPort = t.peerPort;
        t.peerPort += 1;
        t.passiveOpen();
        t.closeIntoTimeWait();
        assertEquals(2, t.stack.tcp().abortAll());
        t.poll();
        final List<Seg> sent = t.recv();
        assertEquals(1, sent.size(), "one reset");
        assertTrue(sent.get(0).r.hasFlags(RST), t.describe(sent.get(0)));
        assertEquals(establishedPeerPort, sent.get(0).r.destinationPort, "to the established connection's peer");
        assertEquals(TcpState.CLOSED, established.state());
        assertEquals(TcpConnection.CLOSE_ABORTED, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    private static byte[] slice(final byte[] bytes, final int from, final int to)
    {
        return Arrays.copyOfRange(bytes, from, to);
    }
}
