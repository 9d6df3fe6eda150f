package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * Mutates the captured fixtures (bit flips, truncation, extension, random lengths, random option
 * bytes) and runs every checked wrap, getter, checksum and {@link TcpRepr#parse} over them. Each
 * frame sits in a buffer of exactly its length, so any out-of-bounds read throws from Agrona's
 * bounds checks. Re-run a failure with {@code -Dnicstack.wire.fuzzSeed=<seed>}.
 */
class WireFuzzTest
{
    private static final int ITERATIONS = 200_000;
    private static final long DEFAULT_SEED = 0x5EED_0793L;

    private static final byte[][] FIXTURES =
    {
        Fixtures.bytes(Fixtures.ICMP_ECHO_REQUEST),
        Fixtures.bytes(Fixtures.ICMP_PORT_UNREACHABLE),
        Fixtures.bytes(Fixtures.TCP_SYN),
        Fixtures.bytes(Fixtures.TCP_SYN_ACK),
        Fixtures.bytes(Fixtures.TCP_DATA),
        Fixtures.bytes(Fixtures.UDP_DATAGRAM),
        Fixtures.bytes(Fixtures.ARP_REQUEST),
    };

    private static final int[] OPTION_KINDS = {0, 1, 2, 3, 4, 5, 8, 30, 254};

    private final EthernetFrame ethernet = new EthernetFrame();
    private final ArpPacket arp = new ArpPacket();
    private final Ipv4Header ipv4 = new Ipv4Header();
    private final Ipv4Fixed fixed = new Ipv4Fixed();
    private final IcmpHeader icmp = new IcmpHeader();
    private final UdpHeader udp = new UdpHeader();
    private final TcpHeader tcp = new TcpHeader();
    private final TcpRepr repr = new TcpRepr();
    private final TcpRepr reparsed = new TcpRepr();
    private long sink;

    @Test
    void agronaBoundsChecksAreOn()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4]);
        assertThrows(IndexOutOfBoundsException.class, () -> buffer.getInt(1));
    }

    @Test
    void mutatedFixturesNeverReadOutOfBounds()
    {
        final long seed = Long.getLong("nicstack.wire.fuzzSeed", DEFAULT_SEED);
        final Random random = new Random(seed);
        for (int i = 0; i < ITERATIONS; i++)
        {
            final byte[] frame = mutate(random, FIXTURES[random.nextInt(FIXTURES.length)]);
            final UnsafeBuffer buffer = new UnsafeBuffer(frame);
            try
            {
                exercise(buffer, random);
            }
            catch (final Throwable t)
            {
                throw new AssertionError(
                    "fuzz seed " + seed + " iteration " + i + " frame " + hex(frame) +
                    " (re-run with -Dnicstack.wire.fuzzSeed=" + seed + ")", t);
            }
        }
        assertTrue(sink != 42);
    }

    private void exercise(final UnsafeBuffer buffer, final Random random)
    {
        final int capacity = buffer.capacity();

        if (ethernet.wrapChecked(buffer, 0, capacity))
        {
            sink += ethernet.destination() + ethernet.source() + ethernet.etherType() + ethernet.length();
            final int l3Offset = ethernet.payloadOffset();
            final int l3Length = ethernet.payloadLength();
            assertEquals(capacity, l3Offset + l3Length);

            if (arp.wrapChecked(buffer, l3Offset, l3Length))
            {
                readArp();
            }
            if (ipv4.wrapChecked(buffer, l3Offset, l3Length))
            {
                readIpv4();
                // As a receiver would: trim link padding by the total length when it is sane.
                final int headerLength = ipv4.headerLength();
                final int totalLength = ipv4.totalLength();
                final int l4Length = totalLength >= headerLength && totalLength <= ipv4.length() ?
                    totalLength - headerLength : ipv4.length() - headerLength;
                exerciseTransport(buffer, ipv4.payloadOffset(), l4Length, ipv4.source(), ipv4.destination());
            }
        }

        // Random regions, including negative and huge ones: wrapChecked must refuse what does not fit.
        final int offset = randomIndex(random, capacity);
        final int length = randomIndex(random, capacity);
        if (ethernet.wrapChecked(buffer, offset, length))
        {
            sink += ethernet.destination() + ethernet.source() + ethernet.etherType();
        }
        if (arp.wrapChecked(buffer, offset, length))
        {
            readArp();
        }
        if (ipv4.wrapChecked(buffer, offset, length))
        {
            readIpv4();
        }
        else
        {
            // Whatever wrapChecked refuses for lack of 20 bytes inside the buffer, decode refuses too.
            assertEquals(Bounds.regionFits(buffer, offset, length) && length >= Ipv4Header.MIN_HEADER_LENGTH,
                fixed.decode(buffer, offset, length));
        }
        exerciseTransport(buffer, offset, length, random.nextInt(), random.nextInt());

        final int checksumOffset = random.nextInt(capacity + 1);
        final int checksumLength = random.nextInt(capacity - checksumOffset + 1);
        final byte[] copy = new byte[checksumLength];
        buffer.getBytes(checksumOffset, copy);
        assertEquals(ChecksumTest.naive(copy, 0, checksumLength), Checksum.compute(buffer, checksumOffset, checksumLength));
    }

    private void exerciseTransport(
        final DirectBuffer buffer, final int offset, final int length, final int sourceIp, final int destinationIp)
    {
        if (icmp.wrapChecked(buffer, offset, length))
        {
            sink += icmp.type() + icmp.code() + icmp.checksum() + icmp.identifier() + icmp.sequenceNumber() +
                icmp.restOfHeader() + icmp.dataOffset() + icmp.dataLength() + icmp.computeChecksum() +
                (icmp.checksumValid() ? 1 : 0);
        }

        if (udp.wrapChecked(buffer, offset, length))
        {
            sink += udp.sourcePort() + udp.destinationPort() + udp.datagramLength() + udp.checksum() +
                udp.payloadOffset() + udp.payloadLength() + udp.computeChecksum(sourceIp, destinationIp) +
                (udp.checksumValid(sourceIp, destinationIp) ? 1 : 0);
        }

        final boolean tcpOk = tcp.wrapChecked(buffer, offset, length);
        if (tcpOk)
        {
            sink += tcp.sourcePort() + tcp.destinationPort() + tcp.sequenceNumber() + tcp.acknowledgmentNumber() +
                tcp.reserved() + tcp.flags() + tcp.window() + tcp.checksum() + tcp.urgentPointer() +
                tcp.optionsOffset() + tcp.computeChecksum(sourceIp, destinationIp) +
                (tcp.checksumValid(sourceIp, destinationIp) ? 1 : 0);
            assertTrue(tcp.optionsLength() >= 0 && tcp.optionsLength() <= 40);
            assertTrue(tcp.payloadLength() >= 0);
            assertEquals(offset + length, tcp.payloadOffset() + tcp.payloadLength());
        }

        final int status = repr.parse(buffer, offset, length);
        assertTrue(status >= TcpRepr.OK && status <= TcpRepr.BAD_OPTION);
        assertEquals(tcpOk, status == TcpRepr.OK || status == TcpRepr.BAD_OPTION);
        if (tcpOk)
        {
            assertEquals(tcp.payloadOffset(), repr.payloadOffset);
            assertEquals(tcp.payloadLength(), repr.payloadLength);
            assertEquals(tcp.sequenceNumber(), repr.seq);
            // Every fixed field as the flyweight's getters read it (parse reads them in fused words).
            assertEquals(tcp.sourcePort(), repr.sourcePort);
            assertEquals(tcp.destinationPort(), repr.destinationPort);
            assertEquals(tcp.acknowledgmentNumber(), repr.ack);
            assertEquals(tcp.flags() & 0xFF, repr.flags);
            assertEquals(tcp.window(), repr.window);
            assertEquals(tcp.urgentPointer(), repr.urgentPointer);
            assertTrue(repr.mss >= -1 && repr.mss <= 0xFFFF);
            assertTrue(repr.windowScale >= -1 && repr.windowScale <= TcpRepr.MAX_WINDOW_SCALE);
            assertTrue(repr.sackBlockCount >= 0 && repr.sackBlockCount <= TcpRepr.MAX_SACK_BLOCKS);

            // Whatever was parsed emits into exactly headerLength() bytes and parses back.
            final UnsafeBuffer out = new UnsafeBuffer(new byte[repr.headerLength()]);
            repr.emit(out, 0);
            assertEquals(TcpRepr.OK, reparsed.parse(out, 0, out.capacity()));
            assertEquals(repr.mss, reparsed.mss);
            assertEquals(repr.windowScale, reparsed.windowScale);
            assertEquals(repr.timestampsPresent, reparsed.timestampsPresent);
            assertEquals(repr.sackPermitted, reparsed.sackPermitted);
        }
    }

    private void readArp()
    {
        sink += arp.hardwareType() + arp.protocolType() + arp.hardwareLength() + arp.protocolLength() +
            arp.operation() + arp.senderHardwareAddress() + arp.senderProtocolAddress() +
            arp.targetHardwareAddress() + arp.targetProtocolAddress() + (arp.isEthernetIpv4() ? 1 : 0);
    }

    private void readIpv4()
    {
        sink += ipv4.version() + ipv4.ihl() + ipv4.tos() + ipv4.totalLength() + ipv4.identification() +
            (ipv4.dontFragment() ? 1 : 0) + (ipv4.moreFragments() ? 1 : 0) + (ipv4.reservedFlag() ? 1 : 0) +
            (ipv4.isFragment() ? 1 : 0) + ipv4.fragmentOffset() + ipv4.ttl() + ipv4.protocol() +
            ipv4.headerChecksum() + ipv4.source() + ipv4.destination() + ipv4.computeChecksum() +
            (ipv4.checksumValid() ? 1 : 0);
        assertTrue(ipv4.headerLength() >= 20 && ipv4.headerLength() <= ipv4.length());
        assertTrue(ipv4.payloadOffset() <= ipv4.offset() + ipv4.length());

        // The receive path's one-pass decode reads the same fields and the same checksum verdict.
        assertTrue(fixed.decode(ipv4.buffer(), ipv4.offset(), ipv4.length()));
        assertEquals(ipv4.version(), fixed.version);
        assertEquals(ipv4.headerLength(), fixed.headerLength);
        assertEquals(ipv4.totalLength(), fixed.totalLength);
        assertEquals(ipv4.ttl(), fixed.ttl);
        assertEquals(ipv4.protocol(), fixed.protocol);
        assertEquals(ipv4.source(), fixed.source);
        assertEquals(ipv4.destination(), fixed.destination);
        assertEquals(ipv4.reservedFlag(), fixed.reservedFlag());
        assertEquals(ipv4.isFragment(), fixed.isFragment());
        if (fixed.headerLength == Ipv4Header.MIN_HEADER_LENGTH)
        {
            assertEquals(ipv4.checksumValid(), fixed.checksumValidWithoutOptions());
        }
    }

    private static int randomIndex(final Random random, final int capacity)
    {
        switch (random.nextInt(8))
        {
            case 0:
                return random.nextInt();
            case 1:
                return -random.nextInt(4);
            case 2:
                return Integer.MAX_VALUE - random.nextInt(4);
            default:
                return random.nextInt(capacity + 4);
        }
    }

    private static byte[] mutate(final Random random, final byte[] fixture)
    {
        byte[] frame = fixture.clone();
        final int mutations = 1 + random.nextInt(3);
        for (int m = 0; m < mutations; m++)
        {
            switch (random.nextInt(7))
            {
                case 0:
                {
                    final int flips = 1 + random.nextInt(8);
                    for (int f = 0; f < flips && frame.length > 0; f++)
                    {
                        frame[random.nextInt(frame.length)] ^= (byte)(1 << random.nextInt(8));
                    }
                    break;
                }

                case 1:
                    frame = Arrays.copyOf(frame, random.nextInt(frame.length + 1));
                    break;

                case 2:
                {
                    final int oldLength = frame.length;
                    frame = Arrays.copyOf(frame, oldLength + 1 + random.nextInt(64));
                    for (int j = oldLength; j < frame.length; j++)
                    {
                        frame[j] = (byte)random.nextInt();
                    }
                    break;
                }

                case 3:
                    // Random IHL / data offset nibbles and length fields.
                    poke(frame, 14, random.nextInt(256));
                    poke(frame, 16, random.nextInt(256));
                    poke(frame, 17, random.nextInt(256));
                    poke(frame, 14 + 20 + 12, random.nextInt(256));
                    poke(frame, 14 + 20 + 4, random.nextInt(256));
                    poke(frame, 14 + 20 + 5, random.nextInt(256));
                    break;

                case 4:
                    // Random option bytes drawn from meaningful kinds and edge lengths.
                    for (int j = 14 + 20 + 20; j < frame.length; j++)
                    {
                        frame[j] = (byte)(random.nextInt(3) == 0 ?
                            OPTION_KINDS[random.nextInt(OPTION_KINDS.length)] : random.nextInt(12));
                    }
                    break;

                case 5:
                    // Shift the whole frame so the headers land at odd offsets.
                    final int shift = 1 + random.nextInt(7);
                    final byte[] shifted = new byte[frame.length + shift];
                    System.arraycopy(frame, 0, shifted, shift, frame.length);
                    frame = shifted;
                    break;

                default:
                    if (frame.length > 0)
                    {
                        frame[random.nextInt(frame.length)] = (byte)random.nextInt();
                    }
                    break;
            }
        }
        return frame;
    }

    private static void poke(final byte[] frame, final int index, final int value)
    {
        if (index < frame.length)
        {
            frame[index] = (byte)value;
        }
    }

    private static String hex(final byte[] bytes)
    {
        final StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (final byte b : bytes)
        {
            sb.append(Character.forDigit((b >>> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return sb.toString();
    }

    @Test
    void checkedWrapsRefuseEmptyBuffers()
    {
        final UnsafeBuffer empty = new UnsafeBuffer(new byte[0]);

        assertFalse(ethernet.wrapChecked(empty, 0, 0));
        assertFalse(arp.wrapChecked(empty, 0, 0));
        assertFalse(ipv4.wrapChecked(empty, 0, 0));
        assertFalse(icmp.wrapChecked(empty, 0, 0));
        assertFalse(udp.wrapChecked(empty, 0, 0));
        assertFalse(tcp.wrapChecked(empty, 0, 0));
        assertEquals(TcpRepr.TRUNCATED, repr.parse(empty, 0, 0));
    }
}
