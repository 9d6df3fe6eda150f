package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
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

import static io.nicstack.jmh.BenchFrames.*;
import static io.nicstack.jmh.TcpBenchPeer.*;

/**
 * ACK processing on the sender alone, as issue 3 names it: {@link TcpAckBenchmark} times one ACK together with
 * the full-sized segment it lets out and the application's write that refills the buffer (three payload copies
 * and a header build); this one times the ACKs only.
 *
 * <p>Before each invocation (not timed, {@code Level.Invocation}) the application writes {@value #BURST} full
 * segments and the stack sends them. The invocation is one poll whose receive burst is {@value #BURST} ACKs from
 * the peer, each acknowledging the next 1448 bytes with a new TSval (a NIC's RX ring handing over a burst of
 * ACKs, as under a bulk send): per ACK, demux, IPv4 and TCP validation, PAWS, acceptability, the RFC 5961 ACK
 * range check, send-buffer release, RTT sample from the echoed timestamp, RTO and congestion-control update,
 * window update. After the burst the output pass finds nothing left to send. Reported per ACK, which is per
 * segment here (this peer acknowledges every segment; Linux acknowledges every second one). The per-ACK frame
 * patching is included (about 6 ns; {@code TcpAckBenchmark.patchFrame}). The timestamps JMH takes around
 * each invocation are spread over its {@value #BURST} ACKs.
 *
 * <p>Setup grows the congestion window past the burst and checks that a cycle sends exactly {@value #BURST}
 * segments; every invocation checks it again, and teardown checks every byte acknowledged and nothing dropped.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class TcpAckBurstBenchmark
{
    static final int BURST = 32;
    /** × 2^7 = 65536 bytes: room for the burst's 32 segments (46336 bytes). */
    private static final int PEER_WINDOW = 512;

    /** As in {@link TcpAckBenchmark}: software checksums, or the device's offload. */
    @Param({"false", "true"})
    public boolean checksumOffload;

    /**
     * Where the ACK frames come from: {@code ring}, written into the device's RX ring before the invocation, untimed,
     * as DMA places them ({@link LoopbackSinkDevice#fillRing}); {@code patchInLoop}, one frame patched before each
     * delivery inside the timed poll (as this benchmark ran before; {@code TcpAckBenchmark.patchFrame} times that alone).
     */
    @Param({"ring", "patchInLoop"})
    public String nic;

    private LoopbackSinkDevice device;
    private NetStack stack;
    private TcpConnection connection;
    private Cursor cursor;
    private UnsafeBuffer source;
    private long written;
    private long ackedAtStart;
    private long acksAtStart;
    private TcpBenchPeer.FastPathStart fastPathAtStart;
    private boolean ringMode;

    @Setup(Level.Trial)
    public void setUp()
    {
        final TcpBenchPeer peer = TcpBenchPeer.onNewStack(checksumOffload, PEER_WINDOW, null);
        device = peer.device;
        stack = peer.stack;
        connection = peer.connection;
        source = new UnsafeBuffer(ByteBuffer.allocateDirect(BURST * SEGMENT_PAYLOAD));

        final byte[] frame = peer.ackFrame(PEER_WINDOW);
        device.load(new UnsafeBuffer(frame), 0, frame.length);
        cursor = peer.ackCursor(device.rxBuffer());

        // Slow start from 10 segments: fill the send buffer with a burst's worth whenever it is empty, ACK whatever
        // is in flight, until one write goes out whole (then it is all acknowledged too).
        final long txBase = device.transmitted();
        long acked = 0;
        boolean whole = false;
        for (int cycle = 0; cycle < 64 && !whole; cycle++)
        {
            if (connection.bytesAcked() - 1 == written)
            {
                whole = writeBurst() == BURST;
            }
            final int inFlight = (int)(device.transmitted() - txBase - acked);
            check(inFlight > 0 && inFlight <= BURST, "segments in flight at cycle " + cycle + ": " + inFlight);
            device.burst(inFlight, cursor::next);
            stack.poll(NOW);
            acked += inFlight;
        }
        check(whole, "slow start never let a whole burst of " + BURST + " out; " + connection.describe());
        check(connection.bytesAcked() - 1 == written, "setup acknowledged everything; " + connection.describe());
        device.burst(BURST, cursor::next);
        ringMode = ringMode(nic);
        checkNoTcpTrouble(stack.counters());
        ackedAtStart = connection.bytesAcked();
        acksAtStart = cursor.count;
        fastPathAtStart = TcpBenchPeer.FastPathStart.of(stack.counters());
    }

    /** The application writes up to a burst's worth; returns the segments the stack sent for it at once. */
    private int writeBurst()
    {
        final long before = device.transmitted();
        written += connection.write(source, 0, BURST * SEGMENT_PAYLOAD);
        stack.flush();
        return (int)(device.transmitted() - before);
    }

    /**
     * Not timed: the application writes a burst's worth and the stack sends all of it; with {@code nic=ring} the NIC
     * then places the peer's {@value #BURST} ACKs of it in its RX ring.
     */
    @Setup(Level.Invocation)
    public void sendBurst()
    {
        final int sent = writeBurst();
        if (sent != BURST || connection.bytesAcked() - 1 + (long)sent * SEGMENT_PAYLOAD != written)
        {
            throw new IllegalStateException("not every written byte went out as a burst of " + BURST + " full segments: "
                + sent + " segments; " + connection.describe());
        }
        if (ringMode)
        {
            device.fillRing(BURST);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        final StackCounters counters = stack.counters();
        checkNoTcpTrouble(counters);
        check(connection.state() == TcpState.ESTABLISHED, "state " + connection.state());
        final long acks = cursor.count - acksAtStart;
        check(connection.bytesAcked() - ackedAtStart == acks * SEGMENT_PAYLOAD,
            "each ACK released 1448 bytes: " + acks + " ACKs; " + connection.describe());
        check(connection.bytesAcked() - 1 == written, "everything written was acknowledged; " + connection.describe());
        check(counters.get(StackCounter.TCP_SEGMENTS_IN) == cursor.count + 2, "segments in (SYN, ACK, ACKs): " + counters);
        fastPathAtStart.checkEverySegmentTookTheFastPath(counters, acks, "ACK");
    }

    /** {@value #BURST} ACKs, each of the next 1448 bytes, through one poll; the time is reported per ACK. */
    @Benchmark
    @OperationsPerInvocation(BURST)
    public int ackBurst()
    {
        return stack.poll(NOW);
    }
}
