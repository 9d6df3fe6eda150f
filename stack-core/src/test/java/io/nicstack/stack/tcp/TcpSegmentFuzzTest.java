package io.nicstack.stack.tcp;

import static io.nicstack.stack.tcp.TcpTestHarness.MS;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.CWR;
import static io.nicstack.stack.wire.TcpHeader.ECE;
import static io.nicstack.stack.wire.TcpHeader.FIN;
import static io.nicstack.stack.wire.TcpHeader.PSH;
import static io.nicstack.stack.wire.TcpHeader.RST;
import static io.nicstack.stack.wire.TcpHeader.SYN;
import static io.nicstack.stack.wire.TcpHeader.URG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Seq;
import io.nicstack.stack.wire.TcpRepr;

/**
 * Hostile segments that the state machine really sees. {@code MutatedFramesTest} mutates whole frames, so its TCP
 * segments almost all die at the checksum; here every segment has valid checksums and carries random options
 * (well-formed, malformed, unknown, truncated), control bits, sequence and acknowledgment numbers, windows, urgent
 * pointers and payloads, into an established connection (passive or active open, with or without window scaling,
 * SACK and timestamps). ICMP errors with valid checksums quoting the connection's own segments come in between, and
 * time moves and timers run every 16 frames. Each frame is handed to the stack in a buffer of exactly its length, so
 * any read past it throws.
 *
 * <p>After every frame nothing has escaped ({@code INTERNAL_ERRORS}), every frame ended in one terminal counter, and the
 * connection's sequence variables hold RFC 9293 §3.3.1's order; every segment the stack sends is well formed
 * ({@link TcpTestHarness#recv()}), carries only data the application wrote, at its offset, and acknowledges only what
 * was received; every byte the application reads is the one the peer sent at that sequence number. The seed is in
 * every failure message; {@code -Dnicstack.fuzz.seed} repeats a run, {@code -Dnicstack.fuzz.frames} (divided by 10)
 * sizes it.
 */
class TcpSegmentFuzzTest
{
    private static final int FRAMES = Integer.getInteger("nicstack.fuzz.frames", 1_000_000) / 10;
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    /** Frames into one connection before a fresh stack and connection take over (sooner when it ends). */
    private static final int FRAMES_PER_CONNECTION = 3000;
    private static final int[] OPTION_KINDS = {TcpRepr.OPTION_EOL, TcpRepr.OPTION_NOP, TcpRepr.OPTION_MSS,
        TcpRepr.OPTION_WINDOW_SCALE, TcpRepr.OPTION_SACK_PERMITTED, TcpRepr.OPTION_SACK, TcpRepr.OPTION_TIMESTAMPS, 30, 254, 255};
    private static final int[] NEXT_HOP_MTUS = {0, 1, 67, 68, 296, 551, 552, 576, 1006, 1280, 1492, 1500, 9000, 65535};

    @Test
    void segmentsWithValidChecksumsAndRandomContentKeepEveryConnectionConsistent()
    {
        final String replay = "seed " + SEED + " (-Dnicstack.fuzz.seed=" + SEED + " repeats it)";
        final SplittableRandom random = new SplittableRandom(SEED);
        final long[] totals = new long[StackCounter.values().length];
        long bytesRead = 0;
        int connections = 0;
        FuzzedConnection target = null;
        for (int frame = 0; frame < FRAMES; frame++)
        {
            try
            {
                if (target == null || target.framesLeft == 0 || target.ended())
                {
                    if (target != null)
                    {
                        bytesRead += target.read;
                        target.addCounters(totals);
                    }
                    target = new FuzzedConnection(random);
                    connections++;
                }
                target.receive(random.nextInt(5) == 0 ? target.icmpError(random) : target.segment(random));
                if ((frame & 15) == 15)
                {
                    target.h.advance(random.nextInt(300) * MS);
                    target.checkSent();
                    target.application(random);
                    target.checkInvariants();
                }
            }
            catch (final Throwable e)
            {
                throw new AssertionError(replay + ", frame " + frame + " of " + FRAMES + ", connection " + connections + ": "
                    + e.getMessage() + "\n" + (target == null ? "" : target.h.conn.describe()), e);
            }
        }
        bytesRead += target.read;
        target.addCounters(totals);

        // The frames reached what they are for: options parsed and refused, errors believed, data taken and read.
        final String summary = " in " + FRAMES + " frames, " + connections + " connections, " + replay;
        assertTrue(totals[StackCounter.TCP_BAD_OPTIONS.ordinal()] > FRAMES / 100, "illegal option lengths" + summary);
        assertTrue(totals[StackCounter.TCP_ICMP_ERRORS.ordinal()] > FRAMES / 200, "icmp errors acted on" + summary);
        assertTrue(totals[StackCounter.TCP_PATH_MTU_REDUCTIONS.ordinal()] > 0, "path mtu reductions" + summary);
        assertTrue(totals[StackCounter.TCP_CHALLENGE_ACKS.ordinal()] > 0, "challenge acks" + summary);
        assertTrue(totals[StackCounter.TCP_PAWS_DROPS.ordinal()] > 0, "paws drops" + summary);
        assertTrue(totals[StackCounter.TCP_RETRANSMITTED_SEGMENTS.ordinal()] > 0, "retransmissions" + summary);
        // A floor, not an expectation: runs read 87,000 to 177,000 bytes (seed 80196545380746 the fewest seen).
        assertTrue(bytesRead > FRAMES / 4, "bytes read by the application" + summary);
    }

    /** The byte the peer sends at stream offset {@code offset} (sequence number IRS + 1 + offset). */
    private static byte peerByte(final int offset)
    {
        return (byte)(offset * 31 + 7);
    }

    /** The byte the application writes at stream offset {@code offset}. */
    private static byte ourByte(final long offset)
    {
        return (byte)(offset * 13 + 5);
    }

    /** One stack with one established connection under fuzz, and what its application did to it. */
    private static final class FuzzedConnection
    {
        final TcpTestHarness h;
        final TcpConnection c;
        final byte[] work = new byte[2048];
        int framesLeft = FRAMES_PER_CONNECTION;
        /** Bytes the application wrote (all taken: it writes no more than {@code writable()}) and read. */
        long written;
        long read;
        boolean closed;
        int advertisedEdge;

        FuzzedConnection(final SplittableRandom random)
        {
            h = new TcpTestHarness(1500, false, new long[] {random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong()});
            if (random.nextInt(4) != 0)
            {
                h.peerOffersAll();
            }
            c = random.nextBoolean() ? h.passiveOpen() : h.activeOpen();
            advertisedEdge = c.rcvAdvertisedEdge;
            write(20_000);
            checkSent();
        }

        boolean ended()
        {
            return c.state() == TcpState.CLOSED || c.state() == TcpState.TIME_WAIT;
        }

        /** {@code frame} in a buffer of exactly its length, straight to the stack, as a device hands it over. */
        void receive(final byte[] frame)
        {
            final UnsafeBuffer exact = new UnsafeBuffer(work, 0, frame.length);
            exact.putBytes(0, frame);
            h.stack.onFrame(exact, 0, frame.length);
            framesLeft--;
            checkInvariants();
        }

        /** A segment of this connection with random content and valid checksums. */
        byte[] segment(final SplittableRandom random)
        {
            final TcpTestHarness.Seg s = h.in().noTimestamps();
            s.rawOptions(options(random));
            final int[] flags = {ACK, ACK, ACK | PSH, ACK | FIN, ACK | URG, ACK | ECE | CWR, SYN, SYN | ACK, RST, RST | ACK,
                FIN, 0, random.nextInt(256)};
            s.flags(flags[random.nextInt(flags.length)]);
            // At RCV.NXT (or overlapping what came before it), in and around the window, or anywhere.
            final int where = random.nextInt(8);
            s.seq(where < 3 ? c.rcvNxt - random.nextInt(100) : where < 7 ? c.rcvNxt - 3000 + random.nextInt(70_000) : random.nextInt());
            // Within SND.UNA..SND.MAX, around it, or anywhere.
            final int inFlight = Seq.diff(c.sndMax, c.sndUna);
            final int what = random.nextInt(8);
            s.ack(what < 4 ? c.sndUna + random.nextInt(inFlight + 1) : what < 7 ? c.sndUna - 3000 + random.nextInt(inFlight + 6000)
                : random.nextInt());
            s.r.window = random.nextInt(8) == 0 ? 0 : random.nextInt(65536);
            s.r.urgentPointer = random.nextInt(4) == 0 ? random.nextInt(65536) : 0;
            final byte[] payload = new byte[random.nextInt(4) == 0 ? random.nextInt(1400) : random.nextInt(64)];
            // A SYN takes a sequence number before its data (RFC 9293 §3.4).
            final int first = Seq.diff(s.r.seq + (s.r.hasFlags(SYN) ? 1 : 0), h.irs + 1);
            for (int i = 0; i < payload.length; i++)
            {
                payload[i] = peerByte(first + i);
            }
            s.payload(payload);
            return h.frame(s);
        }

        /**
         * Up to 40 bytes of options in any order: well-formed ones (timestamps echoing our last TSval, so that PAWS
         * lets the segment through; SACK blocks around what is in flight), malformed lengths (0, 1, past the header),
         * unknown kinds, and whatever follows an EOL.
         */
        private int[] options(final SplittableRandom random)
        {
            final int[] raw = new int[4 * random.nextInt(11)];
            // In a third of the segments any option may be malformed; the others' options parse to the end.
            final boolean hostile = random.nextInt(3) == 0;
            int at = 0;
            while (at < raw.length)
            {
                final int kind = OPTION_KINDS[random.nextInt(OPTION_KINDS.length)];
                final int blocks = 1 + random.nextInt(4);
                if (!hostile && at + wellFormedLength(kind, blocks) > raw.length)
                {
                    raw[at++] = TcpRepr.OPTION_NOP;
                    continue;
                }
                switch (hostile && random.nextInt(3) == 0 ? -1 : kind)
                {
                    case TcpRepr.OPTION_EOL:
                    case TcpRepr.OPTION_NOP:
                        raw[at++] = kind;
                        break;
                    case TcpRepr.OPTION_MSS:
                        at = put(raw, at, kind, 4, random.nextInt(65536), 2);
                        break;
                    case TcpRepr.OPTION_WINDOW_SCALE:
                        at = put(raw, at, kind, 3, random.nextInt(20), 1);
                        break;
                    case TcpRepr.OPTION_SACK_PERMITTED:
                        at = put(raw, at, kind, 2, 0, 0);
                        break;
                    case TcpRepr.OPTION_TIMESTAMPS:
                        h.peerTsVal += random.nextInt(3);
                        // Now and then an old TSval, for PAWS (RFC 7323 §5) to refuse.
                        at = put(raw, at, kind, 10, random.nextInt(8) == 0 ? h.peerTsVal - random.nextInt(1000) : h.peerTsVal, 4);
                        at = put(raw, at, -1, 0, random.nextInt(4) == 0 ? random.nextInt() : h.lastStackTsVal, 4);
                        break;
                    case TcpRepr.OPTION_SACK:
                    {
                        at = put(raw, at, kind, 2 + 8 * blocks, 0, 0);
                        for (int b = 0; b < blocks; b++)
                        {
                            final int left = c.sndUna - 2000 + random.nextInt(Seq.diff(c.sndMax, c.sndUna) + 4000);
                            at = put(raw, at, -1, 0, left, 4);
                            at = put(raw, at, -1, 0, left - 500 + random.nextInt(4000), 4);
                        }
                        break;
                    }
                    case -1:
                    {
                        // Any kind with a length that may be 0, 1, or run past the header; garbage inside.
                        final int length = random.nextBoolean() ? random.nextInt(4) : random.nextInt(256);
                        raw[at++] = random.nextInt(256);
                        if (at < raw.length)
                        {
                            raw[at++] = length;
                        }
                        for (int i = 2; i < length && at < raw.length; i++)
                        {
                            raw[at++] = random.nextInt(256);
                        }
                        break;
                    }
                    default:
                        // An unknown kind with a right length: skipped (RFC 9293 §3.1, MUST-68).
                        at = put(raw, at, kind, 4, random.nextInt(65536), 2);
                        break;
                }
            }
            return raw;
        }

        private static int wellFormedLength(final int kind, final int sackBlocks)
        {
            switch (kind)
            {
                case TcpRepr.OPTION_EOL:
                case TcpRepr.OPTION_NOP:
                    return 1;
                case TcpRepr.OPTION_WINDOW_SCALE:
                    return 3;
                case TcpRepr.OPTION_SACK_PERMITTED:
                    return 2;
                case TcpRepr.OPTION_TIMESTAMPS:
                    return 10;
                case TcpRepr.OPTION_SACK:
                    return 2 + 8 * sackBlocks;
                default:
                    return 4;
            }
        }

        /**
         * Write an option header (unless {@code kind} is negative) and then {@code valueBytes} bytes of {@code value},
         * big-endian, as far as the option area goes: the last option may be cut short.
         */
        private static int put(final int[] raw, final int from, final int kind, final int length, final int value, final int valueBytes)
        {
            int at = from;
            if (kind >= 0)
            {
                at = putByte(raw, at, kind);
                at = putByte(raw, at, length);
            }
            for (int i = valueBytes - 1; i >= 0; i--)
            {
                at = putByte(raw, at, value >>> (8 * i));
            }
            return at;
        }

        private static int putByte(final int[] raw, final int at, final int value)
        {
            if (at < raw.length)
            {
                raw[at] = value & 0xFF;
            }
            return at + 1;
        }

        /** An ICMP error from the peer, valid checksum, quoting one of our segments: mostly one in flight (believed). */
        byte[] icmpError(final SplittableRandom random)
        {
            // Any other type too, but an echo request: its reply is not a TCP segment.
            final int other = random.nextInt(255);
            final int[] types = {IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.TYPE_DESTINATION_UNREACHABLE,
                IcmpHeader.TYPE_SOURCE_QUENCH, IcmpHeader.TYPE_TIME_EXCEEDED, IcmpHeader.TYPE_PARAMETER_PROBLEM,
                other < IcmpHeader.TYPE_ECHO_REQUEST ? other : other + 1};
            final int type = types[random.nextInt(types.length)];
            final int code = random.nextInt(3) == 0 ? IcmpHeader.CODE_FRAGMENTATION_NEEDED : random.nextInt(16);
            final int mtu = random.nextInt(4) == 0 ? random.nextInt(65536) : NEXT_HOP_MTUS[random.nextInt(NEXT_HOP_MTUS.length)];
            final int seq = random.nextInt(8) == 0 ? c.iss + random.nextInt(65536)
                : c.sndUna + random.nextInt(Seq.diff(c.sndMax, c.sndUna) + 1);
            return h.icmpError(type, code, mtu, h.ourSegment(seq));
        }

        /** What an application does between polls: reads (and checks) what arrived, writes more, now and then closes. */
        void application(final SplittableRandom random)
        {
            if (ended())
            {
                return;
            }
            if (random.nextInt(4) == 0)
            {
                final byte[] data = h.read();
                for (int i = 0; i < data.length; i++)
                {
                    assertEquals(peerByte((int)(read + i)), data[i], "byte read at stream offset " + (read + i));
                }
                read += data.length;
            }
            if (!closed && random.nextInt(8) == 0)
            {
                write(random.nextInt(8000));
            }
            if (!closed && random.nextInt(500) == 0)
            {
                closed = true;
                c.close();
                h.poll();
            }
            checkSent();
        }

        private void write(final int length)
        {
            final byte[] data = new byte[Math.min(length, c.writable())];
            for (int i = 0; i < data.length; i++)
            {
                data[i] = ourByte(written + i);
            }
            assertEquals(data.length, h.write(data), "writable() bytes are taken");
            written += data.length;
        }

        /**
         * Every segment sent since the last look is well formed ({@link TcpTestHarness#recv()} checks checksums and
         * option encoding), holds only data written, each byte at its offset, and acknowledges nothing not received.
         * A reset may take its sequence number from the acknowledgment of the segment it answers (RFC 9293 §3.5.2), so
         * only its form is checked.
         */
        void checkSent()
        {
            for (final TcpTestHarness.Seg s : h.recv())
            {
                if (s.r.hasFlags(RST))
                {
                    continue;
                }
                assertTrue(Seq.le(s.seqEnd(), c.sndMax), "sent past SND.MAX: " + h.describe(s));
                final long offset = Seq.diff(s.r.seq, c.iss + 1) & 0xFFFF_FFFFL;
                if (s.payload.length > 0)
                {
                    assertTrue(offset + s.payload.length <= written, "data never written: " + h.describe(s));
                    for (int i = 0; i < s.payload.length; i++)
                    {
                        assertEquals(ourByte(offset + i), s.payload[i], "byte sent at stream offset " + (offset + i));
                    }
                }
                if (s.r.hasFlags(ACK))
                {
                    assertTrue(Seq.le(s.r.ack, c.rcvNxt), "acknowledges past RCV.NXT: " + h.describe(s));
                }
            }
        }

        /** Cheap checks after every frame: counters, and the order of the connection's sequence variables. */
        void checkInvariants()
        {
            assertEquals(0, h.counter(StackCounter.INTERNAL_ERRORS), "no exception in the stack\n" + h.counters);
            assertEquals(0, h.counters.unaccountedFrames(), "every frame ends in one terminal counter\n" + h.counters);
            // RFC 9293 §3.3.1: SND.UNA <= SND.NXT, and nothing sent beyond what the application wrote (and its FIN).
            assertTrue(Seq.le(c.iss + 1, c.sndUna) && Seq.le(c.sndUna, c.sndNxt) && Seq.le(c.sndNxt, c.sndMax),
                "ISS < SND.UNA <= SND.NXT <= SND.MAX");
            assertTrue(Seq.diff(c.sndMax, c.iss + 1) <= written + (closed ? 1 : 0), "SND.MAX past what was written");
            // RCV.NXT moves by each byte taken in order, and by the FIN.
            assertEquals(c.bytesReceived() + (c.peerFinReceived ? 1 : 0), Seq.diff(c.rcvNxt, h.irs + 1) & 0xFFFF_FFFFL,
                "RCV.NXT against the bytes received");
            // RFC 9293 §3.8.6.2.2: the right edge of the window offered never moves left.
            assertTrue(Seq.le(advertisedEdge, c.rcvAdvertisedEdge), "the advertised window shrank");
            advertisedEdge = c.rcvAdvertisedEdge;
            assertTrue(c.sndWnd >= 0 && c.sndWnd <= 65535L << c.sndWscale, "SND.WND " + c.sndWnd);
        }

        void addCounters(final long[] totals)
        {
            for (final StackCounter counter : StackCounter.values())
            {
                totals[counter.ordinal()] += h.counter(counter);
            }
        }
    }
}

