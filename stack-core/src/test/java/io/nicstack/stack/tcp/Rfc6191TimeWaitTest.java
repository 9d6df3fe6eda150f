package io.nicstack.stack.tcp;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * RFC 9293 §3.6.1 (RFC 1122 4.2.2.13) and RFC 6191: a new SYN reopens a connection in TIME-WAIT when a listener holds
 * the port and the SYN is newer than the old incarnation (sequence number above RCV.NXT, or with timestamps on both
 * incarnations a TSval newer than TS.Recent); the new connection's ISN lies above all the old one sent. Otherwise the
 * TIME-WAIT connection stays and answers the SYN with an ACK (RFC 9293 §3.10.7.4, RFC 5961 §4.2).
 *
 * <p>Each test ends a passive connection with our close first, so the stack holds the TIME-WAIT, as a server does when
 * it closes first and its client then reuses its port.
 */
class Rfc6191TimeWaitTest
{
    /** The new incarnation's ISN lies this far above the old SND.NXT (an unscaled window and two, as Linux). */
    private static final int ISN_GAP = 65535 + 2;

    private final TcpTestHarness t = new TcpTestHarness();

    /** Passive open, our close, the peer's FIN: TIME-WAIT with RCV.NXT = irs + 2 and SND.NXT = iss + 2. */
    private TcpConnection intoTimeWait()
    {
        t.passiveOpen();
        t.closeIntoTimeWait();
        return t.conn;
    }

    /** The peer's new SYN from the same port with ISN {@code isn}; the stack's SYN,ACK to it, whose ISN is returned. */
    private int reopenWith(final int isn)
    {
        t.irs = isn;
        t.send(t.peerSyn());
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        if (synAck.r.timestampsPresent)
        {
            t.lastStackTsVal = synAck.r.tsVal;
        }
        return synAck.r.seq;
    }

    // ------------------------------------------------------------------------------------------
    // Reopened
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_aSynAboveRcvNxtReopensTimeWaitWithAnIsnAboveTheOldConnection()
    {
        final TcpConnection old = intoTimeWait();
        final int oldIss = t.iss;

        final int newIss = reopenWith(REMOTE_ISS + 1_000_000);

        assertEquals(oldIss + 2 + ISN_GAP, newIss, "above SND.NXT of the old incarnation by an unscaled window");
        assertEquals(TcpState.CLOSED, old.state());
        assertEquals(TcpConnection.CLOSE_NORMAL, t.events.closedReason, "the old incarnation ends as at 2 MSL");
        assertEquals(1, t.listener.synReceived(), "the listener took the SYN");
        assertEquals(1, t.stack.tcp().connectionCount());
        assertEquals(1, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
        assertEquals(0, t.counter(StackCounter.TCP_CHALLENGE_ACKS));
    }

    @Test
    void rfc6191_aSynWithANewerTimestampReopensTimeWaitEvenWithASmallerIsn()
    {
        t.peerOffersAll();
        final TcpConnection old = intoTimeWait();
        final int oldIss = t.iss;

        // RFC 6191 §2: timestamps on both incarnations, TSval newer than TS.Recent: the ISN need not be larger.
        t.tsOn = false;
        t.peerTsVal += 10;
        final int newIss = reopenWith(REMOTE_ISS - 1_000_000);

        assertEquals(oldIss + 2 + ISN_GAP, newIss);
        assertEquals(TcpState.CLOSED, old.state());
        assertEquals(1, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
    }

    @Test
    void rfc6191_aSynWithTheSameTimestampReopensTimeWaitOnlyWithALargerIsn()
    {
        t.peerOffersAll();
        final TcpConnection old = intoTimeWait();
        final int oldIrs = t.irs;
        final int tsRecent = t.peerTsVal;

        // Equal TSval and a smaller ISN: refused, answered as in TIME-WAIT (TSecr: TS.Recent).
        t.send(t.peerSyn().seq(oldIrs - 1_000_000));
        t.recv(t.out().seq(t.iss + 2).ack(oldIrs + 2));
        assertEquals(TcpState.TIME_WAIT, old.state());

        // Equal TSval and an ISN above RCV.NXT: taken.
        t.tsOn = false;
        reopenWith(oldIrs + 1_000_000);
        assertEquals(TcpState.CLOSED, old.state());
        assertEquals(1, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
    }

    @Test
    void rfc6191_aSynWithoutTimestampsIsJudgedByItsIsnWhenTheOldConnectionHadThem()
    {
        t.peerOffersAll();
        final TcpConnection old = intoTimeWait();

        // The new incarnation would not use timestamps: only the sequence number tells (RFC 6191 §2).
        t.tsOn = false;
        t.peerTimestamps = false;
        reopenWith(REMOTE_ISS + 1_000_000);
        assertEquals(TcpState.CLOSED, old.state());
        assertEquals(1, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
    }

    @Test
    void rfc9293_theReopenedConnectionCompletesItsHandshakeAndMovesData()
    {
        final TcpConnection old = intoTimeWait();

        t.iss = reopenWith(REMOTE_ISS + 1_000_000);
        t.events.closedReason = -1;
        t.send(t.in());
        t.recvNothing();
        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the new incarnation was queued for accept");
        assertNotSame(old, t.conn);
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        t.conn.handler(t.events);

        t.send(t.in().flags(ACK | PSH).payload(bytes(300, 1)));
        assertArrayEquals(bytes(300, 1), t.read());
        t.write(bytes(200, 2));
        t.recv(t.out().ack(t.irs + 301).flags(ACK | PSH).payload(bytes(200, 2)));
        t.send(t.in().seq(t.irs + 301).ack(t.iss + 201));
        t.recvNothing();
        assertEquals(-1, t.events.closedReason);
        assertEquals(2, t.counter(StackCounter.TCP_ESTABLISHED), "both incarnations established");
    }

    // ------------------------------------------------------------------------------------------
    // Refused: the TIME-WAIT connection stays and answers
    // ------------------------------------------------------------------------------------------

    @Test
    void rfc9293_aSynAtOrBelowRcvNxtLeavesTimeWaitAndIsAcked()
    {
        final TcpConnection old = intoTimeWait();
        final int oldIrs = t.irs;

        // An ISN below RCV.NXT may be an old duplicate: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK> (RFC 5961 §4.2).
        t.send(t.peerSyn().seq(oldIrs - 1_000));
        t.recv(t.out().seq(t.iss + 2).ack(oldIrs + 2));
        assertEquals(TcpState.TIME_WAIT, old.state());

        // RCV.NXT itself is not above it.
        t.advance(SECOND);
        t.send(t.peerSyn().seq(oldIrs + 2));
        t.recv(t.out().seq(t.iss + 2).ack(oldIrs + 2));
        assertEquals(TcpState.TIME_WAIT, old.state());
        assertEquals(0, t.listener.synReceived());
        assertEquals(0, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
    }

    @Test
    void rfc6191_aSynWithAnOlderTimestampLeavesTimeWaitEvenWithALargerIsn()
    {
        t.peerOffersAll();
        final TcpConnection old = intoTimeWait();
        final int oldIrs = t.irs;
        final int tsRecent = t.peerTsVal;

        // PAWS holds across incarnations: an older TSval marks an old duplicate whatever its sequence number.
        t.send(t.peerSyn().seq(oldIrs + 1_000_000).ts(tsRecent - 1, 0));
        t.recv(t.out().seq(t.iss + 2).ack(oldIrs + 2));
        assertEquals(TcpState.TIME_WAIT, old.state());
        assertEquals(0, t.listener.synReceived());
        assertEquals(0, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
    }

    @Test
    void rfc9293_withoutAListenerANewerSynLeavesTimeWaitAndIsAcked()
    {
        final TcpConnection old = intoTimeWait();
        final int oldIrs = t.irs;
        t.listener.close();

        // Nobody to hand it to: TIME-WAIT answers it, <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>.
        t.send(t.peerSyn().seq(oldIrs + 1_000_000));
        t.recv(t.out().seq(t.iss + 2).ack(oldIrs + 2));
        assertEquals(TcpState.TIME_WAIT, old.state());
        assertEquals(0, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));

        // The peer's RST to that ACK ends TIME-WAIT; its SYN again finds a closed port: RST (§3.10.7.1).
        t.send(t.in().seq(oldIrs + 2).flags(RST).ack(0));
        assertEquals(TcpState.CLOSED, old.state());
        t.send(t.peerSyn().seq(oldIrs + 1_000_000));
        t.recv(t.out().seq(0).ack(oldIrs + 1_000_001).flags(RST | ACK));
    }

    @Test
    void rfc4987_aNewerSynWhileTheBacklogIsFullLeavesTimeWaitAndTheNextSynGetsACookie()
    {
        t.listen(1);
        final TcpConnection old = intoTimeWait();
        final int oldIrs = t.irs;
        // Another peer's SYN takes the one backlog slot: from now on the listener answers with cookies.
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        t.recv(t.expectedSynAck());
        assertEquals(1, t.listener.synReceived());

        // A cookie is an ISN that may fall in the old sequence space: TIME-WAIT stays and answers, no cookie yet.
        t.peerPort = PEER_PORT;
        t.send(t.peerSyn().seq(oldIrs + 1_000_000));
        t.recv(t.out().seq(t.iss + 2).ack(oldIrs + 2));
        assertEquals(TcpState.TIME_WAIT, old.state());
        assertEquals(0, t.counter(StackCounter.TCP_TIME_WAIT_REUSED));
        assertEquals(0, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));

        // The peer's RST ends TIME-WAIT; its SYN again gets a cookie, and the cookie's ACK a connection.
        t.send(t.in().seq(oldIrs + 2).flags(RST).ack(0));
        assertEquals(TcpState.CLOSED, old.state());
        t.irs = oldIrs + 1_000_000;
        t.send(t.peerSyn());
        t.iss = t.recv(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).get(0).r.seq;
        t.send(t.in().flags(ACK | PSH).payload(bytes(20, 3)));
        final TcpConnection c = t.listener.accept();
        assertNotNull(c, "the cookie ACK established the connection");
        assertEquals(20, c.readable());
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
    }

    @Test
    void rfc9293_aReopenedConnectionCountsOnceAgainstTheListenersLimit()
    {
        final TcpConnection old = intoTimeWait();
        // The TIME-WAIT connection the application closed no longer counts against the limit of 1; its replacement does.
        t.listener.maxConnections(1);
        assertEquals(0, t.listener.liveConnections());
        reopenWith(REMOTE_ISS + 1_000_000);
        assertEquals(TcpState.CLOSED, old.state());
        assertEquals(1, t.listener.liveConnections());
    }

    /**
     * The old connection's close event may close the listener (a server that stops once its last connection is gone):
     * the SYN then opens nothing, and TIME-WAIT is over all the same. Before, a half-open connection was made on the
     * closed listener and sent its SYN,ACK again and again for a port nobody listened on.
     */
    @Test
    void rfc9293_aListenerClosedByTheOldConnectionsCloseEventGetsNoReopenedConnection()
    {
        final TcpConnection old = intoTimeWait();
        old.handler(new TcpHandler()
        {
            @Override
            public void onClosed(final TcpConnection c, final int reason)
            {
                t.listener.close();
            }
        });
        t.irs = REMOTE_ISS + 1_000_000;
        t.send(t.peerSyn());
        assertEquals(TcpState.CLOSED, old.state());
        t.recvNothing();
        assertEquals(0, t.stack.tcp().connectionCount(), "no connection through a closed listener");
        // The peer's SYN again: no listener, so a reset (RFC 9293 §3.10.7.1).
        t.send(t.peerSyn());
        t.recv(t.out().flags(RST | ACK).seq(0).ack(t.irs + 1));
    }
}
