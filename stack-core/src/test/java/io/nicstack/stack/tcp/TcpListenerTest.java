package io.nicstack.stack.tcp;

import org.agrona.collections.Hashing;
import org.junit.jupiter.api.Test;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static org.junit.jupiter.api.Assertions.*;

/** Listeners, their callbacks and the connections they queue. */
class TcpListenerTest
{
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
}
