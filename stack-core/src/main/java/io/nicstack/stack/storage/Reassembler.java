package io.nicstack.stack.storage;

import java.nio.ByteBuffer;

import org.agrona.DirectBuffer;
import org.agrona.collections.Hashing;
import org.agrona.collections.Int2IntHashMap;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.time.Timers;
import io.nicstack.stack.wire.Ipv4Header;

/**
 * IPv4 reassembly (RFC 791 §3.2, with the hole bookkeeping of RFC 815 kept as a sorted list of
 * received ranges).
 *
 * <p>Defences, in the spirit of Linux after FragmentSmack (CVE-2018-5391):
 * <ul>
 * <li>a bounded number of datagrams in progress, a quarter of them per source address; a source that holds its quarter
 *     gives up its own oldest for its newest, and when every context is taken, a new datagram takes one from the
 *     source that holds the most (its oldest), or gives up its own source's oldest if none holds more: a source only
 *     ever takes a context from one holding more than it does, so no source, flooding or not, can drive out the
 *     datagrams of sources that hold fewer ({@link #open});</li>
 * <li>a bounded number of fragments per datagram;</li>
 * <li>an overlapping fragment discards the whole datagram (as RFC 5722 requires for IPv6), so overlaps can neither
 *     rewrite accepted bytes nor make the reassembler work harder; an exact duplicate (same range, same MF) is dropped
 *     on its own and changes nothing, while one with the same range and the other MF contradicts what is held about
 *     where the datagram ends, and discards it as an overlap does;</li>
 * <li>a datagram whose whole, with the first fragment's header, would pass 65,535 bytes is dropped.</li>
 * </ul>
 * Buffers are allocated once per context and reused, so the number of contexts bounds the memory: each holds a buffer
 * for the largest datagram (65,535 bytes, with room for a 60-byte header) in direct memory, allocated up front. A cap
 * on bytes held would bound nothing more, and refusing fragments under one would lock other hosts out until the
 * datagrams holding the bytes timed out (only taking a context gives an old datagram up).
 *
 * <p>A reassembled datagram is contiguous in the context buffer: the first fragment's IP header
 * (with total length, flags and offset rewritten) followed by the payload.
 */
public final class Reassembler
{
    /** Result of {@link #accept}. */
    public static final int QUEUED = 0;
    public static final int COMPLETE = 1;
    public static final int DROP_DUPLICATE = 2;
    public static final int DROP_OVERLAP = 3;
    public static final int DROP_OVERFLOW = 4;
    public static final int DROP_MALFORMED = 5;

    /** Told when a datagram in progress is given up other than by a timeout, and why. */
    @FunctionalInterface
    public interface DiscardListener
    {
        /** A datagram given up: a bad or conflicting fragment, too many fragments, too long ({@link #DISCARDED}). */
        int DISCARDED = 0;
        /** Given up for a newer datagram of its own source (over its quarter, or the heaviest). */
        int EVICTED_OWN_SOURCE = 1;
        /** Given up for a new datagram of another source, when every context was taken. */
        int EVICTED_OTHER_SOURCE = 2;

        void onDiscarded(int why);
    }

    /** Told when a datagram times out (for ICMP time exceeded, RFC 1122 §3.3.2). */
    @FunctionalInterface
    public interface TimeoutListener
    {
        /**
         * {@code buffer} holds, at {@code offset}, the first fragment's IP header and up to 8 bytes of its payload,
         * {@code length} bytes in all; {@code length} is 0 when the first fragment never arrived.
         */
        void onTimeout(DirectBuffer buffer, int offset, int length, long now);
    }

    private static final int MAX_DATAGRAM = 65535;
    private static final int BUFFER_CAPACITY = 60 + MAX_DATAGRAM;

    private final int maxFragments;
    private final long timeoutNanos;
    private final Timers timers;
    private final TimeoutListener timeoutListener;
    /**
     * Told once for every datagram in progress given up other than by a timeout (which {@link #timeoutListener} is
     * told of): for an overlap or conflict, the fragment limit, a whole longer than 65,535 bytes, or room for a newer
     * datagram. A fragment refused while no datagram of its own is in progress gives nothing up.
     */
    private final DiscardListener discardListener;
    private final Context[] contexts;
    private final Timers.Handler expiry = this::onExpiry;
    private final Ipv4Header ip = new Ipv4Header();
    private final int maxPerSource;
    /** Datagrams in progress per source address (absent: none); sized so that it never grows. */
    private final Int2IntHashMap perSource;
    /** Datagrams given up for a newer one of their own source, and for one of another source, so far. */
    private long evictedForOwnSource;
    private long evictedForOtherSource;
    private int bytesHeld;
    private int active;
    private Context completed;

    public Reassembler(
        final int maxDatagrams,
        final int maxFragments,
        final long timeoutNanos,
        final Timers timers,
        final TimeoutListener timeoutListener,
        final DiscardListener discardListener)
    {
        this.maxFragments = maxFragments;
        this.timeoutNanos = timeoutNanos;
        this.timers = timers;
        this.timeoutListener = timeoutListener;
        this.discardListener = discardListener;
        this.maxPerSource = Math.max(1, maxDatagrams / 4);
        this.perSource = new Int2IntHashMap(2 * maxDatagrams, Hashing.DEFAULT_LOAD_FACTOR, 0);
        contexts = new Context[maxDatagrams];
        for (int i = 0; i < maxDatagrams; i++)
        {
            contexts[i] = new Context(maxFragments);
        }
    }

    /**
     * Add one fragment. {@code header} must be a validated IPv4 header with MF set or a non-zero
     * offset; {@code payloadOffset}/{@code payloadLength} locate its payload in the same buffer.
     * On {@link #COMPLETE} read the datagram with {@link #datagramBuffer()} and {@link #datagramLength()},
     * then call {@link #releaseCompleted()}.
     */
    public int accept(final Ipv4Header header, final int payloadOffset, final int payloadLength, final long now)
    {
        final int start = header.fragmentOffset();
        final int end = start + payloadLength;
        final boolean more = header.moreFragments();
        // RFC 791: every fragment but the last carries a multiple of 8 bytes; nothing may pass 65535.
        if ((more && (payloadLength == 0 || (payloadLength & 7) != 0)) || end + header.headerLength() > MAX_DATAGRAM)
        {
            return DROP_MALFORMED;
        }
        final int source = header.source();
        Context c = find(source, header.destination(), header.identification(), header.protocol());
        if (c == null)
        {
            c = open(header, now);
            if (c == null)
            {
                return DROP_OVERFLOW;
            }
        }
        final int insertAt = c.insertionPoint(start, end);
        if (insertAt == Context.DUPLICATE)
        {
            // Only a fragment that repeats MF as well changes nothing. One that says the held range ends the datagram
            // when it said more follows, or the reverse, contradicts it: a conflict, discarded as an overlap.
            if (more == (start != c.lastStart))
            {
                return DROP_DUPLICATE;
            }
            discard(c);
            return DROP_OVERLAP;
        }
        if (!more)
        {
            if (c.totalLength >= 0 && c.totalLength != end || end < c.highestEnd)
            {
                discard(c);
                return DROP_OVERLAP;
            }
            c.totalLength = end;
            c.lastStart = start;
        }
        else if (c.totalLength >= 0 && end > c.totalLength)
        {
            discard(c);
            return DROP_OVERLAP;
        }
        if (insertAt == Context.OVERLAP)
        {
            discard(c);
            return DROP_OVERLAP;
        }
        if (c.count == maxFragments)
        {
            discard(c);
            return DROP_OVERFLOW;
        }
        c.insert(insertAt, start, end);
        c.buffer.putBytes(c.headerLength + start, header.buffer(), payloadOffset, payloadLength);
        c.bytes += payloadLength;
        bytesHeld += payloadLength;
        if (c.highestEnd < end)
        {
            c.highestEnd = end;
        }
        if (start == 0)
        {
            c.copyHeader(header);
        }
        if (c.isComplete() && c.headerLength + c.totalLength > MAX_DATAGRAM)
        {
            // Each fragment fit with its own header; the whole does not with the first one's (IHL 15, say).
            discard(c);
            return DROP_MALFORMED;
        }
        if (c.isComplete())
        {
            timers.cancel(c.timerId);
            c.timerId = Timers.NO_TIMER;
            ip.wrap(c.buffer, 0, c.headerLength + c.totalLength)
                .totalLength(c.headerLength + c.totalLength)
                .flagsAndFragmentOffset(false, false, 0)
                .updateChecksum();
            completed = c;
            return COMPLETE;
        }
        return QUEUED;
    }

    /** Buffer holding the last completed datagram, header at index 0. */
    public DirectBuffer datagramBuffer()
    {
        return completed.buffer;
    }

    public int datagramLength()
    {
        return completed.headerLength + completed.totalLength;
    }

    /** Free the context of the last completed datagram. */
    public void releaseCompleted()
    {
        if (completed != null)
        {
            free(completed);
            completed = null;
        }
    }

    /** Datagrams in progress. */
    public int active()
    {
        return active;
    }

    /** Payload bytes held in all contexts. */
    public int bytesHeld()
    {
        return bytesHeld;
    }

    private Context find(final int source, final int destination, final int id, final int protocol)
    {
        for (final Context c : contexts)
        {
            if (c.inUse && c.source == source && c.destination == destination && c.id == id && c.protocol == protocol)
            {
                return c;
            }
        }
        return null;
    }

    /**
     * A context for a new datagram. A source that has {@link #maxPerSource} in progress gives up its oldest for it. When
     * every context is in use, the source holding the most gives up its oldest (the oldest of those holding the most,
     * when several do), unless the new datagram's own source holds as many: then it gives up its own oldest. So a
     * source takes contexts only from sources holding more than it does, and a flood, from one source or a few, ends
     * up replacing its own datagrams while those of sources holding fewer complete. Before, the oldest datagram of all
     * was given up: five sources flooding at their quarter gave up every other source's datagram (the oldest, as
     * theirs were renewed) as soon as it was taken. Only when every context is held by a different source (64 sources
     * flooding one datagram each) is the oldest of all given up, as before: a flood of R new datagrams a second from
     * that many sources gives up one that takes longer than 64 / R s to complete. Linux since 4.17 refuses new
     * fragments above its memory threshold instead; that lets a flood keep every other host out until it times out.
     */
    private Context open(final Ipv4Header header, final long now)
    {
        final int source = header.source();
        final int ofSource = perSource.get(source);
        Context free = null;
        Context oldestOfSource = null;
        for (final Context c : contexts)
        {
            if (!c.inUse)
            {
                free = free == null ? c : free;
            }
            else if (c.source == source && (oldestOfSource == null || c.openedAt - oldestOfSource.openedAt < 0))
            {
                oldestOfSource = c;
            }
        }
        Context c = free;
        if (ofSource >= maxPerSource || free == null)
        {
            final boolean overQuarter = ofSource > 0 && ofSource >= maxPerSource;
            // The heaviest other source, only when it may give up one: a map lookup per context in use.
            Context heaviest = null;
            int heaviestHolds = 0;
            for (int i = 0; !overQuarter && i < contexts.length; i++)
            {
                final Context other = contexts[i];
                if (!other.inUse || other.source == source)
                {
                    continue;
                }
                final int holds = perSource.get(other.source);
                if (holds > heaviestHolds || holds == heaviestHolds && other.openedAt - heaviest.openedAt < 0)
                {
                    heaviest = other;
                    heaviestHolds = holds;
                }
            }
            if (overQuarter || ofSource > 0 && ofSource >= heaviestHolds)
            {
                c = oldestOfSource;
                evictedForOwnSource++;
                discard(c, DiscardListener.EVICTED_OWN_SOURCE);
            }
            else if (heaviest != null)
            {
                c = heaviest;
                evictedForOtherSource++;
                discard(c, DiscardListener.EVICTED_OTHER_SOURCE);
            }
            else
            {
                return null; // no contexts at all
            }
        }
        c.open(source, header.destination(), header.identification(), header.protocol());
        c.openedAt = now;
        c.timerId = timers.schedule(now + timeoutNanos, expiry);
        perSource.put(source, perSource.get(source) + 1);
        active++;
        return c;
    }

    /** Datagrams given up, so far, for a newer datagram of their own source (over its quarter, or the heaviest). */
    public long evictedForOwnSource()
    {
        return evictedForOwnSource;
    }

    /** Datagrams given up, so far, for a new datagram of another source, when every context was taken. */
    public long evictedForOtherSource()
    {
        return evictedForOtherSource;
    }

    /** Datagrams in progress from {@code source}. */
    public int activeFrom(final int source)
    {
        return perSource.get(source);
    }

    private void discard(final Context c)
    {
        discard(c, DiscardListener.DISCARDED);
    }

    private void discard(final Context c, final int why)
    {
        free(c);
        discardListener.onDiscarded(why);
    }

    private void free(final Context c)
    {
        if (c.timerId != Timers.NO_TIMER)
        {
            timers.cancel(c.timerId);
            c.timerId = Timers.NO_TIMER;
        }
        bytesHeld -= c.bytes;
        c.inUse = false;
        active--;
        final int left = perSource.get(c.source) - 1;
        if (left > 0)
        {
            perSource.put(c.source, left);
        }
        else
        {
            perSource.remove(c.source);
        }
    }

    private void onExpiry(final long now, final long timerId)
    {
        for (final Context c : contexts)
        {
            if (c.inUse && c.timerId == timerId)
            {
                c.timerId = Timers.NO_TIMER;
                if (c.hasFirst)
                {
                    final int len = Math.min(c.headerLength + 8, c.headerLength + c.firstEnd());
                    timeoutListener.onTimeout(c.buffer, 0, len, now);
                }
                else
                {
                    timeoutListener.onTimeout(c.buffer, 0, 0, now);
                }
                free(c);
                return;
            }
        }
    }

    /** One datagram in progress. */
    private static final class Context
    {
        static final int DUPLICATE = -1;
        static final int OVERLAP = -2;

        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(BUFFER_CAPACITY));
        final int[] starts;
        final int[] ends;
        int count;
        boolean inUse;
        long openedAt;
        int source;
        int destination;
        int id;
        int protocol;
        int totalLength;
        /** Offset of the last fragment (MF clear), -1 until it arrives. */
        int lastStart;
        int highestEnd;
        int headerLength;
        boolean hasFirst;
        int bytes;
        long timerId = Timers.NO_TIMER;

        Context(final int maxFragments)
        {
            starts = new int[maxFragments];
            ends = new int[maxFragments];
        }

        void open(final int source, final int destination, final int id, final int protocol)
        {
            inUse = true;
            this.source = source;
            this.destination = destination;
            this.id = id;
            this.protocol = protocol;
            count = 0;
            totalLength = -1;
            lastStart = -1;
            highestEnd = 0;
            // Payload is stored after room for the largest header; moved behind the real one on copyHeader.
            headerLength = 60;
            hasFirst = false;
            bytes = 0;
        }

        /** Index where [start, end) goes in the sorted range list, or DUPLICATE / OVERLAP. */
        int insertionPoint(final int start, final int end)
        {
            int i = 0;
            while (i < count && starts[i] < start)
            {
                i++;
            }
            if (i < count && starts[i] == start && ends[i] == end)
            {
                return DUPLICATE;
            }
            if (i > 0 && ends[i - 1] > start)
            {
                return OVERLAP;
            }
            if (i < count && starts[i] < end)
            {
                return OVERLAP;
            }
            return i;
        }

        void insert(final int at, final int start, final int end)
        {
            System.arraycopy(starts, at, starts, at + 1, count - at);
            System.arraycopy(ends, at, ends, at + 1, count - at);
            starts[at] = start;
            ends[at] = end;
            count++;
        }

        void copyHeader(final Ipv4Header header)
        {
            final int realLength = header.headerLength();
            if (realLength != headerLength)
            {
                // Slide the payload received so far so it follows the real header directly.
                buffer.putBytes(realLength, buffer, headerLength, Math.max(highestEnd, 0));
                headerLength = realLength;
            }
            buffer.putBytes(0, header.buffer(), header.offset(), realLength);
            hasFirst = true;
        }

        int firstEnd()
        {
            return count > 0 && starts[0] == 0 ? ends[0] : 0;
        }

        boolean isComplete()
        {
            if (totalLength < 0 || count == 0 || starts[0] != 0)
            {
                return false;
            }
            for (int i = 1; i < count; i++)
            {
                if (starts[i] != ends[i - 1])
                {
                    return false;
                }
            }
            return ends[count - 1] == totalLength && hasFirst;
        }
    }
}
