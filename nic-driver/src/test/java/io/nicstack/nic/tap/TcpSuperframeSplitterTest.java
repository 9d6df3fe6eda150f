package io.nicstack.nic.tap;

import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** Superframes cut into frames: every header field as tcp_gso_segment sets it, the payload exact, bad input refused. */
class TcpSuperframeSplitterTest
{
    private static final int VNET = VirtioNetHeader.LENGTH; // where TapDevice's frames start in its receive buffer
    private static final int MAX_FRAME = 1514;
    private static final int FIN = 0x01;
    private static final int PSH = 0x08;
    private static final int ACK = 0x10;
    private static final int CWR = 0x80;

    private final TcpSuperframeSplitter splitter = new TcpSuperframeSplitter();

    /** A superframe as the kernel hands it over: valid IPv4 checksum, the pseudo-header sum in the TCP checksum. */
    private static UnsafeBuffer superframe(final SplittableRandom r, final int ipOptions, final int tcpOptions,
        final int payload, final int tcpFlags)
    {
        final int ipLength = 20 + ipOptions;
        final int tcpLength = 20 + tcpOptions;
        final int total = ipLength + tcpLength + payload;
        final UnsafeBuffer b = new UnsafeBuffer(new byte[VNET + 14 + total]);
        for (int i = 0; i < b.capacity(); i++)
        {
            b.putByte(i, (byte)r.nextInt(256));
        }
        final int ip = VNET + 14;
        b.putShort(VNET + 12, (short)0x0800, ByteOrder.BIG_ENDIAN);
        b.putByte(ip, (byte)(0x40 | ipLength / 4));
        b.putShort(ip + 2, (short)total, ByteOrder.BIG_ENDIAN);
        b.putShort(ip + 6, (short)0x4000, ByteOrder.BIG_ENDIAN); // DF, no fragment
        b.putByte(ip + 9, (byte)6);
        b.putShort(ip + 10, (short)0);
        b.putShort(ip + 10, (short)(~Frames.fold(Frames.sum(b, ip, ipLength)) & 0xFFFF), ByteOrder.BIG_ENDIAN);
        final int tcp = ip + ipLength;
        b.putByte(tcp + 12, (byte)(tcpLength / 4 << 4));
        b.putByte(tcp + 13, (byte)tcpFlags);
        b.putShort(tcp + 16, (short)Frames.pseudoHeaderSum(b, VNET), ByteOrder.BIG_ENDIAN);
        return b;
    }

    @Test
    void cutsSuperframesIntoTheFramesTheKernelWouldHaveSent()
    {
        final long seed = System.nanoTime();
        final SplittableRandom r = new SplittableRandom(seed);
        for (int run = 0; run < 300; run++)
        {
            final int ipOptions = r.nextInt(4) == 0 ? 4 * r.nextInt(11) : 0;
            final int tcpOptions = 4 * r.nextInt(11);
            final int headers = 14 + 20 + ipOptions + 20 + tcpOptions;
            final int payload = 1 + r.nextInt(65_535 - headers + 14 - 1);
            final int gso = r.nextBoolean() ? MAX_FRAME - headers : 1 + r.nextInt(MAX_FRAME - headers);
            final int flags = ACK | (r.nextBoolean() ? PSH : 0) | (r.nextBoolean() ? FIN : 0) | (r.nextBoolean() ? CWR : 0);
            final UnsafeBuffer b = superframe(r, ipOptions, tcpOptions, payload, flags);
            final byte[] original = new byte[b.capacity()];
            b.getBytes(0, original);
            final String where = "seed " + seed + " run " + run + " payload " + payload + " gso " + gso + " headers " + headers;

            assertTrue(splitter.start(b, VNET, b.capacity() - VNET, gso, MAX_FRAME), where);
            final int frames = (payload + gso - 1) / gso;
            assertEquals(frames, splitter.frames(), where);
            final UnsafeBuffer orig = new UnsafeBuffer(original);
            final int ipOff = 14;
            final int tcpOff = 14 + 20 + ipOptions;
            for (int i = 0; i < frames; i++)
            {
                assertTrue(splitter.hasNext(), where);
                final int offset = splitter.next();
                final int segment = Math.min(gso, payload - i * gso);
                assertEquals(VNET + i * gso, offset, where);
                assertEquals(headers + segment, splitter.length(), where);
                final UnsafeBuffer f = new UnsafeBuffer(new byte[splitter.length()]);
                b.getBytes(offset, f, 0, f.capacity());
                final String at = where + " frame " + i;

                // Ethernet and every header byte the kernel does not change are the superframe's.
                assertArrayEquals(Arrays.copyOfRange(original, VNET, VNET + 14), bytes(f, 0, 14), at);
                assertEquals(20 + ipOptions + 20 + tcpOptions + segment, f.getShort(ipOff + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF, at);
                assertEquals((orig.getShort(VNET + ipOff + 4, ByteOrder.BIG_ENDIAN) + i) & 0xFFFF,
                    f.getShort(ipOff + 4, ByteOrder.BIG_ENDIAN) & 0xFFFF, at);
                assertEquals(0xFFFF, Frames.fold(Frames.sum(f, ipOff, 20 + ipOptions)), "IPv4 header checksum; " + at);
                assertArrayEquals(bytes(orig, VNET + ipOff + 6, 4), bytes(f, ipOff + 6, 4), at);
                assertArrayEquals(bytes(orig, VNET + ipOff + 12, 8 + ipOptions), bytes(f, ipOff + 12, 8 + ipOptions), at);
                assertEquals(orig.getInt(VNET + tcpOff + 4, ByteOrder.BIG_ENDIAN) + i * gso, f.getInt(tcpOff + 4, ByteOrder.BIG_ENDIAN), at);
                final boolean last = i == frames - 1;
                final int expectedFlags = flags & ~(last ? 0 : FIN | PSH) & ~(i == 0 ? 0 : CWR);
                assertEquals(expectedFlags, f.getByte(tcpOff + 13) & 0xFF, at);
                assertArrayEquals(bytes(orig, VNET + tcpOff, 4), bytes(f, tcpOff, 4), at);
                assertArrayEquals(bytes(orig, VNET + tcpOff + 8, 5), bytes(f, tcpOff + 8, 5), at);
                assertArrayEquals(bytes(orig, VNET + tcpOff + 14, 2), bytes(f, tcpOff + 14, 2), at);
                assertArrayEquals(bytes(orig, VNET + tcpOff + 18, 2 + tcpOptions), bytes(f, tcpOff + 18, 2 + tcpOptions), at);
                // NEEDS_CSUM: the pseudo-header sum of this frame's own length, so completing it gives a valid checksum.
                assertEquals(Frames.pseudoHeaderSum(f, 0), Frames.checksumField(f, 0), at);
                f.putShort(Frames.checksumFieldOffset(f, 0), (short)Frames.fullChecksum(f, 0), ByteOrder.BIG_ENDIAN);
                assertTrue(Frames.checksumValid(f, 0), at);
                assertArrayEquals(bytes(orig, VNET + headers + i * gso, segment), bytes(f, headers, segment), "payload; " + at);
            }
            assertFalse(splitter.hasNext(), where);
        }
    }

    @Test
    void refusesWhatItCannotCut()
    {
        final SplittableRandom r = new SplittableRandom(7);
        final int length = 14 + 20 + 32 + 3000;
        assertTrue(splitter.start(superframe(r, 0, 12, 3000, ACK), VNET, length, 1448, MAX_FRAME), "the good one");

        assertRefused(superframe(r, 0, 12, 3000, ACK), length, 0, "gso_size 0");
        assertRefused(superframe(r, 0, 12, 3000, ACK), length, MAX_FRAME - 66 + 1, "frames longer than the link allows");
        final UnsafeBuffer vlan = superframe(r, 0, 12, 3000, ACK);
        vlan.putShort(VNET + 12, (short)0x8100, ByteOrder.BIG_ENDIAN);
        assertRefused(vlan, length, 1448, "not IPv4");
        final UnsafeBuffer udp = superframe(r, 0, 12, 3000, ACK);
        udp.putByte(VNET + 14 + 9, (byte)17);
        assertRefused(udp, length, 1448, "UDP");
        final UnsafeBuffer fragment = superframe(r, 0, 12, 3000, ACK);
        fragment.putShort(VNET + 14 + 6, (short)0x2000, ByteOrder.BIG_ENDIAN);
        assertRefused(fragment, length, 1448, "a fragment");
        assertRefused(superframe(r, 0, 12, 3000, ACK), length - 1, 1448, "IPv4 total length past the frame");
        assertRefused(superframe(r, 0, 12, 0, ACK), 14 + 20 + 32, 1448, "no payload");
        final UnsafeBuffer badOffset = superframe(r, 0, 12, 3000, ACK);
        badOffset.putByte(VNET + 14 + 20 + 12, (byte)(4 << 4));
        assertRefused(badOffset, length, 1448, "TCP data offset under 20 bytes");
        final UnsafeBuffer ipv6 = superframe(r, 0, 12, 3000, ACK);
        ipv6.putByte(VNET + 14, (byte)0x65);
        assertRefused(ipv6, length, 1448, "IP version 6");
    }

    private void assertRefused(final UnsafeBuffer b, final int length, final int gso, final String what)
    {
        assertFalse(splitter.start(b, VNET, length, gso, MAX_FRAME), what);
        assertFalse(splitter.hasNext(), what);
    }

    /** Random and mutated superframes, each in a buffer of exactly its size: refused or cut, never a read outside. */
    @Test
    void randomBytesAreRefusedOrCutWithinTheirFrame()
    {
        final long seed = System.nanoTime();
        final SplittableRandom r = new SplittableRandom(seed);
        int cut = 0;
        for (int run = 0; run < 20_000; run++)
        {
            final UnsafeBuffer b;
            if (r.nextBoolean())
            {
                b = new UnsafeBuffer(new byte[VNET + r.nextInt(200)]);
                for (int i = 0; i < b.capacity(); i++)
                {
                    b.putByte(i, (byte)r.nextInt(256));
                }
                if (b.capacity() > VNET + 24 && r.nextBoolean())
                {
                    b.putShort(VNET + 12, (short)0x0800, ByteOrder.BIG_ENDIAN);
                    b.putByte(VNET + 14, (byte)(0x40 | r.nextInt(16)));
                    b.putByte(VNET + 14 + 9, (byte)(r.nextBoolean() ? 6 : r.nextInt(256)));
                }
            }
            else
            {
                b = superframe(r, 4 * r.nextInt(3), 4 * r.nextInt(4), 1 + r.nextInt(5000), ACK);
                for (int m = 1 + r.nextInt(4); m > 0; m--)
                {
                    b.putByte(VNET + r.nextInt(Math.min(b.capacity() - VNET, 80)), (byte)r.nextInt(256));
                }
            }
            final int length = b.capacity() - VNET;
            final String where = "seed " + seed + " run " + run;
            try
            {
                if (splitter.start(b, VNET, length, 1 + r.nextInt(1600), MAX_FRAME))
                {
                    cut++;
                    while (splitter.hasNext())
                    {
                        final int offset = splitter.next();
                        assertTrue(offset >= VNET && offset + splitter.length() <= b.capacity(), where);
                        assertTrue(splitter.length() <= MAX_FRAME, where);
                    }
                }
            }
            catch (final RuntimeException e)
            {
                throw new AssertionError(where, e);
            }
        }
        assertTrue(cut > 1000, "mutated superframes that still parse were cut: " + cut + " (seed " + seed + ")");
    }

    private static byte[] bytes(final UnsafeBuffer b, final int offset, final int length)
    {
        final byte[] out = new byte[length];
        b.getBytes(offset, out);
        return out;
    }
}
