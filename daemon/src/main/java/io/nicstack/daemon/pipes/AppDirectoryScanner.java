package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.OneToOneConcurrentArrayQueue;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.linux.Linux;
import io.nicstack.pipes.AppFileDescriptor;

/**
 * Finds the files in {@code <shm>/apps} that the event loop should try to attach, so that the loop never lists the
 * directory or opens a file that is not ready. Anyone may create files there; before, every scan re-opened and mapped
 * each file that was not attached, on the loop thread (110-730 ms per scan at 5,000-20,000 junk files).
 *
 * <p>A file is looked at when it appears or changes (a new inode or modification time under its name), then again after
 * 100 ms, and after twice as long each time, up to 30 s: an app that writes its file in place is seen once it is ready,
 * a file that never becomes ready costs less and less. A file changed in its inode is still the file it was, with what
 * the scanner knows of it (that it was handed over, that it said REJECTED), while what its app wrote in it when it made
 * it, its {@link Stamp}, stays the same: the loop's answer (REJECTED, ATTACHED) is such a change, and does not make the
 * file a new one whose owner the loop never rejected. Another app's file in that inode, as a restarted app's file may
 * get the inode of its last one's, is a new file. It is handed to the loop ({@link #poll}) when its state is ATTACHING
 * (the loop checks everything again, and skips a name it has attached), or, once, when it is not a regular file or has
 * more than one name (the loop refuses it and counts that). The state is read with one {@code pread}, not a mapping: a
 * file truncated under the scanner cannot fault it. Files are handed over a user (owner) at a time, in turns, into a
 * short queue, the users served least lately first and those whose files the loop rejected lately last; what does not
 * fit waits for the next scan without backing off. So no user's flood of ready files queues ahead of another user's
 * app. (A user who controls many uids, subordinate uids say, gets a turn for each.) A file answered REJECTED whose
 * app's process is gone is deleted ({@link #deleteIfAbandoned}), and so is a file in another final state, ATTACHED
 * say, that an earlier daemon left and whose app's process is gone: an app that died while no daemon ran.
 *
 * <p>Run by a thread of its own ({@link #startThread}) that scans when the loop asks ({@link #request}, every ~100 ms)
 * and then rests nine times as long as the scan took, up to 1 s, so a large directory costs it about a tenth of a
 * core and a new app is still found within a scan and a second; or, in tests, inline on the caller's thread with the
 * caller's clock.
 */
final class AppDirectoryScanner implements AutoCloseable
{
    static final long FIRST_RELOOK_NANOS = 100_000_000L;
    static final long MAX_RELOOK_NANOS = 30_000_000_000L;
    /** The scan thread rests this many times as long as its last scan took, up to {@link #MAX_REST_NANOS}. */
    static final int REST_PER_SCAN = 9;
    /** However large the directory, a new app is found within a scan and this. */
    static final long MAX_REST_NANOS = 1_000_000_000L;
    /**
     * Files found and not yet taken by the loop: what it attaches in about a scan's time in a storm of apps (at 0.3 ms
     * an attach and half the loop, PipeServer.ATTACH_REST_FACTOR), so that the scanner, which hands files over once a
     * scan, keeps up with it; and little enough that whatever one user has ready never queues far ahead of another's
     * app (some 150 ms of attaching). More wait for a later scan. (64, as before, let 2,000 apps in at 64 a scan.)
     */
    static final int QUEUE_CAPACITY = 256;
    /**
     * The app file's fields the scanner reads, from its state to the app heartbeat (which the app file keeps as the app
     * wrote it when it made the file), and where the {@link Stamp}'s are among them.
     */
    private static final int FIELDS_LENGTH =
        AppFileDescriptor.APP_HEARTBEAT_OFFSET + Long.BYTES - AppFileDescriptor.STATE_OFFSET;
    private static final int PID_FIELD = AppFileDescriptor.APP_PID_OFFSET - AppFileDescriptor.STATE_OFFSET;
    private static final int MEMORY_FD_FIELD = AppFileDescriptor.MEMORY_FD_OFFSET - AppFileDescriptor.STATE_OFFSET;
    private static final int MEMORY_INODE_FIELD = AppFileDescriptor.MEMORY_INODE_OFFSET - AppFileDescriptor.STATE_OFFSET;
    private static final int MADE_FIELD = AppFileDescriptor.APP_HEARTBEAT_OFFSET - AppFileDescriptor.STATE_OFFSET;
    /** How long an owner whose file the loop rejected takes its turns after every other owner. */
    static final long PENALTY_NANOS = 60_000_000_000L;
    /**
     * A file answered REJECTED whose app's process is gone is deleted at its first look this long after the answer was
     * seen (an app reads its answer at once; the client library then deletes its file itself).
     */
    static final long ABANDONED_AFTER_NANOS = 10_000_000_000L;

    private final Path directory;
    private final String suffix;
    private final NanoClock clock;
    private final PrintStream log;
    private final OneToOneConcurrentArrayQueue<Path> found = new OneToOneConcurrentArrayQueue<>(QUEUE_CAPACITY);
    /** An app file's fields from its state to its app heartbeat, as {@link #state} read them last. */
    private final UnsafeBuffer fields = new UnsafeBuffer(ByteBuffer.allocateDirect(FIELDS_LENGTH));
    /** A {@code struct pollfd} for {@link #processGone}. */
    private final UnsafeBuffer pollfd = new UnsafeBuffer(ByteBuffer.allocateDirect(Linux.POLLFD_LENGTH));
    /** Scanning thread only. */
    private final Map<Path, Look> looks = new HashMap<>();
    private final Set<Path> listed = new HashSet<>();
    /** The owners (uids) of files listed lately: their files due a look in this scan, and their standing. */
    private final Map<Integer, Owner> owners = new HashMap<>();
    /** This scan's owners with files due, in the order they take turns. */
    private final List<Owner> turns = new ArrayList<>();
    /** Handed over and not yet taken by the loop: not handed over again meanwhile. */
    private final Set<Path> queued = ConcurrentHashMap.newKeySet();
    /** Hand-overs so far: an owner's last one orders the turns. */
    private long served;
    private volatile long examinations;
    /** Files taken for new under their names so far. */
    private volatile long newFiles;
    /**
     * Files of apps gone deleted so far, REJECTED ones and those an earlier daemon left (the loop counts them: counters
     * have one writer).
     */
    private volatile long abandonedDeleted;
    /**
     * What this process's descriptors under {@code /proc/self/fd} name in the directory, as read once in this scan when
     * first needed ({@link #heldHere}); null before.
     */
    private Set<String> heldHere;
    private volatile boolean requested;
    private volatile boolean closed;
    private Thread thread;

    /** One owner (uid) of files in the directory. */
    private static final class Owner
    {
        final ArrayDeque<Path> due = new ArrayDeque<>();
        /** When a file of its was last handed over ({@link #served} then), 0 if never. */
        long lastServed;
        /** Until then its turns come after everyone else's: the loop rejected a file of its. */
        long penalizedUntil;

    }

    /**
     * Which app made a file, from what the app wrote in it when it made it and the daemon never writes: its pid, its
     * memory's descriptor number and inode (a memfd's inode number is not handed out again), and when it made the
     * file (AppFile.create's app heartbeat, which the app file keeps; later ones go to the memory).
     */
    private record Stamp(long pid, int memoryFd, long memoryInode, long made)
    {
        static Stamp of(final UnsafeBuffer fields)
        {
            return new Stamp(fields.getLong(PID_FIELD), fields.getInt(MEMORY_FD_FIELD),
                fields.getLong(MEMORY_INODE_FIELD), fields.getLong(MADE_FIELD));
        }
    }

    /** What the scanner knows of one name: the file it last saw there, and when to look at it again. */
    private static final class Look
    {
        /** The file's (device, inode). */
        final Object fileKey;
        FileTime modified;
        /** As the last read of its fields found it; null before. */
        Stamp stamp;
        boolean refusedOnce;
        long nextLook;
        long relook = FIRST_RELOOK_NANOS;
        /** As the due look found it. */
        boolean regular;
        long size;
        int links;
        Integer owner;
        /** Handed over while it said ATTACHING, and not seen answered since. */
        boolean handedOver;
        /** Whether a look found it REJECTED, and when the first did. */
        boolean rejected;
        long rejectedSince;

        Look(final BasicFileAttributes attributes)
        {
            this.fileKey = attributes.fileKey();
            this.modified = attributes.lastModifiedTime();
        }

        /** Looked at: the next look after {@link #relook}, which doubles, up to {@link #MAX_RELOOK_NANOS}. */
        void later(final long now)
        {
            nextLook = now + relook;
            relook = Math.min(relook * 2, MAX_RELOOK_NANOS);
        }

        /** The same inode: this file, or another app's that got its inode ({@link #stamped} tells them apart). */
        boolean sameInode(final BasicFileAttributes attributes)
        {
            return Objects.equals(fileKey, attributes.fileKey());
        }

        /** Written to since last seen (by its app, by another app in its inode, by the loop's answer): due now. */
        boolean changed(final BasicFileAttributes attributes, final long now)
        {
            if (modified.equals(attributes.lastModifiedTime()))
            {
                return false;
            }
            modified = attributes.lastModifiedTime();
            nextLook = now;
            relook = FIRST_RELOOK_NANOS;
            return true;
        }

        /**
         * Its fields as read now: false if another app made the file in its inode since the last read (what was known
         * of it is forgotten then: that is a new file).
         */
        boolean stamped(final Stamp now)
        {
            final boolean same = stamp == null || stamp.equals(now);
            stamp = now;
            if (!same)
            {
                refusedOnce = false;
                handedOver = false;
                rejected = false;
            }
            return same;
        }
    }

    AppDirectoryScanner(final Path directory, final String suffix, final NanoClock clock, final PrintStream log)
    {
        this.directory = directory;
        this.suffix = suffix;
        this.clock = clock;
        this.log = log;
    }

    /** Scan on a daemon thread of its own from now on, each time {@link #request} asks. */
    AppDirectoryScanner startThread()
    {
        thread = new Thread(this::run, "nicstack-app-scan");
        thread.setDaemon(true);
        thread.start();
        return this;
    }

    /** Event loop: a scan is due. Inline, it happens now; with a thread, when the thread is rested. */
    void request()
    {
        if (thread == null)
        {
            scan();
            return;
        }
        requested = true;
        LockSupport.unpark(thread);
    }

    /** Event loop: the next file to try to attach, or null. */
    Path poll()
    {
        final Path path = found.poll();
        if (path != null)
        {
            queued.remove(path);
        }
        return path;
    }

    /** Files deleted so far whose app was gone before its attach ({@link #deleteIfAbandoned}). */
    long abandonedDeleted()
    {
        return abandonedDeleted;
    }

    /** Files taken for new under their names so far (for tests). */
    long newFiles()
    {
        return newFiles;
    }

    /** Files opened to read their state so far (for tests). */
    long examinations()
    {
        return examinations;
    }

    private void run()
    {
        while (!closed)
        {
            if (!requested)
            {
                LockSupport.park(this);
                continue;
            }
            requested = false;
            final long start = System.nanoTime();
            try
            {
                scan();
            }
            catch (final RuntimeException | Error e)
            {
                log.println("nicstack pipes: scanning " + LogText.untrusted(directory, LogText.MAX_MESSAGE) + ": "
                    + LogText.untrusted(e, LogText.MAX_MESSAGE));
            }
            final long rest = Math.min((System.nanoTime() - start) * REST_PER_SCAN, MAX_REST_NANOS);
            final long restUntil = System.nanoTime() + rest;
            for (long left = rest; left > 0 && !closed; left = restUntil - System.nanoTime())
            {
                LockSupport.parkNanos(this, left);
            }
        }
    }

    /** One pass over the directory: what is due a look, by owner, then handed over a user at a time. */
    void scan()
    {
        final long now = clock.nanoTime();
        listed.clear();
        heldHere = null;
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(directory, "*" + suffix))
        {
            for (final Path path : dir)
            {
                if (closed)
                {
                    return;
                }
                listed.add(path);
                final Look look = due(path, now);
                if (look != null)
                {
                    owners.computeIfAbsent(look.owner, uid -> new Owner()).due.add(path);
                }
            }
        }
        catch (final IOException | RuntimeException e)
        {
            // The directory vanished or is unreadable: try again next time.
            for (final Owner o : owners.values())
            {
                o.due.clear();
            }
            return;
        }
        looks.keySet().retainAll(listed);
        handOver(now);
        owners.values().removeIf(o -> o.due.isEmpty() && now - o.penalizedUntil >= 0);
    }

    /**
     * The file under {@code path} if it is due a look (new under its name, or its next look has come), its owner and
     * link count read; else null. One stat for a file not due, two for one that is.
     */
    private Look due(final Path path, final long now)
    {
        try
        {
            final BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            Look look = looks.get(path);
            if (look == null || !look.sameInode(attributes))
            {
                // A new file under this name: look at it now.
                look = new Look(attributes);
                looks.put(path, look);
                newFiles++; // this thread only
            }
            else if (!look.changed(attributes, now) && now - look.nextLook < 0)
            {
                return null;
            }
            final Map<String, Object> unix = Files.readAttributes(path, "unix:uid,nlink", LinkOption.NOFOLLOW_LINKS);
            look.owner = (Integer)unix.get("uid");
            look.links = ((Number)unix.get("nlink")).intValue();
            look.regular = attributes.isRegularFile();
            look.size = attributes.size();
            return look;
        }
        catch (final IOException | RuntimeException e)
        {
            looks.remove(path);
            return null;
        }
    }

    /**
     * Look at the due files a user at a time, in turns (one of each owner's, then the next of each), and hand over what
     * the loop should try. The owners served least lately come first, and those whose files the loop rejected lately
     * last. When the loop's queue is full the rest stay due, for the next scan: a user with thousands of files ready
     * takes one turn in each round, not the whole queue, and a user whose files keep being rejected waits behind every
     * other user.
     */
    private void handOver(final long now)
    {
        turns.clear();
        for (final Owner o : owners.values())
        {
            if (!o.due.isEmpty())
            {
                turns.add(o);
            }
        }
        turns.sort((x, y) ->
        {
            final boolean xPenalized = now - x.penalizedUntil < 0;
            final boolean yPenalized = now - y.penalizedUntil < 0;
            return xPenalized != yPenalized ? (xPenalized ? 1 : -1) : Long.compare(x.lastServed, y.lastServed);
        });
        boolean full = false;
        for (boolean more = true; more && !full; )
        {
            more = false;
            for (int i = 0; i < turns.size() && !full; i++)
            {
                final Owner o = turns.get(i);
                final Path path = o.due.poll();
                if (path != null)
                {
                    full = !look(o, path, now);
                    more |= !o.due.isEmpty();
                }
            }
        }
        for (final Owner o : turns)
        {
            o.due.clear(); // still due: listed again next scan
        }
    }

    /** Look at one due file of {@code o}; false if it should be handed over and the queue has no room (it stays due). */
    private boolean look(final Owner o, final Path path, final long now)
    {
        final Look look = looks.get(path);
        if (look == null)
        {
            return true;
        }
        if (look.regular && look.size < AppFileDescriptor.HEADER_LENGTH)
        {
            look.later(now);
            return true; // no header to read yet
        }
        if (!look.regular || look.links != 1)
        {
            // Not a file an app made (a directory, a link, a second name of a file): the loop refuses it and counts
            // that, once. Offered again and again, a thousand hard links to one file would crowd out the real apps.
            if (!look.refusedOnce)
            {
                if (!handOver(o, path, now))
                {
                    return false;
                }
                look.refusedOnce = true;
                o.penalizedUntil = now + PENALTY_NANOS;
            }
            look.later(now);
            return true;
        }
        final int state = state(path);
        if (state != -1 && !look.stamped(Stamp.of(fields)))
        {
            newFiles++; // another app's file in the inode of the one looked at before
        }
        if (state != AppFileDescriptor.STATE_REJECTED && state != -1)
        {
            look.rejected = false; // its app wrote it anew, ATTACHING again say: a later REJECTED is a new answer
        }
        if (state == AppFileDescriptor.STATE_ATTACHING)
        {
            if (!queued.contains(path) && !handOver(o, path, now))
            {
                return false;
            }
            look.handedOver = true;
        }
        else if (state == AppFileDescriptor.STATE_REJECTED)
        {
            if (look.handedOver)
            {
                o.penalizedUntil = now + PENALTY_NANOS; // the loop rejected what it was handed
                look.handedOver = false;
            }
            if (!look.rejected)
            {
                look.rejected = true;
                look.rejectedSince = now;
            }
            else if (now - look.rejectedSince >= ABANDONED_AFTER_NANOS
                && deleteIfAbandoned(path, state, fields.getLong(PID_FIELD)))
            {
                looks.remove(path);
                return true;
            }
        }
        else if (isFinal(state) && !look.handedOver && deleteIfAbandoned(path, state, fields.getLong(PID_FIELD)))
        {
            // Not handed over by this scanner: a file an earlier daemon answered (one this daemon attached is the
            // loop's to delete when it reaps the app), or an app of an older version wrote that state in it.
            looks.remove(path);
            return true;
        }
        look.later(now);
        return true;
    }

    /**
     * Whether {@code state}, as an app file says it, is one its app no longer changes: ATTACHED, REJECTED (the
     * daemon's answers), or DETACHED or DAEMON_GONE (which only an app of an older version, whose memory was its app
     * file, left in its file). Not ATTACHING, nor a state no version writes.
     */
    private static boolean isFinal(final int state)
    {
        return state == AppFileDescriptor.STATE_ATTACHED || state == AppFileDescriptor.STATE_REJECTED
            || state == AppFileDescriptor.STATE_DETACHED || state == AppFileDescriptor.STATE_DAEMON_GONE;
    }

    private static String stateName(final int state)
    {
        return switch (state)
        {
            case AppFileDescriptor.STATE_ATTACHED -> "ATTACHED";
            case AppFileDescriptor.STATE_DETACHED -> "DETACHED";
            case AppFileDescriptor.STATE_DAEMON_GONE -> "DAEMON_GONE";
            default -> "in state " + state;
        };
    }

    /**
     * Delete a file in the final state {@code state} whose app's process is gone. An app that died before it was
     * attached (or exited without reading its answer) leaves its REJECTED file behind, and an app that died while no
     * daemon ran the file an earlier daemon answered ATTACHED (that daemon left it to the app, which deletes it when it
     * closes); its user may not be able to delete it (the directory is sticky, the app may have run as another user),
     * so the daemon does. Gone means that the pid it names is no process of this PID namespace, or a zombie, looked at
     * now ({@link #processGone}; for REJECTED, long after the answer); a live app of this namespace therefore keeps its
     * file, and so does a dead one whose pid was reused (until that process exits too). An app of another PID
     * namespace cannot be attached at all (its pid names no process here, or another) and has read its answer long
     * since: the client library keeps its app file open and reads the answer through it, then deletes the file. One
     * an earlier daemon of another PID namespace attached has lost that daemon for good (an app never attaches again
     * through the same file). The file deleted is the one read, still in that state with that pid, still under its
     * name, and not held open by this process, as a live session of this daemon holds its app file until the reap
     * ({@link #heldHere}). Returns whether it was deleted.
     */
    private boolean deleteIfAbandoned(final Path path, final int state, final long pid)
    {
        if (!processGone(pid))
        {
            return false;
        }
        final Set<String> held = heldHere(); // before the file is opened below
        if (held == null || held.contains(path.getFileName().toString()))
        {
            return false;
        }
        final int fd = openWithoutWaiting(path);
        if (fd < 0)
        {
            return false;
        }
        try
        {
            if (readFields(fd) != state || fields.getLong(PID_FIELD) != pid
                || !Objects.equals(Files.readAttributes(Path.of("/proc/self/fd/" + fd), BasicFileAttributes.class).fileKey(),
                    Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey()))
            {
                return false;
            }
            Files.delete(path);
            abandonedDeleted++; // this thread only
            log.println("nicstack pipes: deleted " + LogText.untrusted(path.getFileName()) + ": "
                + (state == AppFileDescriptor.STATE_REJECTED ? "answered REJECTED" : "left " + stateName(state))
                + ", and its app (pid " + pid + ") is gone");
            return true;
        }
        catch (final IOException | RuntimeException e)
        {
            return false; // gone already, or replaced: looked at again later if it is still there
        }
        finally
        {
            Linux.closeQuietly(fd);
        }
    }

    /**
     * Whether {@code pid} names no process of this PID namespace, or one that has exited and that its parent has not
     * waited for (a zombie, which ProcessHandle takes for alive): by a pidfd (pidfd_open(2) fails with ESRCH for no
     * process; it reads as ready once the process has exited), and by {@code /proc/<pid>/stat} on a kernel without
     * pidfd_open. False for what is not a pid, and whenever it cannot be told.
     */
    private boolean processGone(final long pid)
    {
        if (pid <= 0 || pid > Integer.MAX_VALUE)
        {
            return false;
        }
        final int pidfd = (int)Linux.syscall(Linux.SYS_PIDFD_OPEN, pid, 0, 0, 0, 0);
        if (pidfd < 0)
        {
            final int errno = Linux.errno();
            return errno == Linux.ESRCH || (errno == Linux.ENOSYS && procSaysGone(pid));
        }
        try
        {
            return AppFiles.pidfdReady(pollfd, pidfd, Linux.POLLIN);
        }
        finally
        {
            Linux.closeQuietly(pidfd);
        }
    }

    /** Whether {@code /proc/<pid>/stat} is missing or says zombie (Z) or dead (X). */
    private static boolean procSaysGone(final long pid)
    {
        try
        {
            final String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), java.nio.charset.StandardCharsets.ISO_8859_1);
            final char state = stat.substring(stat.lastIndexOf(')') + 1).trim().charAt(0); // the name may hold anything
            return state == 'Z' || state == 'X';
        }
        catch (final java.nio.file.NoSuchFileException e)
        {
            return true;
        }
        catch (final IOException | RuntimeException e)
        {
            return false;
        }
    }

    /**
     * The names in the directory that this process holds open now, as what its descriptors name says (readlink of
     * {@code /proc/self/fd/<n>}, which reaches no file system: a descriptor of a stalled FUSE file cannot block it), read
     * once a scan: a live session of this daemon holds its app file from the attach until the reap, when the loop
     * deletes it. Null if it cannot be told.
     */
    private Set<String> heldHere()
    {
        if (heldHere != null)
        {
            return heldHere;
        }
        final Set<String> held = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd")))
        {
            final String prefix = directory.toRealPath() + "/";
            for (final Path fd : fds)
            {
                final String target;
                try
                {
                    target = Files.readSymbolicLink(fd).toString();
                }
                catch (final IOException | RuntimeException e)
                {
                    continue; // closed meanwhile
                }
                if (target.startsWith(prefix) && target.indexOf('/', prefix.length()) < 0)
                {
                    held.add(target.substring(prefix.length()));
                }
            }
        }
        catch (final IOException | RuntimeException e)
        {
            return null;
        }
        heldHere = held;
        return held;
    }

    private boolean handOver(final Owner o, final Path path, final long now)
    {
        queued.add(path);
        if (!found.offer(path))
        {
            queued.remove(path);
            return false;
        }
        o.lastServed = ++served;
        return true;
    }

    /**
     * The file's state, or -1 if it cannot be read; its pid and the rest of its {@link Stamp} in {@link #fields}.
     * Opened without waiting ({@link #openWithoutWaiting}): neither a FIFO put in its place nor a lease its owner holds
     * can block the scanner.
     */
    private int state(final Path path)
    {
        examinations++;
        final int fd = openWithoutWaiting(path);
        if (fd < 0)
        {
            return -1;
        }
        try
        {
            return readFields(fd);
        }
        finally
        {
            Linux.closeQuietly(fd);
        }
    }

    /** One pread of the fields from the state to the app heartbeat into {@link #fields}; the state, or -1. */
    private int readFields(final int fd)
    {
        return Linux.LIBC.pread(fd, fields.addressOffset(), FIELDS_LENGTH, AppFileDescriptor.STATE_OFFSET) == FIELDS_LENGTH
            ? fields.getIntVolatile(0) : -1;
    }

    /**
     * Open an app file read-write without following a link and without waiting: a FIFO opened read-write does not
     * wait for a peer, and where the file's owner holds a lease on it (fcntl F_SETLEASE) O_NONBLOCK makes the open fail
     * at once (EWOULDBLOCK) instead of waiting up to lease-break-time (45 s). While the descriptor is open no new lease
     * can be taken. Returns the descriptor, or -1.
     */
    static int openWithoutWaiting(final Path path)
    {
        final int fd = Linux.LIBC.open(path.toString(), Linux.O_RDWR | Linux.O_NOFOLLOW | Linux.O_NONBLOCK | Linux.O_CLOEXEC);
        return fd < 0 ? -1 : fd;
    }

    @Override
    public void close()
    {
        closed = true;
        if (thread != null)
        {
            LockSupport.unpark(thread);
            try
            {
                thread.join(1_000);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
