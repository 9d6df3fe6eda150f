package io.nicstack.stack.tcp;

import java.util.List;

import org.junit.jupiter.api.Test;

import static io.nicstack.stack.wire.TcpHeader.ACK;
import static org.junit.jupiter.api.Assertions.*;

/** Bugs found by the randomized transfers, pinned at segment level. */
class TcpRegressionTest
{
    /**
     * After a retransmission timeout rewinds the send point, a pure ACK still carries the highest
     * sequence number sent (RFC 9293's SND.NXT, which the model never rewinds). With the rewound
     * value the peer, whose RCV.NXT is already past it, drops the ACK as unacceptable without
     * reading its ACK field; found at 10% loss where both ends stalled until R2.
     */
    @Test
    void pureAckAfterTimeoutCarriesTheHighestSequenceSent()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.settings().noDelay = true;
        t.passiveOpen();
        final byte[] data = TcpTestHarness.bytes(3000, 7);
        t.write(data);
        final List<TcpTestHarness.Seg> first = t.recv();
        assertFalse(first.isEmpty());
        final int highest = t.iss + 1 + 3000;

        // No ACK from the peer: the timer fires and the stack goes back to SND.UNA.
        t.advanceMs(1_100);
        final List<TcpTestHarness.Seg> retransmitted = t.recv();
        assertFalse(retransmitted.isEmpty(), "retransmission after RTO");
        assertEquals(t.iss + 1, retransmitted.get(0).r.seq, "go back to SND.UNA");

        // The peer sends data (acknowledging nothing new); the stack must ACK it with SEQ = highest sent.
        t.send(t.in().payload(TcpTestHarness.bytes(100, 9)));
        t.advanceMs(300);
        final List<TcpTestHarness.Seg> acks = t.recv();
        final TcpTestHarness.Seg pureAck = acks.stream().filter(s -> s.r.payloadLength == 0 && s.r.flags == ACK).findFirst()
            .orElseThrow(() -> new AssertionError("no pure ACK among " + acks.size() + " segments"));
        assertEquals(highest, pureAck.r.seq);
        assertEquals(t.irs + 1 + 100, pureAck.r.ack);
    }

    /**
     * RFC 9293 §3.8.6.2.1 (MUST-38): sender SWS avoidance waits for a useful window, but an override
     * timeout sends what a small window allows, so a window that never grows cannot stall the sender.
     */
    @Test
    void rfc9293_must38_smallWindowIsFilledAfterTheOverrideTimeout()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.passiveOpen();
        // The peer first shows a big window (MAX.SND.WND = 65535), then shrinks it to 1000 bytes.
        t.send(t.in().window(1000));
        t.write(TcpTestHarness.bytes(5000, 3));
        t.recvNothing();
        t.advanceMs(250);
        final List<TcpTestHarness.Seg> sent = t.recv();
        assertEquals(1, sent.size(), "one segment after the override timeout");
        assertEquals(1000, sent.get(0).r.payloadLength, "exactly the offered window");
    }

    /**
     * A fast retransmission covers at most what was sent: with 500 bytes in flight (the peer's window)
     * and more queued, retransmitting a full segment from SND.UNA would send new, unaccounted bytes
     * whose ACKs then fall outside [SND.UNA, SND.MAX] and are refused (RFC 5961 §5.2) — a stall found
     * at 5% loss.
     */
    @Test
    void fastRetransmitNeverSendsPastTheHighestSequenceSent()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.passiveOpen();
        t.send(t.in().window(500));
        t.write(TcpTestHarness.bytes(5000, 4));
        t.advanceMs(250); // the SWS override timeout lets the 500-byte window be used
        final List<TcpTestHarness.Seg> first = t.recv();
        assertEquals(1, first.size());
        assertEquals(500, first.get(0).r.payloadLength, "the window allows 500 bytes");
        for (int i = 0; i < 3; i++)
        {
            t.send(t.in().window(500));
        }
        final TcpTestHarness.Seg retransmission = t.recv().stream().filter(seg -> seg.r.payloadLength > 0).findFirst()
            .orElseThrow(() -> new AssertionError("fast retransmit after three duplicate ACKs"));
        assertEquals(t.iss + 1, retransmission.r.seq);
        assertEquals(500, retransmission.r.payloadLength, "only the bytes that were sent");
    }
}
