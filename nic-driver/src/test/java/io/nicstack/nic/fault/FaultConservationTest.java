package io.nicstack.nic.fault;

import io.nicstack.nic.FakeDevice;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.CachedNanoClock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Under random fault settings (every fault on or off, delay up to 5 ms, rate 1 Mb/s to 1 Gb/s, room for 1 to 64 held
 * frames) and random traffic both ways, with bursts, receive limits and clock steps at random: every frame that went in
 * comes out, or is counted as lost, policed or overflowed, and each duplicate adds one ({@link FaultStats}); and the
 * same settings, replayed from {@link FaultConfig#toString()}, give the same frames in the same order. Adopted from the
 * nic-driver review's probe, which passed.
 */
class FaultConservationTest
{
    private static final int CONFIGS = 6;
    private static final int STEPS = 20_000;

    /** Fixed seeds, and one new each run ({@code -Dnicstack.fuzz.seed=N} replays it); the seed names each run. */
    static LongStream seeds()
    {
        return LongStream.of(1, 2, 3, Long.getLong("nicstack.fuzz.seed", System.nanoTime()));
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void everyFrameIsDeliveredOrCountedAndAReplayIsTheSame(final long seed)
    {
        final SplittableRandom r = new SplittableRandom(seed);
        for (int c = 0; c < CONFIGS; c++)
        {
            final FaultConfig config = new FaultConfig(
                r.nextBoolean() ? r.nextDouble() * 0.2 : 0,
                r.nextBoolean() ? r.nextDouble() * 0.5 : 0,
                r.nextBoolean() ? r.nextDouble() * 0.5 : 0,
                r.nextBoolean() ? r.nextDouble() * 0.1 : 0,
                r.nextBoolean() ? r.nextInt(5_000_000) : 0,
                r.nextBoolean() ? 1_000_000L * (1 + r.nextInt(1000)) : 0,
                r.nextLong());
            final int hold = 1 + r.nextInt(64);
            final long traffic = r.nextLong();
            final String where = "seed " + seed + " config " + c + " " + config + " hold " + hold;
            final List<String> first = run(config, traffic, hold, where);
            assertEquals(first, run(FaultConfig.parse(config.toString()), traffic, hold, where),
                where + ": a replay from toString()");
        }
    }

    /**
     * Drive a device with {@code config} in both directions (the transmit seed one more) through random traffic from
     * {@code trafficSeed}, then until nothing is held; check conservation and return what came out, in order.
     */
    private static List<String> run(final FaultConfig config, final long trafficSeed, final int hold, final String where)
    {
        final SplittableRandom r = new SplittableRandom(trafficSeed);
        final CachedNanoClock clock = new CachedNanoClock();
        clock.update(r.nextLong());
        final FakeDevice inner = new FakeDevice(1500);
        final FaultInjectingDevice device =
            new FaultInjectingDevice(inner, config, config.withSeed(config.seed() + 1), clock, hold);
        final List<String> out = new ArrayList<>();
        final FrameHandler handler = new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                fail("flags are passed with every frame");
            }

            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
            {
                out.add("rx " + length + " #" + buffer.getInt(offset, ByteOrder.BIG_ENDIAN) + " flags " + flags);
            }
        };

        int received = 0;
        int transmitted = 0;
        for (int step = 0; step < STEPS; step++)
        {
            for (int k = r.nextInt(4); k > 0; k--)
            {
                final byte[] frame = new byte[4 + r.nextInt(1510)];
                ByteBuffer.wrap(frame).putInt(0, received++);
                inner.toReceive.add(frame);
            }
            if (r.nextInt(3) == 0)
            {
                device.claim().putInt(0, transmitted++, ByteOrder.BIG_ENDIAN);
                device.commit(4 + r.nextInt(1510));
            }
            if (r.nextInt(5) == 0)
            {
                device.flush();
            }
            device.receive(handler, r.nextInt(NetDevice.BURST + 1));
            clock.advance(r.nextInt(3) == 0 ? r.nextInt(3_000_000) : r.nextInt(1000));
        }
        for (int i = 0; i < STEPS; i++) // 20 s of clock: every held frame is due
        {
            device.receive(handler, NetDevice.BURST);
            clock.advance(1_000_000);
        }
        assertFalse(device.awaitReadable(0), where + ": still readable after the drain");
        for (int i = 0; i < 2; i++)
        {
            clock.advance(config.delayNanos() + 10_000_000L);
            device.flush();
        }

        final FaultStats rx = device.rxStats();
        assertEquals(received - rx.lost() - rx.rateDropped() - rx.overflowDropped() + rx.duplicated(), out.size(),
            where + ": received " + received + " " + rx);
        final FaultStats tx = device.txStats();
        assertEquals(transmitted - tx.lost() - tx.rateDropped() - tx.overflowDropped() + tx.duplicated(),
            inner.committed.size(), where + ": transmitted " + transmitted + " " + tx);
        for (final byte[] frame : inner.committed)
        {
            out.add("tx " + frame.length + " #" + ByteBuffer.wrap(frame).getInt(0));
        }
        return out;
    }
}
