package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpState;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.TcpRepr;

import static io.nicstack.jmh.BenchFrames.*;
import static io.nicstack.jmh.TcpBenchPeer.*;

/**
 * The TCP sender's ACK path: one ACK from the peer per operation, acknowledging the next 1448
 * bytes, on an ESTABLISHED connection whose send buffer the application keeps full.
 *
 * <p>Setup opens the connection as {@link TcpReceiveBenchmark} does (the peer is a Linux-like client,
 * the stack the server), fills the 256 KiB send buffer, and ACKs segment by segment until slow start
 * is over and the sender is limited by the peer's window: the peer advertises 512 × 2^7 = 65536
 * bytes, i.e. 45 full segments in flight. From then on every ACK of 1448 bytes moves the window's
 * right edge by 1448 bytes and lets exactly one new full-sized segment out; setup checks this
 * (one 1514-byte data segment per ACK, contiguous sequence numbers, the bytes written, cwnd steady).
 *
 * <p>{@code ack}: one operation is
 * <ol>
 * <li>the peer's side: the preloaded 66-byte ACK's acknowledgment number advances by 1448 and its
 *     TSval by one, checksum updated incrementally (measured alone by {@code patchFrame});</li>
 * <li>one {@link NetStack#poll(long)} with that ACK as the whole burst: demux, IPv4 and TCP
 *     validation, PAWS, acceptability, RFC 5961 ACK range check, send buffer release, RTT sample from
 *     the echoed timestamp, RTO and congestion control update (CUBIC, not growing: the sender is
 *     receiver-window limited), window update, TS.Recent; after the burst, output sends the one
 *     segment now allowed: 1448 bytes read from the send ring into TCP's scratch buffer, header with
 *     timestamps, TCP checksum over 1480 bytes, IPv4 header and copy into the device's frame;</li>
 * <li>the application's {@link TcpConnection#write} of 1448 bytes into the freed space (a copy
 *     into the send ring, then an output pass that finds the window closed).</li>
 * </ol>
 * So one operation is ACK in, one full-sized segment out and one 1448-byte write: the steady state
 * of a bulk sender per ACK (Linux receivers ACK every second segment; this peer ACKs every segment,
 * so the per-ACK fixed costs are counted twice as often as with a Linux peer).
 *
 * <p>{@code baselineCopy} copies 1448 bytes between two direct buffers, from offset {@value #BASELINE_SOURCE_AT} of
 * its source, where a full-sized segment's payload sits in its frame: the same alignment as
 * {@code TcpReceiveBenchmark.baselineCopy}'s source (a source offset in another class, such as the odd one the stream
 * left before, can take a different copy loop and time). There are at least three copies of the payload in
 * {@code ack} (write into the ring, ring to scratch, scratch to frame).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class TcpAckBenchmark
{
    /**
     * false: checksums in software, as over the memory wire; true: the device verifies received checksums and
     * completes transmitted ones (a NIC's offload, or the tap with virtio-net headers), as the daemon runs on a tap.
     */
    @Param({"false", "true"})
    public boolean checksumOffload;

    /** The peer's window field: × 2^7 = 65536 bytes, 45 full segments (and 376 bytes SWS avoidance never sends). */
    private static final int PEER_WINDOW = 512;
    private static final int SEGMENTS_IN_FLIGHT = (PEER_WINDOW << PEER_WINDOW_SCALE) / SEGMENT_PAYLOAD;
    /** ACKs in setup before the steady state is checked (slow start from 10 segments ends within ~50). */
    private static final int WARM_ACKS = 512;
    private static final int CHECKED_ACKS = 512;
    /** The stream's bytes are {@code offset % PERIOD}, so any segment's payload can be checked. */
    private static final int PERIOD = 251;
    /** {@code baselineCopy}'s source offset: {@link TcpBenchPeer#PAYLOAD_AT}, as in {@code TcpReceiveBenchmark.baselineCopy}. */
    private static final int BASELINE_SOURCE_AT = PAYLOAD_AT;

    private LoopbackSinkDevice device;
    private NetStack stack;
    private TcpBenchPeer peer;
    private TcpConnection connection;
    private Cursor cursor;
    private Cursor patchCursor;
    private UnsafeBuffer source;
    private UnsafeBuffer copyTarget;
    private int sourceIndex;
    private long written;
    private long segmentsOutAtStart;
    private long acksAtStart;

    @Setup(Level.Trial)
    public void setUp()
    {
        peer = TcpBenchPeer.onNewStack(checksumOffload, PEER_WINDOW, null);
        device = peer.device;
        stack = peer.stack;
        connection = peer.connection;

        source = new UnsafeBuffer(ByteBuffer.allocateDirect(PERIOD + 64 * 1024));
        for (int i = 0; i < source.capacity(); i++)
        {
            source.putByte(i, (byte)(i % PERIOD));
        }
        copyTarget = new UnsafeBuffer(ByteBuffer.allocateDirect(SEGMENT_PAYLOAD));

        final byte[] frame = peer.ackFrame(PEER_WINDOW);
        patchCursor = peer.ackCursor(directCopy(frame));

        // Fill the send buffer: the stack sends its initial window (10 segments) from write().
        device.resetLastTx();
        int n;
        while ((n = connection.write(source, sourceIndex, 64 * 1024)) > 0)
        {
            advanceSource(n);
        }
        check(written == connection.settings().sendBufferBytes, "filled " + written + " bytes");
        int highestSent = highestSent(peer.stackIss + 1);
        check(highestSent - (peer.stackIss + 1) == 10 * SEGMENT_PAYLOAD, "initial window of 10 segments, sent "
            + (highestSent - peer.stackIss - 1) + " bytes");

        device.load(new UnsafeBuffer(frame), 0, frame.length);
        cursor = peer.ackCursor(device.rxBuffer());

        for (int i = 0; i < WARM_ACKS; i++)
        {
            check(Integer.compareUnsigned(cursor.value - peer.stackIss, highestSent - peer.stackIss) <= 0,
                "the peer would acknowledge unsent data at ACK " + i + "; " + connection.describe());
            device.resetLastTx();
            ack();
            highestSent = highestSent(highestSent);
        }
        checkSteadyState(highestSent);
        segmentsOutAtStart = stack.counters().get(StackCounter.TCP_SEGMENTS_OUT);
        acksAtStart = cursor.count;
    }

    private void advanceSource(final int n)
    {
        written += n;
        sourceIndex = (sourceIndex + n) % PERIOD;
    }

    /** Sequence number after the last segment sent (from the last frame the device got), or {@code previous}. */
    private int highestSent(final int previous)
    {
        if (device.lastTxLength() == 0)
        {
            return previous;
        }
        final TcpRepr seg = lastSegment(device, "data segment");
        checkDataSegment(seg);
        return seg.seq + seg.payloadLength;
    }

    private void checkDataSegment(final TcpRepr seg)
    {
        check(seg.payloadLength == SEGMENT_PAYLOAD, "a full-sized segment: " + seg);
        check((seg.flags & ~TcpHeader.PSH) == TcpHeader.ACK, "data segment flags: " + seg);
        check(seg.ack == peer.peerNextSeq, "data segment acknowledges the peer's SYN only: " + seg);
        check(seg.timestampsPresent && seg.tsVal == peer.stackTsVal, "data segment timestamps: " + seg);
        final long offset = (seg.seq - (peer.stackIss + 1)) & 0xFFFF_FFFFL;
        final UnsafeBuffer tx = device.txBuffer();
        for (int i = 0; i < seg.payloadLength; i++)
        {
            check(tx.getByte(seg.payloadOffset + i) == (byte)((offset + i) % PERIOD), "payload byte " + i + " of " + seg);
        }
    }

    /** After warm-up: each ACK releases exactly one contiguous full-sized segment, nothing else changes. */
    private void checkSteadyState(final int highestSentAtStart)
    {
        final StackCounters counters = stack.counters();
        int highestSent = highestSentAtStart;
        check(highestSent - cursor.value == (SEGMENTS_IN_FLIGHT - 1) * SEGMENT_PAYLOAD,
            "after warm-up the flight is the peer's window: " + connection.describe());
        final long cwnd = connection.cwnd();
        final long out = counters.get(StackCounter.TCP_SEGMENTS_OUT);
        final long tx = device.transmitted();
        final long acked = connection.bytesAcked();
        for (int i = 0; i < CHECKED_ACKS; i++)
        {
            device.resetLastTx();
            final long txBefore = device.transmitted();
            ack();
            check(device.transmitted() - txBefore == 1, "one segment per ACK, got " + (device.transmitted() - txBefore)
                + "; " + connection.describe());
            final TcpRepr seg = lastSegment(device, "data segment");
            checkDataSegment(seg);
            check(seg.seq == highestSent, "contiguous: " + seg + " after " + Integer.toUnsignedString(highestSent));
            highestSent += SEGMENT_PAYLOAD;
        }
        check(counters.get(StackCounter.TCP_SEGMENTS_OUT) - out == CHECKED_ACKS, "segments out");
        check(device.transmitted() - tx == CHECKED_ACKS, "frames out");
        check(connection.bytesAcked() - acked == (long)CHECKED_ACKS * SEGMENT_PAYLOAD, "bytes acknowledged");
        check(connection.cwnd() == cwnd, "cwnd moved from " + cwnd + " to " + connection.cwnd() + " while receiver-window limited");
        check(connection.writable() == 0, "the application keeps the send buffer full");
        check(connection.state() == TcpState.ESTABLISHED, "state " + connection.state());
        checkNoTcpTrouble(counters);
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        final StackCounters counters = stack.counters();
        checkNoTcpTrouble(counters);
        check(connection.state() == TcpState.ESTABLISHED, "state " + connection.state());
        // bytesAcked counts the SYN too.
        check(connection.bytesAcked() == 1 + cursor.count * SEGMENT_PAYLOAD, "bytes acknowledged " + connection.bytesAcked()
            + " != 1 + " + cursor.count * SEGMENT_PAYLOAD + "; " + connection.describe() + "\n" + counters);
        check(written - (connection.bytesAcked() - 1) == connection.settings().sendBufferBytes && connection.writable() == 0,
            "the application's writes did not keep the send buffer full: written " + written);
        final long acks = cursor.count - acksAtStart;
        final long out = counters.get(StackCounter.TCP_SEGMENTS_OUT) - segmentsOutAtStart;
        check(out == acks, acks + " ACKs released " + out + " segments; " + connection.describe());
        check(counters.get(StackCounter.TCP_SEGMENTS_IN) == cursor.count + 2, "segments in (SYN, ACK, ACKs): " + counters);
    }

    /** One ACK of 1448 bytes in, one full-sized segment out, one 1448-byte write by the application. */
    @Benchmark
    public int ack()
    {
        cursor.next();
        final int work = stack.poll(NOW);
        final int n = connection.write(source, sourceIndex, SEGMENT_PAYLOAD);
        advanceSource(n);
        return work + n;
    }

    /** The per-operation ACK patching of {@code ack} alone (ack number, TSval, incremental checksum), on a private copy. */
    @Benchmark
    public void patchFrame()
    {
        patchCursor.next();
    }

    /** 1448 bytes copied from one direct buffer into another, from offset {@value #BASELINE_SOURCE_AT}. */
    @Benchmark
    public void baselineCopy()
    {
        copyTarget.putBytes(0, source, BASELINE_SOURCE_AT, SEGMENT_PAYLOAD);
    }
}
