package io.nicstack.stack.iface;

import java.security.SecureRandom;

import io.nicstack.stack.tcp.isn.SipHash;

/**
 * IPv4 identifications, as RFC 7739 §5.3 recommends: a keyed hash (SipHash-2-4) of destination and protocol picks one
 * of {@link #BUCKETS} counters, each starting where the key says, and adds an offset of its own. What a host sees of
 * the identifications of its own datagrams tells it nothing of another host's: it can neither count our traffic to it
 * (an idle scan) nor forge fragments that would join those datagrams. Atomic datagrams (DF set, not fragmented: TCP's)
 * take the same path: their identification serves nothing (RFC 6864 §4.1), but one counter for all of them would let
 * anyone with a connection to us count our segments to everyone, and a receiver's segment coalescing likes them to
 * count up per flow.
 */
public final class Identifications
{
    static final int BUCKETS = 1024;
    private static final int CACHE_BITS = 8;

    private final long k0;
    private final long k1;
    private final int[] counters = new int[BUCKETS];
    /**
     * The keyed hashes of the pairs seen lately, in a direct-mapped cache (a pair plus one, 0 for none): the same
     * result for a few nanoseconds instead of a SipHash per datagram. Which line a pair takes is no secret; its hash is.
     */
    private final long[] cachedPair = new long[1 << CACHE_BITS];
    private final long[] cachedHash = new long[1 << CACHE_BITS];

    /** With the 128-bit key {@code k0, k1}: fixed keys for runs that must repeat exactly, random ones everywhere else. */
    public Identifications(final long k0, final long k1)
    {
        this.k0 = k0;
        this.k1 = k1;
        for (int i = 0; i < BUCKETS; i++)
        {
            counters[i] = (int)SipHash.hash(k0, k1, i);
        }
    }

    /** A fresh key from {@link SecureRandom}. */
    public static Identifications withRandomSecret()
    {
        final SecureRandom random = new SecureRandom();
        return new Identifications(random.nextLong(), random.nextLong());
    }

    /** The identification of the next datagram to {@code destination}, 16 bits. */
    public int next(final int destination, final int protocol)
    {
        return next(key(destination, protocol));
    }

    /**
     * The keyed hash of destination and protocol that {@link #next(long)} takes: from the cache, or one SipHash. A
     * sender of many datagrams to one destination (a TCP connection) keeps it, so that its identifications cost no
     * hash and no cache line however many destinations the stack talks to (past the cache's 256 lines, each pair
     * would be a SipHash per datagram).
     */
    public long key(final int destination, final int protocol)
    {
        final long pair = ((destination & 0xFFFF_FFFFL) << 8) | (protocol & 0xFF);
        final int line = (int)((pair * 0x9E37_79B9_7F4A_7C15L) >>> (64 - CACHE_BITS));
        long h = cachedHash[line];
        if (cachedPair[line] != pair + 1)
        {
            h = SipHash.hash(k0, k1, pair);
            cachedPair[line] = pair + 1;
            cachedHash[line] = h;
        }
        return h;
    }

    /** The identification of the next datagram of the pair whose {@link #key} is {@code key}, 16 bits. */
    public int next(final long key)
    {
        return (counters[(int)key & (BUCKETS - 1)]++ + (int)(key >>> 48)) & 0xFFFF;
    }
}
