package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class ArpPacketTest
{
    @Test
    void readsEveryField()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ARP_REQUEST);
        final ArpPacket arp = new ArpPacket();

        assertTrue(arp.wrapChecked(buffer, 14, buffer.capacity() - 14));
        assertEquals(14, arp.offset());
        assertEquals(46, arp.length());
        assertEquals(ArpPacket.HTYPE_ETHERNET, arp.hardwareType());
        assertEquals(EthernetFrame.ETHERTYPE_IPV4, arp.protocolType());
        assertEquals(6, arp.hardwareLength());
        assertEquals(4, arp.protocolLength());
        assertEquals(ArpPacket.OP_REQUEST, arp.operation());
        assertEquals(Fixtures.DST_MAC, arp.senderHardwareAddress());
        assertEquals(Ipv4Address.parse("10.0.2.15"), arp.senderProtocolAddress());
        assertEquals(0L, arp.targetHardwareAddress());
        assertEquals(Ipv4Address.parse("10.0.2.2"), arp.targetProtocolAddress());
        assertTrue(arp.isEthernetIpv4());
    }

    @Test
    void writesTheFixtureBytes()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.ARP_REQUEST);
        final UnsafeBuffer buffer = Fixtures.filled(14 + ArpPacket.LENGTH + 1);
        new EthernetFrame().wrap(buffer, 0, 14 + ArpPacket.LENGTH)
            .destination(MacAddress.BROADCAST)
            .source(Fixtures.DST_MAC)
            .etherType(EthernetFrame.ETHERTYPE_ARP);
        new ArpPacket().wrap(buffer, 14, ArpPacket.LENGTH)
            .hardwareType(ArpPacket.HTYPE_ETHERNET)
            .protocolType(ArpPacket.PTYPE_IPV4)
            .hardwareLength(6)
            .protocolLength(4)
            .operation(ArpPacket.OP_REQUEST)
            .senderHardwareAddress(Fixtures.DST_MAC)
            .senderProtocolAddress(Ipv4Address.parse("10.0.2.15"))
            .targetHardwareAddress(0)
            .targetProtocolAddress(Ipv4Address.parse("10.0.2.2"));

        assertArrayEquals(Fixtures.slice(expected, 0, 42), Fixtures.slice(buffer, 0, 42));
        assertEquals((byte)0xA5, buffer.getByte(42));
    }

    @Test
    void writesAReply()
    {
        final UnsafeBuffer buffer = Fixtures.filled(ArpPacket.LENGTH);
        final ArpPacket arp = new ArpPacket().wrap(buffer, 0, ArpPacket.LENGTH)
            .hardwareType(ArpPacket.HTYPE_ETHERNET)
            .protocolType(ArpPacket.PTYPE_IPV4)
            .hardwareLength(6)
            .protocolLength(4)
            .operation(ArpPacket.OP_REPLY)
            .senderHardwareAddress(Fixtures.SRC_MAC)
            .senderProtocolAddress(Ipv4Address.parse("10.0.2.2"))
            .targetHardwareAddress(Fixtures.DST_MAC)
            .targetProtocolAddress(Ipv4Address.parse("10.0.2.15"));

        assertArrayEquals(Fixtures.bytes(
            "00 01 08 00 06 04 00 02 02 42 ac 11 00 02 0a 00 02 02 52 54 00 12 34 56 0a 00 02 0f"),
            Fixtures.slice(buffer, 0, ArpPacket.LENGTH));
        assertEquals(ArpPacket.OP_REPLY, arp.operation());
    }

    @Test
    void wrapCheckedNeedsTwentyEightBytes()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[28]);
        final ArpPacket arp = new ArpPacket();

        assertTrue(arp.wrapChecked(buffer, 0, 28));
        assertFalse(arp.wrapChecked(buffer, 0, 27));
        assertFalse(arp.wrapChecked(buffer, 1, 28));
        assertFalse(arp.isEthernetIpv4());
    }
}
