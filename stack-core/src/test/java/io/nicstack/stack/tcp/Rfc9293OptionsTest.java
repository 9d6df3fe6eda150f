package io.nicstack.stack.tcp;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/** RFC 9293 §3.1, §3.2, §3.7.1: header fields, checksums and options (Appendix B "TCP Options", "TCP Checksums", "Window"). */
class Rfc9293OptionsTest
{
    private final TcpTestHarness t = new TcpTestHarness();

    /** Expect {@code count} full segments of {@code mss} bytes from SND.NXT = iss + 1 + {@code from}; the last one of the write carries PSH. */
    private Seg[] segments(final int from, final int mss, final int... lengths)
    {
        final Seg[] out = new Seg[lengths.length];
        int offset = from;
        for (int i = 0; i < lengths.length; i++)
        {
            out[i] = t.out().seq(t.iss + 1 + offset).payloadLength(lengths[i]);
            offset += lengths[i];
        }
        return out;
    }

    @Test
    void rfc9293_must1_windowIsUnsigned()
    {
        // A 16-bit window of 40000 is negative as a signed short; the sender must still use it.
        t.passiveOpen();
        t.send(t.in().window(40_000));
        t.write(bytes(14_600, 1));
        final Seg[] expected = segments(0, 1460, 1460, 1460, 1460, 1460, 1460, 1460, 1460, 1460, 1460, 1460);
        expected[9].flags(ACK | PSH);
        t.recv(expected);
    }

    @Test
    void rfc9293_must2_everySegmentSentCarriesAValidChecksum()
    {
        // recv() verifies the IPv4 header checksum and the TCP checksum over the pseudo-header of every segment.
        t.peerOffersAll();
        t.passiveOpen();
        t.write(bytes(3001, 2));
        t.recv(t.out().payloadLength(1448), t.out().seq(t.iss + 1 + 1448).payloadLength(1448),
            t.out().seq(t.iss + 1 + 2896).flags(ACK | PSH).payloadLength(105));
        t.send(t.in().ack(t.iss + 1 + 2896).payload(bytes(777, 3)));
        t.write(bytes(10, 4)); // held by Nagle (the 105 is unacknowledged) until the ACK of the 105
        t.send(t.in().seq(t.irs + 1 + 777).ack(t.iss + 1 + 3001));
        t.recv(t.out().seq(t.iss + 1 + 3001).ack(t.irs + 1 + 777).flags(ACK | PSH).payloadLength(10));
    }

    @Test
    void rfc9293_must3_segmentWithBadChecksumIsDropped()
    {
        t.listen();
        t.send(t.peerSyn().badChecksum());
        t.recvNothing();
        assertEquals(0, t.listener.synReceived());

        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 4)).badChecksum());
        t.advanceMs(500);
        t.recvNothing();
        assertEquals(0, t.conn.readable(), "corrupted data is never delivered");
        assertEquals(2, t.counter(StackCounter.TCP_DROP_BAD_CHECKSUM));

        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 4)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 101));
        assertArrayEquals(bytes(100, 4), t.read());
    }

    @Test
    void rfc9293_must4_must14_mssFromOptionsAfterEolIgnoredAndHonoured()
    {
        t.listen();
        t.send(t.peerSyn().rawOptions(1, 1, 2, 4, 0x03, 0xE8, 0, 3, 3, 7, 0, 0));
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        t.iss = synAck.r.seq;
        t.send(t.in());
        t.conn = t.listener.accept();
        t.conn.settings().noDelay = true;
        assertEquals(0, t.conn.sendWindowScale(), "the window-scale option after EOL was not taken");
        t.write(bytes(2500, 5));
        final Seg[] expected = segments(0, 1000, 1000, 1000, 500);
        expected[2].flags(ACK | PSH);
        t.recv(expected);
    }

    @Test
    void rfc9293_must5_optionsAreProcessedInAnySegment()
    {
        t.peerOffersAll();
        t.passiveOpen();
        // A data segment carries a fresh TSval; the ACK for it echoes it (so the option was read on a non-SYN segment).
        t.peerTsVal = 5000;
        t.send(t.in().flags(ACK | PSH).payload(bytes(10, 6)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11).tsEcr(5000));
    }

    @Test
    void rfc9293_must6_unknownOptionsAreIgnored()
    {
        t.listen();
        // Kind 254 (experimental) length 6, then MSS 1460, NOP, NOP.
        t.send(t.peerSyn().rawOptions(254, 6, 1, 2, 3, 4, 2, 4, 0x05, 0xB4, 1, 1));
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        t.iss = synAck.r.seq;
        t.send(t.in());
        t.conn = t.listener.accept();
        assertNotNull(t.conn);
        // Unknown kind 253 length 4 on a data segment: skipped by its length, the data delivered.
        t.send(t.in().flags(ACK | PSH).rawOptions(253, 4, 9, 9).payload(bytes(20, 7)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 21));
        assertArrayEquals(bytes(20, 7), t.read());
    }

    @Test
    void rfc9293_must7_illegalOptionLengthDoesNotCrash()
    {
        t.listen();
        // MSS, then an option of length 0 (would loop forever if taken at face value).
        t.send(t.peerSyn().rawOptions(2, 4, 0x05, 0xB4, 30, 0, 0, 0));
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        t.iss = synAck.r.seq;
        t.send(t.in());
        t.conn = t.listener.accept();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        // Length 1 and a length running past the header, on data segments.
        t.send(t.in().flags(ACK | PSH).rawOptions(8, 1, 0, 0).payload(bytes(10, 8)));
        t.send(t.in().seq(t.irs + 11).flags(ACK | PSH).rawOptions(1, 5, 40, 0).payload(bytes(10, 9)));
        t.advanceMs(40);
        // The segments' fixed headers and payloads are intact, so (as Linux) they are processed with the options read so far.
        t.recv(t.out().ack(t.irs + 21));
        assertEquals(0, t.counter(StackCounter.INTERNAL_ERRORS));
        assertEquals(3, t.counter(StackCounter.TCP_BAD_OPTIONS));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc9293_must14_mssSentAndHonoured()
    {
        t.peerMss = 500;
        t.passiveOpen(); // expectedSynAck() checks our MSS option: 1500 - 40
        t.write(bytes(1200, 10));
        // Segments of at most the peer's 500 bytes; the 200-byte tail goes with them (no small segment is out).
        t.recv(t.out().payloadLength(500), t.out().seq(t.iss + 501).payloadLength(500),
            t.out().seq(t.iss + 1001).flags(ACK | PSH).payload(java.util.Arrays.copyOfRange(bytes(1200, 10), 1000, 1200)));
    }

    @Test
    void rfc9293_must15_defaultSendMss536()
    {
        t.peerMss = -1;
        t.settings().noDelay = true;
        t.passiveOpen();
        t.write(bytes(2000, 11));
        final Seg[] expected = segments(0, 536, 536, 536, 536, 392);
        expected[3].flags(ACK | PSH);
        t.recv(expected);
    }

    @Test
    void rfc9293_must16_effectiveSendMssLessTimestampOption()
    {
        // Eff.snd.MSS = min(SendMSS + 20, MMS_S) - TCP header - options: 1460 - 12 with timestamps on every segment.
        t.peerOffersAll();
        t.peerMss = 9000; // larger than our MTU allows: capped at MMS_S - 20
        t.settings().noDelay = true;
        t.passiveOpen();
        assertEquals(1448, t.conn.sendMss());
        t.write(bytes(3000, 12));
        final Seg[] expected = segments(0, 1448, 1448, 1448, 104);
        expected[2].flags(ACK | PSH);
        t.recv(expected);
    }

    @Test
    void rfc9293_must64_optionsProcessedRegardlessOfAlignment()
    {
        // Window scale at offset 0, MSS at offset 3 and SACK-permitted at offset 7: nothing on a 4-byte boundary.
        t.listen();
        t.send(t.peerSyn().rawOptions(3, 3, 6, 2, 4, 0x02, 0x00, 4, 2, 1, 1, 0));
        t.peerMss = 512;
        t.peerWindowScale = 6;
        t.peerSackPermitted = true;
        final Seg synAck = t.recv(t.expectedSynAck()).get(0);
        t.iss = synAck.r.seq;
        t.send(t.in());
        t.conn = t.listener.accept();
        assertEquals(6, t.conn.sendWindowScale());
        assertTrue(t.conn.sackEnabled());
        t.conn.settings().noDelay = true;
        t.write(bytes(1024, 13));
        final Seg[] expected = segments(0, 512, 512, 512);
        expected[1].flags(ACK | PSH);
        t.recv(expected);
    }

    @Test
    void rfc9293_must65_mssNeverOnNonSynSegments()
    {
        // recv() fails on an MSS option outside a SYN; drive both directions and a close through it.
        t.peerOffersAll();
        t.activeOpen();
        t.write(bytes(3000, 14));
        t.recv(t.out().payloadLength(1448), t.out().seq(t.iss + 1449).payloadLength(1448),
            t.out().seq(t.iss + 1 + 2896).flags(ACK | PSH).payloadLength(104));
        t.send(t.in().ack(t.iss + 1 + 3000).flags(ACK | PSH).payload(bytes(50, 15)));
        t.advanceMs(200); // our delayed ACK of the 50
        t.recv(t.out().seq(t.iss + 3001).ack(t.irs + 51));
        assertArrayEquals(bytes(50, 15), t.read());
        t.conn.close();
        t.poll();
        t.recv(t.out().seq(t.iss + 3001).ack(t.irs + 51).flags(ACK | FIN));
    }

    @Test
    void rfc9293_must67_mssBasedOnMmsR()
    {
        // MSS sent = MMS_R - 20 (IP) - 20 (TCP): 960 on an MTU of 1000, in both the SYN-ACK and the SYN.
        final TcpTestHarness small = new TcpTestHarness(1000);
        small.passiveOpen(); // expectedSynAck() expects mtu - 40
        final TcpTestHarness active = new TcpTestHarness(1000);
        active.conn = active.stack.tcp().connect(PEER_IP, PEER_PORT, active.events, null);
        final Seg syn = active.recv().get(0);
        assertEquals(960, syn.r.mss);
    }

    @Test
    void rfc9293_must68_must69_optionsEncodedWithLengthsAndZeroPadding()
    {
        // recv() walks the raw option bytes of every segment: each option but EOL/NOP has a valid length, padding is zero.
        final Seg syn = t.connect();
        assertEquals(1460, syn.r.mss, "MSS option (MUST-4, MUST-14)");
        assertEquals(TcpConnection.windowScaleFor(t.settings().receiveBufferBytes), syn.r.windowScale);
        assertTrue(syn.r.sackPermitted);
        assertTrue(syn.r.timestampsPresent);
        assertEquals(0, syn.r.tsEcr, "TSecr of a SYN is zero (RFC 7323 §3.2)");
    }
}
