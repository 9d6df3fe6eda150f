package io.nicstack.stack.icmp;

import static io.nicstack.stack.Frames.PEER_IP;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.isn.IsnGenerator;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.wire.IcmpHeader;

/**
 * The table of per-peer ICMP error buckets ({@link Icmp#takePeerToken}): which set a peer takes, what a peer that takes
 * the place of another gets, and clocks that step back. Errors are asked of {@link Icmp#sendError} directly, with a
 * global limit too large to refuse any.
 */
class IcmpPeerTableTest
{
    private static final long T = 1_000_000_000_000L;
    /** The first off-link peer looked at, 198.19.0.1 (reached through the gateway, PEER_IP). */
    private static final int FIRST_PEER = 0xC613_0001;

    private final UnsafeBuffer quote = new UnsafeBuffer(new byte[28]);
    private StackCounters counters;
    private NetStack stack;
    private int asked;

    /** A stack with the fixed secrets of repeatable runs (its peer sets are always the same) and no global limit to speak of. */
    private Icmp start()
    {
        counters = StackCounters.inMemory();
        stack = new NetStack(new TestDevice(1500),
            StackConfig.of("198.18.0.2/24").gateway(PEER_IP).icmpErrorRate(1_000_000, 1_000_000), counters, T,
            new IsnGenerator(1, 2), new SynCookies(3, 4));
        quote.putByte(0, (byte)0x45);
        return stack.icmp();
    }

    /** Ask {@code times} Port Unreachables of {@code peer} at {@code now}. */
    private void ask(final Icmp icmp, final int peer, final int times, final long now)
    {
        for (int i = 0; i < times; i++, asked++)
        {
            icmp.sendError(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PORT_UNREACHABLE, peer, quote, 0, 28, now);
        }
    }

    /** How many of the errors asked so far the limits let through. */
    private long allowed()
    {
        return asked - counters.get(StackCounter.ICMP_OUT_RATE_LIMITED_PEER) - counters.get(StackCounter.ICMP_OUT_RATE_LIMITED);
    }

    /** The first {@code n} addresses from {@link #FIRST_PEER} up that share its set, found by trying each in turn. */
    private static int[] sharingASet(final Icmp icmp, final int n)
    {
        final int[] peers = new int[n];
        final int set = icmp.peerSet(FIRST_PEER);
        int found = 0;
        for (int a = FIRST_PEER; found < n; a++)
        {
            if (icmp.peerSet(a) == set)
            {
                peers[found++] = a;
            }
        }
        return peers;
    }

    /**
     * More peers than a set has ways, taking turns: together they get what the set's four buckets hold, 4 x 6 at once
     * and 4 a second after, not a fresh burst each time one takes the place of another. Before, each newcomer started
     * full, and 8 peers taking turns 20 times within 20 ns got 780 of 960.
     */
    @Test
    void peersSharingASetGetTogetherNoMoreThanItsFourBuckets()
    {
        final Icmp icmp = start();
        final int[] peers = sharingASet(icmp, 8);
        for (int round = 0; round < 20; round++)
        {
            for (final int peer : peers)
            {
                ask(icmp, peer, Icmp.PEER_BURST, T + round);
            }
        }
        assertEquals(Icmp.PEER_WAYS * Icmp.PEER_BURST, allowed(), "four full buckets, once");
        for (final int peer : peers)
        {
            ask(icmp, peer, Icmp.PEER_BURST, T + Icmp.PEER_NANOS_PER_TOKEN + 19);
        }
        assertEquals(Icmp.PEER_WAYS * Icmp.PEER_BURST + Icmp.PEER_WAYS, allowed(), "a second later, one more per bucket");
        assertEquals(0, counters.get(StackCounter.ICMP_OUT_RATE_LIMITED), "the global limit refused none");
    }

    /**
     * Which set a peer takes is a keyed hash of its address: addresses that share a set under the multiplicative hash
     * used before (easy to pick: a /22 holds sets of 5 or 6) are spread out, and two stacks with different secrets
     * place the same addresses differently. Before, every stack placed them alike, and the five below in one set.
     */
    @Test
    void thePeerSetIsAKeyedHashOfTheAddress()
    {
        final Icmp icmp = start();
        final int[] unkeyed = new int[5];
        int found = 0;
        for (int a = FIRST_PEER; found < unkeyed.length; a++)
        {
            if ((a * 0x9E37_79B9) >>> (32 - Icmp.PEER_SET_BITS) == (FIRST_PEER * 0x9E37_79B9) >>> (32 - Icmp.PEER_SET_BITS))
            {
                unkeyed[found++] = a;
            }
        }
        int sameSet = 0;
        for (final int peer : unkeyed)
        {
            sameSet += icmp.peerSet(peer) == icmp.peerSet(unkeyed[0]) ? 1 : 0;
        }
        assertNotEquals(unkeyed.length, sameSet, "the unkeyed hash's colliding addresses still share a set");

        final Icmp one = new NetStack(new TestDevice(1500), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), T).icmp();
        final Icmp other = new NetStack(new TestDevice(1500), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), T).icmp();
        int placedAlike = 0;
        for (int peer = FIRST_PEER; peer < FIRST_PEER + 64; peer++)
        {
            placedAlike += one.peerSet(peer) == other.peerSet(peer) ? 1 : 0;
        }
        // Two random secrets place all 64 alike with probability 256^-64.
        assertNotEquals(64, placedAlike, "two stacks with their own secrets place 64 addresses alike");
    }

    /**
     * A clock that steps back behind every bucket of a full set (NetStack.poll(now) is public and the clock injected: an
     * embedder's clock, or two time sources a tick apart): the newcomer takes one of them over and gets no token until
     * its time comes, and nothing throws. Before, no entry had more than the -1 tokens the search started from, and it
     * threw ArrayIndexOutOfBoundsException (index -1).
     */
    @Test
    void aClockBehindEveryBucketOfAFullSetNeitherThrowsNorGrants()
    {
        final Icmp icmp = start();
        final int[] peers = sharingASet(icmp, 5);
        for (int i = 0; i < Icmp.PEER_WAYS; i++)
        {
            ask(icmp, peers[i], Icmp.PEER_BURST, T);
        }
        assertEquals(Icmp.PEER_WAYS * Icmp.PEER_BURST, allowed(), "four full buckets, each now empty as of T");
        ask(icmp, peers[4], 1, T - 1);
        assertEquals(Icmp.PEER_WAYS * Icmp.PEER_BURST, allowed(), "a bucket empty as of T has nothing at T - 1");
        ask(icmp, peers[4], 1, T + Icmp.PEER_NANOS_PER_TOKEN);
        assertEquals(Icmp.PEER_WAYS * Icmp.PEER_BURST + 1, allowed(), "a token a second after");
        for (final long now : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1, T})
        {
            for (final int peer : sharingASet(icmp, 8))
            {
                ask(icmp, peer, 1, now);
            }
        }
    }
}
