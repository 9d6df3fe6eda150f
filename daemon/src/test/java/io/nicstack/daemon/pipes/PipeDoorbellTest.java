package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;

/**
 * The doorbell bitmap from the daemon's side: a round reads the positions of the slots the app rang (and of those the
 * daemon has business with), and the full scan at the housekeeping cadence is a counted safety net. The app is played
 * by hand ({@link TestApp}); one simulated clock drives both stacks and the server's housekeeping.
 */
class PipeDoorbellTest
{
    private static final int A_IP = 0xC612_0002; // 198.18.0.2
    private static final int RING = 1 << 14;
    private static final int PIPE = 1 << 16;

    @TempDir
    Path shm;

    private long now = 1_000_000_000L;
    private NetStack a;
    private NetStack b;
    private PipeCounters counters;
    private PipeServer server;

    /** B's end of one connection: what it read. */
    private static final class Peer implements TcpHandler
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[1 << 20]);
        int read;

        void drain(final TcpConnection c)
        {
            int n;
            while (read < buffer.capacity() && (n = c.read(buffer, read, buffer.capacity() - read)) > 0)
            {
                read += n;
            }
        }
    }

    @BeforeEach
    void setUp() throws IOException
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        counters = PipeCounters.inMemory();
        server = new PipeServer(a, shm, counters, () -> now, () -> now / 1_000_000L, 1L << 30,
            new PrintStream(new java.io.ByteArrayOutputStream(), true)).scanInline().start();
    }

    @AfterEach
    void tearDown()
    {
        server.close();
    }

    private int step()
    {
        final int work = server.doWork() + a.poll(now) + b.poll(now);
        now += work > 0 ? 20_000L : 1_000_000L;
        return work;
    }

    /** One round of the server and both stacks without moving the clock: never a housekeeping, so never a full scan. */
    private void roundWithoutFullScan()
    {
        server.doWork();
        a.poll(now);
        b.poll(now);
    }

    private void runUntil(final BooleanSupplier done, final long maxNanos, final String what)
    {
        final long end = now + maxNanos;
        while (!done.getAsBoolean())
        {
            if (now - end > 0)
            {
                throw new AssertionError("timed out waiting for " + what + "\n" + counters);
            }
            step();
        }
    }

    /** Past two housekeeping ticks: two full scans, the second counting what the first found unrung. */
    private void twoFullScans()
    {
        final long end = now + 2 * PipeServer.HOUSEKEEPING_NANOS + 1;
        while (now - end < 0)
        {
            step();
        }
    }

    private TestApp attach(final String name, final int maxConnections) throws IOException
    {
        final TestApp app = new TestApp(server.appsDirectory(), name, ProcessHandle.current().pid(), RING, PIPE,
            maxConnections).attach();
        runUntil(() -> app.state() != AppFileDescriptor.STATE_ATTACHING, 1_000_000_000L, "attach");
        assertEquals(AppFileDescriptor.STATE_ATTACHED, app.state());
        return app;
    }

    private TestApp.Event await(final TestApp app, final int type)
    {
        final TestApp.Event[] found = new TestApp.Event[1];
        runUntil(() -> (found[0] = app.take(type)) != null, 5_000_000_000L, "event " + type);
        return found[0];
    }

    /** LISTEN on {@code port}, a connection from B: the slot it took. */
    private int accept(final TestApp app, final int port, final Peer peer, final TcpConnection[] remote)
    {
        app.send(Protocol.LISTEN, 7, port, 8);
        await(app, Protocol.LISTENING);
        remote[0] = b.tcp().connect(A_IP, port, peer, null);
        final int slot = Protocol.slotOf(await(app, Protocol.ACCEPTED).longAt(0));
        runUntil(() -> remote[0].state() == io.nicstack.stack.tcp.TcpState.ESTABLISHED, 1_000_000_000L, "established");
        return slot;
    }

    private static byte[] bytes(final long seed, final int length)
    {
        final byte[] bytes = new byte[length];
        new SplittableRandom(seed).nextBytes(bytes);
        return bytes;
    }

    @Test
    void rungSlotIsServedInTheNextRoundAndItsBitTaken() throws IOException
    {
        final TestApp app = attach("rung", 4);
        final Peer peer = new Peer();
        final TcpConnection[] remote = new TcpConnection[1];
        final int slot = accept(app, 9000, peer, remote);
        step();

        final byte[] out = bytes(1, 1000);
        final long doorbells = counters.get(PipeCounter.DOORBELLS);
        assertEquals(out.length, app.write(slot, out, 0, out.length));
        assertTrue((app.doorbellWord(slot) & AppFileDescriptor.doorbellBit(slot)) != 0, "the app rang");
        roundWithoutFullScan();
        assertEquals(0, app.doorbellWord(slot), "the daemon took the bit");
        assertEquals(doorbells + 1, counters.get(PipeCounter.DOORBELLS), "served in the round after the bell");
        peer.drain(remote[0]);
        assertEquals(out.length, peer.read, "the bytes left in that round");

        // The RX head: B sends, the app reads and rings; the window opens again without a full scan.
        final byte[] in = bytes(2, 3000);
        remote[0].write(new UnsafeBuffer(in), 0, in.length);
        final byte[] sink = new byte[in.length];
        final int[] got = {0};
        runUntil(() -> (got[0] += app.read(slot, sink, sink.length - got[0])) == in.length, 1_000_000_000L, "inbound");
        twoFullScans();
        assertEquals(0, counters.get(PipeCounter.DOORBELLS_MISSED), "every moved position was rung");
        assertEquals(0, counters.get(PipeCounter.DOORBELLS_IGNORED));
        app.close();
    }

    /**
     * An app that moves its tail without ringing is served by the safety net only, within a housekeeping tick, and
     * counted. Before the doorbells every round read every slot, and the bytes left in the round after the commit.
     */
    @Test
    void unrungTailWaitsForTheFullScanAndIsCountedMissed() throws IOException
    {
        final TestApp app = attach("silent", 4);
        final Peer peer = new Peer();
        final TcpConnection[] remote = new TcpConnection[1];
        final int slot = accept(app, 9001, peer, remote);
        step();
        roundWithoutFullScan();

        app.rings = false;
        final byte[] out = bytes(3, 1000);
        final long doorbells = counters.get(PipeCounter.DOORBELLS);
        assertEquals(out.length, app.write(slot, out, 0, out.length));
        for (int i = 0; i < 10; i++)
        {
            roundWithoutFullScan();
        }
        peer.drain(remote[0]);
        assertEquals(doorbells, counters.get(PipeCounter.DOORBELLS), "no round read the unrung slot");
        assertEquals(0, peer.read, "nothing left without the bell");

        runUntil(() ->
        {
            peer.drain(remote[0]);
            return peer.read == out.length;
        }, PipeServer.HOUSEKEEPING_NANOS + 1, "the full scan to find the bytes");
        assertArrayEquals(out, Arrays.copyOf(peer.buffer.byteArray(), peer.read));
        twoFullScans();
        assertEquals(1, counters.get(PipeCounter.DOORBELLS_MISSED), "the unrung tail counted once");
        app.close();
    }

    /**
     * The safety net sweeps {@link AppSession#SWEEP_WORDS} words of slots per round: an unrung tail of a slot past the
     * first round's share is found by a later round of the same sweep, within the tick, and counted once.
     */
    @Test
    void sweepReachesTheSlotsPastItsFirstRound() throws IOException
    {
        sweepOverManySlots(false);
    }

    /**
     * A tick that comes while a sweep is still going on (rounds slower than a tick over the slots, or more slots than a
     * tick's rounds can sweep) lets that sweep finish. It restarted it from word 0, so with a tick every round the
     * words past the first round's share were never swept, and the sweep's end, which clears the bits of slots never
     * built, never came (a review's finding). Here a tick's scanAll comes before every round, and a bit far past the
     * built slots must still be cleared and counted.
     */
    @Test
    void aSweepStillGoingOnIsNotRestartedByTheNextTick() throws IOException
    {
        sweepOverManySlots(true);
    }

    private void sweepOverManySlots(final boolean tickEveryRound) throws IOException
    {
        final int connections = AppSession.SWEEP_WORDS * 64 + 10;
        final TestApp app = attach("many", connections);
        b.tcp().defaults().sendBufferBytes = 1024;
        b.tcp().defaults().receiveBufferBytes = 1024;
        app.send(Protocol.LISTEN, 7, 9200, 4096);
        await(app, Protocol.LISTENING);
        final TcpHandler none = new TcpHandler()
        {
        };
        final java.util.Map<Integer, TcpConnection> byLocalPort = new java.util.HashMap<>();
        int last = -1;
        int lastPort = -1;
        int accepted = 0;
        for (int i = 0; i < connections; i += 200)
        {
            for (int j = i; j < Math.min(connections, i + 200); j++)
            {
                final TcpConnection c = b.tcp().connect(A_IP, 9200, none, null);
                byLocalPort.put(c.localPort(), c);
            }
            final int target = Math.min(connections, i + 200);
            final int[] count = {accepted};
            final int[] highest = {last, lastPort};
            runUntil(() ->
            {
                TestApp.Event e;
                while ((e = app.take(Protocol.ACCEPTED)) != null)
                {
                    count[0]++;
                    final int slot = Protocol.slotOf(e.longAt(0));
                    if (slot > highest[0])
                    {
                        highest[0] = slot;
                        highest[1] = e.intAt(16);
                    }
                }
                return count[0] >= target;
            }, 10_000_000_000L, "accepted " + target);
            accepted = count[0];
            last = highest[0];
            lastPort = highest[1];
        }
        assertTrue(last >= AppSession.SWEEP_WORDS * 64, "a slot past the first round's share: " + last);
        final TcpConnection remote = byLocalPort.get(lastPort);
        twoFullScans();
        if (tickEveryRound)
        {
            final int lastWord = AppFileDescriptor.doorbellsOffset(RING) + AppFileDescriptor.DOORBELLS_LENGTH - Long.BYTES;
            app.file.putLongVolatile(lastWord, 1L);
            final long ignoredBefore = counters.get(PipeCounter.DOORBELLS_IGNORED);
            final AppSession session = server.session(app.path);
            for (int round = 0; round < 4 * connections / (AppSession.SWEEP_WORDS * 64) + 4; round++)
            {
                session.scanAll();
                server.doWork();
            }
            assertEquals(0L, app.file.getLongVolatile(lastWord), "the sweep reached its end and cleared the stray bit");
            assertEquals(ignoredBefore + 1, counters.get(PipeCounter.DOORBELLS_IGNORED));
            app.close();
            return;
        }
        final long missedBefore = counters.get(PipeCounter.DOORBELLS_MISSED);

        app.rings = false;
        final byte[] out = bytes(10, 700);
        assertEquals(out.length, app.write(last, out, 0, out.length));
        final Peer peer = new Peer();
        runUntil(() ->
        {
            peer.drain(remote);
            return peer.read == out.length;
        }, PipeServer.HOUSEKEEPING_NANOS + 1_000_000L, "the sweep to find the bytes");
        assertArrayEquals(out, Arrays.copyOf(peer.buffer.byteArray(), peer.read));
        twoFullScans();
        assertEquals(missedBefore + 1, counters.get(PipeCounter.DOORBELLS_MISSED));
        app.close();
    }

    /**
     * The full scan may read a position the app stored and has not rung yet (it rings just after): not missed, since
     * the bell comes before the next full scan.
     */
    @Test
    void bellThatComesAfterTheFullScanIsNotMissed() throws IOException
    {
        final TestApp app = attach("late", 4);
        final Peer peer = new Peer();
        final TcpConnection[] remote = new TcpConnection[1];
        final int slot = accept(app, 9002, peer, remote);
        twoFullScans();

        app.rings = false;
        final byte[] out = bytes(4, 500);
        app.write(slot, out, 0, out.length);
        // The next housekeeping's full scan reads the tail before its bell.
        runUntil(() ->
        {
            peer.drain(remote[0]);
            return peer.read == out.length;
        }, PipeServer.HOUSEKEEPING_NANOS + 1_000_000L, "the full scan to find the bytes");
        app.ring(slot); // the bell, late
        twoFullScans();
        assertEquals(0, counters.get(PipeCounter.DOORBELLS_MISSED));
        app.close();
    }

    /**
     * A hostile app sets every bit of its bitmap (and bits past its slots) every round: its own bytes still flow, bits
     * of slots it does not use are counted and ignored, and an honest app beside it loses nothing and misses nothing.
     */
    @Test
    void allBitsSetHurtsNoOneAndIsIgnoredWhereNoSlotIs() throws IOException
    {
        final TestApp hostile = attach("hostile", 8);
        final TestApp honest = attach("honest", 8);
        final Peer hostilePeer = new Peer();
        final Peer honestPeer = new Peer();
        final TcpConnection[] hostileRemote = new TcpConnection[1];
        final TcpConnection[] honestRemote = new TcpConnection[1];
        final int hostileSlot = accept(hostile, 9003, hostilePeer, hostileRemote);
        final int honestSlot = accept(honest, 9004, honestPeer, honestRemote);
        final int doorbells = AppFileDescriptor.doorbellsOffset(RING);
        final Runnable allOnes = () ->
        {
            for (int at = 0; at < AppFileDescriptor.DOORBELLS_LENGTH; at += Long.BYTES)
            {
                hostile.file.putLongVolatile(doorbells + at, -1L);
            }
        };

        final int total = 200_000;
        final byte[] hostileOut = bytes(5, total);
        final byte[] honestOut = bytes(6, total);
        final int[] written = {0, 0};
        runUntil(() ->
        {
            allOnes.run();
            written[0] += hostile.write(hostileSlot, hostileOut, written[0], Math.min(total - written[0], 7000));
            written[1] += honest.write(honestSlot, honestOut, written[1], Math.min(total - written[1], 7000));
            hostilePeer.drain(hostileRemote[0]);
            honestPeer.drain(honestRemote[0]);
            return hostilePeer.read == total && honestPeer.read == total;
        }, 30_000_000_000L, "both streams");
        assertArrayEquals(hostileOut, Arrays.copyOf(hostilePeer.buffer.byteArray(), total));
        assertArrayEquals(honestOut, Arrays.copyOf(honestPeer.buffer.byteArray(), total));
        twoFullScans();
        assertEquals(0, counters.get(PipeCounter.DOORBELLS_MISSED));
        assertTrue(counters.get(PipeCounter.DOORBELLS_IGNORED) >= AppFileDescriptor.DOORBELLS_LENGTH * 8 - 64,
            "bits of slots it does not use: " + counters.get(PipeCounter.DOORBELLS_IGNORED));
        hostile.close();
        honest.close();
    }

    /**
     * Garbage in the bitmap (random words, rewritten every round) and an app that never rings: its bytes flow at the
     * safety net's pace, counted, and the honest app beside it is served by its bells alone.
     */
    @Test
    void garbageBitsAndNoBellsLoseNothing() throws IOException
    {
        final TestApp hostile = attach("garbage", 8);
        final TestApp honest = attach("honest2", 8);
        final Peer hostilePeer = new Peer();
        final Peer honestPeer = new Peer();
        final TcpConnection[] hostileRemote = new TcpConnection[1];
        final TcpConnection[] honestRemote = new TcpConnection[1];
        final int hostileSlot = accept(hostile, 9005, hostilePeer, hostileRemote);
        final int honestSlot = accept(honest, 9006, honestPeer, honestRemote);
        hostile.rings = false;
        final int doorbells = AppFileDescriptor.doorbellsOffset(RING);
        final SplittableRandom random = new SplittableRandom(7);

        final int total = 100_000;
        final byte[] hostileOut = bytes(8, total);
        final byte[] honestOut = bytes(9, total);
        final int[] written = {0, 0};
        runUntil(() ->
        {
            for (int i = 0; i < 4; i++)
            {
                // Never the bit of its own slot: a bell by chance is not what this test is about.
                final int at = random.nextInt(AppFileDescriptor.DOORBELLS_LENGTH / Long.BYTES) * Long.BYTES;
                final long garbage = random.nextLong() & (at == AppFileDescriptor.doorbellOffset(RING, hostileSlot) - doorbells
                    ? ~AppFileDescriptor.doorbellBit(hostileSlot) : -1L);
                hostile.file.putLongVolatile(doorbells + at, garbage);
            }
            written[0] += hostile.write(hostileSlot, hostileOut, written[0], Math.min(total - written[0], 20_000));
            written[1] += honest.write(honestSlot, honestOut, written[1], Math.min(total - written[1], 20_000));
            hostilePeer.drain(hostileRemote[0]);
            honestPeer.drain(honestRemote[0]);
            return hostilePeer.read == total && honestPeer.read == total;
        }, 60_000_000_000L, "both streams");
        assertArrayEquals(hostileOut, Arrays.copyOf(hostilePeer.buffer.byteArray(), total));
        assertArrayEquals(honestOut, Arrays.copyOf(honestPeer.buffer.byteArray(), total));
        twoFullScans();
        assertTrue(counters.get(PipeCounter.DOORBELLS_MISSED) > 0, "the silent app shows in the counter");
        assertTrue(counters.get(PipeCounter.DOORBELLS_IGNORED) > 0, "garbage bits counted");
        hostile.close();
        honest.close();
    }

    /**
     * The app rings from a thread of its own while the loop runs rounds: the daemon swaps each word to 0 before it reads
     * the positions, so no bell is lost, and the full scans find nothing moved without one. A daemon that read the
     * positions first and cleared the bits after would lose the bells set in between, and the full scans count them.
     */
    @Test
    void bellsRungConcurrentlyAreNeverLost() throws Exception
    {
        final TestApp app = attach("racer", 64);
        final int connections = 8;
        final Peer[] peers = new Peer[connections];
        final TcpConnection[][] remotes = new TcpConnection[connections][1];
        final int[] slots = new int[connections];
        for (int i = 0; i < connections; i++)
        {
            peers[i] = new Peer();
            slots[i] = accept(app, 9100 + i, peers[i], remotes[i]);
        }
        final int total = 40_000;
        final byte[][] out = new byte[connections][];
        for (int i = 0; i < connections; i++)
        {
            out[i] = bytes(100 + i, total);
        }
        final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        final Thread writer = new Thread(() ->
        {
            final int[] written = new int[connections];
            int done = 0;
            for (long spins = 0; done < connections && spins < 200_000_000L && !stop.get(); spins++)
            {
                final int i = (int)(spins % connections);
                if (written[i] < total)
                {
                    written[i] += app.write(slots[i], out[i], written[i], Math.min(total - written[i], 1 + (int)(spins % 97)));
                    done += written[i] == total ? 1 : 0;
                }
            }
        }, "doorbell-writer");
        writer.start();
        try
        {
            // Small steps of the clock: a full scan (every HOUSEKEEPING_NANOS) is rare, so the bytes flow by the bells,
            // and a bell the writer rings late (descheduled between its store and its CAS) is not taken for a lost one.
            boolean all = false;
            for (int round = 0; round < 2_000_000 && !all; round++)
            {
                server.doWork();
                a.poll(now);
                b.poll(now);
                now += 20_000L;
                all = true;
                for (int i = 0; i < connections; i++)
                {
                    peers[i].drain(remotes[i][0]);
                    all &= peers[i].read == total;
                }
            }
            assertTrue(all, "every stream\n" + counters);
        }
        finally
        {
            stop.set(true);
            writer.join();
        }
        for (int i = 0; i < connections; i++)
        {
            assertArrayEquals(out[i], Arrays.copyOf(peers[i].buffer.byteArray(), total), "stream " + i);
        }
        twoFullScans();
        assertEquals(0, counters.get(PipeCounter.DOORBELLS_MISSED), "no bell lost");
        app.close();
    }
}
