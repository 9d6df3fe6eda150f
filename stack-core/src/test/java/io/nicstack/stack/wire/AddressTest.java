package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class AddressTest
{
    @Test
    void macParsesAndFormats()
    {
        assertEquals(0x5254_0012_3456L, MacAddress.parse("52:54:00:12:34:56"));
        assertEquals(0xAABB_CCDD_EEFFL, MacAddress.parse("AA:bb:Cc:dd:ee:FF"));
        assertEquals(MacAddress.BROADCAST, MacAddress.parse("ff:ff:ff:ff:ff:ff"));
        assertEquals("52:54:00:12:34:56", MacAddress.format(0x5254_0012_3456L));
        assertEquals("00:00:00:00:00:00", MacAddress.format(0));
        assertEquals("aa:bb:cc:dd:ee:ff", MacAddress.format(0xAABB_CCDD_EEFFL));
    }

    @Test
    void macRejectsMalformedText()
    {
        for (final String bad : new String[] {
            "", "52:54:00:12:34", "52:54:00:12:34:5", "52:54:00:12:34:567", "52-54-00-12-34-56",
            "52:54:00:12:34:5g", "52:54:00:12:34: 6", "+2:54:00:12:34:56", "52:54:00:12:34:56:", "\u0665\u0665:54:00:12:34:56"})
        {
            assertThrows(IllegalArgumentException.class, () -> MacAddress.parse(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> MacAddress.parse(null));
    }

    @Test
    void macClassifies()
    {
        assertTrue(MacAddress.isBroadcast(MacAddress.BROADCAST));
        assertTrue(MacAddress.isMulticast(MacAddress.BROADCAST));
        assertTrue(MacAddress.isMulticast(MacAddress.parse("01:00:5e:00:00:01")));
        assertTrue(MacAddress.isMulticast(MacAddress.parse("33:33:00:00:00:01")));
        assertFalse(MacAddress.isMulticast(MacAddress.parse("52:54:00:12:34:56")));
        assertTrue(MacAddress.isUnicast(MacAddress.parse("02:42:ac:11:00:02")));
        assertFalse(MacAddress.isBroadcast(MacAddress.parse("ff:ff:ff:ff:ff:fe")));
    }

    @Test
    void macReadsAndWritesSixOctets()
    {
        final UnsafeBuffer buffer = Fixtures.filled(10);
        MacAddress.write(buffer, 2, 0x0242_ac11_0002L);

        assertArrayEquals(Fixtures.bytes("a5 a5 02 42 ac 11 00 02 a5 a5"), Fixtures.slice(buffer, 0, 10));
        assertEquals(0x0242_ac11_0002L, MacAddress.read(buffer, 2));
        assertEquals(MacAddress.BROADCAST, MacAddress.read(Fixtures.buffer("ff ff ff ff ff ff"), 0));
    }

    @Test
    void ipv4ParsesAndFormats()
    {
        assertEquals(0x7F00_0001, Ipv4Address.parse("127.0.0.1"));
        assertEquals(0x0A00_020F, Ipv4Address.parse("10.0.2.15"));
        assertEquals(0xFFFF_FFFF, Ipv4Address.parse("255.255.255.255"));
        assertEquals(0, Ipv4Address.parse("0.0.0.0"));
        assertEquals("192.168.0.199", Ipv4Address.format(0xC0A8_00C7));
        assertEquals("255.255.255.255", Ipv4Address.format(-1));
        assertEquals("0.0.0.0", Ipv4Address.format(0));
    }

    @Test
    void ipv4RejectsMalformedText()
    {
        for (final String bad : new String[] {
            "", "1.2.3", "1.2.3.4.", ".1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.04", "01.2.3.4", "1..3.4",
            " 1.2.3.4", "1.2.3.4 ", "1.2.3.-4", "1.2.3.+4", "1.2.3.1000", "a.b.c.d", "1.2.3.0x4", "1.2.3.\u0664"})
        {
            assertThrows(IllegalArgumentException.class, () -> Ipv4Address.parse(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> Ipv4Address.parse(null));
    }

    @Test
    void prefixMasks()
    {
        assertEquals(0, Ipv4Address.prefixMask(0));
        assertEquals(0x8000_0000, Ipv4Address.prefixMask(1));
        assertEquals(0xFFFF_FF00, Ipv4Address.prefixMask(24));
        assertEquals(0xFFFF_FFFE, Ipv4Address.prefixMask(31));
        assertEquals(0xFFFF_FFFF, Ipv4Address.prefixMask(32));
        assertThrows(IllegalArgumentException.class, () -> Ipv4Address.prefixMask(33));
        assertThrows(IllegalArgumentException.class, () -> Ipv4Address.prefixMask(-1));
    }
}
