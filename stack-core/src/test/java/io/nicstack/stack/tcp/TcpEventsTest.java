package io.nicstack.stack.tcp;

import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static io.nicstack.stack.wire.TcpHeader.RST;
import static io.nicstack.stack.wire.TcpHeader.SYN;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

/** The events the stack hands applications ({@link TcpHandler}), and what a handler that throws costs. */
class TcpEventsTest
{
    private final TcpTestHarness h = new TcpTestHarness();

    /**
     * A handler that throws costs its own event, counted as an internal error: the burst's other connections still get
     * theirs and their ACKs, and later polls run. Before, the exception left Tcp's list of connections to visit half
     * cleared, so every later poll threw a NullPointerException and the stack was dead.
     */
    @Test
    void aReadableHandlerThatThrowsCostsOnlyItsEvent()
    {
        final boolean[] fail = {true};
        final int[] calls = {0};
        h.conn = h.passiveOpen();
        h.conn.handler(new TcpHandler()
        {
            @Override
            public void onReadable(final TcpConnection c)
            {
                calls[0]++;
                if (fail[0])
                {
                    throw new IllegalStateException("an application bug");
                }
            }
        });
        h.send(h.in().flags(ACK | PSH).payload(TcpTestHarness.bytes(100, 1)));
        assertEquals(1, h.counter(StackCounter.INTERNAL_ERRORS));
        // The ACK the segment owed still went out: the handler's failure does not skip the connection's output.
        h.advanceMs(500);
        assertTrue(h.recv().stream().anyMatch(s -> s.r.ack == h.irs + 101), "the data was acknowledged");

        fail[0] = false;
        h.send(h.in().seq(h.irs + 101).flags(ACK | PSH).payload(TcpTestHarness.bytes(50, 2)));
        assertEquals(2, calls[0], "later events are delivered");
        assertEquals(150, h.read().length);
        assertEquals(1, h.counter(StackCounter.INTERNAL_ERRORS));
    }

    /** The same for a listener's callback: the next poll runs and the connection can still be accepted. */
    @Test
    void anAcceptableHandlerThatThrowsLeavesTheStackRunning()
    {
        final boolean[] fail = {true};
        h.listener = h.stack.tcp().listen(TcpTestHarness.LISTEN_PORT, 8, l ->
        {
            if (fail[0])
            {
                throw new IllegalStateException("an application bug");
            }
        });
        h.send(h.peerSyn());
        h.iss = h.recv().get(0).r.seq;
        h.send(h.in());
        assertEquals(1, h.counter(StackCounter.INTERNAL_ERRORS));
        fail[0] = false;
        h.advanceMs(1);
        final TcpConnection accepted = h.listener.accept();
        assertEquals(TcpState.ESTABLISHED, accepted.state());
        assertEquals(1, h.counter(StackCounter.INTERNAL_ERRORS));
    }

    /**
     * A SYN,ACK and a RST at RCV.NXT in one burst: the connection opened and closed inside the burst, so the handler
     * gets onClosed only, not an onConnected after it (where the usual client writes its request, which would throw).
     */
    @Test
    void aConnectionResetInTheBurstThatOpenedItIsNeverAnnouncedAsConnected()
    {
        final List<String> events = new ArrayList<>();
        h.conn = h.stack.tcp().connect(TcpTestHarness.PEER_IP, TcpTestHarness.PEER_PORT, new TcpHandler()
        {
            @Override
            public void onConnected(final TcpConnection c)
            {
                events.add("connected");
                c.write(new UnsafeBuffer("GET /".getBytes()), 0, 5);
            }

            @Override
            public void onClosed(final TcpConnection c, final int reason)
            {
                events.add("closed " + reason);
            }
        }, null);
        final TcpTestHarness.Seg syn = h.recv().get(0);
        h.iss = syn.r.seq;
        h.localPort = syn.r.sourcePort;
        h.sendBurst(h.peerSyn().flags(SYN | ACK).ack(h.iss + 1), h.in().flags(RST).ack(0));
        assertEquals(List.of("closed " + TcpConnection.CLOSE_RESET), events);
        assertEquals(0, h.counter(StackCounter.INTERNAL_ERRORS));
    }

    /** Bytes still arrive in order once a throwing handler is replaced; nothing is lost or read twice. */
    @Test
    void theStreamIsWholeAcrossAThrowingHandler()
    {
        h.conn = h.passiveOpen();
        h.conn.handler(new TcpHandler()
        {
            @Override
            public void onReadable(final TcpConnection c)
            {
                throw new IllegalStateException("an application bug");
            }
        });
        final byte[] first = TcpTestHarness.bytes(300, 3);
        h.send(h.in().flags(ACK | PSH).payload(first));
        h.conn.handler(h.events);
        final byte[] second = TcpTestHarness.bytes(200, 4);
        h.send(h.in().seq(h.irs + 301).flags(ACK | PSH).payload(second));
        final byte[] all = new byte[500];
        System.arraycopy(first, 0, all, 0, 300);
        System.arraycopy(second, 0, all, 300, 200);
        assertArrayEquals(all, h.read());
    }
}
