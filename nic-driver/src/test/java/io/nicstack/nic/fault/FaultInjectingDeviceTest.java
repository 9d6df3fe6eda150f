package io.nicstack.nic.fault;

import io.nicstack.nic.Allocations;
import io.nicstack.nic.FakeDevice;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryWire;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.CachedNanoClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

class FaultInjectingDeviceTest
{
    private static final long MS = 1_000_000;

    private final CachedNanoClock clock = new CachedNanoClock();
    private final FakeDevice inner = new FakeDevice(1500);

    @Test
    void lossDropsTenPercentWithinOnePercent()
    {
        final FaultInjectingDevice device = rx("loss=0.1,seed=7");
        final int sent = 100_000;
        final int received = receiveSequence(device, sent).length;

        assertEquals(0.1, (sent - received) / (double)sent, 0.01, device.toString());
        assertEquals(sent - received, device.rxStats().lost());
        assertEquals(0, device.droppedFrames(), "injected losses are not device drops");
    }

    @Test
    void sameSeedReplaysExactlyAndAnotherSeedDoesNot()
    {
        final String faults = "loss=0.05,dup=0.05,reorder=0.05,corrupt=0.05";
        final int[] first = receiveSequence(rx(faults + ",seed=42"), 10_000);
        final int[] second = receiveSequence(rx(faults + ",seed=42"), 10_000);
        final int[] other = receiveSequence(rx(faults + ",seed=43"), 10_000);

        assertArrayEquals(first, second);
        assertFalse(Arrays.equals(first, other));
    }

    @Test
    void delayHoldsFramesUntilTheClockMoves()
    {
        final FaultInjectingDevice device = rx("delay=1ms,seed=1");
        inner.toReceive.add(frame(60, 1));

        assertEquals(0, device.receive(this::collect, NetDevice.BURST));
        assertFalse(device.awaitReadable(0));
        clock.advance(MS - 1);
        assertEquals(0, device.receive(this::collect, NetDevice.BURST));

        clock.advance(1);
        assertTrue(device.awaitReadable(0));
        assertEquals(1, device.receive(this::collect, NetDevice.BURST));
        assertArrayEquals(frame(60, 1), received.get(0));
        assertEquals(1, device.rxStats().delayed());
    }

    /** Due times compare by difference, as nanoTime values must: a clock that reads negative works like any other. */
    @Test
    void delayedFrameIsNotReadableBeforeItIsDueWhenTheClockIsNegative()
    {
        clock.update(-10 * MS);
        final FaultInjectingDevice device = rx("delay=1ms,seed=1");
        inner.toReceive.add(frame(60, 1));

        assertEquals(0, device.receive(this::collect, NetDevice.BURST));
        assertFalse(device.awaitReadable(0), "due in 1 ms at clock " + clock.nanoTime());
        clock.advance(MS - 1);
        assertFalse(device.awaitReadable(0), "due in 1 ns at clock " + clock.nanoTime());
        assertEquals(0, device.receive(this::collect, NetDevice.BURST));

        clock.advance(1);
        assertTrue(device.awaitReadable(0));
        assertEquals(1, device.receive(this::collect, NetDevice.BURST));
        assertArrayEquals(frame(60, 1), received.get(0));
    }

    @Test
    void delayOnTransmitReleasesOnALaterFlush()
    {
        final FaultInjectingDevice device =
            new FaultInjectingDevice(inner, FaultConfig.NONE, parse("delay=2ms"), clock);
        transmit(device, frame(100, 5));
        assertTrue(inner.committed.isEmpty());

        clock.advance(2 * MS);
        assertTrue(inner.committed.isEmpty(), "held until flush");
        device.flush();
        assertArrayEquals(frame(100, 5), inner.committed.get(0));
    }

    @Test
    void delayRingOverflowDropsAndCounts()
    {
        final FaultInjectingDevice device =
            new FaultInjectingDevice(inner, parse("delay=1ms"), FaultConfig.NONE, clock, 4);
        for (int i = 0; i < 6; i++)
        {
            inner.toReceive.add(frame(60, i));
        }
        device.receive(this::collect, NetDevice.BURST);
        clock.advance(MS);
        device.receive(this::collect, NetDevice.BURST);

        assertEquals(4, received.size());
        assertEquals(2, device.rxStats().overflowDropped());
        assertEquals(2, device.droppedFrames());
    }

    @Test
    void reorderSwapsNeighbours()
    {
        final FaultInjectingDevice device = rx("reorder=1,seed=3");
        assertArrayEquals(new int[]{ 1, 0, 3, 2 }, receiveSequence(device, 4));
        assertEquals(2, device.rxStats().reordered());
    }

    @Test
    void reorderedFrameIsReleasedAfterABoundedTime()
    {
        final FaultInjectingDevice device = rx("reorder=1");
        inner.toReceive.add(frame(60, 9));
        assertEquals(0, device.receive(this::collect, NetDevice.BURST));

        clock.advance(FaultLine.REORDER_TIMEOUT_NANOS);
        assertTrue(device.awaitReadable(0));
        assertEquals(1, device.receive(this::collect, NetDevice.BURST));
    }

    @Test
    void duplicateDeliversTwice()
    {
        final FaultInjectingDevice device = rx("dup=1");
        assertArrayEquals(new int[]{ 0, 0, 1, 1 }, receiveSequence(device, 2));
        assertEquals(2, device.rxStats().duplicated());
    }

    /**
     * NetDevice: receive delivers up to {@code limit} frames. A frame let go behind the next one by reorder, or a
     * duplicate, that does not fit is delivered first by the next call.
     */
    @Test
    void reorderedFrameBeyondTheLimitIsDeliveredByTheNextReceive()
    {
        final FaultInjectingDevice device = rx("reorder=1,seed=1");
        inner.toReceive.add(frame(60, 1));
        inner.toReceive.add(frame(60, 2));

        assertEquals(0, device.receive(this::collect, 1), "frame 1 held behind the next");
        assertEquals(1, device.receive(this::collect, 1), "frame 2 passes, frame 1 waits for room");
        assertTrue(device.awaitReadable(0), "frame 1 is ready");
        assertEquals(1, device.receive(this::collect, 1));
        assertEquals(0, device.receive(this::collect, 1));
        assertEquals(List.of(2, 1), received.stream().map((frame) -> (int)frame[3]).toList());
        assertFalse(device.awaitReadable(0));
    }

    @Test
    void receiveHonoursTheLimitWithDuplicationAndReorderingAndKeepsTheOrder()
    {
        final String faults = "reorder=0.3,dup=0.3,corrupt=0.1,seed=21";
        final int frames = 1_000;
        final int[] inBursts = receiveSequence(rx(faults), frames);

        final FakeDevice oneByOneInner = new FakeDevice(1500);
        final FaultInjectingDevice oneByOne =
            new FaultInjectingDevice(oneByOneInner, parse(faults), FaultConfig.NONE, clock);
        for (int seq = 0; seq < frames; seq++)
        {
            oneByOneInner.toReceive.add(frame(64, seq));
        }
        received.clear();
        final int[] handed = new int[1];
        final FrameHandler counting = (buffer, offset, length) ->
        {
            handed[0]++;
            collect(buffer, offset, length);
        };
        for (int call = 0; call < 3 * frames; call++)
        {
            handed[0] = 0;
            final int delivered = oneByOne.receive(counting, 1);
            assertTrue(delivered <= 1, "call " + call + " delivered " + delivered + ", " + oneByOne.rxStats());
            assertEquals(delivered, handed[0], "frames handed to the handler in call " + call);
        }

        assertTrue(oneByOne.rxStats().duplicated() > 0 && oneByOne.rxStats().reordered() > 0);
        assertArrayEquals(inBursts, received.stream().mapToInt((frame) ->
        {
            final int seq = ByteBuffer.wrap(frame).getInt(0);
            return Arrays.equals(frame, frame(64, seq)) ? seq : -1;
        }).toArray(), "the frames of bursts of BURST, in the same order");
    }

    @Test
    void corruptFlipsExactlyOneBitOfACopy()
    {
        final FaultInjectingDevice device = rx("corrupt=1,seed=11");
        for (int i = 0; i < 100; i++)
        {
            final byte[] sent = frame(60 + i, i);
            inner.toReceive.add(sent);
            received.clear();
            device.receive(this::collect, NetDevice.BURST);

            int flippedBits = 0;
            for (int j = 0; j < sent.length; j++)
            {
                flippedBits += Integer.bitCount((sent[j] ^ received.get(0)[j]) & 0xFF);
                assertEquals(sent[j], inner.rxBuffer.getByte(10 + j), "inner buffer untouched");
            }
            assertEquals(1, flippedBits);
        }
        assertEquals(100, device.rxStats().corrupted());
    }

    @Test
    void rateLimitBoundsBytesPerSecond()
    {
        // 8 Mbit/s is 1,000,000 bytes/s; offer ten times that for one second of clock.
        final FaultInjectingDevice device = rx("rate=8mbps");
        long deliveredBytes = 0;
        for (int tick = 0; tick < 1000; tick++)
        {
            for (int i = 0; i < 10; i++)
            {
                inner.toReceive.add(new byte[1000]);
            }
            received.clear();
            device.receive(this::collect, NetDevice.BURST);
            deliveredBytes += received.size() * 1000L;
            clock.advance(MS);
        }

        final long burst = (long)(1_000_000 * FaultLine.RATE_BURST_NANOS / 1e9);
        assertTrue(deliveredBytes >= 990_000 && deliveredBytes <= 1_000_000 + burst, "delivered " + deliveredBytes);
        assertEquals(10_000 - deliveredBytes / 1000, device.rxStats().rateDropped());
    }

    @Test
    void transmitFaultsReachTheInnerDevice()
    {
        final FaultInjectingDevice device = new FaultInjectingDevice(inner, FaultConfig.NONE, parse("dup=1"), clock);
        transmit(device, frame(70, 1));
        assertEquals(2, inner.committed.size());
        assertArrayEquals(frame(70, 1), inner.committed.get(1));
        assertEquals(1, inner.flushed);
    }

    @Test
    void receiveFlagsPassThroughButACorruptedFrameIsNoLongerTrusted()
    {
        inner.receiveFlags = FrameHandler.RX_L4_CHECKSUM_TRUSTED;
        final FaultInjectingDevice device = rx("corrupt=0.5,seed=13");
        int intact = 0;
        int corrupted = 0;
        for (int i = 0; i < 200; i++)
        {
            final byte[] sent = frame(64, i);
            inner.toReceive.add(sent);
            received.clear();
            receivedFlags.clear();
            assertEquals(1, device.receive(collectWithFlags, NetDevice.BURST));

            if (Arrays.equals(sent, received.get(0)))
            {
                intact++;
                assertEquals(FrameHandler.RX_L4_CHECKSUM_TRUSTED, receivedFlags.get(0), "frame " + i);
            }
            else
            {
                corrupted++;
                assertEquals(0, receivedFlags.get(0), "corrupted frame " + i + " must be verified in software");
            }
        }
        assertEquals(device.rxStats().corrupted(), corrupted);
        assertTrue(intact > 50 && corrupted > 50, intact + " intact, " + corrupted + " corrupted");
    }

    @Test
    void heldDuplicatedAndReorderedFramesKeepTheirFlags()
    {
        inner.receiveFlags = FrameHandler.RX_L4_CHECKSUM_TRUSTED;
        final FaultInjectingDevice device = rx("reorder=1,dup=1,delay=1ms,seed=2");
        inner.toReceive.add(frame(60, 0));
        inner.toReceive.add(frame(60, 1));
        assertEquals(0, device.receive(collectWithFlags, NetDevice.BURST));

        clock.advance(MS + FaultLine.REORDER_TIMEOUT_NANOS);
        while (device.receive(collectWithFlags, NetDevice.BURST) > 0)
        {
            clock.advance(MS);
        }

        assertEquals(4, received.size(), device.rxStats().toString());
        assertEquals(List.of(1, 1, 1, 1), receivedFlags);
        assertNotEquals(0, device.rxStats().delayed());
        assertNotEquals(0, device.rxStats().reordered());
    }

    @Test
    void transmitChecksumOffloadIsNotOffered()
    {
        final FaultInjectingDevice device = new FaultInjectingDevice(inner, FaultConfig.NONE, FaultConfig.NONE, clock);
        assertFalse(device.transmitChecksumOffload());

        device.claim().putBytes(0, frame(60, 1));
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> device.commit(60, NetDevice.TX_L4_CHECKSUM_PARTIAL));
        assertEquals("fault:fake does not offload checksums (flags 1)", ex.getMessage());
        device.commit(60, 0);
        assertArrayEquals(frame(60, 1), inner.committed.get(0));
    }

    @Test
    void toStringCarriesBothSeeds()
    {
        final FaultInjectingDevice device =
            new FaultInjectingDevice(inner, parse("loss=0.1,seed=5"), parse("dup=0.2,seed=6"), clock);
        assertEquals(
            "fault:fake rx[loss=0.1,reorder=0,dup=0,corrupt=0,delay=0,rate=0,seed=5] " +
            "tx[loss=0,reorder=0,dup=0.2,corrupt=0,delay=0,rate=0,seed=6]",
            device.toString());
    }

    @Test
    void noAllocationPerFrameWithEveryFaultOverAMemoryWire()
    {
        final MemoryWire wire = MemoryWire.pair(1500, 256);
        final FaultConfig faults = parse("loss=0.01,reorder=0.02,dup=0.01,corrupt=0.01,delay=10us,rate=1gbps,seed=9");
        final FaultInjectingDevice a = new FaultInjectingDevice(wire.a(), faults, faults, clock);
        final FaultInjectingDevice b = new FaultInjectingDevice(wire.b(), faults, faults, clock);
        final FrameHandler sink = (buffer, offset, length) -> {};

        pump(a, b, sink, 50_000);
        final long before = Allocations.currentThread();
        pump(a, b, sink, 10_000);
        final long allocated = Allocations.currentThread() - before;

        assertTrue(allocated < 1024, "allocated " + allocated + " bytes for 10,000 frames");
        assertNotEquals(0, a.txStats().corrupted());
        assertNotEquals(0, b.rxStats().delayed());
    }

    private void pump(final NetDevice a, final NetDevice b, final FrameHandler sink, final int frames)
    {
        for (int i = 0; i < frames; i++)
        {
            a.claim().putInt(0, i);
            a.commit(200);
            a.flush();
            b.receive(sink, NetDevice.BURST);
            clock.advance(1_000);
        }
    }

    private final List<byte[]> received = new ArrayList<>();
    private final List<Integer> receivedFlags = new ArrayList<>();
    private final FrameHandler collectWithFlags = new FrameHandler()
    {
        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length)
        {
            fail("the fault injector delivered a frame without flags");
        }

        @Override
        public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
        {
            collect(buffer, offset, length);
            receivedFlags.add(flags);
        }
    };

    private void collect(final DirectBuffer buffer, final int offset, final int length)
    {
        final byte[] bytes = new byte[length];
        buffer.getBytes(offset, bytes);
        received.add(bytes);
    }

    private FaultInjectingDevice rx(final String faults)
    {
        return new FaultInjectingDevice(inner, parse(faults), FaultConfig.NONE, clock);
    }

    private static FaultConfig parse(final String faults)
    {
        return FaultConfig.parse(faults.contains("seed=") ? faults : faults + ",seed=1");
    }

    /** Offer frames numbered 0..count-1 and return the numbers received, in order; corrupted frames count as -1. */
    private int[] receiveSequence(final FaultInjectingDevice device, final int count)
    {
        received.clear();
        for (int seq = 0; seq < count; seq++)
        {
            inner.toReceive.add(frame(64, seq));
            if ((seq & 15) == 15 || seq == count - 1)
            {
                while (device.receive(this::collect, NetDevice.BURST) > 0)
                {
                    continue;
                }
            }
        }

        return received.stream().mapToInt((frame) ->
        {
            final int seq = ByteBuffer.wrap(frame).getInt(0);
            return Arrays.equals(frame, frame(64, seq)) ? seq : -1;
        }).toArray();
    }

    private static void transmit(final NetDevice device, final byte[] frame)
    {
        device.claim().putBytes(0, frame);
        device.commit(frame.length);
        device.flush();
    }

    /** A frame whose first four bytes are {@code seq} big-endian and the rest a pattern derived from it. */
    private static byte[] frame(final int length, final int seq)
    {
        final byte[] bytes = new byte[length];
        for (int i = 4; i < length; i++)
        {
            bytes[i] = (byte)(seq * 31 + i);
        }
        bytes[0] = (byte)(seq >>> 24);
        bytes[1] = (byte)(seq >>> 16);
        bytes[2] = (byte)(seq >>> 8);
        bytes[3] = (byte)seq;
        return bytes;
    }
}
