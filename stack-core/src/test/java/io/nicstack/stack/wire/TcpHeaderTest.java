package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class TcpHeaderTest
{
    private static final int LOCALHOST = Fixtures.LOCALHOST;

    @Test
    void readsEveryFieldOfALinuxSyn()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.TCP_SYN);
        final TcpHeader tcp = new TcpHeader();

        assertTrue(tcp.wrapChecked(buffer, 34, 40));
        assertEquals(34, tcp.offset());
        assertEquals(40, tcp.length());
        assertEquals(59678, tcp.sourcePort());
        assertEquals(47001, tcp.destinationPort());
        assertEquals((int)4202832634L, tcp.sequenceNumber());
        assertEquals(0, tcp.acknowledgmentNumber());
        assertEquals(40, tcp.dataOffset());
        assertEquals(0, tcp.reserved());
        assertEquals(TcpHeader.SYN, tcp.flags());
        assertTrue(tcp.hasFlags(TcpHeader.SYN));
        assertFalse(tcp.hasFlags(TcpHeader.SYN | TcpHeader.ACK));
        assertEquals(65495, tcp.window());
        assertEquals(0x7ba5, tcp.checksum());
        assertEquals(0, tcp.urgentPointer());
        assertEquals(54, tcp.optionsOffset());
        assertEquals(20, tcp.optionsLength());
        assertEquals(74, tcp.payloadOffset());
        assertEquals(0, tcp.payloadLength());
        assertEquals(0x7ba5, tcp.computeChecksum(LOCALHOST, LOCALHOST));
        assertTrue(tcp.checksumValid(LOCALHOST, LOCALHOST));
        assertFalse(tcp.checksumValid(LOCALHOST, LOCALHOST + 1));
    }

    @Test
    void readsADataSegment()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.TCP_DATA);
        final TcpHeader tcp = new TcpHeader();

        assertTrue(tcp.wrapChecked(buffer, 34, buffer.capacity() - 34));
        assertEquals((int)4202832635L, tcp.sequenceNumber());
        assertEquals((int)2621951660L, tcp.acknowledgmentNumber());
        assertEquals(TcpHeader.PSH | TcpHeader.ACK, tcp.flags());
        assertEquals(64, tcp.window());
        assertEquals(32, tcp.dataOffset());
        assertEquals(12, tcp.optionsLength());
        assertEquals(16, tcp.payloadLength());
        assertEquals("hello, nicstack\n", buffer.getStringWithoutLengthAscii(tcp.payloadOffset(), 16));
        assertTrue(tcp.checksumValid(LOCALHOST, LOCALHOST));
        assertEquals(0xc95f, tcp.computeChecksum(LOCALHOST, LOCALHOST));
    }

    @Test
    void writesTheFixedHeaderOfTheSynAck()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.TCP_SYN_ACK);
        final UnsafeBuffer buffer = Fixtures.filled(1 + 40 + 1);
        buffer.putBytes(1 + 20, expected, 54, 20);
        final TcpHeader tcp = new TcpHeader().wrap(buffer, 1, 40)
            .sourcePort(47001)
            .destinationPort(59678)
            .sequenceNumber((int)2621951659L)
            .acknowledgmentNumber((int)4202832635L)
            .dataOffset(40)
            .flags(TcpHeader.SYN | TcpHeader.ACK)
            .window(65483)
            .urgentPointer(0)
            .checksum(0)
            .updateChecksum(LOCALHOST, LOCALHOST);

        assertArrayEquals(Fixtures.slice(expected, 34, 40), Fixtures.slice(buffer, 1, 40));
        assertEquals((byte)0xA5, buffer.getByte(0));
        assertEquals((byte)0xA5, buffer.getByte(41));
        assertEquals(0xaeaa, tcp.checksum());
    }

    @Test
    void dataOffsetSetterClearsTheReservedBits()
    {
        final UnsafeBuffer buffer = Fixtures.filled(20);
        final TcpHeader tcp = new TcpHeader().wrap(buffer, 0, 20).dataOffset(20).flags(TcpHeader.CWR | TcpHeader.ECE);

        assertEquals((byte)0x50, buffer.getByte(12));
        assertEquals((byte)0xC0, buffer.getByte(13));
        assertEquals(0, tcp.reserved());
        assertTrue(tcp.hasFlags(TcpHeader.ECE));
    }

    @Test
    void wrapCheckedEnforcesTheDataOffset()
    {
        final TcpHeader tcp = new TcpHeader();
        final UnsafeBuffer syn = Fixtures.buffer(Fixtures.TCP_SYN);

        assertTrue(tcp.wrapChecked(syn, 34, 40));
        assertFalse(tcp.wrapChecked(syn, 34, 39));
        assertFalse(tcp.wrapChecked(syn, 35, 40));
        assertFalse(tcp.wrapChecked(syn, 34, 19));

        syn.putByte(34 + 12, (byte)0x40);
        assertFalse(tcp.wrapChecked(syn, 34, 40));
        syn.putByte(34 + 12, (byte)0xF0);
        assertFalse(tcp.wrapChecked(syn, 34, 40));
        syn.putByte(34 + 12, (byte)0x50);
        assertTrue(tcp.wrapChecked(syn, 34, 40));
        assertEquals(20, tcp.payloadLength());
    }
}
