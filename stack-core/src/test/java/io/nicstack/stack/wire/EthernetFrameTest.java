package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class EthernetFrameTest
{
    @Test
    void readsEveryField()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final EthernetFrame frame = new EthernetFrame();

        assertTrue(frame.wrapChecked(buffer, 0, buffer.capacity()));
        assertSame(buffer, frame.buffer());
        assertEquals(0, frame.offset());
        assertEquals(98, frame.length());
        assertEquals(Fixtures.DST_MAC, frame.destination());
        assertEquals(Fixtures.SRC_MAC, frame.source());
        assertEquals(EthernetFrame.ETHERTYPE_IPV4, frame.etherType());
        assertEquals(14, frame.payloadOffset());
        assertEquals(84, frame.payloadLength());
    }

    @Test
    void wrapInputReadsWhatTheGettersRead()
    {
        final EthernetFrame frame = new EthernetFrame();
        for (final String hex : new String[] {Fixtures.ICMP_ECHO_REQUEST, Fixtures.ARP_REQUEST})
        {
            final byte[] fixture = Fixtures.bytes(hex);
            // At an odd offset inside a larger buffer, as a frame sits in an RX ring slot.
            final UnsafeBuffer buffer = Fixtures.filled(fixture.length + 7);
            buffer.putBytes(3, fixture);
            assertTrue(frame.wrapInput(buffer, 3, fixture.length));
            assertEquals(frame.destination(), frame.inputDestination());
            assertEquals(frame.etherType(), frame.inputEtherType());
        }
        assertEquals(Fixtures.DST_MAC, new EthernetFrame().wrap(Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST), 0, 98).destination());
    }

    @Test
    void wrapInputRefusesRegionsThatDoNotHoldAHeader()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final EthernetFrame frame = new EthernetFrame();
        assertFalse(frame.wrapInput(buffer, 0, 13));
        assertFalse(frame.wrapInput(buffer, buffer.capacity() - 10, 14));
        assertFalse(frame.wrapInput(buffer, -1, 20));
        assertTrue(frame.wrapInput(buffer, buffer.capacity() - 14, 14));
    }

    @Test
    void readsABroadcastArpFrame()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ARP_REQUEST);
        final EthernetFrame frame = new EthernetFrame();

        assertTrue(frame.wrapChecked(buffer, 0, buffer.capacity()));
        assertEquals(MacAddress.BROADCAST, frame.destination());
        assertEquals(Fixtures.DST_MAC, frame.source());
        assertEquals(EthernetFrame.ETHERTYPE_ARP, frame.etherType());
        assertEquals(46, frame.payloadLength());
    }

    @Test
    void writesExactlyTheHeaderBytes()
    {
        final UnsafeBuffer buffer = Fixtures.filled(2 + 14 + 2);
        final EthernetFrame frame = new EthernetFrame().wrap(buffer, 2, 14)
            .destination(Fixtures.DST_MAC)
            .source(Fixtures.SRC_MAC)
            .etherType(EthernetFrame.ETHERTYPE_IPV6);

        assertEquals(16, frame.payloadOffset());
        assertArrayEquals(
            Fixtures.bytes("a5 a5 52 54 00 12 34 56 02 42 ac 11 00 02 86 dd a5 a5"), Fixtures.slice(buffer, 0, 18));
    }

    @Test
    void setterWorksThroughTheReadOnlyOverloadOnAMutableBuffer()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final DirectBuffer readOnly = buffer;
        new EthernetFrame().wrap(readOnly, 0, buffer.capacity()).destination(MacAddress.BROADCAST);

        assertEquals(MacAddress.BROADCAST, MacAddress.read(buffer, 0));
    }

    @Test
    void wrapCheckedRejectsShortOrOutOfBoundsRegions()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[20]);
        final EthernetFrame frame = new EthernetFrame();

        assertTrue(frame.wrapChecked(buffer, 6, 14));
        assertFalse(frame.wrapChecked(buffer, 7, 14));
        assertFalse(frame.wrapChecked(buffer, 0, 13));
        assertFalse(frame.wrapChecked(buffer, -1, 14));
        assertFalse(frame.wrapChecked(buffer, 0, -1));
        assertFalse(frame.wrapChecked(buffer, Integer.MAX_VALUE, 14));
        assertFalse(frame.wrapChecked(buffer, 14, Integer.MAX_VALUE));
    }
}
