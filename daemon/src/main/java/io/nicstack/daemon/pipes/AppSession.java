package io.nicstack.daemon.pipes;

import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.agrona.ExpandableArrayBuffer;
import org.agrona.IoUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;

import io.nicstack.nic.linux.Linux;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.CheckedRingReader;
import io.nicstack.pipes.CheckedRingWriter;
import io.nicstack.pipes.Protocol;
import io.nicstack.pipes.Protocol.Reason;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.tcp.Tcp;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpListener;
import io.nicstack.stack.tcp.TcpState;

/**
 * One attached app: its mapped file, the daemon ends of its three rings, its slots (the
 * {@link BufferProvider} of its listeners and connects), its listeners, and the handler of all its
 * connections. Everything runs on the event loop thread.
 */
final class AppSession implements BufferProvider, TcpHandler, CheckedRingReader.Handler
{
    /** Control messages taken from one app per round, so one app cannot starve the loop. */
    private static final int CONTROL_BURST = 64;
    private static final int EVENT_RECORD = 4 + Protocol.EVENT_LENGTH;
    /** Bytes of one control message in the ring, its record header included. */
    private static final int CONTROL_RECORD = RecordDescriptor.HEADER_LENGTH + Protocol.CONTROL_LENGTH;
    /** Daemon heap per slot, rounded up: a review measured 400-730 bytes (PipeSlot, its pipes and views, the slot arrays). */
    private static final int SLOT_HEAP_BYTES = 1024;
    /** File bytes read into one TX pipe per round at most, so one large file cannot hold up the loop. */
    private static final int FILL_BURST = 256 * 1024;
    /**
     * File bytes read for one app per round at most, over all its connections (a pread of 1 MiB from the page
     * cache is some 100 µs): an app with many files in flight cannot stall the loop the other apps share.
     */
    private static final int FILL_BUDGET = 1024 * 1024;
    /**
     * How long the connections of an app that detached may go without an octet acknowledged before what is left of
     * them is reset (as Linux bounds orphaned sockets: tcp_fin_timeout, tcp_orphan_retries). A peer that keeps a zero
     * window or never sends its FIN cannot keep the app's memory mapped for ever.
     */
    static final long DRAIN_STALL_NANOS = 60_000_000_000L;
    /**
     * Listeners one app may hold: a server needs a few; without a bound one app asking for port 0 again and again took
     * every port of the dynamic range from the others.
     */
    static final int MAX_LISTENERS = 64;
    /**
     * Words of the slots' bitmaps (64 slots each) the safety net sweeps per round: 1,024 slots, some 50 µs of reads where
     * one round's sweep of 15,000 slots took 0.7 ms, a hiccup every tick for every connection of the loop.
     */
    static final int SWEEP_WORDS = 16;
    private static final int SWEEP_DONE = Integer.MAX_VALUE;
    /** Descriptors taken from the app (SEND_FILE) per round at most: each costs a pidfd_getfd and a /proc read. */
    static final int TAKES_PER_ROUND = 16;
    /** A listener's accept queue at most, whatever backlog the app asks for (as Linux's somaxconn). */
    static final int MAX_ACCEPT_BACKLOG = 4096;
    /** Ports below this are for apps of root only (Linux's net.ipv4.ip_unprivileged_port_start, by default). */
    static final int UNPRIVILEGED_PORT_START = 1024;

    final Path path;
    /**
     * The app file's (device, inode): its name may name another file by now (the app deleted it and made another, or
     * the drain deleted it), and only this one is the session's to delete.
     */
    final Object fileKey;
    /**
     * The app file, open from the attach until the reap ({@link #closeAppFile}): while it is open its inode is not
     * freed, so no other file, such as the app's next one after a restart, can get the same {@link #fileKey} (ext4
     * hands a freed inode out again at once) and be taken for this one.
     */
    private int appFileFd;
    /** The inode of the app's memory (its memfd): one memory is attached once. */
    final long memoryInode;
    private final PipeServer server;
    private final Tcp tcp;
    private final PipeCounters counters;
    private final MappedByteBuffer mapped;
    final UnsafeBuffer file;
    final int maxConnections;
    final int pipeCapacity;
    final int ringCapacity;
    private final AppFiles appFiles;
    /** The app file's owner: its user's apps share the heap budget ({@link PipeServer}) and, unless root, low ports. */
    final int ownerUid;
    private boolean refusalLogged;
    /** What is left of {@link #FILL_BUDGET} this round. */
    private long fillBudget;
    private final CheckedRingReader control;
    /**
     * The rings the daemon writes into the app's memory: their tails are kept here, never read back from it (an odd one
     * made Agrona's producer store misaligned, a SIGBUS on aarch64); a ring whose positions the app broke is
     * {@link CheckedRingWriter#CORRUPT} and the app broken.
     */
    private final CheckedRingWriter events;
    private final CheckedRingWriter notifications;
    /**
     * Slots {@code [0, builtSlots)}, each built when a connection first takes it ({@link #allocate}), not at the attach:
     * all of one large app's (65,536) built on the event loop held every other app's round.
     */
    private final PipeSlot[] slots;
    private int builtSlots;
    /** Built slots free again, the last freed on top: taken before another slot is built. */
    private final int[] freeSlots;
    private int freeCount;
    /** Offset of the doorbell bitmap in {@link #file} ({@link AppFileDescriptor#doorbellsOffset}). */
    private final int doorbells;
    /** Slots served each round they are due (announced, or closed behind a file being sent): one bit per slot. */
    private final long[] activeBits;
    /**
     * Slots due in the next round, one bit per slot: the doorbells the app rang, taken from its bitmap, and the slots the
     * daemon marked itself (a file being sent, a NOTIFY the full ring held back, a connection just announced).
     */
    private final long[] pending;
    /**
     * Slots whose positions the safety net's last sweep found moved without their doorbell: counted as
     * {@link PipeCounter#DOORBELLS_MISSED} by the next sweep unless the bit came meanwhile (the app sets it just
     * after the position, so the scan may fall between the two).
     */
    private final long[] suspects;
    /**
     * The safety net's sweep ({@link #scanAll}): the next word of {@link #activeBits} it serves unrung, or
     * {@link #SWEEP_DONE}; this round's sweep covers the words {@code [sweptFrom, sweptTo)}.
     */
    private int sweepNext = SWEEP_DONE;
    private int sweptFrom;
    private int sweptTo;
    /** Where the next round's visit of the due slots starts: after the slot that spent the last of the fill budget. */
    private int scanStart;
    private final Int2ObjectHashMap<TcpListener> listeners = new Int2ObjectHashMap<>();
    private final UnsafeBuffer scratch = new UnsafeBuffer(new byte[Protocol.EVENT_LENGTH]);
    /** Events that found the event ring full, in order; drained before any new event is written. */
    private ExpandableArrayBuffer backlog = new ExpandableArrayBuffer(0);
    private final int backlogLimit;
    private int backlogHead;
    private int backlogTail;
    private boolean closing;
    /** Descriptors taken from the app this round (not counting those served from the ones kept, see AppFiles). */
    private int takes;
    /** The app detached: what it wrote before is being taken ({@link #beginDrain}). */
    private boolean detaching;
    private boolean broken;
    /** The app detached or died; its closed connections are finishing from its pipes ({@link #beginDrain}). */
    private boolean draining;
    private long drainDeadline;
    private long drainAcked;
    /** What the server counts the app as once it is drained: detached, or reaped dead. */
    PipeCounter goneAs = PipeCounter.APPS_DETACHED;

    AppSession(final PipeServer server, final Path path, final Object fileKey, final int appFileFd, final AppFiles appFiles,
        final int ownerUid, final long memoryInode, final MappedByteBuffer mapped, final int ringCapacity,
        final int pipeCapacity, final int maxConnections)
    {
        this.server = server;
        this.tcp = server.tcp();
        this.counters = server.counters();
        this.path = path;
        this.fileKey = fileKey;
        this.appFileFd = appFileFd;
        this.mapped = mapped;
        this.file = new UnsafeBuffer(mapped);
        this.maxConnections = maxConnections;
        this.pipeCapacity = pipeCapacity;
        this.ringCapacity = ringCapacity;
        this.appFiles = appFiles;
        this.ownerUid = ownerUid;
        this.memoryInode = memoryInode;
        final int ringLength = AppFileDescriptor.ringLength(ringCapacity);
        control = new CheckedRingReader(new UnsafeBuffer(file, AppFileDescriptor.controlRingOffset(), ringLength));
        events = new CheckedRingWriter(new UnsafeBuffer(file, AppFileDescriptor.eventRingOffset(ringCapacity), ringLength));
        notifications = new CheckedRingWriter(new UnsafeBuffer(file, AppFileDescriptor.notificationRingOffset(ringCapacity), ringLength));
        slots = new PipeSlot[maxConnections];
        freeSlots = new int[maxConnections];
        doorbells = AppFileDescriptor.doorbellsOffset(ringCapacity);
        final int words = (maxConnections + 63) >>> 6;
        activeBits = new long[words];
        pending = new long[words];
        suspects = new long[words];
        backlogLimit = backlogLimit(maxConnections, ringCapacity);
    }

    /**
     * Bytes of events owed an app at most before it is reaped: each slot yields at most three (opened, peer closed,
     * closed), plus an answer per request.
     */
    private static int backlogLimit(final int maxConnections, final int ringCapacity)
    {
        return (3 * maxConnections + 4 * ringCapacity / Protocol.EVENT_LENGTH + 1024) * EVENT_RECORD;
    }

    /**
     * The daemon heap an app of this geometry may come to hold: its slots (a {@link PipeSlot} with its pipes' views and
     * out-of-order ranges, under 1 KiB each) and a full event backlog. The pipes themselves are the app's memory.
     */
    static long heapBytes(final int maxConnections, final int ringCapacity)
    {
        return maxConnections * (long)SLOT_HEAP_BYTES + backlogLimit(maxConnections, ringCapacity);
    }

    /**
     * The daemon heap this app may still come to hold: {@link #heapBytes(int, int)} until it is gone; while its closed
     * connections drain, its slots' share only, since nothing is posted to it any more and its backlog was let go
     * ({@link #beginDrain}).
     */
    long heapBytes()
    {
        return draining ? maxConnections * (long)SLOT_HEAP_BYTES : heapBytes(maxConnections, ringCapacity);
    }

    int freeSlots()
    {
        return freeCount + maxConnections - builtSlots;
    }

    /** The slot at {@code index}, null if no connection has taken it yet. */
    PipeSlot slot(final int index)
    {
        return slots[index];
    }

    int listenerCount()
    {
        return listeners.size();
    }

    /** The app broke the ring protocol (or flooded the backlog): the server reaps it. */
    boolean broken()
    {
        return broken;
    }

    void markBroken()
    {
        broken = true;
    }

    // ------------------------------------------------------------------------------------------
    // One round
    // ------------------------------------------------------------------------------------------

    /** Events owed, control messages, accepts, doorbells and notifications; returns work done. */
    int doWork()
    {
        fillBudget = FILL_BUDGET;
        int work = 0;
        // Draining, the app is gone: TCP alone reads its closed connections' pipes, and the daemon the files they were
        // closed behind (pollSlot).
        if (!draining)
        {
            takes = 0;
            work += drainBacklog();
            final int read = control.read(this, CONTROL_BURST);
            if (read == CheckedRingReader.CORRUPT)
            {
                broken = true;
                return work + 1;
            }
            work += read;
            if (!listeners.isEmpty())
            {
                for (final TcpListener l : listeners.values())
                {
                    work += acceptAll(l);
                }
            }
        }
        takeDoorbells();
        // From where the last round's fill budget ran out: when the budget cannot serve every file, the connections
        // it passed over go first next round. Always from the first, the first four files took it every round at
        // 2 GB/s and the rest waited; the HTTP benchmark's 1 MiB responses timed out after 2 s.
        final int n = builtSlots;
        final int start = scanStart < n ? scanStart : 0;
        scanStart = -1;
        work += visit(start, n);
        work += visit(0, start);
        if (scanStart < 0)
        {
            scanStart = 0;
        }
        return work;
    }

    /**
     * Take the doorbells the app rang into {@link #pending}: each non-zero word of its bitmap is swapped to 0 before any
     * position of its slots is read ({@link #visit}). That order loses no doorbell: the app sets a bit (a CAS, a volatile
     * write) after it stores the position, so a swap that finds the bit also makes that position visible to the reads
     * after it, and a bit set after the swap stays for the next round. Read first and cleared after, a bit set between
     * the two would be cleared with its position unread. Bits of slots not active are dropped (counted).
     *
     * <p>While the safety net sweeps ({@link #scanAll}), the words it reaches this round make every active slot of
     * theirs due, note those not rung as suspects ({@link #pollSlot} keeps those whose positions moved), and count the
     * suspects of the sweep before that were never rung since; at its end it clears and counts the bits past the built
     * slots, which no round reads.
     */
    private void takeDoorbells()
    {
        final int words = (builtSlots + 63) >>> 6;
        sweptFrom = Math.min(sweepNext, words);
        sweptTo = Math.min(words, sweptFrom + SWEEP_WORDS);
        long ignored = 0;
        for (int w = 0; w < words; w++)
        {
            final int at = doorbells + (w << 3);
            long rung = file.getLongVolatile(at);
            if (rung != 0)
            {
                rung = file.getAndSetLong(at, 0);
                final long served = rung & activeBits[w];
                ignored += Long.bitCount(rung & ~served);
                pending[w] |= served;
                suspects[w] &= ~served; // rung after all: the sweep read the position before its bit came
            }
            if (w >= sweptFrom && w < sweptTo)
            {
                final long missed = suspects[w] & activeBits[w];
                if (missed != 0)
                {
                    counters.add(PipeCounter.DOORBELLS_MISSED, Long.bitCount(missed));
                }
                suspects[w] = activeBits[w] & ~rung; // served unrung: suspects while their positions moved (pollSlot)
                pending[w] |= activeBits[w];
            }
        }
        if (sweepNext != SWEEP_DONE)
        {
            sweepNext = sweptTo;
            if (sweptTo >= words)
            {
                sweepNext = SWEEP_DONE;
                // Bits of slots never built: nothing reads them each round, and an app may set any of them.
                final int allWords = AppFileDescriptor.DOORBELLS_LENGTH / Long.BYTES;
                for (int w = words; w < allWords; w++)
                {
                    final int at = doorbells + (w << 3);
                    if (file.getLongVolatile(at) != 0)
                    {
                        ignored += Long.bitCount(file.getAndSetLong(at, 0));
                    }
                }
            }
        }
        if (ignored != 0)
        {
            counters.add(PipeCounter.DOORBELLS_IGNORED, ignored);
        }
    }

    /**
     * Serve the due slots of {@code [from, to)} in order ({@link #pollSlot}), each bit cleared before its slot is served
     * (what marks it again meanwhile is for the next round); notes in {@link #scanStart} where the fill budget ran out.
     */
    private int visit(final int from, final int to)
    {
        int work = 0;
        for (int base = from & ~63; base < to; base += 64)
        {
            final int w = base >>> 6;
            long mask = -1L;
            if (base < from)
            {
                mask &= -1L << (from - base);
            }
            if (to - base < 64)
            {
                mask &= (1L << (to - base)) - 1;
            }
            long due = pending[w] & mask;
            if (due == 0)
            {
                continue;
            }
            pending[w] &= ~due;
            while (due != 0)
            {
                final int bit = Long.numberOfTrailingZeros(due);
                due &= due - 1;
                final PipeSlot s = slots[base + bit];
                if (!isActive(s))
                {
                    continue; // deactivated since it was marked
                }
                final boolean unrung = w >= sweptFrom && w < sweptTo && (suspects[w] & (1L << bit)) != 0;
                work += pollSlot(s, unrung);
                if (scanStart < 0 && fillBudget == 0)
                {
                    scanStart = base + bit + 1;
                }
                if (isActive(s) && s.fileFd >= 0)
                {
                    mark(s); // a file being sent goes on each round, at the pace of its acknowledgements
                }
            }
        }
        return work;
    }

    /** The slot is due next round, whether the app rings or not. */
    private void mark(final PipeSlot s)
    {
        pending[s.index >>> 6] |= 1L << (s.index & 63);
    }

    /**
     * The doorbells' safety net: from the next round on, a sweep serves every active slot, rung or not,
     * {@link #SWEEP_WORDS} words of them per round, and counts what it finds moved without a bit and never rung after
     * ({@link PipeCounter#DOORBELLS_MISSED}). A sweep still going on is left to finish: restarted at every tick, one
     * that a tick's rounds cannot finish (many slots, slow rounds) never reached its last words, nor its end, which
     * clears the bits of slots never built.
     */
    void scanAll()
    {
        if (sweepNext == SWEEP_DONE)
        {
            sweepNext = 0;
        }
    }

    /**
     * Doorbells (TX tail, RX head moved) and the reactive NOTIFY pacing of one announced connection. {@code unrung}: the
     * safety net's sweep reads it without a doorbell; a position found moved makes it a suspect ({@link #suspects}).
     */
    private int pollSlot(final PipeSlot s, final boolean unrung)
    {
        if (unrung)
        {
            suspects[s.index >>> 6] &= ~(1L << (s.index & 63)); // again below if a position moved
        }
        final TcpConnection c = s.connection;
        if (c == null || s.tcpGone)
        {
            return 0;
        }
        int work = s.fileFd >= 0 ? fillFile(s) : 0;
        if (s.appClosed)
        {
            return work; // closed behind its file: only the file goes on
        }
        final long txTail = s.tx.tailVolatile();
        final long rxHead = s.rx.headVolatile();
        if (unrung && (txTail != s.lastTxTail || rxHead != s.lastRxHead))
        {
            suspects[s.index >>> 6] |= 1L << (s.index & 63); // counted by the next sweep unless its bit comes
        }
        if (txTail != s.lastTxTail)
        {
            s.lastTxTail = txTail;
            counters.increment(PipeCounter.DOORBELLS);
            c.sendBufferAppended();
            server.flushStack(); // the segment leaves now, before the rest of the round
            work++;
        }
        if (rxHead != s.lastRxHead)
        {
            s.lastRxHead = rxHead;
            counters.increment(PipeCounter.DOORBELLS);
            c.receiveBufferConsumed();
            work++;
        }
        return work + notifyIfDue(s);
    }

    /** Enso's reactive pacing: a further NOTIFY only once the app's head reached the tail last notified. */
    private int notifyIfDue(final PipeSlot s)
    {
        final long tail = s.rx.contiguousEnd();
        if (tail > s.lastNotifiedTail && s.rx.readPosition() >= s.lastNotifiedTail)
        {
            scratch.setMemory(0, Protocol.NOTIFY_LENGTH, (byte)0);
            scratch.putLong(0, s.connectionId());
            scratch.putLong(8, tail);
            final int written = notifications.write(Protocol.NOTIFY, scratch, 0, Protocol.NOTIFY_LENGTH);
            if (written == CheckedRingWriter.WRITTEN)
            {
                s.lastNotifiedTail = tail;
                counters.increment(PipeCounter.NOTIFICATIONS_SENT);
                return 1;
            }
            if (written == CheckedRingWriter.CORRUPT)
            {
                broken = true;
                return 1;
            }
            // Ring full: the app is behind on notifications; it will see this tail on a later round.
            mark(s);
        }
        return 0;
    }

    private int acceptAll(final TcpListener l)
    {
        int n = 0;
        TcpConnection c;
        while ((c = l.accept()) != null)
        {
            final PipeSlot s = (PipeSlot)c.buffers();
            s.connection = c;
            s.publish();
            activate(s);
            counters.increment(PipeCounter.CONNECTIONS_ACCEPTED);
            event().putLong(0, s.connectionId());
            scratch.putInt(8, c.localPort());
            scratch.putInt(12, c.remoteAddress());
            scratch.putInt(16, c.remotePort());
            post(Protocol.ACCEPTED);
            // After ACCEPTED: readable bytes or a FIN that came before the accept are delivered from here on.
            c.handler(this);
            n++;
        }
        return n;
    }

    // ------------------------------------------------------------------------------------------
    // Control ring
    // ------------------------------------------------------------------------------------------

    @Override
    public void onMessage(final int type, final MutableDirectBuffer buffer, final int index, final int length)
    {
        counters.increment(PipeCounter.CONTROL_MESSAGES);
        final long first = length >= 8 ? buffer.getLong(index) : 0;
        if (length > Protocol.CONTROL_LENGTH)
        {
            badMessage(first);
            return;
        }
        switch (type)
        {
            case Protocol.LISTEN:
                if (length < 16)
                {
                    badMessage(first);
                    return;
                }
                onListen(first, buffer.getInt(index + 8), buffer.getInt(index + 12));
                break;
            case Protocol.UNLISTEN:
                if (length < 12)
                {
                    badMessage(first);
                    return;
                }
                onUnlisten(first, buffer.getInt(index + 8));
                break;
            case Protocol.CONNECT:
                if (length < 16)
                {
                    badMessage(first);
                    return;
                }
                onConnect(first, buffer.getInt(index + 8), buffer.getInt(index + 12));
                break;
            case Protocol.SHUTDOWN:
            case Protocol.CLOSE:
            case Protocol.ABORT:
                if (length < 8)
                {
                    badMessage(first);
                    return;
                }
                onShutdownOrClose(type, first);
                break;
            case Protocol.SET_OPTION:
                if (length < 24)
                {
                    badMessage(first);
                    return;
                }
                onSetOption(first, buffer.getInt(index + 8), buffer.getLong(index + 16));
                break;
            case Protocol.SEND_FILE:
                if (length < 32)
                {
                    badMessage(first);
                    return;
                }
                onSendFile(first, buffer.getInt(index + 8), buffer.getLong(index + 16), buffer.getLong(index + 24));
                break;
            default:
                // Unknown types, and TLS_INSTALL / RESYNC_RESPONSE until the TLS engine exists.
                badMessage(first);
                break;
        }
    }

    private void onListen(final long requestId, final int port, final int backlog)
    {
        if (detaching)
        {
            refuseDetaching(requestId);
            return;
        }
        // Port 0: the stack picks an unused one (the answer names it); backlog 0: the least queue, as listen(2).
        if (port < 0 || port > 65535 || backlog < 0)
        {
            error(requestId, Reason.BAD_ARGUMENT);
            return;
        }
        if (port != 0 && port < UNPRIVILEGED_PORT_START && ownerUid != 0)
        {
            // An app of any user but root holds no capability (AppFiles refuses one that does), so it lacks the
            // CAP_NET_BIND_SERVICE that Linux asks of bind(2) below UNPRIVILEGED_PORT_START.
            // As bind(2) without CAP_NET_BIND_SERVICE (EACCES): no user's app takes 22, 80 or 443 on the stack's
            // address ahead of the service meant to have it.
            error(requestId, Reason.PERMISSION_DENIED);
            return;
        }
        if (listeners.size() >= MAX_LISTENERS)
        {
            error(requestId, Reason.LIMIT_CONNECTIONS);
            return;
        }
        final TcpListener l;
        try
        {
            l = tcp.listen(port, Math.min(backlog, Math.min(maxConnections, MAX_ACCEPT_BACKLOG)), null);
        }
        catch (final IllegalStateException e)
        {
            error(requestId, Reason.PORT_IN_USE);
            return;
        }
        l.bufferProvider(this);
        l.maxConnections(maxConnections);
        listeners.put(l.port(), l);
        event().putLong(0, requestId);
        scratch.putInt(8, l.port());
        post(Protocol.LISTENING);
    }

    private void onUnlisten(final long requestId, final int port)
    {
        final TcpListener l = listeners.remove(port);
        if (l == null)
        {
            error(requestId, Reason.BAD_ARGUMENT);
            return;
        }
        l.close();
    }

    private void onConnect(final long requestId, final int address, final int port)
    {
        if (detaching)
        {
            counters.increment(PipeCounter.SLOTS_EXHAUSTED); // as allocate() counts what comes for a closing app
            refuseDetaching(requestId);
            return;
        }
        final StackConfig config = server.config();
        if (port < 1 || port > 65535)
        {
            error(requestId, Reason.BAD_ARGUMENT);
            return;
        }
        if (!config.onLink(address) && config.gateway() == 0)
        {
            error(requestId, Reason.NO_ROUTE);
            return;
        }
        if (freeSlots() == 0)
        {
            counters.increment(PipeCounter.SLOTS_EXHAUSTED);
            error(requestId, Reason.LIMIT_CONNECTIONS);
            return;
        }
        final TcpConnection c;
        try
        {
            c = tcp.connect(address, port, this, null, this);
        }
        catch (final IllegalArgumentException e)
        {
            error(requestId, Reason.BAD_ARGUMENT);
            return;
        }
        catch (final IllegalStateException e)
        {
            error(requestId, Reason.LIMIT_CONNECTIONS);
            return;
        }
        final PipeSlot s = (PipeSlot)c.buffers();
        s.connection = c;
        s.connecting = true;
        s.requestId = requestId;
        counters.increment(PipeCounter.CONNECTIONS_OPENED);
    }

    /**
     * A LISTEN or CONNECT the app wrote before its DETACHED: its listeners and connections are about to close, so it may
     * open no more (LIMIT_CONNECTIONS, as {@link #allocate} answers once it is closing). Acted on, the up to one ring's
     * worth of them that {@link #beginDrain} takes in one call would each open a connection only to reset it, each
     * with an ephemeral port search, on the loop every app shares.
     */
    private void refuseDetaching(final long requestId)
    {
        error(requestId, Reason.LIMIT_CONNECTIONS);
    }

    private void onShutdownOrClose(final int type, final long connectionId)
    {
        final PipeSlot s = announcedSlot(connectionId);
        if (s == null)
        {
            return;
        }
        // Written behind a SEND_FILE that was refused before the app could see FILE_SENT (at a detach every one is):
        // that file is not in the stream, and a FIN would pass it off as whole, behind a later file too.
        final boolean afterUnseenRefusal = s.fileRefused && control.messagePosition() - s.fileRefusedBelow < 0;
        final boolean fileGoesOn = s.fileFd >= 0 && !s.tcpGone && type != Protocol.ABORT && !afterUnseenRefusal
            && !(type == Protocol.CLOSE && s.rx.readable() > 0); // unread data makes a CLOSE a reset (Linux's tcp_close)
        if (type != Protocol.SHUTDOWN)
        {
            s.appClosed = true;
            if (!fileGoesOn)
            {
                deactivate(s);
            }
        }
        if (fileGoesOn)
        {
            // RFC 9293 CLOSE: what the app queued before, here the file being sent, goes out first, and the FIN after
            // it (fillFile; polled on while the app is gone). A raw app may write CLOSE or SHUTDOWN behind its
            // SEND_FILE; the client library does so when it closes (detaches) with a file in flight.
            s.endAfterFile = type == Protocol.CLOSE || s.endAfterFile == Protocol.CLOSE ? Protocol.CLOSE : type;
            return;
        }
        if (s.fileFd >= 0)
        {
            // ABORT, a CLOSE with unread data, or an end behind an unseen refusal: the file ends with the connection.
            final long done = s.fileAppended;
            stopFile(s);
            fileSent(s, Reason.RESET, done); // every accepted SEND_FILE is answered once
            if (!s.tcpGone)
            {
                counters.increment(afterUnseenRefusal ? PipeCounter.FILES_CLOSED_UNSEEN : PipeCounter.FILES_FAILED);
                s.connection.abort(); // the slot is freed when TCP lets go, if the app closed it
                return;
            }
        }
        if (s.tcpGone)
        {
            if (s.appClosed)
            {
                release(s);
            }
            return;
        }
        if (type == Protocol.ABORT)
        {
            s.connection.abort(); // RFC 9293 ABORT: RST now, queued data dropped
            return;
        }
        if (afterUnseenRefusal)
        {
            // An app that saw the refusal may write the bytes itself; its CLOSE comes after the refusal, and is a FIN.
            counters.increment(PipeCounter.FILES_CLOSED_UNSEEN);
            s.connection.abort(); // the slot is freed when TCP lets go, if the app closed it
            return;
        }
        endStream(s, type);
    }

    /** CLOSE or SHUTDOWN takes effect: what the app (or a file) appended so far is the rest of the stream, then FIN. */
    private static void endStream(final PipeSlot s, final int type)
    {
        s.tx.freeze();
        if (type == Protocol.CLOSE)
        {
            // RFC 9293 CLOSE; unread RX bytes make it a reset (TcpConnection.close). The slot is freed when TCP lets go.
            s.connection.close();
        }
        else
        {
            s.connection.shutdownOutput();
        }
    }

    private void onSetOption(final long connectionId, final int option, final long value)
    {
        final PipeSlot s = announcedSlot(connectionId);
        if (s == null)
        {
            return;
        }
        if (s.tcpGone)
        {
            return;
        }
        switch (option)
        {
            case Protocol.OPTION_NO_DELAY:
                s.connection.settings().noDelay = value != 0;
                s.connection.sendBufferAppended();
                break;
            case Protocol.OPTION_KEEP_ALIVE:
                s.connection.keepAlive(value != 0);
                break;
            case Protocol.OPTION_DSCP:
                if (value < 0 || value > 63)
                {
                    error(connectionId, Reason.BAD_ARGUMENT);
                    break;
                }
                s.connection.settings().dscp = (int)value; // from its next segment on
                break;
            default:
                error(connectionId, Reason.BAD_ARGUMENT);
                break;
        }
    }

    // ------------------------------------------------------------------------------------------
    // SEND_FILE: the daemon reads the app's file into the TX pipe itself
    // ------------------------------------------------------------------------------------------

    private void onSendFile(final long connectionId, final int appFd, final long position, final long length)
    {
        final PipeSlot s = announcedSlot(connectionId);
        if (s == null)
        {
            return;
        }
        if (s.tcpGone)
        {
            fileSent(s, Reason.UNKNOWN_CONNECTION, 0); // CLOSED or RESET is on its way (or was sent)
            return;
        }
        if (position < 0 || length <= 0 || position + length < 0 || s.fileFd >= 0 || s.tx.isFrozen())
        {
            refuseFile(s, Reason.BAD_ARGUMENT);
            return;
        }
        final int fd;
        if (server.sendFileAllowed() && !detaching)
        {
            fd = appFiles.take(appFd);
            takes += appFiles.lastTakeReused ? 0 : 1;
        }
        else
        {
            fd = -1;
        }
        if (fd < 0)
        {
            if (!refusalLogged && !detaching)
            {
                refusalLogged = true; // once per app: a refusal repeats for every response otherwise
                server.log().println("nicstack pipes: SEND_FILE of " + LogText.untrusted(path.getFileName()) + " refused: "
                    + (server.sendFileAllowed() ? LogText.untrusted(appFiles.lastRefusal(), LogText.MAX_MESSAGE)
                        : "the daemon runs with --no-send-file"));
            }
            refuseFile(s, Reason.FILE_UNREADABLE);
            return;
        }
        if (appFiles.lastTakeReused)
        {
            counters.increment(PipeCounter.FILE_DESCRIPTORS_REUSED);
        }
        s.fileFd = fd;
        s.filePosition = position;
        s.fileRemaining = length;
        s.fileAppended = 0;
        s.tx.beginFill();
        fillFile(s);
        if (s.fileFd >= 0)
        {
            mark(s); // the rest in the next rounds
        }
    }

    /**
     * Read more of the slot's file into its TX pipe, once a worthwhile span (a quarter of the pipe, or the rest)
     * is free: acknowledgements free it, so this runs at the pace of the connection. At the end, FILE_SENT.
     */
    private int fillFile(final PipeSlot s)
    {
        final PipeSendBuffer tx = s.tx;
        if (tx.free() < Math.min(s.fileRemaining, tx.capacity() / 4))
        {
            return 0;
        }
        final long burst = Math.min(FILL_BURST, fillBudget);
        long appended = 0;
        int free;
        while (s.fileRemaining > 0 && appended < burst && (free = tx.free()) > 0)
        {
            final int max = (int)Math.min(Math.min(s.fileRemaining, burst - appended), free);
            final long read = tx.fill(s.fileFd, s.filePosition, max);
            if (read > 0)
            {
                s.filePosition += read;
                s.fileRemaining -= read;
                s.fileAppended += read;
                appended += read;
            }
            else if (read == -Linux.EINTR)
            {
                break; // again next round
            }
            else
            {
                // 0: the file ended before the promised length (it shrank, or the range lies beyond it); < 0: a
                // read error. Nothing appended yet: the stream is intact, so this is a refusal. Otherwise the
                // stream cannot be completed, and the peer must not take a short body for a whole one.
                final long done = s.fileAppended;
                stopFile(s);
                if (done == 0 && s.endAfterFile == 0)
                {
                    refuseFile(s, Reason.FILE_UNREADABLE);
                    return 1;
                }
                // Part of it went, or the app ended its output behind it: the peer must not take what it got for all.
                fileSent(s, Reason.FILE_UNREADABLE, done);
                counters.increment(PipeCounter.FILES_FAILED);
                s.endAfterFile = 0;
                s.connection.abort();
                return 1;
            }
        }
        if (appended > 0)
        {
            fillBudget -= appended;
            counters.add(PipeCounter.FILE_BYTES, appended);
            s.lastTxTail = tx.end(); // published by fill: no doorbell to answer
            s.connection.sendBufferAppended();
            server.flushStack();
        }
        if (s.fileRemaining == 0)
        {
            counters.increment(PipeCounter.FILES_SENT);
            final long done = s.fileAppended;
            stopFile(s);
            fileSent(s, Reason.NONE, done);
            final int end = s.endAfterFile;
            if (end != 0)
            {
                s.endAfterFile = 0;
                if (s.appClosed)
                {
                    deactivate(s); // polled only for its file
                }
                endStream(s, end);
            }
        }
        return appended > 0 ? 1 : 0;
    }

    /** Close the slot's file (if any) and give the TX tail back to the app. */
    private static void stopFile(final PipeSlot s)
    {
        if (s.fileFd >= 0)
        {
            Linux.closeQuietly(s.fileFd);
            s.fileFd = -1;
            s.tx.endFill();
        }
    }

    /**
     * Refuse a SEND_FILE with nothing of it sent: FILE_SENT with {@code reason} and 0 bytes. What the app has written to
     * its control ring by now it wrote before it could see the refusal: a CLOSE or SHUTDOWN among that resets the
     * connection ({@link #onShutdownOrClose}). Not after a SHUTDOWN: the FIN went before the SEND_FILE.
     */
    private void refuseFile(final PipeSlot s, final int reason)
    {
        counters.increment(PipeCounter.FILES_REFUSED);
        if (!s.tx.isFrozen())
        {
            // Read before FILE_SENT is posted: nothing below it can have been written after the app saw the answer.
            s.fileRefused = true;
            s.fileRefusedBelow = control.producerPosition();
        }
        fileSent(s, reason, 0);
    }

    /**
     * FILE_SENT: the answer to the slot's SEND_FILE, once. Not to an app that closed the connection behind its file:
     * the app forgot the connection with its CLOSE (the client library let the descriptor go once the daemon read the
     * SEND_FILE).
     */
    private void fileSent(final PipeSlot s, final int reason, final long bytes)
    {
        if (s.appClosed)
        {
            return;
        }
        event().putLong(0, s.connectionId());
        scratch.putInt(8, reason);
        scratch.putLong(16, bytes);
        post(Protocol.FILE_SENT);
    }

    /** The slot the app may name with {@code connectionId}, or null after an UNKNOWN_CONNECTION error. */
    private PipeSlot announcedSlot(final long connectionId)
    {
        final int index = Protocol.slotOf(connectionId);
        if (index < builtSlots && connectionId >= 0)
        {
            final PipeSlot s = slots[index];
            if (s.allocated && s.announced && !s.appClosed && s.connectionId() == connectionId)
            {
                return s;
            }
        }
        counters.increment(PipeCounter.UNKNOWN_CONNECTION_IDS);
        error(connectionId, Reason.UNKNOWN_CONNECTION);
        return null;
    }

    private void badMessage(final long id)
    {
        counters.increment(PipeCounter.BAD_CONTROL_MESSAGES);
        error(id, Reason.BAD_MESSAGE);
    }

    private void error(final long id, final int reason)
    {
        event().putLong(0, id);
        scratch.putInt(8, reason);
        post(Protocol.ERROR);
    }

    // ------------------------------------------------------------------------------------------
    // TCP events of this app's connections
    // ------------------------------------------------------------------------------------------

    @Override
    public void onConnected(final TcpConnection c)
    {
        final PipeSlot s = (PipeSlot)c.buffers();
        if (s.connection != c || !s.connecting)
        {
            return;
        }
        final long requestId = s.requestId;
        s.publish();
        activate(s);
        event().putLong(0, requestId);
        scratch.putLong(8, s.connectionId());
        scratch.putInt(16, c.localPort());
        scratch.putInt(20, c.remoteAddress());
        scratch.putInt(24, c.remotePort());
        post(Protocol.CONNECTED);
    }

    @Override
    public void onReadable(final TcpConnection c)
    {
        final PipeSlot s = (PipeSlot)c.buffers();
        if (s.connection == c && s.announced && !s.appClosed)
        {
            notifyIfDue(s);
        }
    }

    @Override
    public void onPeerClosed(final TcpConnection c)
    {
        final PipeSlot s = (PipeSlot)c.buffers();
        if (s.connection == c && s.announced && !s.appClosed)
        {
            // The last bytes' NOTIFY may be held back by pacing; PEER_CLOSED says the stream ends at the tail.
            notifyIfDue(s);
            event().putLong(0, s.connectionId());
            post(Protocol.PEER_CLOSED);
        }
    }

    @Override
    public void onDeliveryProblem(final TcpConnection c)
    {
        final PipeSlot s = (PipeSlot)c.buffers();
        if (s.connection == c && s.announced && !s.appClosed)
        {
            event().putLong(0, s.connectionId());
            post(Protocol.DELIVERY_PROBLEM);
        }
    }

    @Override
    public void onClosed(final TcpConnection c, final int reason)
    {
        final PipeSlot s = (PipeSlot)c.buffers();
        if (s.connection != c || closing)
        {
            return;
        }
        if (s.fileFd >= 0)
        {
            // Every accepted SEND_FILE is answered once: the client keeps the descriptor open until then.
            final long done = s.fileAppended;
            stopFile(s);
            if (s.announced && !s.appClosed)
            {
                fileSent(s, reason == TcpConnection.CLOSE_RESET ? Reason.RESET : Reason.UNKNOWN_CONNECTION, done);
            }
        }
        if (s.connecting)
        {
            event().putLong(0, s.requestId);
            scratch.putInt(8, reason == TcpConnection.CLOSE_TIMED_OUT ? Reason.ofTimeout(c.softError()) :
                reason == TcpConnection.CLOSE_RESET || reason == TcpConnection.CLOSE_REFUSED ? Reason.REFUSED : Reason.RESET);
            post(Protocol.ERROR);
            release(s);
            return;
        }
        if (s.announced && !s.appClosed)
        {
            deactivate(s);
            event().putLong(0, s.connectionId());
            if (reason == TcpConnection.CLOSE_RESET)
            {
                post(Protocol.RESET);
            }
            else
            {
                scratch.putInt(8, reason);
                scratch.putInt(12, c.softError());
                post(Protocol.CLOSED);
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // BufferProvider: this app's slots
    // ------------------------------------------------------------------------------------------

    @Override
    public ConnectionBuffers allocate()
    {
        if (freeSlots() == 0 || closing)
        {
            counters.increment(PipeCounter.SLOTS_EXHAUSTED);
            return null;
        }
        final PipeSlot s = freeCount > 0 ? slots[freeSlots[--freeCount]] : buildSlot();
        s.open();
        return s;
    }

    /** The next slot never taken before: its views over the app's memory (nothing written to it yet). */
    private PipeSlot buildSlot()
    {
        final int index = builtSlots;
        final PipeSlot s = new PipeSlot(this, file, ringCapacity, pipeCapacity, index, PipeServer.MAX_OUT_OF_ORDER_RANGES);
        slots[index] = s;
        builtSlots = index + 1;
        return s;
    }

    @Override
    public int receiveCapacity()
    {
        return pipeCapacity;
    }

    /** TCP let go of the slot's connection; the slot is free once the app has let go too (or never knew it). */
    @Override
    public void release(final ConnectionBuffers buffers)
    {
        final PipeSlot s = (PipeSlot)buffers;
        s.tcpGone = true;
        if (s.announced ? s.appClosed : !s.connecting)
        {
            release(s);
        }
    }

    private void release(final PipeSlot s)
    {
        if (!s.allocated)
        {
            return;
        }
        deactivate(s);
        stopFile(s);
        s.free();
        freeSlots[freeCount++] = s.index;
    }

    /** Serve the slot from now on: when rung, when marked, and once at once (what came before the announcement). */
    private void activate(final PipeSlot s)
    {
        if (!isActive(s))
        {
            activeBits[s.index >>> 6] |= 1L << (s.index & 63);
            mark(s);
        }
    }

    /** Whether the rounds serve the slot: its bit in {@link #activeBits}. */
    private boolean isActive(final PipeSlot s)
    {
        return (activeBits[s.index >>> 6] & 1L << (s.index & 63)) != 0;
    }

    private void deactivate(final PipeSlot s)
    {
        if (isActive(s))
        {
            final long bit = 1L << (s.index & 63);
            activeBits[s.index >>> 6] &= ~bit;
            pending[s.index >>> 6] &= ~bit;
            suspects[s.index >>> 6] &= ~bit;
        }
    }

    // ------------------------------------------------------------------------------------------
    // Event ring
    // ------------------------------------------------------------------------------------------

    private UnsafeBuffer event()
    {
        scratch.setMemory(0, Protocol.EVENT_LENGTH, (byte)0);
        return scratch;
    }

    private void post(final int type)
    {
        if (closing)
        {
            return;
        }
        if (backlogHead == backlogTail)
        {
            final int written = events.write(type, scratch, 0, Protocol.EVENT_LENGTH);
            if (written == CheckedRingWriter.WRITTEN)
            {
                counters.increment(PipeCounter.EVENTS_SENT);
                return;
            }
            if (written == CheckedRingWriter.CORRUPT)
            {
                broken = true;
                return;
            }
        }
        // The app is behind on its event ring; keep the order and retry every round.
        counters.increment(PipeCounter.EVENTS_DEFERRED);
        if (backlogTail - backlogHead >= backlogLimit)
        {
            broken = true;
            return;
        }
        if (backlogHead >= backlogTail - backlogHead && backlogTail + EVENT_RECORD > backlog.capacity())
        {
            // Move what waits to the front rather than grow, once at least as much has gone as waits: each byte is
            // moved about once, and the buffer stays within about twice the limit.
            final byte[] bytes = backlog.byteArray();
            System.arraycopy(bytes, backlogHead, bytes, 0, backlogTail - backlogHead);
            backlogTail -= backlogHead;
            backlogHead = 0;
        }
        backlog.putInt(backlogTail, type);
        backlog.putBytes(backlogTail + 4, scratch, 0, Protocol.EVENT_LENGTH);
        backlogTail += EVENT_RECORD;
    }

    /**
     * The control ring waits for the next round once this one has taken {@link #TAKES_PER_ROUND} descriptors, so
     * an app naming descriptors to refuse cannot make a round long; messages keep their order.
     */
    @Override
    public boolean ready()
    {
        return detaching || takes < TAKES_PER_ROUND; // at the detach nothing is taken
    }

    /** Bytes of the event backlog's buffer (for tests). */
    int backlogCapacity()
    {
        return backlog.capacity();
    }

    private int drainBacklog()
    {
        int n = 0;
        while (backlogHead < backlogTail)
        {
            final int written = events.write(backlog.getInt(backlogHead), backlog, backlogHead + 4, Protocol.EVENT_LENGTH);
            if (written != CheckedRingWriter.WRITTEN)
            {
                broken |= written == CheckedRingWriter.CORRUPT;
                break;
            }
            counters.increment(PipeCounter.EVENTS_SENT);
            backlogHead += EVENT_RECORD;
            n++;
        }
        if (backlogHead == backlogTail)
        {
            backlogHead = 0;
            backlogTail = 0;
        }
        return n;
    }

    // ------------------------------------------------------------------------------------------
    // Liveness and teardown
    // ------------------------------------------------------------------------------------------

    void heartbeat(final long epochMillis)
    {
        file.putLongRelease(AppFileDescriptor.DAEMON_HEARTBEAT_OFFSET, epochMillis);
    }

    int state()
    {
        return file.getIntVolatile(AppFileDescriptor.STATE_OFFSET);
    }

    /**
     * The app detached in order (the client library's close(): CLOSE for each connection, then DETACHED), or its
     * process exited. What it wrote to the control ring before (those CLOSEs) is taken first; then its listeners close
     * and what it left open is reset. The connections it closed go on sending what it committed, and then their FIN,
     * as a kernel does after close(2) (and after exit): their pipes stay mapped here after the app unmapped and deleted
     * its file, or died. {@link #drained} says when they are done.
     *
     * @return connections reset (left open by the app).
     */
    int beginDrain(final long nowNanos)
    {
        // What an app writes before it detaches is a CLOSE or SHUTDOWN per connection and an UNLISTEN per listener,
        // at most what one ring holds: taken up to that, an app still writing after it detached cannot keep the loop
        // here. SEND_FILEs among them are refused without taking their descriptors, LISTENs and CONNECTs without
        // opening anything. Bounded in records (padding counts, see CheckedRingReader) and in bytes: what the app wrote
        // before it detached lies within one ring's length of the head, and a stale record the reader finds again on
        // each pass over the ring cannot hold the loop.
        detaching = true;
        final int limit = Math.min(ringCapacity / CONTROL_RECORD, 2 * maxConnections + MAX_LISTENERS + CONTROL_BURST);
        final long start = control.position();
        for (int taken = 0; taken < limit && control.position() - start < ringCapacity; )
        {
            final int read = control.read(this, CONTROL_BURST);
            if (read == CheckedRingReader.CORRUPT)
            {
                broken = true;
                return 0;
            }
            if (read == 0)
            {
                break; // nothing more (a read that only skipped the end padding counted it: go on from the start)
            }
            taken += read;
        }
        closing = true;
        draining = true;
        // Nothing is posted to a gone app (closing), and what waits for it is never read: the backlog's heap goes back,
        // and so does its share of the budget (heapBytes()), for the app's next instance say, not after the drain.
        backlog = new ExpandableArrayBuffer(0);
        backlogHead = 0;
        backlogTail = 0;
        for (final TcpListener l : listeners.values())
        {
            l.close();
        }
        listeners.clear();
        int reset = 0;
        for (int i = 0; i < builtSlots; i++)
        {
            final PipeSlot s = slots[i];
            if (s.allocated && !s.tcpGone && !s.appClosed && s.connection != null)
            {
                s.connection.abort();
                reset++;
            }
        }
        drainAcked = drainProgress();
        drainDeadline = nowNanos + DRAIN_STALL_NANOS;
        return reset;
    }

    boolean draining()
    {
        return draining;
    }

    /**
     * A detached app's connections are done with its pipes (ended, or in TIME-WAIT, which keeps no pipes), or sent
     * nothing the peer acknowledged for {@link #DRAIN_STALL_NANOS}: {@link #teardown} resets what is left.
     */
    boolean drained(final long nowNanos)
    {
        final long acked = drainProgress();
        if (acked < 0)
        {
            return true;
        }
        if (acked != drainAcked)
        {
            drainAcked = acked;
            drainDeadline = nowNanos + DRAIN_STALL_NANOS;
        }
        return nowNanos - drainDeadline >= 0;
    }

    /** Octets acknowledged so far on the connections that still hold a slot; -1 when none does. */
    private long drainProgress()
    {
        boolean live = false;
        long acked = 0;
        for (int i = 0; i < builtSlots; i++)
        {
            final PipeSlot s = slots[i];
            if (s.allocated && !s.tcpGone)
            {
                live = true;
                acked += s.connection != null ? s.connection.bytesAcked() : 0;
            }
        }
        return live ? acked : -1;
    }

    /**
     * The app is gone (dead, detached or broken): reset every connection in its slots, close its
     * listeners, and unmap its memory. No connection references the memory afterwards.
     *
     * @return connections reset.
     */
    int teardown(final int finalState, final int reason)
    {
        closing = true;
        for (final TcpListener l : listeners.values())
        {
            l.close();
        }
        listeners.clear();
        final List<TcpConnection> mine = new ArrayList<>();
        tcp.forEachConnection(c ->
        {
            // Not TIME-WAIT: it gave its pipes back on entry (Tcp.timeWaitEntered) and keeps its 2*MSL (MUST-13).
            if (c.buffers() instanceof PipeSlot && ((PipeSlot)c.buffers()).session == this && c.state() != TcpState.TIME_WAIT)
            {
                mine.add(c);
            }
        });
        int reset = 0;
        for (final TcpConnection c : mine)
        {
            if (c.state() != TcpState.CLOSED)
            {
                c.abort();
                reset++;
            }
        }
        for (int i = 0; i < builtSlots; i++)
        {
            stopFile(slots[i]);
        }
        appFiles.close();
        if (finalState != 0)
        {
            file.putInt(AppFileDescriptor.REASON_OFFSET, reason);
            file.putIntRelease(AppFileDescriptor.STATE_OFFSET, finalState);
        }
        IoUtil.unmap(mapped);
        return reset;
    }

    /** Let the app file go (the session is reaped, its file deleted if it was still the one under its name). */
    void closeAppFile()
    {
        Linux.closeQuietly(appFileFd);
        appFileFd = -1;
    }

    /** Whether the app's process has exited, by the pidfd its memory was taken through (not by a pid, reusable). */
    boolean processExited()
    {
        return appFiles.processExited();
    }

    /** Daemon shutdown: tell the app (in its memory); {@link PipeServer#close} then tears the session down. */
    void daemonGone()
    {
        closing = true;
        file.putIntRelease(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_DAEMON_GONE);
    }
}
