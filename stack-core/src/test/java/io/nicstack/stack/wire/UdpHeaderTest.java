package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class UdpHeaderTest
{
    private static final int LOCALHOST = Fixtures.LOCALHOST;

    @Test
    void readsEveryField()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.UDP_DATAGRAM);
        final UdpHeader udp = new UdpHeader();

        assertTrue(udp.wrapChecked(buffer, 34, 28));
        assertEquals(34, udp.offset());
        assertEquals(28, udp.length());
        assertEquals(58193, udp.sourcePort());
        assertEquals(47002, udp.destinationPort());
        assertEquals(28, udp.datagramLength());
        assertEquals(0xe87a, udp.checksum());
        assertEquals(42, udp.payloadOffset());
        assertEquals(20, udp.payloadLength());
        assertEquals("nicstack udp payload", buffer.getStringWithoutLengthAscii(udp.payloadOffset(), 20));
        assertEquals(0xe87a, udp.computeChecksum(LOCALHOST, LOCALHOST));
        assertTrue(udp.checksumValid(LOCALHOST, LOCALHOST));
        assertFalse(udp.checksumValid(LOCALHOST, LOCALHOST + 1));
    }

    @Test
    void zeroChecksumMeansNone()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.UDP_DATAGRAM);
        final UdpHeader udp = new UdpHeader().wrap(buffer, 34, 28).checksum(0);

        assertTrue(udp.checksumValid(LOCALHOST, 0x0102_0304));
    }

    /** RFC 768: a computed zero goes out as all ones, and all ones verifies. */
    @Test
    void computedZeroIsSentAsAllOnes()
    {
        final UnsafeBuffer buffer = Fixtures.filled(10);
        final UdpHeader udp = new UdpHeader().wrap(buffer, 0, 10)
            .sourcePort(0)
            .destinationPort(0)
            .datagramLength(10)
            .checksum(0);
        // Pick the two payload bytes so that the whole sum is 0xFFFF: the checksum computes to zero.
        final long sumWithoutPayload = Checksum.pseudoHeaderIpv4(0, 0, Ipv4Header.PROTOCOL_UDP, 10) + 10;
        buffer.putShort(8, (short)(0xFFFF - sumWithoutPayload), java.nio.ByteOrder.BIG_ENDIAN);

        assertEquals(0xFFFF, udp.computeChecksum(0, 0));
        udp.updateChecksum(0, 0);
        assertEquals(0xFFFF, udp.checksum());
        assertTrue(udp.checksumValid(0, 0));
    }

    @Test
    void writesTheFixtureDatagram()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.UDP_DATAGRAM);
        final UnsafeBuffer buffer = Fixtures.filled(1 + 28 + 1);
        buffer.putBytes(1 + 8, "nicstack udp payload".getBytes(StandardCharsets.US_ASCII));
        new UdpHeader().wrap(buffer, 1, 28)
            .sourcePort(58193)
            .destinationPort(47002)
            .datagramLength(28)
            .updateChecksum(LOCALHOST, LOCALHOST);

        assertArrayEquals(Fixtures.slice(expected, 34, 28), Fixtures.slice(buffer, 1, 28));
        assertEquals((byte)0xA5, buffer.getByte(0));
        assertEquals((byte)0xA5, buffer.getByte(29));
    }

    @Test
    void wrapCheckedNeedsEightBytes()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[8]);
        final UdpHeader udp = new UdpHeader();

        assertTrue(udp.wrapChecked(buffer, 0, 8));
        assertFalse(udp.wrapChecked(buffer, 0, 7));
        assertFalse(udp.wrapChecked(buffer, 1, 8));
    }
}
