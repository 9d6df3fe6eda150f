package io.nicstack.stack;

import static io.nicstack.stack.Frames.STACK_IP;
import static io.nicstack.stack.Frames.fromPeer;
import static io.nicstack.stack.Frames.ipv4;
import static io.nicstack.stack.Frames.udp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.storage.Reassembler;
import io.nicstack.stack.wire.Ipv4Header;

/**
 * Reassembly under floods of first fragments that never complete: a flooding source takes contexts only from sources
 * that hold more than it does, so an honest source's datagram in progress completes; memory stays within the contexts;
 * every datagram given up is counted.
 */
class ReassemblyFairnessTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final int HONEST = 0xC612_0050;
    private static final int PORT = 7;

    private TestDevice device;
    private StackCounters counters;
    private NetStack stack;
    private Reassembler reassembler;
    private long now = 1_000 * SECOND;
    private long mac;
    private final Map<Integer, Integer> delivered = new HashMap<>();
    private final int[] nextId = new int[256];

    private void start()
    {
        device = new TestDevice(1500);
        counters = StackCounters.inMemory();
        stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
        mac = stack.config().mac();
        reassembler = stack.ipv4().reassembler();
        stack.udp().bind(PORT, (s, source, port, buffer, offset, length, t) -> delivered.merge(source, 1, Integer::sum));
    }

    private void inject(final byte[] datagram)
    {
        now += 1_000;
        device.inject(fromPeer(mac, datagram));
        stack.poll(now);
        device.takeSent();
    }

    /** A first fragment (8 bytes, MF) of a new datagram from {@code source}, never completed. */
    private void flood(final int source)
    {
        inject(ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_UDP, nextId[source & 0xFF]++ & 0xFFFF, true, 0, new byte[8]));
    }

    /** The fragments of a UDP datagram from {@code source} to the bound port, {@code cut} bytes of it in each but the last. */
    private static byte[][] fragments(final int source, final int id, final int length, final int cut)
    {
        final byte[] l4 = udp(source, STACK_IP, 1000, PORT, new byte[length]);
        final List<byte[]> out = new ArrayList<>();
        for (int at = 0; at < l4.length; at += cut)
        {
            final int end = Math.min(l4.length, at + cut);
            out.add(ipv4(source, STACK_IP, Ipv4Header.PROTOCOL_UDP, id, end < l4.length, at, Arrays.copyOfRange(l4, at, end)));
        }
        return out.toArray(new byte[0][]);
    }

    private void assertAccounted()
    {
        assertEquals(reassembler.evictedForOwnSource(), counters.get(StackCounter.IPV4_REASSEMBLY_EVICTED_OWN_SOURCE));
        assertEquals(reassembler.evictedForOtherSource(), counters.get(StackCounter.IPV4_REASSEMBLY_EVICTED_OTHER_SOURCE));
        assertEquals(reassembler.evictedForOwnSource() + reassembler.evictedForOtherSource(),
            counters.get(StackCounter.IPV4_REASSEMBLY_DISCARDED), "every datagram given up is counted");
        assertEquals(0, counters.unaccountedFrames());
    }

    /**
     * The two reasons a datagram in progress is given up for a new one are counters of their own, beside
     * IPV4_REASSEMBLY_DISCARDED which counts every datagram given up once. With 64 contexts, a quarter each: a source
     * opening 4 more than its 16 gives up 4 of its own; once four sources hold all 64, a fifth's first datagram takes
     * the oldest of the heaviest. Before, only the Reassembler's getters told them apart; {@code nicstack stats} could
     * not.
     */
    @Test
    void eachEvictionReasonIsCountedAsAStackCounter()
    {
        start();
        final int quarter = 16;
        for (int i = 0; i < quarter + 4; i++)
        {
            flood(0xC612_0061);
        }
        for (int source = 0xC612_0062; source <= 0xC612_0064; source++)
        {
            for (int i = 0; i < quarter; i++)
            {
                flood(source);
            }
        }
        flood(0xC612_0065);
        assertEquals(4, reassembler.evictedForOwnSource());
        assertEquals(1, reassembler.evictedForOtherSource());
        assertEquals(reassembler.evictedForOwnSource(), counters.get(StackCounter.IPV4_REASSEMBLY_EVICTED_OWN_SOURCE));
        assertEquals(reassembler.evictedForOtherSource(), counters.get(StackCounter.IPV4_REASSEMBLY_EVICTED_OTHER_SOURCE));
        assertAccounted();
    }

    /** One source flooding 10,000 new datagrams keeps to its quarter, replacing its own: the honest datagram completes. */
    @Test
    void oneFloodingSourceCannotKeepAnHonestDatagramFromCompleting()
    {
        start();
        final byte[][] honest = fragments(HONEST, 1, 100, 56);
        inject(honest[0]);
        for (int i = 0; i < 10_000; i++)
        {
            flood(0xC612_0066);
        }
        assertEquals(16, reassembler.activeFrom(0xC612_0066), "a quarter of the contexts");
        inject(honest[1]);
        assertEquals(1, delivered.getOrDefault(HONEST, 0));
        assertEquals(0, reassembler.evictedForOtherSource());
        assertAccounted();
    }

    /**
     * Five sources flooding new datagrams fill every context (four at their quarter are enough). Before, the fifth, under
     * its quarter, then gave up the oldest datagram of all, and the flooders' were always younger than the honest one:
     * the honest datagram was given up as soon as the table was full and never completed. Now a source takes a
     * context only from one holding more: the flooders take from each other and the honest source keeps its one.
     */
    @Test
    void fiveFloodingSourcesCannotKeepAnHonestDatagramFromCompleting()
    {
        start();
        final byte[][] honest = fragments(HONEST, 1, 100, 56);
        inject(honest[0]);
        for (int i = 0; i < 10_000; i++)
        {
            flood(0xC612_0060 + i % 5);
        }
        assertEquals(64, reassembler.active());
        assertEquals(1, reassembler.activeFrom(HONEST));
        inject(honest[1]);
        assertEquals(1, delivered.getOrDefault(HONEST, 0), "the honest datagram completes");
        for (int f = 0; f < 5; f++)
        {
            assertTrue(reassembler.activeFrom(0xC612_0060 + f) >= 12, "the flooders share the rest");
        }
        assertAccounted();
    }

    /**
     * A busy table (three sources at their quarter, and single datagrams from sixteen others, the honest one the
     * oldest of all) and one more source flooding: it takes contexts from the three that hold more than it does, and
     * then replaces its own; none of the sixteen is given up. Before, it gave up the oldest of all, the honest one first.
     */
    @Test
    void aFloodTakesContextsOnlyFromSourcesHoldingMore()
    {
        start();
        final byte[][] honest = fragments(HONEST, 1, 100, 56);
        inject(honest[0]);
        for (int s = 1; s < 16; s++)
        {
            inject(fragments(HONEST + s, 1, 100, 56)[0]);
        }
        for (int i = 0; i < 48; i++)
        {
            flood(0xC612_0070 + i % 3);
        }
        assertEquals(64, reassembler.active());
        for (int i = 0; i < 1_000; i++)
        {
            flood(0xC612_0066);
        }
        for (int s = 0; s < 16; s++)
        {
            assertEquals(1, reassembler.activeFrom(HONEST + s), "source " + s + " keeps its datagram");
        }
        assertEquals(12, reassembler.activeFrom(0xC612_0066), "the flood took from the heavier sources down to its level");
        inject(honest[1]);
        assertEquals(1, delivered.getOrDefault(HONEST, 0));
        assertAccounted();
    }

    /**
     * Random rounds: 1 to 12 flooding sources and 1 to 24 honest ones (fewer than 64 sources in all), each honest source
     * sending datagrams one after another in 2 to 6 fragments in random order, amid bursts of first fragments from the
     * flooders, within the timeout. Every honest datagram completes, no source holds more than its quarter, the
     * contexts bound what is held, and every datagram given up is counted. The seed is printed on failure.
     */
    @Test
    void randomizedFloodsNeverKeepHonestSourcesFromReassembling()
    {
        final long seed = System.nanoTime();
        final SplittableRandom random = new SplittableRandom(seed);
        for (int round = 0; round < 20; round++)
        {
            try
            {
                round(random.split());
            }
            catch (final Throwable t)
            {
                throw new AssertionError("seed " + seed + ", round " + round + ": " + t.getMessage(), t);
            }
        }
    }

    private void round(final SplittableRandom random)
    {
        delivered.clear();
        Arrays.fill(nextId, 0);
        start();
        final int flooders = 1 + random.nextInt(12);
        final int honestSources = 1 + random.nextInt(24);
        final int[] sent = new int[honestSources];
        final List<List<byte[]>> pending = new ArrayList<>();
        for (int h = 0; h < honestSources; h++)
        {
            pending.add(new ArrayList<>());
        }
        for (int step = 0; step < 3_000; step++)
        {
            if (random.nextInt(3) == 0)
            {
                final int h = random.nextInt(honestSources);
                final List<byte[]> left = pending.get(h);
                if (left.isEmpty())
                {
                    final int length = 1 + random.nextInt(1_400);
                    final byte[][] parts = fragments(HONEST + h, ++sent[h], length, 8 * (1 + random.nextInt((length + 15) / 16)));
                    if (parts.length < 2 || parts.length > 6)
                    {
                        sent[h]--;
                        continue;
                    }
                    left.addAll(Arrays.asList(parts));
                }
                inject(left.remove(random.nextInt(left.size())));
            }
            else
            {
                for (int burst = random.nextInt(40); burst > 0; burst--)
                {
                    flood(0xC612_0080 + random.nextInt(flooders));
                }
            }
            assertTrue(reassembler.active() <= stack.config().reassemblyMaxDatagrams());
            for (int f = 0; f < flooders; f++)
            {
                assertTrue(reassembler.activeFrom(0xC612_0080 + f) <= stack.config().reassemblyMaxDatagrams() / 4);
            }
        }
        assertTrue(now - 1_000 * SECOND < stack.config().reassemblyTimeoutNanos(), "the round stays within the timeout");
        for (int h = 0; h < honestSources; h++)
        {
            final int complete = sent[h] - (pending.get(h).isEmpty() ? 0 : 1);
            assertEquals(complete, delivered.getOrDefault(HONEST + h, 0), "honest source " + h + " of " + honestSources
                + " among " + flooders + " flooders");
        }
        assertAccounted();
    }
}
