package io.nicstack.nic.mem;

import io.nicstack.nic.Allocations;
import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemoryWireTest
{
    private final MemoryWire wire = MemoryWire.pair(1500, 64);

    @Test
    void endsHaveNamesAndFrameSize()
    {
        assertEquals("mem:a", wire.a().name());
        assertEquals("mem:b", wire.b().name());
        assertEquals(1500, wire.b().mtu());
        assertEquals(1514, wire.a().maxFrameLength());
        assertEquals(1514, wire.a().claim().capacity());
    }

    @Test
    void frameCrossesInBothDirections()
    {
        final byte[] ab = frame(60, 1);
        final byte[] ba = frame(1514, 2);

        send(wire.a(), ab);
        send(wire.b(), ba);

        assertArrayEquals(new Object[]{ ab }, receiveAll(wire.b()).toArray());
        assertArrayEquals(new Object[]{ ba }, receiveAll(wire.a()).toArray());
    }

    @Test
    void framesArriveThroughTheFourArgumentCallWithoutFlagsAndNoOffloadIsOffered()
    {
        final List<Integer> flags = new ArrayList<>();
        final FrameHandler handler = recordingFlags(flags);

        assertFalse(wire.a().transmitChecksumOffload());
        wire.a().claim();
        assertThrows(IllegalArgumentException.class, () -> wire.a().commit(60, NetDevice.TX_L4_CHECKSUM_PARTIAL));
        wire.a().commit(60, 0);
        wire.a().flush();

        assertEquals(1, wire.b().receive(handler, NetDevice.BURST));
        assertEquals(List.of(0), flags);
    }

    /** With offload, a frame committed with a partial checksum arrives trusted; one committed without, does not. */
    @Test
    void anOffloadingWireCarriesTheChecksumFlagPerFrame()
    {
        final MemoryWire offloading = MemoryWire.pair(1500, 16, true);
        final List<Integer> flags = new ArrayList<>();
        final FrameHandler handler = recordingFlags(flags);
        assertTrue(offloading.a().transmitChecksumOffload());
        offloading.a().claim();
        offloading.a().commit(60, NetDevice.TX_L4_CHECKSUM_PARTIAL);
        offloading.a().claim();
        offloading.a().commit(60);
        offloading.a().claim();
        assertThrows(IllegalArgumentException.class, () -> offloading.a().commit(60, 2));
        offloading.a().commit(60, 0);
        offloading.a().flush();

        assertEquals(3, offloading.b().receive(handler, NetDevice.BURST));
        assertEquals(List.of(FrameHandler.RX_L4_CHECKSUM_TRUSTED, 0, 0), flags);
    }

    @Test
    void nothingCrossesBeforeFlushOrAfterAbort()
    {
        wire.a().claim().putByte(0, (byte)1);
        wire.a().commit(1);
        assertFalse(wire.b().awaitReadable(0));

        wire.a().claim();
        wire.a().abort();
        assertEquals(1, wire.a().flush());
        assertTrue(wire.b().awaitReadable(0));
        assertEquals(1, receiveAll(wire.b()).size());
    }

    @Test
    void fullQueueDropsAndCounts()
    {
        final MemoryWire small = MemoryWire.pair(1500, 4);
        for (int i = 0; i < 6; i++)
        {
            send(small.a(), frame(64, i));
        }

        final List<byte[]> received = receiveAll(small.b());
        assertEquals(4, received.size());
        assertArrayEquals(frame(64, 3), received.get(3));
        assertEquals(2, small.a().droppedFrames());

        send(small.a(), frame(64, 9));
        assertArrayEquals(frame(64, 9), receiveAll(small.b()).get(0), "space is back once the peer has read");
    }

    @Test
    void claimFlushesWhenBurstIsQueued()
    {
        for (int i = 0; i <= NetDevice.BURST; i++)
        {
            wire.a().claim().putInt(0, i);
            wire.a().commit(4);
        }

        assertEquals(NetDevice.BURST, receiveAll(wire.b()).size());
        assertEquals(1, wire.a().flush());
    }

    @Test
    void receiveHonoursLimit()
    {
        for (int i = 0; i < 10; i++)
        {
            wire.a().claim();
            wire.a().commit(60);
        }
        wire.a().flush();

        assertEquals(3, wire.b().receive((buffer, offset, length) -> {}, 3));
        assertEquals(7, wire.b().receive((buffer, offset, length) -> {}, 100));
    }

    @Test
    void rejectsBadLengthsAndArguments()
    {
        assertThrows(IllegalStateException.class, () -> wire.a().commit(1));
        wire.a().claim();
        assertThrows(IllegalArgumentException.class, () -> wire.a().commit(1515));
        assertThrows(IllegalArgumentException.class, () -> MemoryWire.pair(20, 4));
        assertThrows(IllegalArgumentException.class, () -> MemoryWire.pair(1500, 0));
    }

    @Test
    void awaitReadableTimesOut()
    {
        final long start = System.nanoTime();
        assertFalse(wire.b().awaitReadable(2_000_000));
        assertTrue(System.nanoTime() - start >= 2_000_000);
    }

    /** Each end on its own thread through a queue small enough to overflow: frames arrive in order or are counted. */
    @Test
    void twoThreadsDriveTheEnds() throws InterruptedException
    {
        final MemoryWire small = MemoryWire.pair(1500, 16);
        final int frames = 500_000;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread sender = new Thread(() ->
        {
            final MemoryDevice a = small.a();
            for (int seq = 0; seq < frames; seq++)
            {
                final MutableDirectBuffer frame = a.claim();
                frame.putInt(0, seq);
                frame.putInt(60 - 4, ~seq);
                a.commit(60);
                if ((seq & 7) == 7)
                {
                    a.flush();
                }
            }
            a.flush();
        }, "mem-a");
        sender.setUncaughtExceptionHandler((t, ex) -> failure.set(ex));

        final long[] state = { -1, 0 }; // last sequence, frames received
        final FrameHandler checker = (buffer, offset, length) ->
        {
            final int seq = buffer.getInt(offset);
            if (length != 60 || seq <= state[0] || buffer.getInt(offset + 56) != ~seq)
            {
                throw new AssertionError("after " + state[0] + " got " + seq + " length " + length);
            }
            state[0] = seq;
            state[1]++;
        };

        sender.start();
        while (sender.isAlive() || small.b().awaitReadable(0))
        {
            small.b().receive(checker, NetDevice.BURST);
        }
        sender.join();

        assertNull(failure.get());
        assertEquals(frames, state[1] + small.a().droppedFrames(), "every frame arrived or was counted as dropped");
    }

    @Test
    void noAllocationPerFrame()
    {
        final MemoryDevice a = wire.a();
        final MemoryDevice b = wire.b();
        final FrameHandler sink = (buffer, offset, length) -> {};

        pump(a, b, sink, 50_000);
        final long before = Allocations.currentThread();
        pump(a, b, sink, 10_000);
        final long allocated = Allocations.currentThread() - before;

        assertTrue(allocated < 1024, "allocated " + allocated + " bytes for 10,000 frames");
    }

    private static void pump(final MemoryDevice a, final MemoryDevice b, final FrameHandler sink, final int frames)
    {
        for (int i = 0; i < frames; i++)
        {
            a.claim().putInt(0, i);
            a.commit(64);
            a.flush();
            b.receive(sink, NetDevice.BURST);
        }
    }

    static void send(final NetDevice device, final byte[] frame)
    {
        device.claim().putBytes(0, frame);
        device.commit(frame.length);
        device.flush();
    }

    static List<byte[]> receiveAll(final NetDevice device)
    {
        final List<byte[]> frames = new ArrayList<>();
        final FrameHandler collect = (buffer, offset, length) -> frames.add(copy(buffer, offset, length));
        while (device.receive(collect, NetDevice.BURST) > 0)
        {
            continue;
        }
        return frames;
    }

    static byte[] copy(final DirectBuffer buffer, final int offset, final int length)
    {
        final byte[] bytes = new byte[length];
        buffer.getBytes(offset, bytes);
        return bytes;
    }

    static byte[] frame(final int length, final int seed)
    {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = (byte)(seed * 31 + i);
        }
        return bytes;
    }

    /** A handler that records each frame's flags, or -1 for a frame that came through the three-argument call. */
    private static FrameHandler recordingFlags(final List<Integer> flags)
    {
        return new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                flags.add(-1);
            }

            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int frameFlags)
            {
                flags.add(frameFlags);
            }
        };
    }
}
