package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class Ipv4HeaderTest
{
    @Test
    void readsEveryField()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final Ipv4Header ip = new Ipv4Header();

        assertTrue(ip.wrapChecked(buffer, 14, buffer.capacity() - 14));
        assertEquals(14, ip.offset());
        assertEquals(84, ip.length());
        assertEquals(4, ip.version());
        assertEquals(5, ip.ihl());
        assertEquals(20, ip.headerLength());
        assertEquals(0, ip.tos());
        assertEquals(84, ip.totalLength());
        assertEquals(56135, ip.identification());
        assertTrue(ip.dontFragment());
        assertFalse(ip.moreFragments());
        assertFalse(ip.reservedFlag());
        assertEquals(0, ip.fragmentOffset());
        assertFalse(ip.isFragment());
        assertEquals(64, ip.ttl());
        assertEquals(Ipv4Header.PROTOCOL_ICMP, ip.protocol());
        assertEquals(0x615f, ip.headerChecksum());
        assertEquals(Fixtures.LOCALHOST, ip.source());
        assertEquals(Fixtures.LOCALHOST, ip.destination());
        assertEquals(34, ip.payloadOffset());
        assertEquals(0x615f, ip.computeChecksum());
        assertTrue(ip.checksumValid());
    }

    @Test
    void readsTosAndNoDfFromTheKernelsIcmpError()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_PORT_UNREACHABLE);
        final Ipv4Header ip = new Ipv4Header();

        assertTrue(ip.wrapChecked(buffer, 14, buffer.capacity() - 14));
        assertEquals(0xc0, ip.tos());
        assertFalse(ip.dontFragment());
        assertEquals(76, ip.totalLength());
        assertTrue(ip.checksumValid());
    }

    @Test
    void readsFragmentFieldsAndOptions()
    {
        // Reserved flag, MF and fragment offset 0x1234 * 8; IHL 6 with one NOP-padded option word.
        final UnsafeBuffer buffer = Fixtures.buffer(
            "46 00 00 20 ab cd b2 34 01 11 00 00 0a 00 00 01 0a 00 00 02 01 01 01 00 ff ff ff ff");
        final Ipv4Header ip = new Ipv4Header();

        assertTrue(ip.wrapChecked(buffer, 0, buffer.capacity()));
        assertEquals(24, ip.headerLength());
        assertTrue(ip.reservedFlag());
        assertFalse(ip.dontFragment());
        assertTrue(ip.moreFragments());
        assertEquals(0x1234 * 8, ip.fragmentOffset());
        assertTrue(ip.isFragment());
        assertEquals(24, ip.payloadOffset());
        assertFalse(ip.checksumValid());
        ip.updateChecksum();
        assertTrue(ip.checksumValid());
        assertEquals(0, Checksum.compute(buffer, 0, 24));
    }

    @Test
    void writesTheFixtureHeader()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final UnsafeBuffer buffer = Fixtures.filled(1 + 20 + 1);
        final Ipv4Header ip = new Ipv4Header().wrap(buffer, 1, 20)
            .versionAndIhl(5)
            .tos(0)
            .totalLength(84)
            .identification(56135)
            .flagsAndFragmentOffset(true, false, 0)
            .ttl(64)
            .protocol(Ipv4Header.PROTOCOL_ICMP)
            .headerChecksum(0)
            .source(Fixtures.LOCALHOST)
            .destination(Fixtures.LOCALHOST)
            .updateChecksum();

        assertArrayEquals(Fixtures.slice(expected, 14, 20), Fixtures.slice(buffer, 1, 20));
        assertEquals((byte)0xA5, buffer.getByte(0));
        assertEquals((byte)0xA5, buffer.getByte(21));
        assertTrue(ip.checksumValid());
    }

    @Test
    void writesFragmentFlags()
    {
        final UnsafeBuffer buffer = Fixtures.filled(20);
        final Ipv4Header ip = new Ipv4Header().wrap(buffer, 0, 20).flagsAndFragmentOffset(false, true, 1480);

        assertArrayEquals(Fixtures.bytes("20 b9"), Fixtures.slice(buffer, 6, 2));
        assertEquals(1480, ip.fragmentOffset());
        assertTrue(ip.moreFragments());
        assertFalse(ip.reservedFlag());
    }

    @Test
    void checksumIgnoresTheStoredField()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.ICMP_ECHO_REQUEST);
        final Ipv4Header ip = new Ipv4Header().wrap(buffer, 14, 84);
        ip.headerChecksum(0x1234);

        assertEquals(0x615f, ip.computeChecksum());
        assertFalse(ip.checksumValid());
    }

    @Test
    void wrapCheckedEnforcesTheHeaderLength()
    {
        final Ipv4Header ip = new Ipv4Header();
        final UnsafeBuffer ihl4 = Fixtures.buffer("44 00 00 14 00 00 00 00 40 01 00 00 0a 00 00 01 0a 00 00 02");
        final UnsafeBuffer ihl6 = Fixtures.buffer("46 00 00 14 00 00 00 00 40 01 00 00 0a 00 00 01 0a 00 00 02");
        final UnsafeBuffer version6 = Fixtures.buffer("65 00 00 14 00 00 00 00 40 01 00 00 0a 00 00 01 0a 00 00 02");

        assertFalse(ip.wrapChecked(ihl4, 0, 20));
        assertFalse(ip.wrapChecked(ihl6, 0, 20));
        assertTrue(ip.wrapChecked(version6, 0, 20));
        assertEquals(6, ip.version());
        assertFalse(ip.wrapChecked(version6, 0, 19));
        assertFalse(ip.wrapChecked(version6, 1, 20));
    }
}
