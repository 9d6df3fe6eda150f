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
import io.nicstack.stack.tcp.CongestionControl;
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
 * range check, send-buffer release, RTT sample from the echoed timestamp, RTO and congestion-control update
 * (what that does depends on {@link #phase}), window update. After the burst the output pass finds nothing left to
 * send. Reported per ACK, which is per segment here (this peer acknowledges every segment; Linux acknowledges
 * every second one). Building the ACK frames is not timed with {@code nic=ring} (the first value, and every published
 * run): the NIC places them in its RX ring before the invocation; only {@code nic=patchInLoop} patches each one inside
 * the timed poll, about 6 ns more per ACK ({@code TcpAckBenchmark.patchFrame}; see {@link #nic}). The timestamps JMH
 * takes around each invocation are spread over its {@value #BURST} ACKs.
 *
 * <p>Setup grows the congestion window past the burst and checks that a cycle sends exactly {@value #BURST}
 * segments; every invocation checks it again, and teardown checks every byte acknowledged and nothing dropped.
 * With {@code phase=avoidance} setup also checks that a burst's ACKs grew cwnd, and so does every invocation.
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

    /**
     * CUBIC's phase when the ACKs arrive. {@code slowStart}, as setup's slow start leaves it (every figure before this
     * parameter): cwnd 65 segments, ssthresh still the initial "arbitrarily high" one; each ACK finds less than half
     * of cwnd in flight (32 segments down to 1), so the sender counts as application limited and the update returns
     * before any growth. {@code avoidance}, a bulk sender in congestion avoidance: ssthresh is 0.7 × a window of
     * {@value #BURST} segments (as after a loss at that flight, recovered) and cwnd is set back to exactly those
     * {@value #BURST} segments before each invocation, so the burst fills the window. The burst's first ACK then finds
     * the window full and runs CUBIC's growth (W_est, W_cubic, the new cwnd; with the fixed clock t stays 0 and the
     * growth is the Reno-friendly one, RFC 9438 (4.3)). The other 31 take congestion avoidance's application-limited
     * exit: this stack judges "cwnd limited" per ACK from the flight before it (RFC 9438 (5.8)), and a poll's ACKs
     * shrink the flight a segment each before the output pass refills it, so no setup makes every ACK of a burst
     * grow cwnd; this is what a window-limited sender's ACK bursts cost here.
     */
    @Param({"slowStart", "avoidance"})
    public String phase;

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
    /** With {@code phase=avoidance}: the controller whose cwnd each invocation sets back to the burst's window. */
    private CongestionControl avoidance;
    private long burstWindow;

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
        if (phase.equals("avoidance"))
        {
            enterCongestionAvoidance();
        }
        else
        {
            check(phase.equals("slowStart"), "phase is slowStart or avoidance, not " + phase);
        }
        device.burst(BURST, cursor::next);
        ringMode = ringMode(nic);
        checkNoTcpTrouble(stack.counters());
        ackedAtStart = connection.bytesAcked();
        acksAtStart = cursor.count;
        fastPathAtStart = TcpBenchPeer.FastPathStart.of(stack.counters());
    }

    /**
     * ssthresh at 0.7 × the burst's window, as a loss at that flight and its recovery leave it (RFC 9438 (4.6)), then
     * cwnd set to that window; one cycle, untimed, checks that its ACKs grew cwnd from there. Through the controller
     * itself ({@link TcpConnection#congestionController}): only a loss sets ssthresh, and only setting cwnd back keeps
     * the burst filling the window, bursts after bursts.
     */
    private void enterCongestionAvoidance()
    {
        check(connection.sendMss() == SEGMENT_PAYLOAD, "MSS " + connection.sendMss());
        avoidance = connection.congestionController();
        burstWindow = (long)BURST * SEGMENT_PAYLOAD;
        avoidance.onFastRetransmit(burstWindow, NOW);
        avoidance.onRecoveryExit(NOW);
        avoidance.cwnd(burstWindow);
        check(connection.ssthresh() <= connection.cwnd(), "congestion avoidance; " + connection.describe());
        check(writeBurst() == BURST, "the burst fills the window; " + connection.describe());
        device.burst(BURST, cursor::next);
        stack.poll(NOW);
        check(connection.bytesAcked() - 1 == written, "the cycle acknowledged everything; " + connection.describe());
        check(connection.cwnd() > burstWindow, "a burst's ACKs grew cwnd; " + connection.describe());
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
     * Not timed: with {@code phase=avoidance} cwnd goes back to the burst's window (after checking the last burst grew
     * it); the application writes a burst's worth and the stack sends all of it; with {@code nic=ring} the NIC then
     * places the peer's {@value #BURST} ACKs of it in its RX ring.
     */
    @Setup(Level.Invocation)
    public void sendBurst()
    {
        if (avoidance != null)
        {
            if (connection.cwnd() <= burstWindow)
            {
                // Not check(...): its message would be built, allocating, before every invocation.
                throw new IllegalStateException("the last burst's ACKs did not grow cwnd; " + connection.describe());
            }
            // cwnd only: the epoch runs on, as a long congestion avoidance's does (no epoch start per burst), so W_est
            // keeps the growth of every burst and the next one's Reno-friendly cwnd is far above this window; the
            // code each ACK runs is the same.
            avoidance.cwnd(burstWindow);
        }
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
