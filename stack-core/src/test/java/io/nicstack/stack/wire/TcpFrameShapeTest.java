package io.nicstack.stack.wire;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link TcpFrameShape#decode} accepts exactly the frames its contract names: each condition broken alone is refused,
 * and random frames in buffers of exactly their length never make it read out of bounds (assertions are on in tests,
 * so every raw read is checked) and are accepted only when the header flyweights agree on every condition.
 */
class TcpFrameShapeTest
{
    private static final long MAC = 0x0A00_0000_0002L;
    private static final int ADDRESS = 0xC612_0002; // 198.18.0.2
    private static final int PEER = 0xC612_0001;
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());

    /** Ethernet to {@link #MAC}, IPv4 from {@link #PEER} to {@link #ADDRESS} with DF, TTL 64, a 20-byte TCP header. */
    private static byte[] frame(final int tcpPayload, final Consumer<Ipv4Header> ip)
    {
        final int total = 20 + 20 + tcpPayload;
        final UnsafeBuffer b = new UnsafeBuffer(new byte[14 + total]);
        new EthernetFrame().wrap(b, 0, b.capacity()).destination(MAC).source(0x0A00_0000_0001L)
            .etherType(EthernetFrame.ETHERTYPE_IPV4);
        final Ipv4Header h = new Ipv4Header().wrap(b, 14, total).versionAndIhl(5).tos(0).totalLength(total)
            .identification(7).flagsAndFragmentOffset(true, false, 0).ttl(64).protocol(Ipv4Header.PROTOCOL_TCP)
            .source(PEER).destination(ADDRESS);
        ip.accept(h);
        h.updateChecksum();
        b.putInt(34, 40_000 << 16 | 80, java.nio.ByteOrder.BIG_ENDIAN);
        b.putByte(46, (byte)0x50);
        return b.byteArray();
    }

    private static boolean decode(final byte[] frame)
    {
        return new TcpFrameShape().decode(new UnsafeBuffer(frame), 0, frame.length, MAC, ADDRESS);
    }

    @Test
    void theCommonShapeIsAcceptedAndDescribed()
    {
        final byte[] bytes = frame(100, ip -> { });
        final byte[] padded = Arrays.copyOf(bytes, bytes.length + 6);
        final TcpFrameShape f = new TcpFrameShape();
        assertTrue(f.decode(new UnsafeBuffer(padded), 0, padded.length, MAC, ADDRESS));
        assertEquals(PEER, f.source);
        assertEquals(40_000 << 16 | 80, f.ports);
        assertEquals(34, f.tcpOffset);
        assertEquals(120, f.tcpLength, "the IPv4 total length counts, not the Ethernet padding");
        assertTrue(decode(frame(0, ip -> ip.flagsAndFragmentOffset(false, false, 0))), "DF clear");
        assertTrue(decode(frame(0, ip -> ip.ttl(1))), "TTL 1");
    }

    @Test
    void eachConditionBrokenAloneIsRefused()
    {
        assertFalse(decode(Arrays.copyOf(frame(0, ip -> { }), 53)), "shorter than the headers");
        final byte[] otherMac = frame(10, ip -> { });
        otherMac[5] ^= 1;
        assertFalse(decode(otherMac), "another destination MAC");
        final byte[] broadcast = frame(10, ip -> { });
        Arrays.fill(broadcast, 0, 6, (byte)0xFF);
        assertFalse(decode(broadcast), "broadcast");
        final byte[] arp = frame(10, ip -> { });
        arp[13] = 0x06;
        assertFalse(decode(arp), "EtherType ARP");
        assertFalse(decode(frame(10, ip -> ip.versionAndIhl(6))), "IPv4 options");
        final byte[] v6 = frame(10, ip -> { });
        v6[14] = 0x65;
        assertFalse(decode(v6), "version 6");
        assertFalse(decode(frame(10, ip -> ip.totalLength(39))), "total length under 40");
        assertFalse(decode(frame(10, ip -> ip.totalLength(51))), "total length beyond the frame");
        assertFalse(decode(frame(10, ip -> ip.flagsAndFragmentOffset(false, true, 0))), "more fragments");
        assertFalse(decode(frame(16, ip -> ip.flagsAndFragmentOffset(false, false, 8))), "a later fragment");
        final byte[] reserved = frame(10, ip -> { });
        reserved[20] |= (byte)0x80;
        new Ipv4Header().wrap(new UnsafeBuffer(reserved), 14, 50).updateChecksum();
        assertFalse(decode(reserved), "the reserved flag");
        assertTrue(decode(frame(10, ip -> ip.ttl(0))), "TTL 0 is taken (RFC 1122 §3.2.1.7)");
        assertFalse(decode(frame(10, ip -> ip.protocol(Ipv4Header.PROTOCOL_UDP))), "UDP");
        assertFalse(decode(frame(10, ip -> ip.destination(ADDRESS + 1))), "another destination address");
        final byte[] badChecksum = frame(10, ip -> { });
        badChecksum[24] ^= 1;
        assertFalse(decode(badChecksum), "a bad header checksum");
    }

    /** Random mutations in exactly-sized buffers: no read out of bounds, and acceptance only when the flyweights agree. */
    @Test
    void randomFramesAreAcceptedOnlyWhenTheFlyweightsAgree()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        final String seed = " (seed " + SEED + ", -Dnicstack.fuzz.seed=" + SEED + " repeats it)";
        final TcpFrameShape f = new TcpFrameShape();
        int accepted = 0;
        for (int i = 0; i < 200_000; i++)
        {
            byte[] bytes = frame(random.nextInt(64), ip -> { });
            switch (random.nextInt(4))
            {
                case 0 -> bytes = Arrays.copyOf(bytes, random.nextInt(bytes.length + 8));
                case 1 ->
                {
                    final int at = random.nextInt(Math.min(bytes.length, 40));
                    bytes[at] = (byte)(random.nextBoolean() ? bytes[at] + random.nextInt(-2, 3) : random.nextInt());
                    if (random.nextBoolean() && (bytes[14] & 0x0F) * 4 >= 20 && 14 + (bytes[14] & 0x0F) * 4 <= bytes.length)
                    {
                        new Ipv4Header().wrap(new UnsafeBuffer(bytes), 14, (bytes[14] & 0x0F) * 4).updateChecksum();
                    }
                }
                case 2 -> random.nextBytes(bytes);
                default ->
                {
                }
            }
            final UnsafeBuffer exact = new UnsafeBuffer(bytes);
            if (!f.decode(exact, 0, bytes.length, MAC, ADDRESS))
            {
                continue;
            }
            accepted++;
            final EthernetFrame eth = new EthernetFrame();
            assertTrue(eth.wrapInput(exact, 0, bytes.length) && eth.inputDestination() == MAC
                && eth.inputEtherType() == EthernetFrame.ETHERTYPE_IPV4, "Ethernet" + seed);
            final Ipv4Header ip = new Ipv4Header().wrap(exact, 14, bytes.length - 14);
            assertTrue(ip.version() == 4 && ip.headerLength() == 20 && ip.checksumValid() && ip.totalLength() >= 40
                && ip.totalLength() <= bytes.length - 14 && !ip.isFragment() && !ip.reservedFlag()
                && ip.protocol() == Ipv4Header.PROTOCOL_TCP && ip.destination() == ADDRESS, "IPv4" + seed);
            assertEquals(ip.source(), f.source, seed);
            assertEquals(ip.totalLength() - 20, f.tcpLength, seed);
        }
        assertTrue(accepted > 10_000, "only " + accepted + " accepted: the fuzz hardly reaches acceptance" + seed);
    }
}
