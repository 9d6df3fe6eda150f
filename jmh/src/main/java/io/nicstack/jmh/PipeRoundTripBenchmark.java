package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.Pipe;
import io.nicstack.pipes.Protocol;
import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

import static io.nicstack.jmh.RoundTripDaemon.check;

/**
 * Round trip of one 64-byte message, app → daemon → app, in {@link Mode#SampleTime} (per-operation latency
 * percentiles), with one app thread (the benchmark thread) and one background "daemon" thread that busy spins.
 *
 * <ul>
 *     <li>{@code nicstackTcpEcho}: the whole path through the REAL client library and the REAL {@code PipeServer}:
 *     claim/write/commit 64 bytes in the connection's TX pipe (the doorbell), the daemon thread's round sees the TX
 *     tail move, stack A sends a TCP segment over the {@link io.nicstack.nic.mem.MemoryWire}, stack B's echo reads it
 *     and writes it back (a second TCP segment, carrying the ACK), stack A places the payload in the RX pipe and
 *     publishes its tail; right after the doorbell the app calls {@code client.poll()} once (drains the previous
 *     round trip's paced NOTIFY, as an app's loop would while it waits), then spins on {@code peek()} until 64 bytes
 *     are there, checks the sequence number and {@code release}s them.
 *     See {@link RoundTripDaemon}.</li>
 *     <li>{@code pipeLoopback}: the same client calls on the same app file and connection slot, but the daemon thread
 *     is replaced, after the connection is set up, by a plain copier: TX pipe [head, tail) → RX pipe, publish RX tail,
 *     release TX head. No PipeServer round, no TCP, no echo stack: the floor of the pipe design (two cross-thread
 *     handoffs through shared-memory positions, plus the client library's checks).</li>
 *     <li>{@code agronaPingPong}: the baseline: the benchmark thread {@code write}s a 64-byte record into one Agrona
 *     {@link OneToOneRingBuffer}, an echo thread busy-spins {@code read} on it and {@code write}s the record into a
 *     second ring, the benchmark thread spins {@code read} on that one until the record is back.</li>
 * </ul>
 *
 * Every message carries a fresh 64-bit sequence number in its first 8 bytes, checked on return (a mismatch is counted
 * and fails teardown). Setup sends 1000 random 64-byte messages first and checks every byte that comes back.
 * Teardown checks: no mismatch, and on the TCP path no drop, unaccounted frame, reset or pipe error anywhere, and no
 * retransmission or RTO expiry unless {@code allowRetransmissions} (it prints the round trips, daemon rounds and the
 * retransmission counts).
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Threads(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class PipeRoundTripBenchmark
{
    static final int MESSAGE = 64;
    static final int VERIFY_MESSAGES = 1000;

    private static ClientOptions clientOptions()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 4;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 64 * 1024;
        options.idleStrategy = new BusySpinIdleStrategy();
        return options;
    }

    /** The app's side of one connection: one round trip with the zero-copy calls. */
    abstract static class AppConnection
    {
        final UnsafeBuffer pattern = new UnsafeBuffer(new byte[MESSAGE]);
        RoundTripDaemon daemon;
        NicstackClient client;
        PipeConnection connection;
        long sequence;
        long mismatches;
        long operations;

        void attachAndConnect() throws Exception
        {
            new SplittableRandom(64).nextBytes(pattern.byteArray());
            daemon = new RoundTripDaemon();
            daemon.start();
            client = NicstackClient.attach(daemon.shm, "rtt", clientOptions());
            connection = client.connect(RoundTripDaemon.B_IP, RoundTripDaemon.ECHO_PORT);
            connection.setOption(Protocol.OPTION_NO_DELAY, 1);
        }

        /** Send {@code message} (64 bytes), wait for 64 bytes back, copy them into {@code into}. */
        void roundTripChecked(final byte[] message, final byte[] into) throws NicstackException
        {
            while (connection.claim(MESSAGE) < MESSAGE)
            {
                Thread.onSpinWait();
            }
            connection.txBuffer().putBytes(connection.txIndex(), message);
            connection.commit(MESSAGE);
            final long deadline = System.nanoTime() + 5_000_000_000L;
            int n;
            while ((n = connection.peek()) < MESSAGE)
            {
                check(n >= 0, "connection ended");
                check(System.nanoTime() - deadline < 0, "no echo within 5 s (" + n + " bytes back)");
                afterIdleSpin();
            }
            connection.rxBuffer().getBytes(connection.rxIndex(), into);
            connection.release(MESSAGE);
        }

        void afterIdleSpin() throws NicstackException
        {
        }

        void verify() throws NicstackException
        {
            final SplittableRandom random = new SplittableRandom(1);
            final byte[] message = new byte[MESSAGE];
            final byte[] back = new byte[MESSAGE];
            for (int i = 0; i < VERIFY_MESSAGES; i++)
            {
                random.nextBytes(message);
                roundTripChecked(message, back);
                check(Arrays.equals(message, back), "message " + i + " came back different");
            }
        }

        /** The measured operation. */
        final long roundTrip() throws NicstackException
        {
            final PipeConnection c = connection;
            final long seq = ++sequence;
            while (c.claim(MESSAGE) < MESSAGE)
            {
                Thread.onSpinWait();
            }
            final MutableDirectBuffer tx = c.txBuffer();
            final int at = c.txIndex();
            tx.putLong(at, seq);
            tx.putBytes(at + 8, pattern, 8, MESSAGE - 8);
            c.commit(MESSAGE);
            whileWaiting();
            int n;
            while ((n = c.peek()) < MESSAGE)
            {
                if (n < 0)
                {
                    throw new IllegalStateException("connection ended");
                }
                Thread.onSpinWait();
            }
            final long back = c.rxBuffer().getLong(c.rxIndex());
            if (back != seq)
            {
                mismatches++;
            }
            c.release(MESSAGE);
            operations++;
            return back;
        }

        /** Once per round trip, right after the doorbell: what the app's loop does while the reply is on its way. */
        abstract void whileWaiting() throws NicstackException;
    }

    /** The whole path: client library, PipeServer, TCP over the memory wire to an echo and back. */
    @State(Scope.Thread)
    public static class TcpPath extends AppConnection
    {
        /**
         * false (the default): a retransmission or RTO expiry on either stack fails the run in teardown, since the
         * wire loses nothing and the percentiles would then include a stall of a timer (an RTO is at least 200 ms);
         * true: teardown only prints their counts, for a run on a machine too loaded to keep the threads on time.
         */
        @Param({"false"})
        public boolean allowRetransmissions;

        @Setup(Level.Trial)
        public void setUp() throws Exception
        {
            attachAndConnect();
            verify();
            daemon.checkAlive();
        }

        String label()
        {
            return "nicstackTcpEcho";
        }

        @Override
        void afterIdleSpin() throws NicstackException
        {
            client.poll();
        }

        @Override
        void whileWaiting() throws NicstackException
        {
            client.poll(); // drains the previous round trip's paced NOTIFY, as an app's loop would
        }

        @TearDown(Level.Trial)
        public void tearDown() throws Exception
        {
            daemon.stop();
            try
            {
                check(mismatches == 0, mismatches + " of " + operations + " round trips returned the wrong sequence");
                System.out.println("\n[" + label() + "] " + operations + " round trips, " + daemon.rounds +
                    " daemon rounds (" + String.format("%.1f", (double)daemon.rounds / Math.max(1, operations)) +
                    " per round trip); A: " + daemon.a.counters().get(io.nicstack.stack.stats.StackCounter.TCP_SEGMENTS_OUT) +
                    " segments out; doorbells " + daemon.pipeCounters.get(io.nicstack.daemon.pipes.PipeCounter.DOORBELLS) +
                    ", notifications " + daemon.pipeCounters.get(io.nicstack.daemon.pipes.PipeCounter.NOTIFICATIONS_SENT) +
                    "; " + daemon.retransmissions() + (daemon.reflector() == null ? "" :
                    "; reflector echoed " + daemon.reflector().echoed + ", ignored " + daemon.reflector().ignored));
                // After the summary, so that a failure's counts are printed in full.
                daemon.checkClean(allowRetransmissions);
            }
            finally
            {
                daemon.close();
                client.close();
            }
        }
    }

    /**
     * The same path with a far end that costs next to nothing: after the connection is set up (and verified) through
     * stack B's echo, a {@link TcpEchoReflector} answers A's segments instead (and 1000 more messages are verified
     * through it). The round trip is then the daemon's own work plus the two handoffs, as in the Agrona baseline,
     * whose echo thread does nothing but copy.
     */
    @State(Scope.Thread)
    public static class TcpReflectPath extends TcpPath
    {
        @Override
        @Setup(Level.Trial)
        public void setUp() throws Exception
        {
            super.setUp();
            daemon.reflect();
            verify();
            daemon.checkAlive();
        }

        @Override
        String label()
        {
            return "nicstackTcpReflect";
        }
    }

    /**
     * The same client calls, but after the connection is set up the daemon stops and a copier thread moves the TX
     * pipe's bytes straight into the same slot's RX pipe: no PipeServer round, no TCP. The client is not polled (the
     * stopped daemon writes no heartbeat, and no NOTIFY comes).
     */
    @State(Scope.Thread)
    public static class PipeLoopback extends AppConnection
    {
        private AppFile file;
        private Thread copier;
        private volatile boolean running = true;
        private volatile Throwable failure;

        @Setup(Level.Trial)
        public void setUp() throws Exception
        {
            attachAndConnect();
            daemon.stop(); // its thread ends: only the app and the copier spin
            file = AppFile.open(client.appFile());
            final int slot = Protocol.slotOf(connection.id());
            final Pipe tx = file.tx(slot);
            final Pipe rx = file.rx(slot);
            check(tx.head() == tx.tailVolatile() && rx.tail() == rx.headVolatile(), "pipes not empty before the copier");
            copier = new Thread(() -> copy(tx, rx), "nicstack-rtt-copier");
            copier.setDaemon(true);
            copier.start();
            verify();
        }

        private void copy(final Pipe tx, final Pipe rx)
        {
            try
            {
                while (running)
                {
                    final long head = tx.head();
                    final long tail = tx.tailVolatile();
                    if (tail == head)
                    {
                        Thread.onSpinWait();
                        continue;
                    }
                    final int n = rx.claim((int)(tail - head));
                    if (n == 0)
                    {
                        Thread.onSpinWait();
                        continue;
                    }
                    tx.getBytes(head, rx.buffer(), rx.claimIndex(), n);
                    rx.commit(n);
                    tx.releaseTo(head + n);
                }
            }
            catch (final Throwable t)
            {
                failure = t;
            }
        }

        @Override
        void whileWaiting()
        {
        }

        @TearDown(Level.Trial)
        public void tearDown() throws Exception
        {
            running = false;
            copier.join(10_000);
            try
            {
                check(failure == null, "copier failed: " + failure);
                check(mismatches == 0, mismatches + " of " + operations + " round trips returned the wrong sequence");
                System.out.println("\n[pipeLoopback] " + operations + " round trips");
            }
            finally
            {
                file.close();
                daemon.close();
                client.close();
            }
        }
    }

    /** Two Agrona rings and an echo thread: the baseline. */
    @State(Scope.Thread)
    public static class AgronaPingPong
    {
        static final int RING = 64 * 1024;
        static final int MSG_TYPE = 1;

        private OneToOneRingBuffer ping;
        private OneToOneRingBuffer pong;
        private final UnsafeBuffer message = new UnsafeBuffer(ByteBuffer.allocateDirect(MESSAGE));
        private Thread echo;
        private volatile boolean running = true;
        private volatile Throwable failure;
        private long sequence;
        private long mismatches;
        private long operations;
        private long received;
        private long lastBack;
        private byte[] captured;
        private final MessageHandler onPong = this::onPong;

        private void onPong(final int type, final MutableDirectBuffer buffer, final int index, final int length)
        {
            lastBack = buffer.getLong(index);
            if (captured != null)
            {
                buffer.getBytes(index, captured, 0, length);
            }
            received += length == MESSAGE ? 1 : 1_000_000_000L;
        }

        @Setup(Level.Trial)
        public void setUp() throws Exception
        {
            ping = new OneToOneRingBuffer(new UnsafeBuffer(
                ByteBuffer.allocateDirect(RING + RingBufferDescriptor.TRAILER_LENGTH)));
            pong = new OneToOneRingBuffer(new UnsafeBuffer(
                ByteBuffer.allocateDirect(RING + RingBufferDescriptor.TRAILER_LENGTH)));
            final OneToOneRingBuffer in = ping;
            final OneToOneRingBuffer out = pong;
            final MessageHandler bounce = (type, buffer, index, length) ->
            {
                while (!out.write(type, buffer, index, length))
                {
                    Thread.onSpinWait();
                }
            };
            echo = new Thread(() ->
            {
                try
                {
                    while (running)
                    {
                        if (in.read(bounce, 1) == 0)
                        {
                            Thread.onSpinWait();
                        }
                    }
                }
                catch (final Throwable t)
                {
                    failure = t;
                }
            }, "agrona-echo");
            echo.setDaemon(true);
            echo.start();

            final SplittableRandom random = new SplittableRandom(1);
            final byte[] bytes = new byte[MESSAGE];
            captured = new byte[MESSAGE];
            for (int i = 0; i < VERIFY_MESSAGES; i++)
            {
                random.nextBytes(bytes);
                message.putBytes(0, bytes);
                check(ping.write(MSG_TYPE, message, 0, MESSAGE), "ping ring full");
                final long before = received;
                final long deadline = System.nanoTime() + 5_000_000_000L;
                while (pong.read(onPong, 1) == 0)
                {
                    check(System.nanoTime() - deadline < 0, "no echo within 5 s");
                }
                check(received == before + 1 && Arrays.equals(bytes, captured), "message " + i + " came back different");
            }
            captured = null;
            received = 0;
            new SplittableRandom(64).nextBytes(bytes);
            message.putBytes(0, bytes);
        }

        @TearDown(Level.Trial)
        public void tearDown() throws Exception
        {
            running = false;
            echo.join(10_000);
            check(failure == null, "echo thread failed: " + failure);
            check(mismatches == 0, mismatches + " of " + operations + " round trips returned the wrong sequence");
            check(received == operations, received + " records back for " + operations + " sent");
            System.out.println("\n[agronaPingPong] " + operations + " round trips");
        }

        final long roundTrip()
        {
            final long seq = ++sequence;
            message.putLong(0, seq);
            while (!ping.write(MSG_TYPE, message, 0, MESSAGE))
            {
                Thread.onSpinWait();
            }
            while (pong.read(onPong, 1) == 0)
            {
                Thread.onSpinWait();
            }
            if (lastBack != seq)
            {
                mismatches++;
            }
            operations++;
            return lastBack;
        }
    }

    @Benchmark
    public long nicstackTcpEcho(final TcpPath path) throws NicstackException
    {
        return path.roundTrip();
    }

    @Benchmark
    public long nicstackTcpReflect(final TcpReflectPath path) throws NicstackException
    {
        return path.roundTrip();
    }

    @Benchmark
    public long pipeLoopback(final PipeLoopback path) throws NicstackException
    {
        return path.roundTrip();
    }

    @Benchmark
    public long agronaPingPong(final AgronaPingPong path)
    {
        return path.roundTrip();
    }
}
