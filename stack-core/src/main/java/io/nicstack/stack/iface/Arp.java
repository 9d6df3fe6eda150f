package io.nicstack.stack.iface;

import java.nio.ByteBuffer;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2IntHashMap;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.time.Timers;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.MacAddress;

/**
 * ARP (RFC 826) for one Ethernet link: a bounded cache, requests with retry and timeout, a bounded
 * queue of frames waiting for resolution, replies, and two announcements on start (RFC 5227 §2.3).
 *
 * <p>Entries live in preallocated parallel arrays indexed by slot; {@link Int2IntHashMap} maps an address to its slot,
 * each slot has a retry timer handler of its own (made with the cache), a stack holds the free slots, and a running
 * count the entries awaiting replies: no operation scans the cache (it may hold 65,536 entries), save the victim
 * pointer's sweep over resolved entries. Nothing is allocated after construction.
 *
 * <p>Every request belongs to an entry, which sends at most one per retry interval, and an entry awaiting a reply is
 * never evicted (see {@link #victim()}): requests are bounded by the cache, at most {@code arpCacheSize} per interval,
 * without a global rate of their own that a flood of spoofed sources would also take from our own peers' polls.
 */
public final class Arp
{
    private static final int FREE = 0;
    private static final int INCOMPLETE = 1;
    private static final int REACHABLE = 2;
    private static final int NONE = -1;

    private final StackConfig config;
    private final Link link;
    private final StackCounters counters;
    private final Timers timers;
    private final ArpPacket arp = new ArpPacket();
    private final EthernetFrame eth = new EthernetFrame();

    private final Int2IntHashMap slotByAddress;
    private final int[] address;
    private final long[] mac;
    private final int[] state;
    private final long[] expiresAt;
    /** When the entry last changed: resolved, another MAC, or confirmed after it aged (for {@link #LOCKTIME_NANOS}). */
    private final long[] updatedAt;
    private final int[] retries;
    private final long[] timerId;
    /** CLOCK's reference bit: set when the entry is used to send (resolve), cleared as the victim pointer passes it. */
    private final boolean[] referenced;
    private int used;
    private int evictCursor;
    /** Each slot's retry timer handler: the timer finds its entry without a search or a map from timer ids. */
    private final Timers.Handler[] retryHandlers;
    /** Free slots, a stack: the top {@code address.length - used} of them. */
    private final int[] freeEntries;
    /** Entries in INCOMPLETE state. */
    private int waiting;

    // Frames waiting for resolution: fixed slots in one buffer. queueOrder lists the slots in use, oldest first (the
    // frames for one address leave in the order they came), freeSlots (a stack of freeCount) the unused ones, and
    // discarded those whose resolution failed, held until they are reported; dropping a frame from the middle moves
    // slot numbers, never frames.
    private final UnsafeBuffer queue;
    private final int queueSlotLength;
    /** Cache entry each queued frame waits for, by queue slot. */
    private final int[] queueEntry;
    private final int[] queueLength;
    private final int[] queueOrder;
    private final int[] freeSlots;
    private int freeCount;
    private int queued;
    /** Queue slots of frames whose address stopped resolving, a ring: each freed as {@link #reportDiscarded} reaches it. */
    private final int[] discarded;
    /** The discarded frame being reported: a copy, so that its slot is free again for what the listener sends. */
    private final UnsafeBuffer reported;
    private int discardedFirst;
    private int discardedCount;
    private boolean reporting;
    /** Frames queued for each cache entry. */
    private final int[] queuedFor;

    private ResolutionFailedListener resolutionFailed;
    private DiscardedFrameListener discardedFrames;

    /** Told when an address stops resolving: its requests (or the polls of its aged entry) went unanswered. */
    @FunctionalInterface
    public interface ResolutionFailedListener
    {
        void onResolutionFailed(int ip, long now);
    }

    /**
     * Told of each frame that waited for an address that stopped resolving, as it is discarded (and counted as
     * {@link StackCounter#ARP_RESOLUTION_FAILED}): Linux's neigh_invalidate hands each such packet to arp_error_report.
     */
    @FunctionalInterface
    public interface DiscardedFrameListener
    {
        /**
         * {@code frame[offset, offset + length)} is the whole Ethernet frame, readable during the call only. The
         * listener may send (even to the same address: it starts a new resolution).
         */
        void onFrameDiscarded(DirectBuffer frame, int offset, int length, long now);
    }

    public Arp(final StackConfig config, final Link link, final StackCounters counters, final Timers timers)
    {
        this.config = config;
        this.link = link;
        this.counters = counters;
        this.timers = timers;
        final int n = config.arpCacheSize();
        slotByAddress = new Int2IntHashMap(n * 2, 0.65f, NONE);
        address = new int[n];
        mac = new long[n];
        state = new int[n];
        expiresAt = new long[n];
        updatedAt = new long[n];
        retries = new int[n];
        timerId = new long[n];
        referenced = new boolean[n];
        queuedFor = new int[n];
        java.util.Arrays.fill(timerId, Timers.NO_TIMER);
        retryHandlers = new Timers.Handler[n];
        freeEntries = new int[n];
        for (int i = 0; i < n; i++)
        {
            final int slot = i;
            retryHandlers[i] = (nowNanos, id) -> onRetryTimer(slot, nowNanos, id);
            freeEntries[i] = n - 1 - i;
        }

        final int q = config.arpQueueFrames();
        queueSlotLength = link.device().maxFrameLength();
        queue = new UnsafeBuffer(ByteBuffer.allocateDirect(q * queueSlotLength));
        reported = new UnsafeBuffer(new byte[queueSlotLength]);
        queueEntry = new int[q];
        queueLength = new int[q];
        queueOrder = new int[q];
        freeSlots = new int[q];
        discarded = new int[q];
        for (int i = 0; i < q; i++)
        {
            freeSlots[i] = q - 1 - i;
        }
        freeCount = q;
    }

    /** Linux's ARP locktime: another MAC for an entry that changed more recently than this is not taken. */
    static final long LOCKTIME_NANOS = 1_000_000_000L;

    /** RFC 5227 §1.1 DEFEND_INTERVAL: at most one defending announcement per 10 s. */
    static final long DEFEND_INTERVAL_NANOS = 10_000_000_000L;
    /** When we last defended our address, or Long.MIN_VALUE. */
    private long lastDefence = Long.MIN_VALUE;

    /** RFC 5227 §1.1 ANNOUNCE_NUM: announcements when the address comes into use. */
    static final int ANNOUNCE_NUM = 2;
    /** RFC 5227 §1.1 ANNOUNCE_INTERVAL: time between them. */
    static final long ANNOUNCE_INTERVAL_NANOS = 2_000_000_000L;
    private int announcementsLeft;
    private final Timers.Handler announceHandler = this::onAnnounceTimer;

    /**
     * The address comes into use: announce it now and ANNOUNCE_NUM - 1 more times ANNOUNCE_INTERVAL apart (RFC 5227
     * §2.3), so that one lost broadcast leaves no stale cache behind.
     */
    public void start(final long now)
    {
        announcementsLeft = ANNOUNCE_NUM;
        onAnnounceTimer(now, Timers.NO_TIMER);
    }

    private void onAnnounceTimer(final long now, final long id)
    {
        announce();
        if (--announcementsLeft > 0)
        {
            timers.schedule(now + ANNOUNCE_INTERVAL_NANOS, announceHandler);
        }
    }

    /** Announce our address: a gratuitous ARP request (sender and target protocol address both ours). */
    private void announce()
    {
        sendArp(ArpPacket.OP_REQUEST, MacAddress.BROADCAST, 0L, config.address());
    }

    /**
     * MAC for {@code nextHop}, or -1 when unknown; an unknown address gets a request (and a cache
     * entry in INCOMPLETE state) so the caller can {@link #enqueue} its frame. When the cache has no entry to give (full
     * of entries still awaiting replies, see {@link #victim()}) no request is sent, and {@link #enqueue} refuses the frame.
     */
    public long resolve(final int nextHop, final long now)
    {
        if (config.isBroadcast(nextHop))
        {
            return MacAddress.BROADCAST;
        }
        final int slot = slotByAddress.get(nextHop);
        if (slot != NONE)
        {
            if (state[slot] == REACHABLE)
            {
                referenced[slot] = true;
                if (now - expiresAt[slot] >= 0 && timerId[slot] == Timers.NO_TIMER)
                {
                    // Stale: keep using the old MAC, but confirm it with a unicast request (RFC 1122 2.3.2.1).
                    retries[slot] = 0;
                    sendArp(ArpPacket.OP_REQUEST, mac[slot], 0L, nextHop);
                    armRetry(slot, now);
                }
                return mac[slot];
            }
            return -1;
        }
        // No reference bit until it answers and is used: the slot is just behind the victim pointer, so a whole pass of
        // evictions comes first; set, it would tie with the peers in use and turn CLOCK back into round-robin.
        final int fresh = allocate(nextHop);
        if (fresh == NONE)
        {
            return -1;
        }
        retries[fresh] = 0;
        sendArp(ArpPacket.OP_REQUEST, MacAddress.BROADCAST, 0L, nextHop);
        armRetry(fresh, now);
        return -1;
    }

    /**
     * Keep a copy of a complete frame until {@code nextHop} (just given to {@link #resolve}) resolves. A full queue makes
     * room by dropping a frame (counted): the oldest of the address holding the most. False (and counted) only when the
     * frame cannot be kept at all: no entry waits for {@code nextHop} (the cache refused one), longer than a device
     * frame, or no queue.
     */
    public boolean enqueue(final int nextHop, final DirectBuffer frame, final int length)
    {
        final int entry = slotByAddress.get(nextHop);
        if (entry == NONE)
        {
            counters.increment(StackCounter.ARP_RESOLUTION_REFUSED);
            return false;
        }
        if (length > queueSlotLength || queueOrder.length == 0)
        {
            counters.increment(StackCounter.ARP_QUEUE_OVERFLOW);
            return false;
        }
        if (freeCount == 0)
        {
            if (queued == 0)
            {
                // Every slot holds a discarded frame still to be reported (a listener sending again): none gives way.
                counters.increment(StackCounter.ARP_QUEUE_OVERFLOW);
                return false;
            }
            // RFC 1122 2.3.2.2: SHOULD save at least one (the latest) packet of each unresolved address. Spoofed sources
            // make us queue replies that never resolve; they must not starve a new destination, nor one address's burst
            // everyone else. (With more waiting addresses than slots, the oldest frame of all gives way.)
            dropOldestOfBusiest();
        }
        final int slot = freeSlots[--freeCount];
        queue.putBytes(slot * queueSlotLength, frame, 0, length);
        queueEntry[slot] = entry;
        queueLength[slot] = length;
        queueOrder[queued++] = slot;
        queuedFor[entry]++;
        return true;
    }

    /**
     * Admit the {@code frames} fragments of one datagram: true when they all fit the queue as it is; false, each counted
     * as overflow, when not. Fragments never make room by dropping frames: a datagram missing one is never reassembled,
     * so it is queued whole or not at all, and it does not break another fragmented datagram to make room.
     */
    public boolean admitFragments(final int frames)
    {
        if (frames > freeCount)
        {
            counters.add(StackCounter.ARP_QUEUE_OVERFLOW, frames);
            return false;
        }
        return true;
    }

    /** Drop the oldest queued frame of the cache entry with the most frames queued. */
    private void dropOldestOfBusiest()
    {
        int most = 0;
        int at = 0;
        for (int i = 0; i < queued; i++)
        {
            // Oldest first: the first frame of the first entry to reach the maximum is that entry's oldest.
            final int count = queuedFor[queueEntry[queueOrder[i]]];
            if (count > most)
            {
                most = count;
                at = i;
            }
        }
        final int slot = queueOrder[at];
        System.arraycopy(queueOrder, at + 1, queueOrder, at, queued - at - 1);
        queued--;
        freeSlots[freeCount++] = slot;
        queuedFor[queueEntry[slot]]--;
        counters.increment(StackCounter.ARP_QUEUE_OVERFLOW);
    }

    /** Frames currently waiting for resolution. */
    public int queuedFrames()
    {
        return queued;
    }

    /**
     * Higher-layer advice (RFC 1122 §2.3.2.1, method 4): an upper layer sees no answers through {@code ip}. A resolved
     * entry is made stale, so the next datagram to it polls the cached MAC with a unicast request while still using it
     * (as for an aged entry), and the entry is flushed if the poll goes unanswered. An entry being resolved, or none,
     * is left alone.
     */
    public void adviseUnreachable(final int ip, final long now)
    {
        final int slot = slotByAddress.get(ip);
        if (slot != NONE && state[slot] == REACHABLE && now - expiresAt[slot] < 0)
        {
            expiresAt[slot] = now;
        }
    }

    /** Tell {@code listener} of every address that stops resolving (one listener: the IP layer's routes). */
    public void onResolutionFailed(final ResolutionFailedListener listener)
    {
        resolutionFailed = listener;
    }

    /**
     * Tell {@code listener} of every frame discarded because its address stopped resolving (one listener: the IP layer,
     * which tells the transport that sent it), after the {@link ResolutionFailedListener}.
     */
    public void onFrameDiscarded(final DiscardedFrameListener listener)
    {
        discardedFrames = listener;
    }

    /** Cached MAC for {@code ip} in any usable state, or -1. */
    public long lookup(final int ip)
    {
        final int slot = slotByAddress.get(ip);
        return slot != NONE && state[slot] == REACHABLE ? mac[slot] : -1;
    }

    /** Process an ARP packet (the Ethernet payload) that arrived on the link. */
    public void input(final DirectBuffer buffer, final int offset, final int length, final long now)
    {
        if (!arp.wrapChecked(buffer, offset, length)
            || arp.hardwareType() != ArpPacket.HTYPE_ETHERNET
            || arp.protocolType() != EthernetFrame.ETHERTYPE_IPV4
            || arp.hardwareLength() != 6
            || arp.protocolLength() != 4
            || (arp.operation() != ArpPacket.OP_REQUEST && arp.operation() != ArpPacket.OP_REPLY)
            || MacAddress.isMulticast(arp.senderHardwareAddress())
            || arp.senderHardwareAddress() == 0L)
        {
            // A multicast or all-zero sender hardware address is no host's: learned, our frames would go nowhere.
            counters.increment(StackCounter.ARP_DROP_MALFORMED);
            return;
        }
        final int spa = arp.senderProtocolAddress();
        final int tpa = arp.targetProtocolAddress();
        final long sha = arp.senderHardwareAddress();
        if (sha == link.mac())
        {
            // Our own packet looped back (a hairpin or a loop in the link), or another host using our MAC: answered,
            // the reply would go to ourselves; learned, a peer's address would map to us.
            counters.increment(StackCounter.ARP_DROP_OWN_MAC);
            return;
        }
        final boolean forUs = tpa == config.address();
        if (spa == config.address())
        {
            // RFC 5227 §2.4: another host claims our address. Option (c): go on defending it, with one announcement per
            // DEFEND_INTERVAL at most; never answer the claim as if it were a request for us.
            counters.increment(StackCounter.ARP_DROP_ADDRESS_CONFLICT);
            if (lastDefence == Long.MIN_VALUE || now - lastDefence >= DEFEND_INTERVAL_NANOS)
            {
                lastDefence = now;
                announce();
            }
            return;
        }

        // RFC 826 "packet reception": merge the sender's mapping if we know it; add it if the packet is for us. The add
        // only saves a request should we talk back, and the reply below goes to the sender's hardware address anyway, so
        // it takes a free slot only: anyone on the link can send requests from as many spoofed senders as the subnet
        // holds, and each would otherwise evict an entry we use (Linux likewise creates no neighbour past gc_thresh3).
        // Only a neighbour's address is kept: not ours, nor the subnet's network or broadcast address, which no host
        // holds (a datagram to the broadcast goes to the broadcast MAC whatever the cache says).
        if (config.isNeighbour(spa))
        {
            final int slot = slotByAddress.get(spa);
            if (slot != NONE)
            {
                // Linux's arp_process: another MAC for an entry that changed within the lock time is not taken, unless
                // the packet is an announcement (its sender's address also its target; a reply's target MAC also its
                // sender's). Of two answers to one request the first stays: a poisoner racing the true host loses.
                final boolean gratuitous = spa == tpa
                    && (arp.operation() == ArpPacket.OP_REQUEST || arp.targetHardwareAddress() == sha);
                if (state[slot] == REACHABLE && mac[slot] != sha && now - updatedAt[slot] < LOCKTIME_NANOS && !gratuitous)
                {
                    counters.increment(StackCounter.ARP_LOCKTIME_IGNORED);
                }
                else
                {
                    learn(slot, sha, now);
                }
            }
            else if (forUs && used < address.length)
            {
                learn(allocate(spa), sha, now);
            }
        }

        if (!forUs)
        {
            counters.increment(StackCounter.ARP_DROP_NOT_FOR_US);
            return;
        }
        if (arp.operation() == ArpPacket.OP_REQUEST)
        {
            counters.increment(StackCounter.ARP_IN_REQUESTS);
            sendArp(ArpPacket.OP_REPLY, sha, sha, spa);
        }
        else
        {
            counters.increment(StackCounter.ARP_IN_REPLIES);
        }
    }

    private void learn(final int slot, final long hardwareAddress, final long now)
    {
        if (state[slot] != REACHABLE || mac[slot] != hardwareAddress || now - expiresAt[slot] >= 0)
        {
            // As Linux's neigh_update: only a change moves the lock time's start, not a confirmation of a live entry.
            updatedAt[slot] = now;
        }
        if (state[slot] == INCOMPLETE)
        {
            waiting--;
        }
        state[slot] = REACHABLE;
        mac[slot] = hardwareAddress;
        expiresAt[slot] = now + config.arpEntryLifetimeNanos();
        retries[slot] = 0;
        cancelRetry(slot);
        releaseQueued(slot, hardwareAddress);
    }

    /** Send every frame waiting for cache entry {@code entry}, now that its MAC is known. */
    private void releaseQueued(final int entry, final long hardwareAddress)
    {
        takeQueued(entry, hardwareAddress, false);
    }

    /**
     * Discard every frame waiting for cache entry {@code entry}, whose resolution failed, counting each: they are held
     * for {@link #reportDiscarded}, which tells the listener and frees their slots.
     */
    private void failQueued(final int entry)
    {
        takeQueued(entry, -1, true);
    }

    /**
     * Remove the frames queued for {@code entry}, oldest first: sent to {@code hardwareAddress}, or discarded when -1
     * (counted; held for {@link #reportDiscarded} when {@code report}, else freed at once).
     */
    private void takeQueued(final int entry, final long hardwareAddress, final boolean report)
    {
        if (queuedFor[entry] == 0)
        {
            return;
        }
        int kept = 0;
        for (int i = 0; i < queued; i++)
        {
            final int slot = queueOrder[i];
            if (queueEntry[slot] != entry)
            {
                queueOrder[kept++] = slot;
                continue;
            }
            if (hardwareAddress < 0)
            {
                counters.increment(StackCounter.ARP_RESOLUTION_FAILED);
                if (report)
                {
                    // At most every slot is held, and the ring has one place for each.
                    discarded[(discardedFirst + discardedCount++) % discarded.length] = slot;
                }
                else
                {
                    freeSlots[freeCount++] = slot;
                }
            }
            else
            {
                final int len = queueLength[slot];
                final MutableDirectBuffer frame = link.claim(hardwareAddress, 0);
                frame.putBytes(0, queue, slot * queueSlotLength, len);
                eth.wrap(frame, 0, EthernetFrame.HEADER_LENGTH).destination(hardwareAddress);
                link.commit(len);
                freeSlots[freeCount++] = slot;
            }
        }
        queued = kept;
        queuedFor[entry] = 0;
    }

    /**
     * Hand each discarded frame to the listener, oldest first, its slot freed first (the listener gets a copy). The
     * listener may send, and so enqueue, even for the same address (Linux's neigh_invalidate warns that its error report
     * "can hit the same neighbour entry"): the frames are out of the queue's order by then, each held in the ring until
     * its turn. A nested call returns at once: the outer one reports what it adds. A listener that throws costs the
     * reports still due, not their slots.
     */
    private void reportDiscarded(final long now)
    {
        if (reporting)
        {
            return;
        }
        reporting = true;
        RuntimeException failed = null;
        try
        {
            while (discardedCount > 0)
            {
                final int slot = discarded[discardedFirst];
                discardedFirst = (discardedFirst + 1) % discarded.length;
                discardedCount--;
                final int length = queueLength[slot];
                reported.putBytes(0, queue, slot * queueSlotLength, length);
                freeSlots[freeCount++] = slot;
                if (discardedFrames != null)
                {
                    try
                    {
                        discardedFrames.onFrameDiscarded(reported, 0, length, now);
                    }
                    catch (final RuntimeException e)
                    {
                        // An application's handler that throws (its onClosed, as its attempt ends) costs the other
                        // frames nothing: each is still reported, and the first exception goes on afterwards.
                        failed = failed == null ? e : failed;
                    }
                }
            }
        }
        finally
        {
            while (discardedCount > 0)
            {
                freeSlots[freeCount++] = discarded[discardedFirst];
                discardedFirst = (discardedFirst + 1) % discarded.length;
                discardedCount--;
            }
            reporting = false;
        }
        if (failed != null)
        {
            throw failed;
        }
    }

    private void armRetry(final int slot, final long now)
    {
        timerId[slot] = timers.schedule(now + config.arpRetryNanos(), retryHandlers[slot]);
    }

    private void cancelRetry(final int slot)
    {
        if (timerId[slot] != Timers.NO_TIMER)
        {
            timers.cancel(timerId[slot]);
            timerId[slot] = Timers.NO_TIMER;
        }
    }

    private void onRetryTimer(final int slot, final long now, final long id)
    {
        if (timerId[slot] != id)
        {
            return; // not the slot's timer now (cancelled timers do not fire: a guard, as the map's lookup was)
        }
        timerId[slot] = Timers.NO_TIMER;
        if (++retries[slot] >= config.arpMaxRetries())
        {
            // RFC 1122 2.3.2.1: give up, flush the entry and whatever waited for it. Each frame discarded is reported,
            // so its sender hears of it now rather than when its own timers run out: link-layer information that
            // reliably detects a host failure (RFC 1122 3.3.1.4). Only a resolution left unanswered is reported, never
            // the mere lack of an entry (2.4: MUST NOT treat that as destination unreachable). No negative entry is
            // kept (Linux's FAILED neighbour is resolved afresh by the next packet, __neigh_event_send): the next
            // datagram to ip asks again, at most one request per second all the same, as the last went a retry
            // interval ago; a host that has just come up is not refused for a while.
            final int ip = address[slot];
            failQueued(slot);
            free(slot);
            try
            {
                if (resolutionFailed != null)
                {
                    resolutionFailed.onResolutionFailed(ip, now);
                }
            }
            finally
            {
                reportDiscarded(now);
            }
            return;
        }
        final long dst = state[slot] == REACHABLE ? mac[slot] : MacAddress.BROADCAST;
        sendArp(ArpPacket.OP_REQUEST, dst, 0L, address[slot]);
        armRetry(slot, now);
    }

    /** A free or evicted slot for {@code ip}, INCOMPLETE; {@link #NONE} when no entry may be evicted. */
    private int allocate(final int ip)
    {
        final int slot;
        if (used < address.length)
        {
            slot = freeEntries[address.length - 1 - used];
        }
        else
        {
            // Full. Anyone on the link can make us resolve addresses (a datagram from a spoofed on-link source gets its
            // answer through ARP), but not make them answer: see victim().
            slot = victim();
            if (slot == NONE)
            {
                return NONE;
            }
            counters.increment(StackCounter.ARP_CACHE_FULL);
            // A victim is resolved and never polled (victim()), so no frame waits for it; were one there, it would go
            // unreported: this runs inside a send, where the sender cannot be told.
            takeQueued(slot, -1, false);
            free(slot);
        }
        used++;
        waiting++;
        address[slot] = ip;
        state[slot] = INCOMPLETE;
        referenced[slot] = false;
        slotByAddress.put(ip, slot);
        return slot;
    }

    /**
     * The entry to evict from a full cache, or {@link #NONE}. An entry awaiting a reply is never evicted: it holds when
     * its address was last asked (its retry timer), and forgotten, the next datagram to that address would broadcast a
     * new request at once. RFC 1122 2.3.2.1 (MUST prevent ARP flooding: at most one request per second per address) and
     * Linux alike (no new neighbour past gc_thresh3 while none is old enough to collect) refuse the new address instead.
     * While fewer than a quarter of the entries wait (new destinations of ours), CLOCK over the resolved ones: one used to
     * send since the pointer last passed it gets a second chance (its bit cleared), so a peer or gateway in use stays
     * while idle entries give way. Once a quarter of the cache waits (a flood of spoofed sources makes us resolve
     * addresses that never answer), nothing is evicted: the peers that answered stay, and the flood's entries leave as
     * their retries run out.
     */
    private int victim()
    {
        final int n = address.length;
        // At least one: in a cache of two or three entries a quarter is none, and no entry waiting is never a flood.
        if (waiting >= Math.max(1, n / 4))
        {
            return NONE;
        }
        // Two passes at most: the first clears every reference bit it passes, so the second finds a victim (more than
        // three quarters of the entries are resolved).
        for (int i = 0; i < 2 * n; i++)
        {
            final int slot = (evictCursor + i) % n;
            if (state[slot] != REACHABLE || timerId[slot] != Timers.NO_TIMER)
            {
                // Waiting, or an aged entry being polled: awaiting a reply, it holds when it was last asked.
                continue;
            }
            if (!referenced[slot])
            {
                evictCursor = (slot + 1) % n;
                return slot;
            }
            referenced[slot] = false;
        }
        return NONE;
    }

    private void free(final int slot)
    {
        cancelRetry(slot);
        slotByAddress.remove(address[slot]);
        if (state[slot] == INCOMPLETE)
        {
            waiting--;
        }
        state[slot] = FREE;
        used--;
        freeEntries[address.length - 1 - used] = slot;
    }

    /**
     * For tests: check that the cache's indexes agree with its entries (address map, free stack, counts, a timer for
     * each waiting entry), scanning them all; throws IllegalStateException naming the first disagreement.
     */
    void checkConsistency()
    {
        final int n = address.length;
        int inUse = 0;
        int incomplete = 0;
        for (int slot = 0; slot < n; slot++)
        {
            if (state[slot] == FREE)
            {
                check(timerId[slot] == Timers.NO_TIMER, "a free slot with a timer", slot);
                continue;
            }
            inUse++;
            incomplete += state[slot] == INCOMPLETE ? 1 : 0;
            check(slotByAddress.get(address[slot]) == slot, "address map", slot);
            check(state[slot] != INCOMPLETE || timerId[slot] != Timers.NO_TIMER, "a waiting entry without a timer", slot);
        }
        check(inUse == used, "used " + used + ", entries " + inUse, -1);
        check(incomplete == waiting, "waiting " + waiting + ", entries " + incomplete, -1);
        check(slotByAddress.size() == used, "address map size " + slotByAddress.size(), -1);
        final boolean[] seen = new boolean[n];
        for (int i = 0; i < n - used; i++)
        {
            final int slot = freeEntries[i];
            check(state[slot] == FREE && !seen[slot], "free stack", slot);
            seen[slot] = true;
        }
        // The queue's slots: each in exactly one of its order, its free stack, or the discarded frames being reported.
        final int q = queueOrder.length;
        check(queued + freeCount + discardedCount == q,
            "queue slots: " + queued + " queued, " + freeCount + " free, " + discardedCount + " discarded, of " + q, -1);
        final boolean[] slotSeen = new boolean[q];
        for (int i = 0; i < queued + freeCount + discardedCount; i++)
        {
            final int slot = i < queued ? queueOrder[i] : i < queued + freeCount ? freeSlots[i - queued]
                : discarded[(discardedFirst + i - queued - freeCount) % q];
            check(!slotSeen[slot], "queue slot listed twice", slot);
            slotSeen[slot] = true;
        }
    }

    private static void check(final boolean condition, final String what, final int slot)
    {
        if (!condition)
        {
            throw new IllegalStateException(what + (slot >= 0 ? " at slot " + slot : ""));
        }
    }

    private void sendArp(final int operation, final long ethDestination, final long targetMac, final int targetIp)
    {
        final MutableDirectBuffer frame = link.claim(ethDestination, EthernetFrame.ETHERTYPE_ARP);
        arp.wrap(frame, EthernetFrame.HEADER_LENGTH, ArpPacket.LENGTH)
            .hardwareType(ArpPacket.HTYPE_ETHERNET)
            .protocolType(EthernetFrame.ETHERTYPE_IPV4)
            .hardwareLength(6)
            .protocolLength(4)
            .operation(operation)
            .senderHardwareAddress(link.mac())
            .senderProtocolAddress(config.address())
            .targetHardwareAddress(targetMac)
            .targetProtocolAddress(targetIp);
        // Pad to the 60-byte Ethernet minimum; the kernel pads taps' frames too.
        final int length = EthernetFrame.HEADER_LENGTH + ArpPacket.LENGTH;
        frame.setMemory(length, 60 - length, (byte)0);
        link.commit(60);
        counters.increment(operation == ArpPacket.OP_REQUEST ? StackCounter.ARP_OUT_REQUESTS : StackCounter.ARP_OUT_REPLIES);
    }

    @Override
    public String toString()
    {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < address.length; i++)
        {
            if (state[i] != FREE)
            {
                sb.append(Ipv4Address.format(address[i])).append(' ')
                    .append(state[i] == REACHABLE ? MacAddress.format(mac[i]) : "incomplete").append('\n');
            }
        }
        return sb.toString();
    }
}
