package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class IcmpHeaderTest
{
    @Test
    void readsEveryFieldOfAnEchoRequest()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final IcmpHeader icmp = new IcmpHeader();

        assertTrue(icmp.wrapChecked(buffer, 34, 64));
        assertEquals(34, icmp.offset());
        assertEquals(64, icmp.length());
        assertEquals(IcmpHeader.TYPE_ECHO_REQUEST, icmp.type());
        assertEquals(0, icmp.code());
        assertEquals(0x93d9, icmp.checksum());
        assertEquals(5166, icmp.identifier());
        assertEquals(1, icmp.sequenceNumber());
        assertEquals(0x142e_0001, icmp.restOfHeader());
        assertEquals(42, icmp.dataOffset());
        assertEquals(56, icmp.dataLength());
        assertEquals(0x93d9, icmp.computeChecksum());
        assertTrue(icmp.checksumValid());
    }

    @Test
    void readsAPortUnreachable()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_PORT_UNREACHABLE);
        final IcmpHeader icmp = new IcmpHeader();

        assertTrue(icmp.wrapChecked(buffer, 34, buffer.capacity() - 34));
        assertEquals(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, icmp.type());
        assertEquals(IcmpHeader.CODE_PORT_UNREACHABLE, icmp.code());
        assertEquals(0, icmp.restOfHeader());
        assertTrue(icmp.checksumValid());

        final Ipv4Header quoted = new Ipv4Header();
        assertTrue(quoted.wrapChecked(buffer, icmp.dataOffset(), icmp.dataLength()));
        assertEquals(Ipv4Header.PROTOCOL_UDP, quoted.protocol());
        assertTrue(quoted.checksumValid());
    }

    /** The kernel's reply is the request with type 0, same id, seq and data (RFC 792 page 14). */
    @Test
    void turnsTheRequestIntoTheCapturedReplyInPlace()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final IcmpHeader icmp = new IcmpHeader().wrap(buffer, 34, 64);
        final int oldWord = (icmp.type() << 8) | icmp.code();
        icmp.type(IcmpHeader.TYPE_ECHO_REPLY);
        icmp.checksum(Checksum.update16(icmp.checksum(), oldWord, 0));

        assertEquals(0x9bd9, icmp.checksum());
        assertTrue(icmp.checksumValid());
        icmp.updateChecksum();
        assertEquals(0x9bd9, icmp.checksum());
    }

    @Test
    void writesAnEchoRequest()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final UnsafeBuffer buffer = Fixtures.filled(3 + 64 + 1);
        buffer.putBytes(3 + 8, expected, 42, 56);
        final IcmpHeader icmp = new IcmpHeader().wrap(buffer, 3, 64)
            .type(IcmpHeader.TYPE_ECHO_REQUEST)
            .code(0)
            .identifier(5166)
            .sequenceNumber(1)
            .updateChecksum();

        assertArrayEquals(Fixtures.slice(expected, 34, 64), Fixtures.slice(buffer, 3, 64));
        assertEquals((byte)0xA5, buffer.getByte(2));
        assertEquals((byte)0xA5, buffer.getByte(67));
        assertTrue(icmp.checksumValid());
    }

    @Test
    void writesRestOfHeader()
    {
        final UnsafeBuffer buffer = Fixtures.filled(8);
        new IcmpHeader().wrap(buffer, 0, 8)
            .type(IcmpHeader.TYPE_DESTINATION_UNREACHABLE)
            .code(IcmpHeader.CODE_FRAGMENTATION_NEEDED)
            .checksum(0)
            .restOfHeader(1400);

        assertArrayEquals(Fixtures.bytes("03 04 00 00 00 00 05 78"), Fixtures.slice(buffer, 0, 8));
    }

    @Test
    void wrapCheckedNeedsEightBytes()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[8]);
        final IcmpHeader icmp = new IcmpHeader();

        assertTrue(icmp.wrapChecked(buffer, 0, 8));
        assertFalse(icmp.wrapChecked(buffer, 0, 7));
        assertFalse(icmp.wrapChecked(buffer, 1, 8));
    }
}
