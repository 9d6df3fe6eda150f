package io.nicstack.stack.tcp;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

import static io.nicstack.stack.wire.TcpHeader.ACK;
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
        assertEquals(3, t.recv().stream().filter(seg -> seg.r.flags == (SYN | ACK)).count());
        assertEquals(2, t.listener.synReceived(), "two connections fit the budget");
        assertEquals(1, t.counter(StackCounter.TCP_SYN_COOKIES_SENT), "the third got a cookie instead of memory");
        final IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> t.stack.tcp().connect(TcpTestHarness.PEER_IP, 80, new TcpHandler() { }, null));
        assertTrue(e.getMessage().contains("memory limit"), e.getMessage());
    }

    @Test
    void connectionsPerListenerAreBoundedAndTheNextSynIsRefused()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.listen(64).maxConnections(2);
        for (int i = 0; i < 3; i++)
        {
            t.peerPort = 31_000 + i;
            t.send(t.peerSyn());
        }
        final var sent = t.recv();
        assertEquals(2, sent.stream().filter(seg -> seg.r.flags == (SYN | ACK)).count());
        assertEquals(1, sent.stream().filter(seg -> (seg.r.flags & io.nicstack.stack.wire.TcpHeader.RST) != 0).count());
        assertEquals(2, t.listener.liveConnections());
        assertEquals(1, t.counter(StackCounter.TCP_LISTEN_OVERFLOWS));
    }

    @Test
    void rfc6335_listenOnPortZeroTakesAnUnusedPortOfTheDynamicRange()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final Tcp tcp = t.stack.tcp();
        tcp.nextEphemeral = 0;
        tcp.listen(49152, 1, null);
        final TcpListener picked = tcp.listen(0, 0, null);
        assertEquals(49153, picked.port(), "49152 is taken");
        final TcpListener next = tcp.listen(0, 1, null);
        assertNotEquals(picked.port(), next.port());
        assertTrue(next.port() >= 49152 && next.port() <= 65535);

        // The picked port serves connections like any other.
        t.listener = picked;
        t.localPort = picked.port();
        t.send(t.peerSyn());
        assertEquals(1, picked.synReceived());
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
        assertArrayEquals(new int[] {65534, 65535, 49152, 49153}, ports);
    }
}
