package io.nicstack.stack.tcp;

import org.agrona.collections.Hashing;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.storage.BufferProvider;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.FIN;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static io.nicstack.stack.wire.TcpHeader.RST;
import static org.junit.jupiter.api.Assertions.*;

/** Listeners, their callbacks and the connections they queue. */
class TcpListenerTest
{
    /**
     * RFC 4022's tcpAttemptFails (as Linux's TCP_MIB_ATTEMPTFAILS) counts every direct transition from SYN-SENT or
     * SYN-RECEIVED to CLOSED, and from SYN-RECEIVED back to LISTEN, once: an active open that times out, and a passive
     * one that does. Before, the active one counted twice and the passive one not at all.
     */
    @Test
    void aConnectionAttemptThatTimesOutCountsOnceActiveOrPassive()
    {
        final TcpTestHarness active = new TcpTestHarness();
        active.settings().synRetransmits = 1;
        active.connect();
        for (int i = 0; i < 10 && active.conn.state() != TcpState.CLOSED; i++)
        {
            active.advance(10 * SECOND);
        }
        assertEquals(TcpState.CLOSED, active.conn.state());
        assertEquals(1, active.counter(StackCounter.TCP_ATTEMPT_FAILS), "the active open");

        final TcpTestHarness passive = new TcpTestHarness();
        passive.settings().synAckRetransmits = 1;
        final TcpListener listener = passive.listen();
        passive.send(passive.peerSyn());
        assertEquals(1, listener.synReceived());
        for (int i = 0; i < 10 && listener.synReceived() != 0; i++)
        {
            passive.advance(10 * SECOND);
        }
        assertEquals(0, listener.synReceived());
        assertEquals(1, passive.counter(StackCounter.TCP_ATTEMPT_FAILS), "the passive open");
    }

    /**
     * RFC 4022's tcpEstabResets (Linux's EstabResets) counts every direct transition from ESTABLISHED or CLOSE-WAIT to
     * CLOSED, whoever sent the reset: our abort counts, a peer's reset in CLOSE-WAIT counts, one in FIN-WAIT-2 does
     * not. Before, only a reset received counted, in any synchronized state.
     */
    @Test
    void establishedResetsCountEveryEndFromEstablishedOrCloseWait()
    {
        final TcpTestHarness aborted = new TcpTestHarness();
        aborted.passiveOpen();
        aborted.conn.abort();
        assertEquals(1, aborted.counter(StackCounter.TCP_ESTABLISHED_RESETS), "our abort in ESTABLISHED");

        final TcpTestHarness closeWait = new TcpTestHarness();
        closeWait.passiveOpen();
        closeWait.send(closeWait.in().flags(ACK | FIN));
        assertEquals(TcpState.CLOSE_WAIT, closeWait.conn.state());
        closeWait.send(closeWait.in().seq(closeWait.irs + 2).flags(RST));
        assertEquals(TcpState.CLOSED, closeWait.conn.state());
        assertEquals(1, closeWait.counter(StackCounter.TCP_ESTABLISHED_RESETS), "a reset in CLOSE-WAIT");

        final TcpTestHarness finWait = new TcpTestHarness();
        finWait.passiveOpen();
        finWait.conn.shutdownOutput();
        finWait.poll();
        finWait.recv(finWait.out().flags(ACK | FIN));
        finWait.send(finWait.in().ack(finWait.iss + 2));
        assertEquals(TcpState.FIN_WAIT_2, finWait.conn.state());
        finWait.send(finWait.in().ack(finWait.iss + 2).flags(RST));
        assertEquals(TcpState.CLOSED, finWait.conn.state());
        assertEquals(0, finWait.counter(StackCounter.TCP_ESTABLISHED_RESETS), "a reset in FIN-WAIT-2");
    }

    /**
     * The stack's rings are powers of two. A receive buffer size that is not one was refused only when the first SYN
     * arrived, by an IllegalArgumentException out of the poll (an internal error), and the listener never answered;
     * listen refuses it now, naming the field.
     */
    @Test
    void aBufferSizeThatIsNotAPowerOfTwoIsRefusedByListenNotByTheFirstSyn()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.settings().receiveBufferBytes = 100_000;
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, t::listen);
        assertTrue(e.getMessage().contains("receiveBufferBytes") && e.getMessage().contains("100000"), e.getMessage());
        t.settings().receiveBufferBytes = 128 * 1024;
        t.settings().sendBufferBytes = 0;
        assertThrows(IllegalArgumentException.class, t::listen);
        t.settings().sendBufferBytes = 128 * 1024;
        t.passiveOpen();
        assertEquals(0, t.counter(StackCounter.INTERNAL_ERRORS));
    }

    /** The same for an active open, with the settings given or the stack's defaults; no ring is taken. */
    @Test
    void aBufferSizeThatIsNotAPowerOfTwoIsRefusedByConnect()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final TcpSettings settings = t.settings().copy();
        settings.sendBufferBytes = 3000;
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> t.stack.tcp().connect(PEER_IP, 80, new TcpHandler() { }, settings));
        assertTrue(e.getMessage().contains("sendBufferBytes") && e.getMessage().contains("3000"), e.getMessage());
        t.settings().receiveBufferBytes = (1 << 30) + 1;
        assertThrows(IllegalArgumentException.class, () -> t.stack.tcp().connect(PEER_IP, 80, new TcpHandler() { }, null));
        t.recvNothing();
    }

    /**
     * Settings the stack cannot run with are refused by listen and connect, naming the field, as a buffer size is.
     * Before, an unknown congestion control failed at the first SYN (an internal error), and a zero RTO floor, a
     * negative or over-long delayed ACK, a zero keep-alive interval or a negative retry count were taken: a zero RTO
     * retransmits on every poll, and a delayed ACK of 500 ms or more breaks RFC 9293 §3.8.6.3 (MUST-40).
     */
    @Test
    void settingsTheStackCannotRunWithAreRefusedByListenAndConnectNamingTheField()
    {
        final java.util.Map<String, java.util.function.Consumer<TcpSettings>> bad = new java.util.LinkedHashMap<>();
        bad.put("congestionControl", s -> s.congestionControl = "vegas");
        bad.put("delayedAckNanos", s -> s.delayedAckNanos = -1);
        bad.put("delayedAckNanos ", s -> s.delayedAckNanos = 500_000_000L);
        bad.put("minRtoNanos", s -> s.minRtoNanos = 0);
        bad.put("maxRtoNanos", s -> s.maxRtoNanos = s.minRtoNanos - 1);
        bad.put("timeWaitNanos", s -> s.timeWaitNanos = -1);
        bad.put("finWait2TimeoutNanos", s -> s.finWait2TimeoutNanos = -1);
        bad.put("r1Retransmits", s -> s.r1Retransmits = -1);
        bad.put("r2Retransmits", s -> s.r2Retransmits = -1);
        bad.put("synRetransmits", s -> s.synRetransmits = -1);
        bad.put("synAckRetransmits", s -> s.synAckRetransmits = -1);
        bad.put("orphanRetries", s -> s.orphanRetries = -1);
        bad.put("keepAliveIdleNanos", s -> s.keepAliveIdleNanos = 0);
        bad.put("keepAliveIntervalNanos", s -> s.keepAliveIntervalNanos = 0);
        bad.put("keepAliveProbes", s -> s.keepAliveProbes = 0);
        bad.put("challengeAckIntervalNanos", s -> s.challengeAckIntervalNanos = -1);
        for (final var e : bad.entrySet())
        {
            final String field = e.getKey().trim();
            final TcpTestHarness t = new TcpTestHarness();
            e.getValue().accept(t.settings());
            final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, t::listen, field);
            assertTrue(refused.getMessage().contains(field), refused.getMessage());
            final TcpSettings settings = new TcpSettings();
            e.getValue().accept(settings);
            assertThrows(IllegalArgumentException.class,
                () -> t.stack.tcp().connect(PEER_IP, 80, new TcpHandler() { }, settings), field);
            t.recvNothing();
        }
        // The limits themselves are taken: an ACK at once, no TIME-WAIT, no retries, a 1 ns RTO floor.
        final TcpTestHarness t = new TcpTestHarness();
        t.settings().delayedAckNanos = 0;
        t.settings().timeWaitNanos = 0;
        t.settings().r1Retransmits = 0;
        t.settings().r2Retransmits = 0;
        t.settings().minRtoNanos = 1;
        t.settings().maxRtoNanos = 1;
        t.settings().keepAliveProbes = 1;
        t.settings().challengeAckIntervalNanos = 0;
        t.passiveOpen();
        assertEquals(0, t.counter(StackCounter.INTERNAL_ERRORS));
    }

    /**
     * Two listeners whose ports share a chain of the listener table each queue a connection in one burst; the first
     * one's callback accepts and closes its listener (a one-shot listener, as for an FTP data connection). The second
     * is still told. Before, the announcements scanned the table while the callback removed an entry from it, the
     * second listener moved into the slot just visited and was skipped, and nothing told it again.
     */
    @Test
    void aListenerClosedInItsCallbackDoesNotHideAnotherListenersConnection()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final int mask = 7; // the table's initial capacity is 8
        int a = 1000;
        while (Hashing.hash(a, mask) == mask)
        {
            a++;
        }
        int b = a + 1;
        while (Hashing.hash(b, mask) != Hashing.hash(a, mask))
        {
            b++;
        }
        final int[] told = new int[1];
        t.stack.tcp().listen(a, 8, l ->
        {
            assertNotNull(l.accept());
            l.close();
        });
        final TcpListener second = t.stack.tcp().listen(b, 8, l -> told[0]++);

        t.localPort = a;
        t.peerPort = 40_001;
        t.send(t.peerSyn());
        final int issA = t.recv().get(0).r.seq;
        t.localPort = b;
        t.peerPort = 40_002;
        t.send(t.peerSyn());
        final int issB = t.recv().get(0).r.seq;

        t.localPort = a;
        t.peerPort = 40_001;
        t.iss = issA;
        final TcpTestHarness.Seg ackA = t.in();
        t.localPort = b;
        t.peerPort = 40_002;
        t.iss = issB;
        final TcpTestHarness.Seg ackB = t.in();
        t.sendBurst(ackA, ackB);

        assertEquals(1, second.pending(), "the second listener has a connection queued");
        assertEquals(1, told[0], "and was told of it once");
        t.advance(SECOND);
        t.poll();
        assertEquals(1, told[0], "once");
    }

    /**
     * A listener whose connections get their buffers from a provider (the daemon's pipes) answers a SYN past its backlog
     * with a cookie SYN,ACK whose window is no larger than the provider's receive buffer, and data sent up to that
     * window is taken. Before, the cookie offered the settings' buffer (65535 by default) and the connection, built on
     * a 4 KiB pipe, moved its right edge left: data inside the offered window was dropped as out of window.
     */
    @Test
    void aCookieSynAckOffersNoMoreThanTheProvidersReceiveBuffer()
    {
        final int capacity = 4096;
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(1).bufferProvider(new BufferProvider()
        {
            @Override
            public ConnectionBuffers allocate()
            {
                return TcpTestHarness.ringBuffers(capacity);
            }

            @Override
            public int receiveCapacity()
            {
                return capacity;
            }

            @Override
            public void release(final ConnectionBuffers buffers)
            {
            }
        });
        t.send(t.peerSyn());
        assertTrue(t.recv().get(0).r.window <= capacity, "the SYN,ACK of a half-open connection with state");
        t.peerPort = PEER_PORT + 1;
        t.send(t.peerSyn());
        final TcpTestHarness.Seg cookie = t.recv().get(0);
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
        assertEquals(capacity, cookie.r.window, "the cookie SYN,ACK offers the provider's buffer");
        t.iss = cookie.r.seq;
        t.tsOn = false;
        t.send(t.in());
        t.conn = t.listener.accept();
        assertNotNull(t.conn);
        final int length = 1000;
        t.send(t.in().seq(t.irs + 1 + cookie.r.window - length).flags(ACK | PSH).payload(bytes(length, 1)));
        assertEquals(0, t.counter(StackCounter.TCP_OUT_OF_WINDOW), "data at the end of the offered window is taken");
    }
}
