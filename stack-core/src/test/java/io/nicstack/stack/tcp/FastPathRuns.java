package io.nicstack.stack.tcp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NetDeviceDecorator;
import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A fast path changes how fast a segment is taken, never what happens to it. {@link #run} moves the same transfer
 * (one connection, or several at once whose segments interleave: {@code TcpTransferTest.Transfer}) over the same seeded faults with the
 * same ISN secrets, with a fast path on or off; {@link #assertSame} then requires
 * both runs to put the very same frames on the wire, in the same order, and to end with the same counters (but for the
 * fast path's own), in the same simulated time. Any difference in an ACK number, a window, a timestamp, a SACK block,
 * a retransmission or the timing of an ACK shows up as the first frame that differs. Used by
 * {@link TcpHeaderPredictionTest} and {@link TcpEarlyDemuxTest}.
 */
final class FastPathRuns
{
    static final long BYTES = 1_500_000;

    private FastPathRuns()
    {
    }

    /** Every frame a stack hands to its device, as bytes (the stack's side of the fault injector). */
    static final class Recorder extends NetDeviceDecorator
    {
        final List<byte[]> frames = new ArrayList<>();
        private MutableDirectBuffer claimed;

        Recorder(final NetDevice device)
        {
            super(device);
        }

        @Override
        public String name()
        {
            return "recorder:" + inner.name();
        }

        @Override
        public MutableDirectBuffer claim()
        {
            claimed = inner.claim();
            return claimed;
        }

        @Override
        public boolean transmitChecksumOffload()
        {
            return inner.transmitChecksumOffload();
        }

        @Override
        public void commit(final int length)
        {
            record(claimed, length);
            inner.commit(length);
        }

        @Override
        public void commit(final int length, final int flags)
        {
            record(claimed, length);
            inner.commit(length, flags);
        }

        private void record(final DirectBuffer frame, final int length)
        {
            final byte[] copy = new byte[length];
            frame.getBytes(0, copy);
            frames.add(copy);
        }
    }

    /**
     * One run: what each stack sent, its counters but the fast path's, that count, and what each side of each flow
     * received (SHA-256, by flow).
     */
    record Run(List<byte[]> framesA, List<byte[]> framesB, String countersA, String countersB, long takenA,
        long takenB, long segmentsInA, long segmentsInB, List<byte[]> hashesToServer, List<byte[]> hashesToClient,
        long bytesEachWay, long now)
    {
        /** Segments the two stacks took in (TCP_SEGMENTS_IN) that the fast path did not take. */
        long notTaken()
        {
            return segmentsInA + segmentsInB - takenA - takenB;
        }
    }

    /**
     * @param fastPath switches the fast path on or off in each stack's {@link Tcp}.
     * @param taken    the counter of segments the fast path took.
     * @param flows    concurrent connections, together moving {@link #BYTES} each way.
     */
    static Run run(final String faults, final Consumer<Tcp> fastPath, final StackCounter taken,
        final Consumer<TcpSettings> settings, final int flows) throws Exception
    {
        final List<Recorder> recorders = new ArrayList<>();
        final long[] secrets = {0x0123_4567_89AB_CDEFL, 0x0FED_CBA9_8765_4321L, 0x1111_2222_3333_4444L, 0x5555_6666_7777_8888L};
        final TwoStacks net = new TwoStacks(FaultConfig.parse(faults), secrets, device ->
        {
            final Recorder r = new Recorder(device);
            recorders.add(r);
            return r;
        });
        for (final NetStack s : new NetStack[] {net.a, net.b})
        {
            fastPath.accept(s.tcp());
            settings.accept(s.tcp().defaults());
        }
        final TcpTransferTest.Transfer transfer = TcpTransferTest.Transfer.start(net, flows, BYTES / flows);
        assertTrue(transfer.run(net, 36_000_000_000_000L), "transfer incomplete (faults " + faults + "):\n" + transfer.describe());
        assertTrue(net.runUntil(() -> net.a.tcp().connectionCount() == 0 && net.b.tcp().connectionCount() == 0,
            200_000_000_000L), "connections drain after close");
        return new Run(recorders.get(0).frames, recorders.get(1).frames, countersBut(net.a, taken),
            countersBut(net.b, taken), net.a.counters().get(taken), net.b.counters().get(taken),
            net.a.counters().get(StackCounter.TCP_SEGMENTS_IN), net.b.counters().get(StackCounter.TCP_SEGMENTS_IN),
            transfer.servers().stream().map(p -> p.receivedHash.digest()).toList(),
            transfer.clients().stream().map(p -> p.receivedHash.digest()).toList(), transfer.bytesEachWay(), net.now);
    }

    /**
     * Run the transfer with the fast path off, then on ({@code fastPath} switches it in each stack's {@link Tcp}), and
     * {@link #assertSame assert the two runs the same}; {@code profile} names the connections' settings
     * ({@link #profile}).
     */
    static Run assertFastPathChangesNothing(final String name, final String faults, final String profile,
        final BiConsumer<Tcp, Boolean> fastPath, final StackCounter taken, final double minShare) throws Exception
    {
        return assertFastPathChangesNothing(name, faults, profile, 1, fastPath, taken, minShare);
    }

    /** The same, with the bytes spread over {@code flows} concurrent connections; returns the fast path's run. */
    static Run assertFastPathChangesNothing(final String name, final String faults, final String profile,
        final int flows, final BiConsumer<Tcp, Boolean> fastPath, final StackCounter taken, final double minShare)
        throws Exception
    {
        final Consumer<TcpSettings> settings = profile(profile.trim());
        final Run general = run(faults.trim(), tcp -> fastPath.accept(tcp, false), taken, settings, flows);
        final Run fast = run(faults.trim(), tcp -> fastPath.accept(tcp, true), taken, settings, flows);
        assertSame(general, fast, name.trim() + " (" + faults.trim() + ")", minShare);
        return fast;
    }

    /**
     * Connection settings by name: {@code default}; {@code small} (8 KiB buffers); {@code bare} (no timestamps, no
     * SACK); {@code newreno} (NewReno, Nagle off).
     */
    static Consumer<TcpSettings> profile(final String name)
    {
        return switch (name)
        {
            case "default" -> s -> { };
            case "small" -> s ->
            {
                s.sendBufferBytes = 8 * 1024;
                s.receiveBufferBytes = 8 * 1024;
            };
            case "bare" -> s ->
            {
                s.timestamps = false;
                s.sack = false;
            };
            case "newreno" -> s ->
            {
                s.congestionControl = "newreno";
                s.noDelay = true;
            };
            default -> throw new IllegalArgumentException("no settings profile " + name);
        };
    }

    /**
     * The general path's run and the fast path's are the same, the switch works both ways (nothing taken with it
     * off), and the fast path took at least {@code minShare} of the segments in.
     */
    static void assertSame(final Run general, final Run fast, final String what, final double minShare) throws Exception
    {
        for (int i = 0; i < fast.hashesToServer().size(); i++)
        {
            assertArrayEquals(TcpTransferTest.expectedHash(fast.bytesEachWay(), TcpTransferTest.Transfer.clientSalt(i)),
                fast.hashesToServer().get(i), what + ": SHA-256 client→server, flow " + i);
            assertArrayEquals(TcpTransferTest.expectedHash(fast.bytesEachWay(), TcpTransferTest.Transfer.serverSalt(i)),
                fast.hashesToClient().get(i), what + ": SHA-256 server→client, flow " + i);
        }
        assertSameFrames(general.framesA(), fast.framesA(), what + ", stack A (server)");
        assertSameFrames(general.framesB(), fast.framesB(), what + ", stack B (client)");
        assertEquals(general.countersA(), fast.countersA(), what + ": counters of A");
        assertEquals(general.countersB(), fast.countersB(), what + ": counters of B");
        assertEquals(general.now(), fast.now(), what + ": simulated time to finish");

        assertEquals(0, general.takenA() + general.takenB(), what + ": fast path taken while off");
        final long in = fast.segmentsInA() + fast.segmentsInB();
        final long taken = fast.takenA() + fast.takenB();
        assertTrue(taken >= minShare * in, what + ": the fast path took only " + taken + " of " + in + " segments");
    }

    static String countersBut(final NetStack stack, final StackCounter excluded)
    {
        final StringBuilder sb = new StringBuilder();
        for (final StackCounter c : StackCounter.values())
        {
            if (c != excluded)
            {
                sb.append(c.label()).append(" = ").append(stack.counters().get(c)).append('\n');
            }
        }
        return sb.toString();
    }

    static void assertSameFrames(final List<byte[]> general, final List<byte[]> fast, final String what)
    {
        final int n = Math.min(general.size(), fast.size());
        for (int i = 0; i < n; i++)
        {
            final int frame = i;
            assertArrayEquals(general.get(i), fast.get(i), () -> what + ": frame " + frame + " of " + general.size()
                + " differs (general path first, then the fast path):\n" + Arrays.toString(general.get(frame)) + "\n"
                + Arrays.toString(fast.get(frame)));
        }
        assertEquals(general.size(), fast.size(), what + ": frames sent");
    }
}
