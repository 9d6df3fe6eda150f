package io.nicstack.stack.tcp;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.tcp.TcpTestHarness.Seg;

import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.FIN;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static io.nicstack.stack.wire.TcpHeader.RST;
import static io.nicstack.stack.wire.TcpHeader.SYN;
import static org.junit.jupiter.api.Assertions.*;

/**
 * RFC 4987: half-open state and buffer memory are bounded; beyond the bounds SYNs get cookies, never the heap. RFC 6335:
 * active opens take their ports from the dynamic range only.
 */
class TcpResourceLimitsTest
{
    @Test
    void rfc4987_halfOpenConnectionsAreBoundedStackWideThenCookiesAnswer()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(4096);
        final int syns = Tcp.MAX_HALF_OPEN + 50;
        for (int i = 0; i < syns; i++)
        {
            t.peerPort = 20_000 + i;
            t.send(t.peerSyn());
        }
        assertEquals(syns, t.recv().size(), "every SYN answered by a SYN-ACK");
        assertEquals(Tcp.MAX_HALF_OPEN, t.listener.synReceived(), "state kept for at most MAX_HALF_OPEN");
        assertEquals(50, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
    }

    /**
     * RFC 4987 §3.3 (reducing the SYN-RECEIVED timer): a half-open connection whose SYN,ACKs go unanswered (a spoofed SYN's) is given up after the
     * SYN,ACK and {@link TcpSettings#synAckRetransmits} (5, as Linux's tcp_synack_retries) retransmissions, at 1, 3, 7,
     * 15 and 31 s, when the last one times out at 63 s. Before, it took the 8 retries of our own SYN (MUST-23) and held
     * its buffers and its place in the listener's connection limit for 367 s.
     */
    @Test
    void rfc4987_aHalfOpenConnectionIsGivenUpAfterFiveSynAckRetransmissions()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(8);
        t.send(t.peerSyn());
        int synAcks = t.recv().size();
        for (int s = 1; s < 63; s++)
        {
            t.advance(TcpTestHarness.SECOND);
            synAcks += t.recv().size();
        }
        assertEquals(1, t.listener.synReceived(), "still half-open at 62 s");
        assertEquals(6, synAcks, "the SYN,ACK and 5 retransmissions");
        t.advance(TcpTestHarness.SECOND);
        t.recvNothing();
        assertEquals(0, t.listener.synReceived(), "given up at 63 s");
        assertEquals(0, t.listener.liveConnections());
        assertEquals(0, t.stack.tcp().connectionCount());
        assertEquals(1, t.counter(StackCounter.TCP_TIMEOUTS));
    }

    @Test
    void rfc4987_bufferBudgetExhaustedMeansCookiesForSynsAndAnErrorForConnect()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final TcpSettings s = t.settings();
        t.stack.tcp().bufferBudget(2L * (s.sendBufferBytes + s.receiveBufferBytes));
        t.listen(64);
        for (int i = 0; i < 3; i++)
        {
            t.peerPort = 30_000 + i;
            t.send(t.peerSyn());
        }
        final java.util.List<Seg> synAcks = t.recv();
        assertEquals(3, synAcks.stream().filter(seg -> seg.r.flags == (SYN | ACK)).count());
        assertEquals(2, t.listener.synReceived(), "two connections fit the budget");
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT), "the third got a cookie instead of memory");
        final IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> t.stack.tcp().connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, null));
        assertTrue(e.getMessage().contains("memory limit"), e.getMessage());

        // The third peer completes its cookie handshake: the oldest half-open connection gives its memory way.
        t.iss = synAcks.get(2).r.seq;
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(10, 5)));
        t.recv(t.out().ports(TcpTestHarness.LISTEN_PORT, 30_000).flags(RST).seq(synAcks.get(0).r.seq + 1).ack(0));
        assertEquals(1, t.counter(StackCounter.TCP_HALF_OPEN_EVICTED));
        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the cookie connection got the evicted connection's memory");
        assertArrayEquals(TcpTestHarness.bytes(10, 5), t.read());
    }

    /**
     * RFC 4987 §3 (bounded memory): a connection of the stack's own rings that the application closed gives its buffers
     * back when it enters TIME-WAIT (nobody can read them any more), as a connection with provided buffers does; it
     * keeps its 2*MSL (MUST-13) on the stream positions alone. Before, it held its share of the budget for 60 s and a
     * budget of one connection refused every new peer for that minute.
     */
    @Test
    void rfc4987_aConnectionTheApplicationClosedGivesItsBuffersBackInTimeWait()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.stack.tcp().bufferBudget((long)t.settings().sendBufferBytes + t.settings().receiveBufferBytes);
        t.passiveOpen();
        final TcpConnection old = t.conn;
        t.closeIntoTimeWait();
        t.send(t.in().ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));

        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        acceptAnotherPeer(t);
        assertEquals(0, t.counter(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED));
        assertEquals(TcpState.TIME_WAIT, old.state());
        assertEquals(-1, old.read(new UnsafeBuffer(new byte[16]), 0, 16));

        // 2*MSL later the old connection ends without giving the budget back a second time: it still holds one.
        t.advance(t.settings().timeWaitNanos);
        assertEquals(TcpState.CLOSED, old.state());
        t.peerPort = TcpTestHarness.PEER_PORT + 2;
        t.send(t.peerSyn());
        assertEquals(1, t.counter(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED));
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
    }

    /**
     * A connection in TIME-WAIT that the application only half-closed keeps its rings while the application may still
     * read them, and gives them back when it closes.
     */
    @Test
    void aConnectionInTimeWaitKeepsItsBuffersUntilTheApplicationClosesIt()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.stack.tcp().bufferBudget((long)t.settings().sendBufferBytes + t.settings().receiveBufferBytes);
        t.passiveOpen();
        final TcpConnection old = t.conn;
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(10, 1)));
        old.shutdownOutput();
        t.poll();
        t.recv(t.out().ack(t.irs + 11).flags(ACK | FIN));
        t.send(t.in().seq(t.irs + 11).ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 12));
        assertEquals(TcpState.TIME_WAIT, old.state());

        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        t.send(t.peerSyn());
        t.recv();
        assertEquals(1, t.counter(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED), "the budget is still the old connection's");
        assertArrayEquals(TcpTestHarness.bytes(10, 1), t.read());

        old.close();
        assertEquals(TcpState.TIME_WAIT, old.state());
        t.peerPort = TcpTestHarness.PEER_PORT + 2;
        acceptAnotherPeer(t);
    }

    /** A new peer (from {@code t.peerPort}) completes its handshake and its connection is accepted. */
    private static void acceptAnotherPeer(final TcpTestHarness t)
    {
        t.send(t.peerSyn());
        final var synAck = t.recv();
        assertEquals(1, synAck.size());
        t.iss = synAck.get(0).r.seq;
        t.send(t.in());
        t.recv();
        assertNotNull(t.listener.accept(), "the new connection was accepted; budget exhausted "
            + t.counter(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED) + " times");
    }

    /**
     * A listener as the daemon makes one for a default pipe app (backlog and maxConnections 64) whose connections are
     * all established refuses the next SYN with a reset: no cookie, since no half-open connection could give way.
     */
    @Test
    void connectionsPerListenerAreBoundedAndTheNextSynIsRefused()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(64).maxConnections(64);
        for (int i = 0; i < 64; i++)
        {
            t.peerPort = 31_000 + i;
            t.passiveOpen();
        }
        t.peerPort = 31_064;
        t.send(t.peerSyn());
        t.recv(t.out().flags(RST | ACK).seq(0).ack(t.irs + 1));
        assertEquals(64, t.listener.liveConnections());
        assertEquals(1, t.counter(StackCounter.TCP_LISTEN_OVERFLOWS));
        assertEquals(0, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
    }

    /**
     * RFC 4987 §2: 64 spoofed SYNs, never completed, fill a listener set up as the daemon sets one up for a default pipe
     * app (backlog and maxConnections 64, buffers from the app's 64 slots). A real client's SYN then gets a SYN cookie,
     * and its ACK takes the place of the oldest half-open connection, which is reset (its slot and its place in the
     * limit go to the client): a peer that completed the handshake beats one that has not (RFC 4987 §3.4). Before, every
     * real client got a RST for as long as the spoofed half-open connections lived.
     */
    @Test
    void rfc4987_spoofedSynsHoldingTheConnectionLimitGiveWayToAClientThatCompletesACookieHandshake()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Slots slots = new Slots(64);
        t.listen(64).bufferProvider(slots).maxConnections(64);
        final int oldestIss = spoofedSyns(t, 64);
        assertEquals(64, t.listener.synReceived());
        assertEquals(64, slots.inUse);

        t.peerPort = 45_000;
        t.irs = TcpTestHarness.REMOTE_ISS;
        t.send(t.peerSyn());
        t.iss = t.recvOne(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).r.seq;
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT));
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(20, 1)));
        // RFC 9293 §3.10.5: ABORT in SYN-RECEIVED, <SEQ=SND.NXT><CTL=RST>, to the oldest spoofed SYN's sender.
        t.recv(t.out().ports(TcpTestHarness.LISTEN_PORT, 20_000).flags(RST).seq(oldestIss + 1).ack(0));
        assertEquals(1, t.counter(StackCounter.TCP_HALF_OPEN_EVICTED));
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
        assertEquals(0, t.counter(StackCounter.TCP_LISTEN_OVERFLOWS));
        assertEquals(64, t.listener.liveConnections());
        assertEquals(63, t.listener.synReceived());
        assertEquals(64, slots.inUse);

        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the cookie connection was accepted");
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertArrayEquals(TcpTestHarness.bytes(20, 1), t.read());
        t.conn.settings().noDelay = true;
        t.write(TcpTestHarness.bytes(30, 2));
        t.recv(t.out().ack(t.irs + 21).flags(ACK | PSH).payload(TcpTestHarness.bytes(30, 2)));
    }

    /**
     * A cookie ACK finding the listener at its limit with nothing half-open to give way (its SYN came while a half-open
     * connection held the limit, which then completed) is dropped and counted, as when the accept queue is full: no
     * established connection is evicted. The cookie stays valid, so the peer's retransmission gets in once there is room.
     */
    @Test
    void rfc4987_aCookieAckFindingOnlyEstablishedConnectionsAtTheLimitWaitsForRoom()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(64).maxConnections(2);
        final TcpConnection a = t.passiveOpen();
        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        t.send(t.peerSyn());
        final int issB = t.recvOne(t.expectedSynAck()).r.seq;

        t.peerPort = TcpTestHarness.PEER_PORT + 2;
        t.send(t.peerSyn());
        final int issC = t.recvOne(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).r.seq;

        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        t.iss = issB;
        t.send(t.in());
        assertNotNull(t.listener.accept(), "B completed its own handshake");
        assertEquals(0, t.listener.synReceived());

        t.peerPort = TcpTestHarness.PEER_PORT + 2;
        t.iss = issC;
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(10, 3)));
        t.recvNothing();
        assertEquals(1, t.counter(StackCounter.TCP_LISTEN_COOKIE_ACK_DROPPED));
        assertEquals(0, t.counter(StackCounter.TCP_HALF_OPEN_EVICTED));
        assertEquals(0, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
        assertEquals(2, t.listener.liveConnections());
        assertNull(t.listener.accept());

        a.abort();
        t.poll();
        t.recv();
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(10, 3)));
        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the retransmission got in");
        assertArrayEquals(TcpTestHarness.bytes(10, 3), t.read());
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
    }

    /**
     * RFC 4987 §2 across listeners: the listeners of one pipe app take their buffers from the app's slots. Spoofed SYNs
     * to listener A hold every slot half-open, below A's own limit; a real client of listener B then gets a SYN cookie,
     * and its ACK takes the slot of the oldest half-open connection among the listeners sharing B's buffers (here A's,
     * which is reset). Before, the cookie ACK was dropped for want of a slot, and B served nobody until A's SYN,ACKs
     * ran out, about 63 s.
     */
    @Test
    void rfc4987_spoofedSynsHoldingSharedSlotsGiveWayToACookieHandshakeAtAnotherListener()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Slots slots = new Slots(8);
        t.listen(64).bufferProvider(slots);
        final TcpListener b = t.stack.tcp().listen(TcpTestHarness.LISTEN_PORT + 1, 64, null).bufferProvider(slots);
        final int oldestIss = spoofedSyns(t, 8);
        assertEquals(8, slots.inUse);

        t.localPort = TcpTestHarness.LISTEN_PORT + 1;
        t.peerPort = 45_000;
        t.irs = TcpTestHarness.REMOTE_ISS;
        t.send(t.peerSyn());
        t.iss = t.recvOne(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).r.seq;
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(20, 1)));
        t.recv(t.out().ports(TcpTestHarness.LISTEN_PORT, 20_000).flags(RST).seq(oldestIss + 1).ack(0));
        assertEquals(1, t.counter(StackCounter.TCP_HALF_OPEN_EVICTED));
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_ACCEPTED));
        assertEquals(7, t.listener.synReceived());
        assertEquals(8, slots.inUse);
        t.conn = b.accept();
        assertNotNull(t.conn, "the cookie connection got the evicted connection's slot");
        assertArrayEquals(TcpTestHarness.bytes(20, 1), t.read());
    }

    /**
     * A cookie ACK arriving while every buffer is held by a synchronized connection (nothing half-open to give way) is
     * dropped, not refused, and no established connection is touched: the cookie stays valid and the peer's next segment
     * gets in once a slot is free again.
     */
    @Test
    void rfc4987_aCookieAckFindingNoBuffersGetsInWithThePeersNextSegment()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Slots slots = new Slots(1);
        t.listen(4).bufferProvider(slots);
        final TcpConnection first = t.passiveOpen();
        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        t.send(t.peerSyn());
        t.iss = t.recvOne(t.out().flags(SYN | ACK).ack(t.irs + 1).anySeq().noTimestamps().mss(1460)).r.seq;
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(10, 4)));
        t.recvNothing();
        assertNull(t.listener.accept());
        assertEquals(2, t.counter(StackCounter.TCP_BUFFER_BUDGET_EXHAUSTED), "the SYN's and the cookie ACK's");
        assertEquals(0, t.counter(StackCounter.TCP_HALF_OPEN_EVICTED));
        assertEquals(TcpState.ESTABLISHED, first.state());

        first.abort();
        t.poll();
        t.recv();
        assertEquals(0, slots.inUse, "the aborted connection gave its slot back");
        t.send(t.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(10, 4)));
        t.conn = t.listener.accept();
        assertNotNull(t.conn, "the peer's retransmission got in");
        assertArrayEquals(TcpTestHarness.bytes(10, 4), t.read());
    }

    /**
     * {@code count} spoofed SYNs to the harness's listener, from ports 20,000 up, each answered with a SYN,ACK and never
     * completed; returns the ISS of the first (the oldest half-open connection).
     */
    private static int spoofedSyns(final TcpTestHarness t, final int count)
    {
        int oldestIss = 0;
        for (int i = 0; i < count; i++)
        {
            t.peerPort = 20_000 + i;
            t.irs = 1_000 * i;
            t.send(t.peerSyn());
            final Seg synAck = t.recvOne(t.expectedSynAck());
            if (i == 0)
            {
                oldestIss = synAck.r.seq;
            }
        }
        return oldestIss;
    }

    /** A fixed number of buffer pairs, as an app's pipe slots, counting those in use. */
    private static final class Slots implements BufferProvider
    {
        private final int count;
        int inUse;

        Slots(final int count)
        {
            this.count = count;
        }

        @Override
        public ConnectionBuffers allocate()
        {
            if (inUse == count)
            {
                return null;
            }
            inUse++;
            return TcpTestHarness.ringBuffers(4096);
        }

        @Override
        public int receiveCapacity()
        {
            return 4096;
        }

        @Override
        public void release(final ConnectionBuffers buffers)
        {
            inUse--;
        }
    }

    /**
     * A connection the application closed that waits out 2*MSL in TIME-WAIT serves nobody: it no longer counts against
     * its listener's connection limit (Linux keeps TIME-WAIT apart from the accept limits; pipe apps' connections
     * already stopped counting). Before, a server closing first was refused every new peer for 2*MSL once its
     * TIME-WAIT connections filled the limit.
     */
    @Test
    void aConnectionTheApplicationClosedInTimeWaitNoLongerCountsAgainstItsListener()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(64).maxConnections(1);
        t.passiveOpen();
        t.closeIntoTimeWait();
        assertEquals(0, t.listener.liveConnections(), "TIME-WAIT does not count");
        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        t.passiveOpen();
        assertEquals(1, t.listener.liveConnections());
        assertEquals(0, t.counter(StackCounter.TCP_LISTEN_OVERFLOWS));
    }

    /**
     * TIME-WAIT is bounded stack-wide ({@link Tcp#maxTimeWait}, as Linux's tcp_max_tw_buckets): a connection that would
     * enter it beyond the bound still acknowledges the peer's FIN, then ends at once, counted. The others keep their
     * 2*MSL (MUST-13), and one ending makes room again.
     */
    @Test
    void timeWaitIsBoundedStackWideAndAConnectionBeyondTheBoundEndsAtOnce()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.stack.tcp().maxTimeWait(1);
        t.passiveOpen();
        final TcpConnection first = t.conn;
        t.closeIntoTimeWait();
        t.advance(t.settings().timeWaitNanos / 2);
        t.peerPort = TcpTestHarness.PEER_PORT + 1;
        t.passiveOpen();
        final TcpConnection second = t.conn;
        second.close();
        t.poll();
        t.recv(t.out().flags(ACK | FIN));
        t.send(t.in().ack(t.iss + 2).flags(ACK | FIN));
        t.recv(t.out().seq(t.iss + 2).ack(t.irs + 2));
        t.advanceMs(1);
        assertEquals(TcpState.CLOSED, second.state(), "beyond the bound: no TIME-WAIT");
        assertEquals(TcpState.TIME_WAIT, first.state());
        assertEquals(1, t.counter(StackCounter.TCP_TIME_WAIT_OVERFLOW));
        assertEquals(1, t.stack.tcp().timeWaitCount());

        t.advance(t.settings().timeWaitNanos / 2);
        assertEquals(TcpState.CLOSED, first.state());
        assertEquals(0, t.stack.tcp().timeWaitCount());
        t.peerPort = TcpTestHarness.PEER_PORT + 2;
        t.passiveOpen();
        t.closeIntoTimeWait();
        t.advanceMs(1);
        assertEquals(TcpState.TIME_WAIT, t.conn.state(), "room again");
        assertEquals(1, t.counter(StackCounter.TCP_TIME_WAIT_OVERFLOW));
    }

    @Test
    void rfc6335_listenOnPortZeroTakesAnUnusedPortOfTheDynamicRange()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Tcp tcp = t.stack.tcp();
        tcp.nextEphemeral = 0;
        final TcpListener first = tcp.listen(0, 1, null);
        final int firstPort = first.port();
        first.close();
        tcp.nextEphemeral = 0;
        tcp.listen(firstPort, 1, null);
        final TcpListener picked = tcp.listen(0, 0, null);
        assertEquals(firstPort == 65535 ? 49152 : firstPort + 1, picked.port(), firstPort + " is taken");
        final TcpListener next = tcp.listen(0, 1, null);
        assertNotEquals(picked.port(), next.port());
        assertTrue(next.port() >= 49152 && next.port() <= 65535);

        // The picked port serves connections like any other.
        t.listener = picked;
        t.localPort = picked.port();
        t.send(t.peerSyn());
        assertEquals(1, picked.synReceived());
    }

    /**
     * RFC 6056 §3.3.3 (Algorithm 3): each destination's ephemeral ports start at an offset only the stack's secret
     * gives, so a peer learns from its own connections' ports neither another destination's ports nor how many
     * connections the host opens; a stack with another secret picks others. Before, every active open took the next
     * port of one counter whose start depended on our address alone.
     */
    @Test
    void rfc6056_ephemeralPortsOfOneDestinationTellNothingOfAnothers()
    {
        final long[] secret = {0x1111_2222_3333_4444L, 0x5555_6666_7777_8888L, 1, 2};
        final Tcp tcp = new TcpTestHarness(1500, false, secret).stack.tcp();
        final int a1 = tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, null).localPort();
        final int a2 = tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, null).localPort();
        final int b1 = tcp.connect(TcpTestHarness.PEER_IP + 2, 80, new TcpHandler() { }, null).localPort();
        final int c1 = tcp.connect(TcpTestHarness.PEER_IP, 81, new TcpHandler() { }, null).localPort();
        assertEquals(a1 + 1, a2, "one destination's ports follow one another");
        assertTrue(Math.abs(b1 - a2) > 16 && Math.abs(c1 - b1) > 16, "other destinations' ports lie elsewhere: " + a2 + ", "
            + b1 + ", " + c1);

        final long[] other = {0x0123_4567_89AB_CDEFL, 0x0FED_CBA9_8765_4321L, 1, 2};
        final int elsewhere = new TcpTestHarness(1500, false, other).stack.tcp()
            .connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, null).localPort();
        assertNotEquals(a1, elsewhere, "another secret, another port");
    }

    @Test
    void rfc6335_ephemeralPortsStayInTheDynamicRangeWhenTheirCounterWraps()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Tcp tcp = t.stack.tcp();
        tcp.nextEphemeral = Integer.MAX_VALUE - 1;
        final int[] ports = new int[4];
        for (int i = 0; i < ports.length; i++)
        {
            ports[i] = tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, null).localPort();
        }
        // 2^31 - 2 and 2^31 - 1, then the counter turns negative: still in order, still within 49152-65535.
        for (int i = 0; i < ports.length; i++)
        {
            assertTrue(ports[i] >= 49152 && ports[i] <= 65535, "port " + ports[i]);
            assertEquals(i == 0 ? ports[0] : ports[i - 1] == 65535 ? 49152 : ports[i - 1] + 1, ports[i], "in order");
        }
    }

    /**
     * An active open towards a destination all of whose 16,384 dynamic ports are taken fails at once, having tried
     * every port once; the next attempt fails without trying any, until a connection towards it ends; other
     * destinations are not affected. Before, every attempt walked the whole range again (two table lookups per port):
     * the pipe review measured 8 to 12 ms per round of an app's 64 CONNECTs, and a 15 s stall of the daemon's loop
     * when they were queued behind a detach.
     */
    @Test
    void anActiveOpenToADestinationWithNoFreePortFailsWithoutSearchingAgain()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Tcp tcp = t.stack.tcp();
        final TcpSettings small = t.settings().copy();
        small.sendBufferBytes = 64;
        small.receiveBufferBytes = 64;
        final TcpConnection[] open = new TcpConnection[65536 - 49152];
        for (int i = 0; i < open.length; i++)
        {
            open[i] = tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, small);
        }
        final long before = tcp.ephemeralPortsTried;
        final IllegalStateException full = assertThrows(IllegalStateException.class,
            () -> tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, small));
        assertTrue(full.getMessage().contains("ephemeral"), full.getMessage());
        assertEquals(open.length, tcp.ephemeralPortsTried - before, "every port tried once");
        for (int i = 0; i < 3; i++)
        {
            assertThrows(IllegalStateException.class, () -> tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, small));
        }
        assertEquals(open.length, tcp.ephemeralPortsTried - before, "nothing freed since: no port tried again");

        assertNotNull(tcp.connect(TcpTestHarness.PEER_IP, 81, new TcpHandler() { }, small), "another destination");
        final int freed = open[100].localPort();
        open[100].abort();
        assertEquals(freed, tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, small).localPort(),
            "the port a closed connection freed is found again");
        assertThrows(IllegalStateException.class, () -> tcp.connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, small));
    }
}
