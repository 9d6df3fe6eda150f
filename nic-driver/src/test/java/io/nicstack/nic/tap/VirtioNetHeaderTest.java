package io.nicstack.nic.tap;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The virtio-net header codec and the choice of {@code csum_start}/{@code csum_offset}, without a kernel. */
class VirtioNetHeaderTest
{
    private static final byte[] DST_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x01 };
    private static final byte[] SRC_MAC = { 0x02, 0x00, 0x5e, 0x12, 0x00, 0x02 };
    private static final int SRC_IP = 0xC6120002; // 198.18.0.2
    private static final int DST_IP = 0xC6120001; // 198.18.0.1

    private final VirtioNetHeader header = new VirtioNetHeader();

    @Test
    void readsEveryFieldLittleEndianAndUnsigned()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[]{
            (byte)0xEE, 0x03, (byte)0x81, 0x34, 0x12, (byte)0xFF, (byte)0xFE, 0x22, 0x00, 0x10, (byte)0x80, (byte)0xEE });

        header.wrap(buffer, 1);

        assertEquals(0x03, header.flags());
        assertEquals(0x81, header.gsoType());
        assertEquals(0x1234, header.headerLength());
        assertEquals(0xFEFF, header.gsoSize());
        assertEquals(34, header.checksumStart());
        assertEquals(0x8010, header.checksumOffset());
    }

    @Test
    void writesEveryFieldLittleEndianAndNothingElse()
    {
        final UnsafeBuffer buffer = filled(14);

        assertSame(header, header.wrap(buffer, 2)
            .flags(1).gsoType(0x81).headerLength(0x1234).gsoSize(0xFEFF).checksumStart(34).checksumOffset(6));

        assertArrayEquals(new byte[]{
            (byte)0xA5, (byte)0xA5,
            0x01, (byte)0x81, 0x34, 0x12, (byte)0xFF, (byte)0xFE, 0x22, 0x00, 0x06, 0x00,
            (byte)0xA5, (byte)0xA5 }, buffer.byteArray());
    }

    @Test
    void clearZeroesExactlyTheHeader()
    {
        final UnsafeBuffer buffer = filled(12);

        header.wrap(buffer, 1).clear();

        assertArrayEquals(new byte[]{ (byte)0xA5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte)0xA5 }, buffer.byteArray());
    }

    @Test
    void checksumIsTrustedWhenTheKernelNeedsOrVerifiedIt()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[VirtioNetHeader.LENGTH]);
        header.wrap(buffer, 0);

        assertFalse(header.flags(0).checksumTrusted());
        assertTrue(header.flags(VirtioNetHeader.F_NEEDS_CSUM).checksumTrusted());
        assertTrue(header.flags(VirtioNetHeader.F_DATA_VALID).checksumTrusted());
        assertTrue(header.flags(VirtioNetHeader.F_NEEDS_CSUM | VirtioNetHeader.F_DATA_VALID).checksumTrusted());
        assertFalse(header.flags(4).checksumTrusted(), "VIRTIO_NET_HDR_F_RSC_INFO says nothing about checksums");
    }

    @Test
    void udpChecksumStartsAfterTheIpHeaderWithTheFieldAtSix()
    {
        final UnsafeBuffer frame = udpFrame(18);
        final UnsafeBuffer buffer = filled(VirtioNetHeader.LENGTH);

        header.wrap(buffer, 0).needsChecksum(frame, 0, 14 + 20 + 8 + 18);

        // flags NEEDS_CSUM, gso NONE, hdr_len 42 (through the UDP header), gso_size 0, csum_start 34, csum_offset 6
        assertArrayEquals(new byte[]{ 1, 0, 42, 0, 0, 0, 34, 0, 6, 0 }, buffer.byteArray());
    }

    @Test
    void tcpChecksumFollowsIpOptionsWithTheFieldAtSixteen()
    {
        // IHL 6: one word of options (a NOP-padded record route would do; the content does not matter here).
        final UnsafeBuffer frame = new UnsafeBuffer(new byte[14 + 24 + 20 + 5]);
        frame.putShort(12, (short)0x0800, ByteOrder.BIG_ENDIAN);
        frame.putByte(14, (byte)0x46);
        frame.putShort(16, (short)(24 + 20 + 5), ByteOrder.BIG_ENDIAN);
        frame.putByte(14 + 9, (byte)Frames.PROTOCOL_TCP);

        header.wrap(filled(VirtioNetHeader.LENGTH), 0).needsChecksum(frame, 0, frame.capacity());

        assertEquals(VirtioNetHeader.F_NEEDS_CSUM, header.flags());
        assertEquals(VirtioNetHeader.GSO_NONE, header.gsoType());
        assertEquals(38, header.checksumStart());
        assertEquals(16, header.checksumOffset());
        assertEquals(58, header.headerLength());
        assertEquals(0, header.gsoSize());
    }

    @Test
    void framePaddingAfterTheDatagramAndAFrameOffsetAreAllowed()
    {
        final UnsafeBuffer frame = new UnsafeBuffer(new byte[100]);
        final int length = Frames.udp(new UnsafeBuffer(frame, 5, 90), DST_MAC, SRC_MAC, SRC_IP, DST_IP, 1, 2, new byte[1]);

        header.wrap(filled(VirtioNetHeader.LENGTH), 0).needsChecksum(frame, 5, 60); // Ethernet minimum, zero padded

        assertEquals(43, length);
        assertEquals(34, header.checksumStart());
        assertEquals(6, header.checksumOffset());
    }

    @Test
    void framesThatCannotBeOffloadedAreRejectedAndTheHeaderIsLeftAlone()
    {
        rejects("a frame of 33 bytes is too short for Ethernet and IPv4 headers", 33, (f) -> {});
        rejects("EtherType 0x806 is not IPv4", 60, (f) -> f.putShort(12, (short)0x0806, ByteOrder.BIG_ENDIAN));
        rejects("EtherType 0x8100 is not IPv4", 60, (f) -> f.putShort(12, (short)0x8100, ByteOrder.BIG_ENDIAN));
        rejects("EtherType 0x86dd is not IPv4", 60, (f) -> f.putShort(12, (short)0x86DD, ByteOrder.BIG_ENDIAN));
        rejects("IP version 6 header length 20", 60, (f) -> f.putByte(14, (byte)0x65));
        rejects("IP version 4 header length 16", 60, (f) -> f.putByte(14, (byte)0x44));
        rejects("IPv4 total length 47 (header 20) in a frame of 60 bytes", 60,
            (f) -> f.putShort(16, (short)47, ByteOrder.BIG_ENDIAN));
        rejects("IPv4 total length 19 (header 20) in a frame of 60 bytes", 60,
            (f) -> f.putShort(16, (short)19, ByteOrder.BIG_ENDIAN));
        rejects("IPv4 total length 46 (header 20) in a frame of 57 bytes", 57, (f) -> {});
        rejects("an IPv4 fragment", 60, (f) -> f.putShort(20, (short)0x2000, ByteOrder.BIG_ENDIAN)); // MF
        rejects("an IPv4 fragment", 60, (f) -> f.putShort(20, (short)0x4001, ByteOrder.BIG_ENDIAN)); // DF, offset 8
        rejects("IP protocol 1 is neither TCP nor UDP", 60, (f) -> f.putByte(23, (byte)1));
        rejects("UDP datagram of 7 bytes is shorter than its header", 60,
            (f) -> f.putShort(16, (short)27, ByteOrder.BIG_ENDIAN));
        rejects("TCP datagram of 19 bytes is shorter than its header", 60, (f) ->
        {
            f.putByte(23, (byte)Frames.PROTOCOL_TCP);
            f.putShort(16, (short)39, ByteOrder.BIG_ENDIAN);
        });
    }

    @Test
    void rejectionBoundariesAreExact()
    {
        // The shortest datagrams with a whole transport header qualify.
        final UnsafeBuffer udp = udpFrame(0);
        header.wrap(filled(VirtioNetHeader.LENGTH), 0).needsChecksum(udp, 0, 42);
        assertEquals(6, header.checksumOffset());

        final UnsafeBuffer tcp = udpFrame(12);
        tcp.putByte(23, (byte)Frames.PROTOCOL_TCP);
        header.needsChecksum(tcp, 0, 54);
        assertEquals(16, header.checksumOffset());
        assertEquals(54, header.headerLength());
    }

    @Test
    void randomFramesAreEitherRejectedOrGetAChecksumFieldInsideTheDatagram()
    {
        final SplittableRandom random = new SplittableRandom(20_251_122);
        int accepted = 0;
        for (int i = 0; i < 100_000; i++)
        {
            // A valid UDP or TCP frame with a few random bytes of its first 40 changed, in a buffer of exactly its length.
            final int length = 34 + random.nextInt(40);
            final UnsafeBuffer frame = new UnsafeBuffer(new byte[length]);
            if (length >= 42)
            {
                Frames.udp(frame, DST_MAC, SRC_MAC, SRC_IP, DST_IP, 1, 2, new byte[length - 42]);
            }
            if (random.nextBoolean())
            {
                frame.putByte(23, (byte)Frames.PROTOCOL_TCP);
            }
            for (int flips = random.nextInt(3); flips > 0; flips--)
            {
                frame.putByte(random.nextInt(Math.min(length, 40)), (byte)random.nextInt(256));
            }

            header.wrap(filled(VirtioNetHeader.LENGTH), 0);
            try
            {
                header.needsChecksum(frame, 0, length);
            }
            catch (final IllegalArgumentException ex)
            {
                assertTrue(ex.getMessage().startsWith("cannot offload the checksum: "), ex.getMessage());
                continue;
            }
            accepted++;
            final int datagramEnd = 14 + (frame.getShort(16, ByteOrder.BIG_ENDIAN) & 0xFFFF);
            assertTrue(header.checksumStart() + header.checksumOffset() + 2 <= datagramEnd, header.toString());
            assertTrue(header.headerLength() <= datagramEnd, header.toString());
        }
        assertTrue(accepted > 10_000, accepted + " accepted");
    }

    private void rejects(final String why, final int length, final Consumer<UnsafeBuffer> damage)
    {
        final UnsafeBuffer frame = udpFrame(18); // a 60-byte frame: 14 + 20 + 8 + 18
        damage.accept(frame);
        final UnsafeBuffer buffer = filled(VirtioNetHeader.LENGTH);
        header.wrap(buffer, 0);

        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> header.needsChecksum(frame, 0, length), why);

        assertEquals("cannot offload the checksum: " + why, ex.getMessage());
        assertArrayEquals(filled(VirtioNetHeader.LENGTH).byteArray(), buffer.byteArray(), "header untouched: " + why);
    }

    private static UnsafeBuffer udpFrame(final int payloadLength)
    {
        final UnsafeBuffer frame = new UnsafeBuffer(new byte[14 + 20 + 8 + payloadLength]);
        Frames.udp(frame, DST_MAC, SRC_MAC, SRC_IP, DST_IP, 40000, 7, new byte[payloadLength]);
        return frame;
    }

    private static UnsafeBuffer filled(final int length)
    {
        final byte[] bytes = new byte[length];
        Arrays.fill(bytes, (byte)0xA5);
        return new UnsafeBuffer(bytes);
    }
}
