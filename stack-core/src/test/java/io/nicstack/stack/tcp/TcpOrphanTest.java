package io.nicstack.stack.tcp;

import org.junit.jupiter.api.Test;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * Connections the application has closed (orphans, in Linux's word): they can take no more data, so what would keep
 * them alive for ever in RFC 9293's model is bounded, as Linux bounds it.
 */
class TcpOrphanTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    /** ESTABLISHED, then {@code close()}: our FIN goes and the peer acknowledges it, but sends no FIN of its own. */
    private void closeIntoFinWait2()
    {
        t.passiveOpen();
        t.conn.close();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
    }

    @Test
    void linux_finTimeout_anOrphanInFinWait2IsDroppedSilentlyAfterTheTimeout()
    {
        final long timeout = t.settings().finWait2TimeoutNanos;
        assertEquals(60 * SECOND, timeout, "Linux's net.ipv4.tcp_fin_timeout");
        closeIntoFinWait2();
        // What the peer sends meanwhile does not push the timeout back (Linux's FIN-WAIT-2 timewait socket).
        t.advance(timeout / 2);
        t.send(t.in().ack(t.iss + 2));
        t.advance(timeout / 2 - MS);
        t.recvNothing();
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        t.advance(MS);
        t.recvNothing();
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(0, t.stack.tcp().connectionCount());
        assertEquals(0, t.listener.liveConnections(), "its place in the listener's connection limit is free");
        // The peer's FIN, late, finds no connection.
        t.send(t.in().ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).flags(RST).ack(0));
    }

    @Test
    void rfc9293_aHalfClosedConnectionWhoseApplicationStillReadsWaitsInFinWait2ForThePeersFin()
    {
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2));
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        t.advance(24L * 3600 * SECOND);
        t.advance(24L * 3600 * SECOND);
        t.recvNothing();
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state(), "not orphaned: no FIN-WAIT-2 timeout");
        // The peer still sends, and closes in the end.
        t.send(t.in().ack(t.iss + 2).flags(ACK | PSH).payload(bytes(100, 4)));
        assertArrayEquals(bytes(100, 4), t.read());
        t.send(t.in().seq(t.irs + 101).ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 102));
        assertEquals(TcpState.TIME_WAIT, t.conn.state());
    }

    @Test
    void linux_finTimeout_closeAfterAHalfCloseStartsTheTimeout()
    {
        t.passiveOpen();
        t.conn.shutdownOutput();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2));
        t.advance(600 * SECOND);
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        // Linux's tcp_close in FIN-WAIT-2: orphaned from now on.
        t.conn.close();
        t.poll();
        t.advance(t.settings().finWait2TimeoutNanos - MS);
        assertEquals(TcpState.FIN_WAIT_2, t.conn.state());
        t.advance(MS);
        t.recvNothing();
        assertEquals(TcpState.CLOSED, t.conn.state());
    }

    @Test
    void linux_orphanRetries_anOrphanBehindAZeroWindowIsResetAfterItsProbesAnsweredOrNot()
    {
        // sockstress: the peer takes a little, closes its window and answers every probe. The application has closed.
        t.passiveOpen();
        t.send(t.in().window(1460)); // room for one segment: the other 540 bytes wait for the window
        t.write(bytes(2000, 8));
        t.recv(t.out().payloadLength(1460));
        t.send(t.in().ack(t.iss + 1461).window(0));
        t.conn.close();
        t.poll();
        t.recvNothing();
        int probes = 0;
        TcpTestHarness.Seg last = null;
        for (int step = 0; step < 3600 && t.conn.state() != TcpState.CLOSED; step++)
        {
            t.advance(SECOND);
            for (final TcpTestHarness.Seg s : t.recv())
            {
                last = s;
                if (s.r.hasFlags(RST))
                {
                    continue;
                }
                assertEquals(1, s.payload.length, "a zero-window probe: " + t.describe(s));
                probes++;
                t.send(t.in().ack(t.iss + 1461).window(0));
            }
        }
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(t.settings().orphanRetries, probes);
        // The reset is at the peer's RCV.NXT, the only sequence number its closed window takes (RFC 5961 §3.2).
        assertNotNull(last);
        assertTrue(last.r.hasFlags(RST), "reset: " + t.describe(last));
        assertEquals(t.iss + 1461, last.r.seq);
        assertEquals(0, t.stack.tcp().connectionCount());
    }

    /**
     * The probe limit is per zero-window period, as Linux clears its probe count on every ACK and its backoff when the
     * window opens: a server that wrote its response and closed, to a client that pauses its reading again and again
     * but goes on, delivers the whole response. Counted over the connection's life, the limit reset it in the second
     * pause (a review's probe: 20,440 of 58,400 bytes, then RST).
     */
    @Test
    void linux_orphanRetries_anOrphanWhosePeerMakesProgressBetweenZeroWindowsIsNotReset()
    {
        t.passiveOpen();
        final int total = 40 * 1460;
        t.write(bytes(total, 3));
        int acked = 0;
        for (final TcpTestHarness.Seg s : t.recv())
        {
            acked = Math.max(acked, s.r.seq - (t.iss + 1) + s.payload.length);
        }
        t.send(t.in().ack(t.iss + 1 + acked).window(0));
        t.conn.close();
        t.poll();
        int pauses = 0;
        int probes = 0;
        while (acked < total && pauses < 100)
        {
            // A pause of 1.5 s: the probes that come are answered, still with a closed window.
            for (int ms = 0; ms < 1500; ms += 100)
            {
                t.advanceMs(100);
                for (final TcpTestHarness.Seg s : t.recv())
                {
                    assertFalse(s.r.hasFlags(RST), "reset after " + probes + " probes in " + pauses + " pauses, "
                        + acked + " of " + total + " bytes taken");
                    probes++;
                    t.send(t.in().ack(t.iss + 1 + acked).window(0));
                }
            }
            // The application reads: two segments' room, taken, and the window closes again.
            pauses++;
            t.send(t.in().ack(t.iss + 1 + acked).window(2920));
            for (final TcpTestHarness.Seg s : t.recv())
            {
                acked = Math.max(acked, s.r.seq - (t.iss + 1) + s.payload.length);
            }
            t.send(t.in().ack(t.iss + 1 + acked).window(0));
        }
        assertEquals(total, acked, "the whole response, through " + pauses + " pauses and " + probes + " probes");
        assertTrue(probes > t.settings().orphanRetries, probes + " probes in all: more than one period's limit");
    }

    @Test
    void rfc9293_must36_anOwnedConnectionBehindAZeroWindowOutlivesTheOrphanLimit()
    {
        // The same peer, but the application has only half-closed: it may write no more, yet still reads.
        t.passiveOpen();
        t.send(t.in().window(1460)); // room for one segment: the other 540 bytes wait for the window
        t.write(bytes(2000, 8));
        t.recv(t.out().payloadLength(1460));
        t.send(t.in().ack(t.iss + 1461).window(0));
        t.conn.shutdownOutput();
        t.poll();
        int probes = 0;
        for (int step = 0; step < 3600 && t.conn.state() != TcpState.CLOSED; step++)
        {
            t.advance(SECOND);
            for (final TcpTestHarness.Seg s : t.recv())
            {
                assertEquals(1, s.payload.length, "a zero-window probe: " + t.describe(s));
                probes++;
                t.send(t.in().ack(t.iss + 1461).window(0));
            }
        }
        assertEquals(TcpState.FIN_WAIT_1, t.conn.state(), "still open after an hour of answered probes");
        assertTrue(probes > 2 * t.settings().orphanRetries, "probes: " + probes);
    }

    @Test
    void linux_orphanRetries_anOrphansFinBehindAZeroWindowEndsAfterR2EvenWhenAnswered()
    {
        t.closeBehindAZeroWindow(true);
        int answered = 0;
        for (int step = 0; step < 7200 && t.conn.state() != TcpState.CLOSED; step++)
        {
            t.advance(SECOND);
            for (final TcpTestHarness.Seg s : t.recv())
            {
                assertTrue(s.r.hasFlags(FIN), "the FIN sent again: " + t.describe(s));
                t.send(t.in().ack(t.iss + 101).window(0));
                answered++;
            }
        }
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
        assertEquals(t.settings().r2Retransmits, answered, "R2 retransmissions, each answered");
    }

    @Test
    void linux_orphanRetries_aPeerTogglingItsWindowCannotHoldAnOrphansFin()
    {
        // A window that opens sends a FIN dropped behind it again at once; for an orphan that must not restart its
        // timer, or a peer alternating a closed and an open window (without ever taking the FIN) would keep the
        // connection for ever (found by this session's review: an hour of toggles, 36,000 FINs, no expiry).
        t.closeBehindAZeroWindow(true);
        boolean open = false;
        for (int step = 0; step < 72_000 && t.conn.state() != TcpState.CLOSED; step++)
        {
            t.advanceMs(50); // the window opens every 100 ms: sooner than the RTO (200 ms at least) expires
            t.recv();
            open = !open;
            t.send(t.in().ack(t.iss + 101).window(open ? 65535 : 0));
        }
        assertEquals(TcpState.CLOSED, t.conn.state(), "the orphan ended within an hour");
        assertEquals(TcpConnection.CLOSE_TIMED_OUT, t.events.closedReason);
    }
}
