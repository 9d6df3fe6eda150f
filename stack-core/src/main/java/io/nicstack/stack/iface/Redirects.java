package io.nicstack.stack.iface;

import org.agrona.collections.Int2IntHashMap;

/**
 * Host routes learned from ICMP Redirects (RFC 1122 §3.2.2.2, §3.3.1.2): for an off-link destination, a first hop
 * other than the default gateway. Bounded ({@value #CAPACITY} destinations; a new one replaces the entry closest to
 * expiring) and aged ({@value #LIFETIME_SECONDS} s, as Linux's ip_rt_gc_timeout for redirect exceptions), so a
 * gateway that later dies or forgets the better route costs at most that long.
 *
 * <p>Preallocated arrays and an {@link Int2IntHashMap} from destination to slot: nothing is allocated after
 * construction, and a lookup while the table is empty (the usual case) is one field read.
 */
final class Redirects
{
    static final int CAPACITY = 64;
    static final long LIFETIME_SECONDS = 300;
    private static final long LIFETIME_NANOS = LIFETIME_SECONDS * 1_000_000_000L;
    private static final int NONE = -1;

    private final Int2IntHashMap slotByDestination = new Int2IntHashMap(CAPACITY * 2, 0.65f, NONE);
    private final int[] destination = new int[CAPACITY];
    private final int[] gateway = new int[CAPACITY];
    private final long[] expiresAt = new long[CAPACITY];
    private int used;

    /** The first hop a redirect set for {@code dst}, or 0 when none holds (never set, expired or forgotten). */
    int gatewayFor(final int dst, final long now)
    {
        if (used == 0)
        {
            return 0;
        }
        final int slot = slotByDestination.get(dst);
        if (slot == NONE)
        {
            return 0;
        }
        if (now - expiresAt[slot] >= 0)
        {
            remove(slot);
            return 0;
        }
        return gateway[slot];
    }

    /** Send datagrams for {@code dst} to {@code firstHop} from now on (for {@value #LIFETIME_SECONDS} s). */
    void learn(final int dst, final int firstHop, final long now)
    {
        int slot = slotByDestination.get(dst);
        if (slot == NONE)
        {
            if (used == CAPACITY)
            {
                remove(soonestToExpire());
            }
            slot = used++;
            slotByDestination.put(dst, slot);
            destination[slot] = dst;
        }
        gateway[slot] = firstHop;
        expiresAt[slot] = now + LIFETIME_NANOS;
    }

    /** Back to the default route for {@code dst} (a redirect to the default gateway itself). */
    void forget(final int dst)
    {
        final int slot = slotByDestination.get(dst);
        if (slot != NONE)
        {
            remove(slot);
        }
    }

    /** Back to the default route for every destination sent to {@code firstHop}; returns how many there were. */
    int forgetGateway(final int firstHop)
    {
        int forgotten = 0;
        for (int slot = used - 1; slot >= 0; slot--)
        {
            // From the end: remove() moves the last entry into the freed slot, one already looked at.
            if (gateway[slot] == firstHop)
            {
                remove(slot);
                forgotten++;
            }
        }
        return forgotten;
    }

    int size()
    {
        return used;
    }

    private int soonestToExpire()
    {
        int soonest = 0;
        for (int i = 1; i < used; i++)
        {
            if (expiresAt[i] - expiresAt[soonest] < 0)
            {
                soonest = i;
            }
        }
        return soonest;
    }

    /** Free {@code slot} by moving the last entry into it: slots stay dense, so {@link #used} counts them. */
    private void remove(final int slot)
    {
        slotByDestination.remove(destination[slot]);
        final int last = --used;
        if (slot != last)
        {
            destination[slot] = destination[last];
            gateway[slot] = gateway[last];
            expiresAt[slot] = expiresAt[last];
            slotByDestination.put(destination[slot], slot);
        }
    }
}
