package io.nicstack.stack.tcp;

import static io.nicstack.stack.tcp.TcpTestHarness.bytes;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import io.nicstack.nic.FrameHandler;
import io.nicstack.stack.Frames;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.wire.Ipv4Header;

/**
 * Checksum offload (the device's receive flag and transmit completion, see {@code FrameHandler} and
 * {@code NetDevice}): what the stack may skip, and what it must still check.
 */
class ChecksumOffloadTest
{
    /** A segment with a wrong checksum is dropped, unless the device vouched for the checksum. */
    @Test
    void aTrustedChecksumIsNotVerifiedAgainAnUntrustedOneIs()
    {
        final TcpTestHarness t = new TcpTestHarness();
        t.passiveOpen();

        t.send(t.in().payload(bytes(100, 1)).badChecksum());
        t.recvNothing();
        assertEquals(1, t.counter(StackCounter.TCP_DROP_BAD_CHECKSUM));
        assertEquals(0, t.conn.readable());

        t.device.rxFlags(FrameHandler.RX_L4_CHECKSUM_TRUSTED);
        t.send(t.in().payload(bytes(100, 1)).badChecksum());
        t.advanceMs(200);
        t.recv(t.out().ack(t.irs + 101));
        assertArrayEquals(bytes(100, 1), t.read());
        assertEquals(1, t.counter(StackCounter.TCP_DROP_BAD_CHECKSUM), "no further checksum drop");
        assertTrue(t.counter(StackCounter.RX_CHECKSUMS_TRUSTED) >= 1);
    }

    /** UDP alike; and a reassembled datagram is always verified, whatever its fragments' flags said. */
    @Test
    void udpTrustedChecksumAndReassembledDatagramsAreVerified()
    {
        final TcpTestHarness t = new TcpTestHarness();
        final byte[] udp = Frames.udp(Frames.PEER_IP, Frames.STACK_IP, 5000, 9999, bytes(64, 2));
        udp[6] ^= 0x5A; // corrupt the checksum field
        t.device.rxFlags(FrameHandler.RX_L4_CHECKSUM_TRUSTED);
        t.device.inject(Frames.fromPeer(t.mac, Frames.ipv4(Frames.PEER_IP, Frames.STACK_IP, Ipv4Header.PROTOCOL_UDP, 7, false, 0, udp)));
        t.poll();
        assertEquals(0, t.counter(StackCounter.UDP_DROP_BAD_CHECKSUM), "trusted: not verified");
        assertEquals(1, t.counter(StackCounter.UDP_DROP_NO_PORT), "trusted: reached port demux");

        // The same datagram in two fragments, each frame flagged: the whole is verified in software.
        final byte[] first = java.util.Arrays.copyOfRange(udp, 0, 40);
        final byte[] second = java.util.Arrays.copyOfRange(udp, 40, udp.length);
        t.device.inject(Frames.fromPeer(t.mac, Frames.ipv4(Frames.PEER_IP, Frames.STACK_IP, Ipv4Header.PROTOCOL_UDP, 8, true, 0, first)));
        t.device.inject(Frames.fromPeer(t.mac, Frames.ipv4(Frames.PEER_IP, Frames.STACK_IP, Ipv4Header.PROTOCOL_UDP, 8, false, 40, second)));
        t.poll();
        assertEquals(1, t.counter(StackCounter.IPV4_REASSEMBLED));
        assertEquals(1, t.counter(StackCounter.UDP_DROP_BAD_CHECKSUM), "reassembled: verified and dropped");

        t.device.rxFlags(0);
        t.device.inject(Frames.fromPeer(t.mac, Frames.ipv4(Frames.PEER_IP, Frames.STACK_IP, Ipv4Header.PROTOCOL_UDP, 9, false, 0, udp)));
        t.poll();
        assertEquals(2, t.counter(StackCounter.UDP_DROP_BAD_CHECKSUM), "untrusted: verified and dropped");
    }

    /**
     * With transmit offload, segments built in the device frame carry only the pseudo-header sum and are committed
     * with TX_L4_CHECKSUM_PARTIAL ({@link io.nicstack.stack.TestDevice} checks that and completes the sum as a NIC
     * would; the harness then verifies every checksum on what it receives); a RST built outside a connection goes
     * through the scratch path with a full checksum and no flag.
     */
    @Test
    void transmitOffloadLeavesThePseudoHeaderSumToTheDevice()
    {
        final TcpTestHarness t = new TcpTestHarness(1500, true);
        t.passiveOpen();
        final int afterHandshake = t.device.partialCommits();
        assertTrue(afterHandshake >= 1, "the SYN-ACK was built in the device frame and offloaded");

        t.conn.settings().noDelay = true;
        t.write(bytes(1000, 3));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(1000, 3)));
        assertEquals(afterHandshake + 1, t.device.partialCommits());
        assertTrue(t.device.partialChecksumErrors().isEmpty(), t.device.partialChecksumErrors().toString());
        assertEquals(t.device.partialCommits(), t.counter(StackCounter.TX_CHECKSUMS_OFFLOADED));

        // No connection: the RST is emitted through the scratch buffer, checksum computed here.
        t.peerPort = 41_000;
        t.send(t.in().seq(5).ack(6));
        assertEquals(1, t.recv().size());
        assertEquals(afterHandshake + 1, t.device.partialCommits(), "the RST was not offloaded");
    }
}
