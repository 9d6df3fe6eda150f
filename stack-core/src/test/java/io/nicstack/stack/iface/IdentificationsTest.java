package io.nicstack.stack.iface;

import java.util.Random;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.tcp.isn.SipHash;

import static org.junit.jupiter.api.Assertions.assertEquals;

class IdentificationsTest
{
    /**
     * The cache of keyed hashes changes no identification: over 20,000 datagrams to 3,000 destinations (far more pairs
     * than cache lines, so lines are shared and replaced all the time) every identification is what RFC 7739 §5.3's
     * computation without a cache gives, counter by counter.
     */
    @Test
    void theHashCacheGivesWhatTheUncachedComputationGives()
    {
        final long k0 = 0x0123_4567_89AB_CDEFL;
        final long k1 = 0x7766_5544_3322_1100L;
        final Identifications ids = new Identifications(k0, k1);
        final int[] counters = new int[Identifications.BUCKETS];
        for (int i = 0; i < counters.length; i++)
        {
            counters[i] = (int)SipHash.hash(k0, k1, i);
        }
        final Random random = new Random(7739);
        for (int n = 0; n < 20_000; n++)
        {
            final int destination = 0xC612_0000 + random.nextInt(3_000);
            final int protocol = random.nextBoolean() ? 1 : 17;
            final long h = SipHash.hash(k0, k1, ((destination & 0xFFFF_FFFFL) << 8) | protocol);
            final int expected = (counters[(int)h & (Identifications.BUCKETS - 1)]++ + (int)(h >>> 48)) & 0xFFFF;
            assertEquals(expected, ids.next(destination, protocol), "datagram " + n);
        }
    }

    /**
     * A key kept (as a TCP connection keeps its peer's) gives the identifications the destination gives, interleaved
     * with datagrams by destination that share the counters: keeping the key changes no identification, only the cost.
     */
    @Test
    void aKeptKeyGivesWhatTheDestinationGives()
    {
        final Identifications byKey = new Identifications(3, 4);
        final Identifications byDestination = new Identifications(3, 4);
        final long[] keys = new long[3_000];
        for (int i = 0; i < keys.length; i++)
        {
            keys[i] = byKey.key(0xC612_0000 + i, 6);
        }
        final Random random = new Random(6864);
        for (int n = 0; n < 20_000; n++)
        {
            final int i = random.nextInt(keys.length);
            assertEquals(byDestination.next(0xC612_0000 + i, 6), byKey.next(keys[i]), "datagram " + n);
        }
    }
}
