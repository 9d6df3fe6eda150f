package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class TcpReprTest
{
    private static final int LOCALHOST = Fixtures.LOCALHOST;
    private static final int OPTIONS_AT = TcpHeader.HEADER_LENGTH;

    private int lastStatus;

    @Test
    void parsesTheLinuxSyn()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.TCP_SYN);
        final TcpRepr repr = new TcpRepr();

        assertEquals(TcpRepr.OK, repr.parse(buffer, 34, 40));
        assertEquals(59678, repr.sourcePort);
        assertEquals(47001, repr.destinationPort);
        assertEquals((int)4202832634L, repr.seq);
        assertEquals(0, repr.ack);
        assertEquals(TcpHeader.SYN, repr.flags);
        assertTrue(repr.hasFlags(TcpHeader.SYN));
        assertEquals(65495, repr.window);
        assertEquals(0, repr.urgentPointer);
        assertEquals(65495, repr.mss);
        assertEquals(10, repr.windowScale);
        assertTrue(repr.sackPermitted);
        assertTrue(repr.timestampsPresent);
        assertEquals((int)2519564278L, repr.tsVal);
        assertEquals(0, repr.tsEcr);
        assertEquals(0, repr.sackBlockCount);
        assertEquals(74, repr.payloadOffset);
        assertEquals(0, repr.payloadLength);
    }

    @Test
    void parsesADataSegment()
    {
        final UnsafeBuffer buffer = Fixtures.buffer(Fixtures.TCP_DATA);
        final TcpRepr repr = new TcpRepr();

        assertEquals(TcpRepr.OK, repr.parse(buffer, 34, buffer.capacity() - 34));
        assertEquals(TcpHeader.PSH | TcpHeader.ACK, repr.flags);
        assertEquals((int)2621951660L, repr.ack);
        assertEquals(-1, repr.mss);
        assertEquals(-1, repr.windowScale);
        assertFalse(repr.sackPermitted);
        assertTrue(repr.timestampsPresent);
        assertEquals((int)2519564278L, repr.tsVal);
        assertEquals((int)3126699940L, repr.tsEcr);
        assertEquals(66, repr.payloadOffset);
        assertEquals(16, repr.payloadLength);
    }

    @Test
    void emitsTheLinuxSynByteForByte()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.TCP_SYN);
        final TcpRepr repr = new TcpRepr();
        repr.sourcePort = 59678;
        repr.destinationPort = 47001;
        repr.seq = (int)4202832634L;
        repr.flags = TcpHeader.SYN;
        repr.window = 65495;
        repr.mss = 65495;
        repr.sackPermitted = true;
        repr.timestampsPresent = true;
        repr.tsVal = (int)2519564278L;
        repr.windowScale = 10;

        assertEquals(40, repr.headerLength());
        assertEquals(40, repr.bufferLength());
        final UnsafeBuffer buffer = Fixtures.filled(2 + 40 + 2);
        repr.emit(buffer, 2);

        assertEquals(0, buffer.getShort(2 + TcpHeader.CHECKSUM_OFFSET));
        new TcpHeader().wrap(buffer, 2, 40).updateChecksum(LOCALHOST, LOCALHOST);
        assertArrayEquals(Fixtures.slice(expected, 34, 40), Fixtures.slice(buffer, 2, 40));
        assertEquals((byte)0xA5, buffer.getByte(1));
        assertEquals((byte)0xA5, buffer.getByte(42));
    }

    @Test
    void emitsTheLinuxDataSegmentHeader()
    {
        final UnsafeBuffer expected = Fixtures.buffer(Fixtures.TCP_DATA);
        final TcpRepr parsed = new TcpRepr();
        assertEquals(TcpRepr.OK, parsed.parse(expected, 34, expected.capacity() - 34));
        final TcpRepr repr = new TcpRepr().set(parsed);

        final UnsafeBuffer buffer = Fixtures.filled(repr.bufferLength() + 1);
        repr.emit(buffer, 0);
        buffer.putBytes(repr.headerLength(), expected, parsed.payloadOffset, parsed.payloadLength);
        new TcpHeader().wrap(buffer, 0, repr.bufferLength()).updateChecksum(LOCALHOST, LOCALHOST);

        assertEquals(32, repr.headerLength());
        assertArrayEquals(Fixtures.slice(expected, 34, 48), Fixtures.slice(buffer, 0, 48));
        assertEquals((byte)0xA5, buffer.getByte(48));
    }

    @Test
    void emitsSackPermittedWithoutTimestampsAndSackBlocks()
    {
        final TcpRepr repr = new TcpRepr();
        repr.flags = TcpHeader.SYN;
        repr.mss = 1460;
        repr.sackPermitted = true;
        repr.windowScale = 7;
        final UnsafeBuffer buffer = Fixtures.filled(repr.headerLength());
        repr.emit(buffer, 0);

        assertEquals(32, repr.headerLength());
        assertArrayEquals(Fixtures.bytes("02 04 05 b4 01 03 03 07 01 01 04 02"), Fixtures.slice(buffer, 20, 12));

        repr.reset();
        repr.flags = TcpHeader.ACK;
        repr.addSackBlock(1000, 2000);
        repr.addSackBlock(0xFFFF_FF00, 0x100);
        final UnsafeBuffer sack = Fixtures.filled(repr.headerLength());
        repr.emit(sack, 0);

        assertEquals(40, repr.headerLength());
        assertArrayEquals(Fixtures.bytes("01 01 05 12 00 00 03 e8 00 00 07 d0 ff ff ff 00 00 00 01 00"),
            Fixtures.slice(sack, 20, 20));
        assertEquals((byte)0xA0, sack.getByte(12));
    }

    @Test
    void dropsSackBlocksThatDoNotFit()
    {
        final TcpRepr repr = new TcpRepr();
        for (int i = 0; i < 4; i++)
        {
            assertTrue(repr.addSackBlock(i * 100, i * 100 + 50));
        }
        assertFalse(repr.addSackBlock(1, 2));
        assertEquals(20 + 4 + 32, repr.headerLength());

        repr.timestampsPresent = true;
        assertEquals(20 + 12 + 4 + 24, repr.headerLength());

        repr.mss = 1460;
        repr.windowScale = 7;
        repr.sackPermitted = true;
        assertEquals(20 + 20 + 4 + 8 * 2, repr.headerLength());

        final UnsafeBuffer buffer = Fixtures.filled(repr.headerLength());
        repr.emit(buffer, 0);
        final TcpRepr parsed = new TcpRepr();
        assertEquals(TcpRepr.OK, parsed.parse(buffer, 0, buffer.capacity()));
        assertEquals(2, parsed.sackBlockCount);
        assertEquals(0, parsed.sackLeft[0]);
        assertEquals(150, parsed.sackRight[1]);
        assertEquals(60, repr.headerLength());
    }

    @Test
    void parsesUnalignedOptionsWithoutNops()
    {
        // WS 7, MSS 1460, SACK-permitted, TS, SACK with one block, then EOL padding.
        final TcpRepr repr = parseOptions(
            "03 03 07 02 04 05 b4 04 02 08 0a 00 00 00 01 00 00 00 02 05 0a 00 00 00 10 00 00 00 20 00 00 00");

        assertEquals(7, repr.windowScale);
        assertEquals(1460, repr.mss);
        assertTrue(repr.sackPermitted);
        assertTrue(repr.timestampsPresent);
        assertEquals(1, repr.tsVal);
        assertEquals(2, repr.tsEcr);
        assertEquals(1, repr.sackBlockCount);
        assertEquals(0x10, repr.sackLeft[0]);
        assertEquals(0x20, repr.sackRight[0]);
    }

    @Test
    void parsesFourSackBlocks()
    {
        final TcpRepr repr = parseOptions(
            "01 01 05 22 00 00 00 01 00 00 00 02 00 00 00 03 00 00 00 04 " +
            "00 00 00 05 00 00 00 06 00 00 00 07 00 00 00 08");

        assertEquals(4, repr.sackBlockCount);
        for (int i = 0; i < 4; i++)
        {
            assertEquals(2 * i + 1, repr.sackLeft[i]);
            assertEquals(2 * i + 2, repr.sackRight[i]);
        }
    }

    @Test
    void skipsUnknownKindsByTheirLength()
    {
        // MPTCP (30) length 6, experimental (254) length 4, then MSS.
        final TcpRepr repr = parseOptions("1e 06 ff ff ff ff fe 04 02 04 02 04 05 78 00 00");

        assertEquals(TcpRepr.OK, lastStatus);
        assertEquals(1400, repr.mss);
    }

    @Test
    void endOfListStopsParsing()
    {
        final TcpRepr repr = parseOptions("02 04 05 b4 00 03 00 07");

        assertEquals(TcpRepr.OK, lastStatus);
        assertEquals(1460, repr.mss);
        assertEquals(-1, repr.windowScale);
    }

    @Test
    void ignoresKnownKindsWithTheWrongLength()
    {
        // MSS len 3, WS len 4, SACK-permitted len 3, TS len 8, SACK len 12; then a good WS.
        final TcpRepr repr = parseOptions(
            "02 03 05 03 04 07 00 04 03 00 08 08 00 00 00 01 00 00 05 0c 00 00 00 01 00 00 00 02 00 00 03 03 05 01 01 01");

        assertEquals(TcpRepr.OK, lastStatus);
        assertEquals(-1, repr.mss);
        assertFalse(repr.sackPermitted);
        assertFalse(repr.timestampsPresent);
        assertEquals(0, repr.sackBlockCount);
        assertEquals(5, repr.windowScale);
    }

    /** RFC 7323 section 2.3: a shift above 14 MUST be used as 14. */
    @Test
    void clampsTheWindowScale()
    {
        assertEquals(14, parseOptions("01 03 03 0f").windowScale);
        assertEquals(14, parseOptions("01 03 03 ff").windowScale);
        assertEquals(14, parseOptions("01 03 03 0e").windowScale);
        assertEquals(0, parseOptions("01 03 03 00").windowScale);
    }

    /** RFC 9293 section 3.2: an illegal option length must not crash; earlier options stay parsed. */
    @Test
    void reportsIllegalOptionLengths()
    {
        TcpRepr repr = parseOptions("02 04 05 b4 08 00 00 00");
        assertEquals(TcpRepr.BAD_OPTION, lastStatus);
        assertEquals(1460, repr.mss);
        assertEquals(28, repr.payloadOffset);
        assertEquals(0, repr.payloadLength);

        repr = parseOptions("02 04 05 b4 1e 01 00 00");
        assertEquals(TcpRepr.BAD_OPTION, lastStatus);

        repr = parseOptions("01 01 01 01 03 03 07 08 0a 00 00 00");
        assertEquals(TcpRepr.BAD_OPTION, lastStatus);
        assertEquals(7, repr.windowScale);
        assertFalse(repr.timestampsPresent);

        repr = parseOptions("01 01 01 02");
        assertEquals(TcpRepr.BAD_OPTION, lastStatus);
        assertEquals(-1, repr.mss);
    }

    @Test
    void reportsTruncationAndBadDataOffsets()
    {
        final TcpRepr repr = new TcpRepr();
        final UnsafeBuffer syn = Fixtures.buffer(Fixtures.TCP_SYN);

        assertEquals(TcpRepr.TRUNCATED, repr.parse(syn, 34, 19));
        assertEquals(TcpRepr.TRUNCATED, repr.parse(syn, 34, 41));
        assertEquals(TcpRepr.TRUNCATED, repr.parse(syn, -1, 20));
        assertEquals(TcpRepr.BAD_DATA_OFFSET, repr.parse(syn, 34, 39));
        syn.putByte(34 + 12, (byte)0x40);
        assertEquals(TcpRepr.BAD_DATA_OFFSET, repr.parse(syn, 34, 40));
        syn.putByte(34 + 12, (byte)0x50);
        assertEquals(TcpRepr.OK, repr.parse(syn, 34, 40));
        assertEquals(-1, repr.mss);
        assertEquals(20, repr.payloadLength);
        assertEquals("BAD_OPTION", TcpRepr.statusName(TcpRepr.BAD_OPTION));
    }

    @Test
    void parseResetsEveryField()
    {
        final TcpRepr repr = new TcpRepr();
        assertEquals(TcpRepr.OK, repr.parse(Fixtures.buffer(Fixtures.TCP_SYN), 34, 40));
        assertEquals(TcpRepr.OK, repr.parse(Fixtures.buffer(Fixtures.TCP_DATA), 34, 48));

        assertEquals(-1, repr.mss);
        assertEquals(-1, repr.windowScale);
        assertFalse(repr.sackPermitted);
        assertEquals(TcpRepr.TRUNCATED, repr.parse(Fixtures.buffer(Fixtures.TCP_DATA), 34, 10));
        assertFalse(repr.timestampsPresent);
        assertEquals(0, repr.seq);
    }

    @Test
    void emitThenParseRoundTrips()
    {
        final long seed = 0x9293L;
        final Random random = new Random(seed);
        final TcpRepr repr = new TcpRepr();
        final TcpRepr parsed = new TcpRepr();
        for (int i = 0; i < 10_000; i++)
        {
            repr.reset();
            repr.sourcePort = random.nextInt(65536);
            repr.destinationPort = random.nextInt(65536);
            repr.seq = random.nextInt();
            repr.ack = random.nextInt();
            repr.flags = random.nextInt(256);
            repr.window = random.nextInt(65536);
            repr.urgentPointer = random.nextInt(65536);
            repr.mss = random.nextBoolean() ? random.nextInt(65536) : -1;
            repr.windowScale = random.nextBoolean() ? random.nextInt(15) : -1;
            repr.sackPermitted = random.nextBoolean();
            repr.timestampsPresent = random.nextBoolean();
            repr.tsVal = repr.timestampsPresent ? random.nextInt() : 0;
            repr.tsEcr = repr.timestampsPresent ? random.nextInt() : 0;
            final int blocks = random.nextInt(5);
            for (int b = 0; b < blocks; b++)
            {
                repr.addSackBlock(random.nextInt(), random.nextInt());
            }
            repr.payloadLength = random.nextInt(4);

            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[repr.bufferLength()]);
            repr.emit(buffer, 0);
            final String context = "seed " + seed + " iteration " + i + " " + repr;
            assertEquals(TcpRepr.OK, parsed.parse(buffer, 0, buffer.capacity()), context);
            assertEquals(0, repr.headerLength() % 4, context);
            assertTrue(repr.headerLength() <= TcpHeader.MAX_HEADER_LENGTH, context);

            final int keptBlocks = parsed.sackBlockCount;
            assertTrue(keptBlocks <= repr.sackBlockCount, context);
            repr.sackBlockCount = keptBlocks;
            parsed.payloadOffset = repr.payloadOffset;
            assertEquals(repr.toString(), parsed.toString(), context);
            for (int b = 0; b < keptBlocks; b++)
            {
                assertEquals(repr.sackLeft[b], parsed.sackLeft[b], context);
                assertEquals(repr.sackRight[b], parsed.sackRight[b], context);
            }
            assertEquals(repr.urgentPointer, parsed.urgentPointer, context);
        }
    }

    @Test
    void timestampsReadTheSameInTheAlignedLayoutAndAnyOther()
    {
        // NOP, NOP, TS: the layout parse reads straight (Linux's and ours on every established segment).
        final TcpRepr aligned = parseOptions("0101080a 11223344 55667788");
        assertEquals(TcpRepr.OK, lastStatus);
        assertTrue(aligned.timestampsPresent);
        assertEquals(0x11223344, aligned.tsVal);
        assertEquals(0x55667788, aligned.tsEcr);
        // The same option first, then padding: the general loop.
        final TcpRepr trailing = parseOptions("080a1122 33445566 77880101");
        assertEquals(TcpRepr.OK, lastStatus);
        assertEquals(aligned.toString(), trailing.toString());
        // The aligned word followed by a SACK block: a longer header, so every option is parsed.
        final TcpRepr withSack = parseOptions("0101080a 11223344 55667788 0101050a 00000010 00000020");
        assertEquals(TcpRepr.OK, lastStatus);
        assertEquals(0x11223344, withSack.tsVal);
        assertEquals(1, withSack.sackBlockCount);
        assertEquals(0x10, withSack.sackLeft[0]);
        assertEquals(0x20, withSack.sackRight[0]);
        // The aligned word with a bad timestamp length is not taken for timestamps.
        final TcpRepr wrongLength = parseOptions("0101080b 11223344 55667788");
        assertFalse(wrongLength.timestampsPresent);
    }

    @Test
    void aReusedReprKeepsNothingOfTheSegmentBefore()
    {
        final TcpRepr repr = new TcpRepr();
        final UnsafeBuffer syn = Fixtures.buffer(Fixtures.TCP_SYN);
        assertEquals(TcpRepr.OK, repr.parse(syn, 34, 40));
        repr.addSackBlock(1, 2);

        final UnsafeBuffer data = Fixtures.buffer(Fixtures.TCP_DATA);
        assertEquals(TcpRepr.OK, repr.parse(data, 34, data.capacity() - 34));
        final TcpRepr fresh = new TcpRepr();
        fresh.parse(data, 34, data.capacity() - 34);
        assertEquals(fresh.toString(), repr.toString());
        assertEquals(-1, repr.mss);
        assertEquals(-1, repr.windowScale);
        assertFalse(repr.sackPermitted);
        assertEquals(0, repr.sackBlockCount);

        // A bad data offset leaves no payload bounds of the segment before.
        data.putByte(34 + TcpHeader.DATA_OFFSET_OFFSET, (byte)0x40);
        assertEquals(TcpRepr.BAD_DATA_OFFSET, repr.parse(data, 34, data.capacity() - 34));
        assertEquals(0, repr.payloadOffset);
        assertEquals(0, repr.payloadLength);
        assertFalse(repr.timestampsPresent);
    }

    /** Parse a segment with the given option bytes (a multiple of 4) and no payload. */
    private TcpRepr parseOptions(final String optionsHex)
    {
        final byte[] options = Fixtures.bytes(optionsHex);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[OPTIONS_AT + options.length]);
        buffer.putByte(TcpHeader.DATA_OFFSET_OFFSET, (byte)(((OPTIONS_AT + options.length) / 4) << 4));
        buffer.putBytes(OPTIONS_AT, options);
        final TcpRepr repr = new TcpRepr();
        lastStatus = repr.parse(buffer, 0, buffer.capacity());
        return repr;
    }
}
