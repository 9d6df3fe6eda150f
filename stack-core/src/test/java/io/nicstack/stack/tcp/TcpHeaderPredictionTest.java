package io.nicstack.stack.tcp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.nicstack.stack.tcp.TcpTestHarness.bytes;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.FIN;
import static io.nicstack.stack.wire.TcpHeader.PSH;

/**
 * Header prediction ({@code TcpConnection.predicted}) changes how fast a segment is taken, never what happens to it.
 * The same transfer runs twice over the same seeded faults with the same ISN secrets, once with prediction and once
 * with every segment through the general path of RFC 9293 §3.10.7.4: both stacks must put the very same frames on the
 * wire, in the same order, and end with the same counters (but for the count of predicted segments). Any difference
 * in an ACK number, a window, a timestamp, a SACK block, a retransmission or the timing of an ACK shows up as the
 * first frame that differs. Segment-level tests cover what random runs rarely produce (an old ACK at RCV.NXT).
 */
class TcpHeaderPredictionTest
{
    private static final long BYTES = 1_500_000;

    /** Every frame a stack hands to its device, as bytes (the stack's side of the fault injector). */
    static final class Recorder implements NetDevice
    {
        private final NetDevice device;
        final List<byte[]> frames = new ArrayList<>();
        private MutableDirectBuffer claimed;

        Recorder(final NetDevice device)
        {
            this.device = device;
        }

        @Override
        public String name()
        {
            return "recorder:" + device.name();
        }

        @Override
        public int mtu()
        {
            return device.mtu();
        }

        @Override
        public int maxFrameLength()
        {
            return device.maxFrameLength();
        }

        @Override
        public int receive(final FrameHandler handler, final int limit)
        {
            return device.receive(handler, limit);
        }

        @Override
        public MutableDirectBuffer claim()
        {
            claimed = device.claim();
            return claimed;
        }

        @Override
        public boolean transmitChecksumOffload()
        {
            return device.transmitChecksumOffload();
        }

        @Override
        public void commit(final int length)
        {
            record(claimed, length);
            device.commit(length);
        }

        @Override
        public void commit(final int length, final int flags)
        {
            record(claimed, length);
            device.commit(length, flags);
        }

        private void record(final DirectBuffer frame, final int length)
        {
            final byte[] copy = new byte[length];
            frame.getBytes(0, copy);
            frames.add(copy);
        }

        @Override
        public void abort()
        {
            device.abort();
        }

        @Override
        public int flush()
        {
            return device.flush();
        }

        @Override
        public boolean awaitReadable(final long timeoutNanos)
        {
            return device.awaitReadable(timeoutNanos);
        }

        @Override
        public long droppedFrames()
        {
            return device.droppedFrames();
        }

        @Override
        public void close()
        {
            device.close();
        }
    }

    /** One run: what each stack sent, its counters, and what each side received. */
    record Run(List<byte[]> framesA, List<byte[]> framesB, String countersA, String countersB, long predictedA,
        long predictedB, long segmentsInA, long segmentsInB, byte[] hashToServer, byte[] hashToClient, long now)
    {
    }

    private static Run run(final String faults, final boolean prediction, final Consumer<TcpSettings> settings)
        throws Exception
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
            s.tcp().headerPrediction = prediction;
            settings.accept(s.tcp().defaults());
        }
        final TcpTransferTest.Transfer transfer = TcpTransferTest.Transfer.start(net, BYTES);
        final TcpTransferTest.Peer server = transfer.server();
        final TcpTransferTest.Peer client = transfer.client();
        assertTrue(transfer.run(net, 36_000_000_000_000L),
            "transfer incomplete (prediction " + prediction + ", faults " + faults + "): client sent " + client.sent
                + " received " + client.received + ", server sent " + server.sent + " received " + server.received);
        assertTrue(net.runUntil(() -> net.a.tcp().connectionCount() == 0 && net.b.tcp().connectionCount() == 0,
            200_000_000_000L), "connections drain after close");
        return new Run(recorders.get(0).frames, recorders.get(1).frames, withoutPredicted(net.a), withoutPredicted(net.b),
            net.a.counters().get(StackCounter.TCP_PREDICTED), net.b.counters().get(StackCounter.TCP_PREDICTED),
            net.a.counters().get(StackCounter.TCP_SEGMENTS_IN), net.b.counters().get(StackCounter.TCP_SEGMENTS_IN),
            server.receivedHash.digest(), client.receivedHash.digest(), net.now);
    }

    private static String withoutPredicted(final NetStack stack)
    {
        final StringBuilder sb = new StringBuilder();
        for (final StackCounter c : StackCounter.values())
        {
            if (c != StackCounter.TCP_PREDICTED)
            {
                sb.append(c.label()).append(" = ").append(stack.counters().get(c)).append('\n');
            }
        }
        return sb.toString();
    }

    private static void assertSameFrames(final List<byte[]> general, final List<byte[]> predicted, final String what)
    {
        final int n = Math.min(general.size(), predicted.size());
        for (int i = 0; i < n; i++)
        {
            final int frame = i;
            assertArrayEquals(general.get(i), predicted.get(i), () -> what + ": frame " + frame + " of " + general.size()
                + " differs (general path first, then prediction):\n" + Arrays.toString(general.get(frame)) + "\n"
                + Arrays.toString(predicted.get(frame)));
        }
        assertEquals(general.size(), predicted.size(), what + ": frames sent");
    }

    /**
     * {@code minShare}: the least fraction of segments in that must be predicted. A clean bulk transfer is nearly all
     * predicted; with loss most segments arrive while out-of-order data is held or the sender is in recovery, which
     * the general path handles, so there the two paths alternate, which is what this test is after.
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {
        "clean wire                     | seed=1                                      | default | 0.80",
        "1% loss, reorder, dup          | loss=0.01,reorder=0.02,dup=0.01,seed=11     | default | 0.01",
        "5% loss, reorder, dup          | loss=0.05,reorder=0.02,dup=0.01,seed=12     | default | 0.01",
        "10% loss, reorder, dup         | loss=0.10,reorder=0.02,dup=0.01,seed=13     | default | 0.01",
        "small buffers, 2% loss         | loss=0.02,reorder=0.03,dup=0.01,seed=14     | small | 0.05",
        "no timestamps, no SACK, loss   | loss=0.02,reorder=0.02,dup=0.01,seed=15     | bare | 0.20",
        "NewReno, Nagle off, loss       | loss=0.03,reorder=0.02,dup=0.02,seed=16     | newreno | 0.02",
    })
    void predictionSendsWhatTheGeneralPathSends(final String name, final String faults, final String profile,
        final double minShare) throws Exception
    {
        final Consumer<TcpSettings> settings = s ->
        {
            switch (profile.trim())
            {
                case "small" ->
                {
                    s.sendBufferBytes = 8 * 1024;
                    s.receiveBufferBytes = 8 * 1024;
                }
                case "bare" ->
                {
                    s.timestamps = false;
                    s.sack = false;
                }
                case "newreno" ->
                {
                    s.congestionControl = "newreno";
                    s.noDelay = true;
                }
                default ->
                {
                }
            }
        };
        final Run general = run(faults.trim(), false, settings);
        final Run predicted = run(faults.trim(), true, settings);
        final String what = name.trim() + " (" + faults.trim() + ")";

        assertArrayEquals(TcpTransferTest.expectedHash(BYTES, 2), predicted.hashToServer(), what + ": SHA-256 client→server");
        assertArrayEquals(TcpTransferTest.expectedHash(BYTES, 1), predicted.hashToClient(), what + ": SHA-256 server→client");
        assertSameFrames(general.framesA(), predicted.framesA(), what + ", stack A (server)");
        assertSameFrames(general.framesB(), predicted.framesB(), what + ", stack B (client)");
        assertEquals(general.countersA(), predicted.countersA(), what + ": counters of A");
        assertEquals(general.countersB(), predicted.countersB(), what + ": counters of B");
        assertEquals(general.now(), predicted.now(), what + ": simulated time to finish");

        // The switch works both ways: nothing predicted without it, and the path taken with it.
        assertEquals(0, general.predictedA() + general.predictedB(), what + ": predicted with prediction off");
        final long in = predicted.segmentsInA() + predicted.segmentsInB();
        final long taken = predicted.predictedA() + predicted.predictedB();
        assertTrue(taken >= minShare * in, what + ": only " + taken + " of " + in + " segments were predicted");
    }

    // ------------------------------------------------------------------------------------------
    // Segment level: which segments are predicted, and the guards random runs seldom reach
    // ------------------------------------------------------------------------------------------

    @Test
    void inOrderDataAndNewAcksArePredicted()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        final long before = t.counter(StackCounter.TCP_PREDICTED);
        // Two full segments in one burst: both predicted, one ACK for the pair (RFC 9293 §3.8.6.3 MUST-58).
        t.sendBurst(t.in().payload(bytes(1448, 1)), t.in().seq(t.irs + 1 + 1448).payload(bytes(1448, 2)));
        assertEquals(before + 2, t.counter(StackCounter.TCP_PREDICTED));
        t.recv(t.out().ack(t.irs + 1 + 2 * 1448));
        assertEquals(2 * 1448, t.read().length);
        // The stack sends (after the window update the read earned); the peer's new ACK of it is predicted too.
        t.write(bytes(100, 3));
        t.recv(t.out().ack(t.irs + 1 + 2 * 1448), t.out().ack(t.irs + 1 + 2 * 1448).flags(ACK | PSH).payload(bytes(100, 3)));
        t.send(t.in().seq(t.irs + 1 + 2 * 1448).ack(t.iss + 101));
        assertEquals(before + 3, t.counter(StackCounter.TCP_PREDICTED));
        assertEquals(101, t.conn.bytesAcked());
    }

    @Test
    void anOldAckAtRcvNxtIsNotTakenAsNew()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(200, 4));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(200, 4)));
        t.send(t.in().ack(t.iss + 201));
        final long acked = t.conn.bytesAcked();
        final long predicted = t.counter(StackCounter.TCP_PREDICTED);
        // Same sequence number, same window, a timestamp PAWS lets through: only the ACK is old (SEG.ACK < SND.UNA).
        t.send(t.in().ack(t.iss + 101));
        t.recvNothing();
        assertEquals(predicted, t.counter(StackCounter.TCP_PREDICTED), "an old ACK takes the general path");
        assertEquals(acked, t.conn.bytesAcked(), "an old ACK releases nothing");
        t.write(bytes(50, 5));
        t.recv(t.out().seq(t.iss + 201).flags(ACK | PSH).payload(bytes(50, 5)));
    }

    @Test
    void aChangedWindowOrAFinTakesTheGeneralPath()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        final long predicted = t.counter(StackCounter.TCP_PREDICTED);
        t.send(t.in().window(1000).payload(bytes(10, 6)));
        assertEquals(predicted, t.counter(StackCounter.TCP_PREDICTED), "a window update is not predicted");
        t.send(t.in().seq(t.irs + 11).window(1000).flags(ACK | FIN).payload(bytes(10, 7)));
        assertEquals(predicted, t.counter(StackCounter.TCP_PREDICTED), "a FIN is not predicted");
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertEquals(20, t.read().length);
    }
}
