package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.agrona.BitUtil;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.SystemNanoClock;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.linux.Linux;
import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol.Reason;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.loop.LoopTask;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.tcp.Tcp;

/**
 * The daemon end of the shared-memory pipes: finds app files under {@code <shm>/apps}, attaches them,
 * and every event-loop round serves each attached app (control ring, events, accepts, doorbells,
 * paced notifications; see {@link AppSession}: a round reads the pipe positions only of the slots whose doorbell bit
 * the app set, or that the daemon itself has business with). Every {@link #HOUSEKEEPING_NANOS} it writes each app's
 * daemon heartbeat, starts a sweep that reads every slot over the next rounds (the doorbells' safety net) and, every
 * other time, asks for a directory scan ({@link AppDirectoryScanner}, on a thread of its own) and reaps apps whose
 * process died or that detached: the connections they closed send what they committed and then their FIN, the others
 * are reset, their listeners closed, their file deleted, and their memory unmapped once drained. Files the scan found
 * are attached in slices of the loop's time ({@link #ATTACH_SLICE_NANOS}), half of it at most.
 *
 * <p>Nothing an app writes can throw out of {@link #run()}: bad files are rejected, bad messages get
 * ERROR events and counters, a broken ring gets the app reaped. Event loop thread only.
 */
public final class PipeServer implements LoopTask, AutoCloseable
{
    /** Subdirectory of the shm directory holding the app files. */
    public static final String APPS_DIRECTORY = AppFile.APPS_DIRECTORY;
    public static final String SUFFIX = AppFile.SUFFIX;
    static final int MIN_RING_CAPACITY = 1024;
    static final int MAX_RING_CAPACITY = 1 << 24;
    static final int MIN_PIPE_CAPACITY = 4096;
    static final int MAX_PIPE_CAPACITY = 1 << 30;
    static final int MAX_CONNECTIONS = 1 << 16;
    /** Out-of-order ranges per RX pipe (as the stack's own receive buffers). */
    static final int MAX_OUT_OF_ORDER_RANGES = 16;
    /** Heartbeats at least this often; scan and liveness every second tick (~100 ms). */
    static final long HOUSEKEEPING_NANOS = 50_000_000L;
    /**
     * A round attaches files the scanner found while it has spent less than this on them (at least one file); a storm
     * of apps cannot hold the loop for longer than this and one attach (a review measured 0.3 ms for the median).
     */
    static final long ATTACH_SLICE_NANOS = 1_000_000L;
    /**
     * After a slice of attaching, the next waits this many times as long as the slice took: attaching takes half the
     * loop at most, traffic the rest. 2,000 apps that appear at once (a daemon restart, when there is little traffic
     * yet) are all attached in about 1.2 s at 0.3 ms each, and within the client's 5 s attach timeout at three times
     * that cost; 16 per 50 ms housekeeping, as before, took over 6 s.
     */
    static final int ATTACH_REST_FACTOR = 1;

    private final NetStack stack;
    private final Path appsDirectory;
    private final PipeCounters counters;
    private final NanoClock nanoClock;
    /** Measures what attaching costs the loop (the round's clock stands still within the round). */
    private NanoClock attachCostClock = SystemNanoClock.INSTANCE;
    /** No attaching before then ({@link #ATTACH_REST_FACTOR}). */
    private long nextAttach;
    private final EpochClock epochClock;
    private final PrintStream log;
    private boolean sendFileAllowed = true;
    private final long maxFileBytes;
    /** Daemon heap the attached apps may come to hold in all ({@link AppSession#heapBytes}); more apps are refused. */
    private long heapBudget = Runtime.getRuntime().maxMemory() / 4;
    private long heapPromised;
    /** This process's uid: its apps, and root's, are held to no share of the heap budget. */
    private final int ownUid = (int)new com.sun.security.auth.module.UnixSystem().getUid();
    private final List<AppSession> sessions = new ArrayList<>();
    private final Map<Path, AppSession> byPath = new HashMap<>();
    /** Made by {@link #start()}. */
    private AppDirectoryScanner scanner;
    private boolean scanInline;
    /** The scanner's {@link AppDirectoryScanner#abandonedDeleted} as last counted. */
    private long abandonedCounted;
    private final long pid = ProcessHandle.current().pid();
    /** An app file's header as the loop read it (pread), and the fields it writes back (pwrite). */
    private final UnsafeBuffer appFileHeader = new UnsafeBuffer(
        org.agrona.BufferUtil.allocateDirectAligned(AppFileDescriptor.HEADER_LENGTH, 64));
    private long nextHousekeeping;
    private boolean scanTick;
    /** Set by {@link #close}, on whichever thread. */
    private volatile boolean closed;
    /** The thread that runs {@link #doWork}, once one has: only it may let go of what the sessions hold. */
    private volatile Thread loopThread;
    /** The sessions have let go of what they hold ({@link #release}). */
    private boolean released;

    /**
     * @param shm          the daemon's shared-memory directory; apps live in {@code shm/apps}.
     * @param maxFileBytes per-app limit on shared memory (a bigger layout is rejected with LIMIT_MEMORY).
     * @param log          where to report attach/reap (stderr in the daemon; stdout stays for the ready line).
     */
    public PipeServer(final NetStack stack, final Path shm, final PipeCounters counters, final NanoClock nanoClock,
        final EpochClock epochClock, final long maxFileBytes, final PrintStream log)
    {
        this.stack = stack;
        this.appsDirectory = shm.resolve(APPS_DIRECTORY);
        this.counters = counters;
        this.nanoClock = nanoClock;
        this.epochClock = epochClock;
        this.maxFileBytes = maxFileBytes;
        this.log = log;
        this.nextHousekeeping = nanoClock.nanoTime();
        this.nextAttach = nextHousekeeping;
    }

    /** Tests: scan on the event loop's thread and clock, deterministically, instead of on a thread of its own. */
    PipeServer scanInline()
    {
        this.scanInline = true;
        return this;
    }

    AppDirectoryScanner scanner()
    {
        return scanner;
    }

    /** Tests: the clock that measures what attaching costs the loop. */
    PipeServer attachCostClock(final NanoClock clock)
    {
        this.attachCostClock = clock;
        return this;
    }

    /**
     * Bound the daemon heap that attached apps may come to hold together (default: a quarter of the JVM's maximum
     * heap): an app whose slots and event backlog would pass it is refused with LIMIT_MEMORY, so many or large apps
     * cannot exhaust the heap the stack runs in.
     *
     * <p>The apps of one user (the app file's owner uid) may hold at most half of it, so that one user's apps cannot
     * take it all and keep every other user's out: beyond its half, a user's next app is refused with LIMIT_MEMORY
     * too (its first app, however large, is held to the whole budget only). Attached apps are never evicted, so the half holds also while a user is alone: a user who had taken the
     * whole budget then would keep it when others came. Root and the daemon's own user, who can stop the daemon
     * anyway, are held to no share. (A user who controls many uids, subordinate uids say, gets a half for each.)
     */
    public PipeServer heapBudget(final long bytes)
    {
        this.heapBudget = bytes;
        return this;
    }

    /** {@code false} ({@code --no-send-file}): every SEND_FILE is refused, and apps copy their files themselves. */
    public PipeServer sendFileAllowed(final boolean allowed)
    {
        this.sendFileAllowed = allowed;
        return this;
    }

    boolean sendFileAllowed()
    {
        return sendFileAllowed;
    }

    /**
     * Create {@code shm/apps} with mode 01777 (like /tmp: any user's app may create its file, none may remove another's).
     * An existing {@code apps} is used only if, seen without following symbolic links, it is a real directory owned by
     * this process's uid and writable by nobody else (or already 01777): a planted symbolic link or another user's
     * directory is refused, and the mode is set on the directory itself (fchmod, O_NOFOLLOW), never on a link's target.
     */
    public PipeServer start() throws IOException
    {
        try
        {
            Files.createDirectory(appsDirectory,
                java.nio.file.attribute.PosixFilePermissions.asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
        }
        catch (final java.nio.file.FileAlreadyExistsException e)
        {
            // Checked below.
        }
        final Map<String, Object> apps = Files.readAttributes(appsDirectory, "unix:uid,mode,isDirectory", LinkOption.NOFOLLOW_LINKS);
        final int mode = (Integer)apps.get("mode") & 07777;
        if (!(Boolean)apps.get("isDirectory") || (Integer)apps.get("uid") != ownUid || ((mode & 0022) != 0 && mode != 01777))
        {
            throw new IOException(appsDirectory + " is not a directory of uid " + ownUid + " that only it may write "
                + "(a symbolic link, another user's, or group/world writable: uid " + apps.get("uid") + ", mode "
                + Integer.toOctalString((Integer)apps.get("mode")) + "); refusing to use it");
        }
        // Java's PosixFilePermission has no sticky bit; "unix:mode" has, and with NOFOLLOW_LINKS it is an fchmod.
        Files.setAttribute(appsDirectory, "unix:mode", 01777, LinkOption.NOFOLLOW_LINKS);
        warnOfStrictOvercommit();
        if (scanInline)
        {
            scanner = new AppDirectoryScanner(appsDirectory, SUFFIX, nanoClock, log);
        }
        else
        {
            scanner = new AppDirectoryScanner(appsDirectory, SUFFIX, SystemNanoClock.INSTANCE, log).startThread();
        }
        return this;
    }

    /**
     * Under strict overcommit (vm.overcommit_memory 2) a page of an app's memory that the app punched out (fallocate
     * PUNCH_HOLE, which the seals allow) may fail to come back when the daemon next writes it, and that write faults
     * (SIGBUS), whatever the seals. Said once at start.
     */
    private void warnOfStrictOvercommit()
    {
        try
        {
            if ("2".equals(Files.readString(Path.of("/proc/sys/vm/overcommit_memory")).trim()))
            {
                log.println("nicstack pipes: warning: vm.overcommit_memory is 2 (strict): an app that punches holes in "
                    + "its memory can make the daemon's writes to it fault");
            }
        }
        catch (final IOException | RuntimeException e)
        {
            // No such file: not Linux's procfs, nothing to say.
        }
    }

    public Path appsDirectory()
    {
        return appsDirectory;
    }

    Tcp tcp()
    {
        return stack.tcp();
    }

    StackConfig config()
    {
        return stack.config();
    }

    PrintStream log()
    {
        return log;
    }

    PipeCounters counters()
    {
        return counters;
    }

    /** Daemon heap the attached apps may come to hold in all, as promised them (for tests). */
    long heapPromised()
    {
        return heapPromised;
    }

    /** Attached apps. */
    public int attached()
    {
        return sessions.size();
    }

    AppSession session(final Path file)
    {
        return byPath.get(file);
    }

    /** Tests: whether the next housekeeping looks at the apps' state and liveness (every other one does). */
    boolean nextHousekeepingChecksApps()
    {
        return !scanTick;
    }

    /** One round of the event loop: apps, control messages, doorbells, notifications; returns the work done. */
    @Override
    public int doWork()
    {
        if (closed)
        {
            release(); // closed by another thread while this one ran the loop
            return 0;
        }
        if (loopThread == null)
        {
            loopThread = Thread.currentThread();
        }
        int work = 0;
        final long now = nanoClock.nanoTime();
        if (now - nextHousekeeping >= 0)
        {
            nextHousekeeping = now + HOUSEKEEPING_NANOS;
            housekeeping(now);
            work++;
        }
        if (scanner != null && now - nextAttach >= 0)
        {
            work += attachFound(now);
        }
        for (int i = 0; i < sessions.size(); i++)
        {
            final AppSession s = sessions.get(i);
            try
            {
                work += s.doWork();
            }
            catch (final RuntimeException e)
            {
                // A bug: this app is done for, the daemon is not. (Not a fault: the memory is sealed against
                // shrinking, so no access to it can fault.)
                log.println("nicstack pipes: app " + LogText.untrusted(s.path.getFileName()) + " failed: "
                    + LogText.untrusted(e, LogText.MAX_MESSAGE));
                s.markBroken();
            }
            if (s.broken())
            {
                reap(s, PipeCounter.APPS_REAPED_BROKEN, AppFileDescriptor.STATE_REJECTED, Reason.BAD_MESSAGE);
                i--;
            }
        }
        if (work > 0)
        {
            // Segments the doorbells produced leave now, not after the stack's next receive burst (a tap read).
            stack.flush();
        }
        return work;
    }

    /** Hand the frames queued so far to the device (a doorbell's segment should not wait for the rest of the round). */
    void flushStack()
    {
        stack.flush();
    }

    private void housekeeping(final long nowNanos)
    {
        final long epochMillis = epochClock.time();
        scanTick = !scanTick;
        for (int i = 0; i < sessions.size(); i++)
        {
            final AppSession s = sessions.get(i);
            int state;
            try
            {
                s.heartbeat(epochMillis);
                s.scanAll(); // the doorbells' safety net: positions moved without a bit are served within a tick
                state = s.state();
            }
            catch (final RuntimeException e)
            {
                // A bug, as in doWork.
                s.markBroken();
                state = -1;
            }
            if (state == -1)
            {
                reap(s, PipeCounter.APPS_REAPED_BROKEN, 0, 0);
                i--;
            }
            else if (s.draining())
            {
                // Detached in order, or its process exited: the connections it closed finish first.
                if (s.drained(nowNanos))
                {
                    reap(s, s.goneAs, 0, 0);
                    i--;
                }
            }
            else if (!scanTick)
            {
                continue;
            }
            else if (state == AppFileDescriptor.STATE_DETACHED)
            {
                if (drain(s, nowNanos, PipeCounter.APPS_DETACHED))
                {
                    i--;
                }
            }
            else if (s.processExited())
            {
                // RFC 9293 CLOSE: what the app committed before it closed a connection is sent, then the FIN, even if
                // the app exits right after (as close(2) and exit on Linux); CLOSEs it wrote and the daemon had not
                // read yet count too. What it left open is reset.
                if (drain(s, nowNanos, PipeCounter.APPS_REAPED_DEAD))
                {
                    i--;
                }
            }
        }
        if (scanner == null)
        {
            return;
        }
        if (scanTick)
        {
            scanner.request();
        }
        final long abandoned = scanner.abandonedDeleted();
        counters.add(PipeCounter.APP_FILES_ABANDONED, abandoned - abandonedCounted);
        abandonedCounted = abandoned;
    }

    /**
     * Try to attach files the scanner found (files of apps, in state ATTACHING when it looked) for up to
     * {@link #ATTACH_SLICE_NANOS} of the loop, at least one, and none again until {@link #ATTACH_REST_FACTOR} times as
     * long has passed. Returns the files taken.
     */
    private int attachFound(final long nowNanos)
    {
        Path path = scanner.poll();
        if (path == null)
        {
            return 0;
        }
        final long start = attachCostClock.nanoTime();
        long spent;
        int taken = 0;
        do
        {
            if (!byPath.containsKey(path))
            {
                tryAttach(path);
            }
            taken++;
            spent = attachCostClock.nanoTime() - start;
        }
        while (spent < ATTACH_SLICE_NANOS && taken < AppDirectoryScanner.QUEUE_CAPACITY && (path = scanner.poll()) != null);
        nextAttach = nowNanos + spent * (1 + ATTACH_REST_FACTOR);
        return taken;
    }

    /**
     * The app is gone (detached, or its process exited): what it wrote to its control ring is taken, the connections
     * it closed finish from its pipes ({@link AppSession#beginDrain}), the rest are reset; reaped as {@code why} once
     * drained. Returns whether it was reaped now.
     */
    private boolean drain(final AppSession s, final long nowNanos, final PipeCounter why)
    {
        final long promised = s.heapBytes();
        int reset = 0;
        try
        {
            reset = s.beginDrain(nowNanos);
        }
        catch (final RuntimeException e)
        {
            // A bug, as in doWork: this app is done for, the daemon is not.
            log.println("nicstack pipes: app " + LogText.untrusted(s.path.getFileName()) + " failed: "
                + LogText.untrusted(e, LogText.MAX_MESSAGE));
            s.markBroken();
        }
        // What the gone app can no longer use (its event backlog) goes back to the budget now; the rest at the reap.
        heapPromised -= promised - s.heapBytes();
        counters.add(PipeCounter.CONNECTIONS_RESET_APP_GONE, reset);
        s.goneAs = why;
        // The name is free for the app to attach again while the connections drain.
        byPath.remove(s.path, s);
        deleteFile(s);
        if (s.broken() || s.drained(nowNanos))
        {
            reap(s, s.broken() ? PipeCounter.APPS_REAPED_BROKEN : why, 0, 0);
            return true;
        }
        return false;
    }

    /** Reset the app's connections, close its listeners, unmap and delete its file. */
    private void reap(final AppSession s, final PipeCounter why, final int finalState, final int reason)
    {
        int reset = 0;
        // Under the server's monitor, as close on another thread tells the sessions in the list that the daemon is
        // gone: it must not write into a memory this unmaps (a SIGSEGV). An app's end, not a packet's: no lock per packet.
        synchronized (this)
        {
            sessions.remove(s);
            byPath.remove(s.path, s);
            heapPromised -= s.heapBytes();
            reset = teardown(s, finalState, reason);
        }
        for (int i = 0; i < reset; i++)
        {
            counters.increment(PipeCounter.CONNECTIONS_RESET_APP_GONE);
        }
        counters.increment(why);
        deleteFile(s);
        s.closeAppFile(); // only now may its inode, and with it its file key, go to another file
        log.println("nicstack pipes: app " + LogText.untrusted(s.path.getFileName()) + " "
            + why.label().substring("pipes: apps ".length()) + ", " + reset + " connections reset");
    }

    /**
     * The session's teardown ({@link AppSession#teardown}): its connections reset (how many is returned), listeners
     * closed, memory unmapped. A bug that throws in it is logged, not let out: the daemon goes on, and so does the
     * caller's clean-up of the rest.
     */
    private int teardown(final AppSession s, final int finalState, final int reason)
    {
        try
        {
            return s.teardown(finalState, reason);
        }
        catch (final RuntimeException e)
        {
            log.println("nicstack pipes: tearing down " + LogText.untrusted(s.path.getFileName()) + ": "
                + LogText.untrusted(e, LogText.MAX_MESSAGE));
            return 0;
        }
    }

    /**
     * Delete the app's file, if its name still holds that file: an app that detached deletes it itself, and may have
     * attached again under the same name since. The session holds its file open until the reap, so a file with its key
     * is that file, not one that got its inode again.
     */
    private void deleteFile(final AppSession s)
    {
        try
        {
            final Object key = Files.readAttributes(s.path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
            if (key != null && key.equals(s.fileKey))
            {
                Files.deleteIfExists(s.path);
            }
        }
        catch (final NoSuchFileException gone)
        {
            // Deleted already.
        }
        catch (final IOException e)
        {
            log.println("nicstack pipes: cannot delete " + LogText.untrusted(s.path, LogText.MAX_MESSAGE) + ": "
                + LogText.untrusted(e.getMessage(), LogText.MAX_MESSAGE));
        }
    }

    /**
     * Validate and attach one app file the scanner found in state ATTACHING (it hands it over again while it stays so).
     * The app file is read and answered with pread/pwrite and never mapped; the memory it names is taken from the app's
     * process, checked to be that sealed memfd, and only then mapped (a file that can shrink under a mapping faults
     * its reader, and the JVM raises that fault at some later, unrelated point of the loop).
     */
    void tryAttach(final Path path)
    {
        try
        {
            // Apps of any user create files here: never follow a link (a root daemon would write through it), and never
            // attach a second name of a file. A first look by name, before anything is opened.
            if (!Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS) || linkCount(path, LinkOption.NOFOLLOW_LINKS) != 1)
            {
                counters.increment(PipeCounter.APPS_REJECTED);
                return;
            }
            // Opened without waiting for a lease (it fails while one is held) and kept open, so that no lease can be
            // taken now; every read and write of the app file goes through it. An app attached keeps a duplicate.
            final int fd = AppDirectoryScanner.openWithoutWaiting(path);
            if (fd < 0)
            {
                return; // held, or gone: the scanner offers it again at its next look while it stays ATTACHING
            }
            try
            {
                // The name may name another file by now: what counts is the file opened, looked at through its
                // descriptor (the link /proc/self/fd/<fd> leads to it).
                final Path opened = Path.of("/proc/self/fd/" + fd);
                final BasicFileAttributes attributes = Files.readAttributes(opened, BasicFileAttributes.class);
                if (!attributes.isRegularFile() || linkCount(opened) != 1 || attachedAlready(attributes.fileKey()))
                {
                    counters.increment(PipeCounter.APPS_REJECTED);
                    return;
                }
                if (Linux.LIBC.pread(fd, appFileHeader.addressOffset(), AppFileDescriptor.HEADER_LENGTH, 0) != AppFileDescriptor.HEADER_LENGTH
                    || appFileHeader.getInt(AppFileDescriptor.STATE_OFFSET) != AppFileDescriptor.STATE_ATTACHING)
                {
                    return;
                }
                final int reason = validateAppFile(appFileHeader);
                if (reason != Reason.NONE)
                {
                    reject(path, fd, reason, null);
                    return;
                }
                attachMemory(path, fd, attributes.fileKey(), AppFiles.Owner.of(opened));
            }
            finally
            {
                Linux.closeQuietly(fd);
            }
        }
        catch (final IOException | RuntimeException e)
        {
            // Vanished between listing and opening, or not ours to open: not an error of the daemon.
        }
    }

    private static int linkCount(final Path path, final LinkOption... options) throws IOException
    {
        return ((Number)Files.getAttribute(path, "unix:nlink", options)).intValue();
    }

    private boolean attachedAlready(final Object fileKey)
    {
        for (final AppSession s : sessions)
        {
            if (fileKey != null && fileKey.equals(s.fileKey))
            {
                return true;
            }
        }
        return false;
    }

    /** The app file's own fields: magic and version (where every version keeps them), a pid and a descriptor. */
    private static int validateAppFile(final UnsafeBuffer appFile)
    {
        final int reason = magicAndVersion(appFile);
        if (reason != Reason.NONE)
        {
            return reason;
        }
        final long pid = appFile.getLong(AppFileDescriptor.APP_PID_OFFSET);
        return pid <= 0 || pid > Integer.MAX_VALUE || appFile.getInt(AppFileDescriptor.MEMORY_FD_OFFSET) < 0
            ? Reason.BAD_ARGUMENT : Reason.NONE;
    }

    /** BAD_ARGUMENT for another magic, VERSION_MISMATCH for another version, in an app file or a memory header. */
    private static int magicAndVersion(final UnsafeBuffer header)
    {
        if (header.getLong(AppFileDescriptor.MAGIC_OFFSET) != AppFileDescriptor.MAGIC)
        {
            return Reason.BAD_ARGUMENT;
        }
        return header.getInt(AppFileDescriptor.VERSION_OFFSET) != AppFileDescriptor.VERSION
            ? Reason.VERSION_MISMATCH : Reason.NONE;
    }

    /**
     * Take the memory the app file (read into {@link #appFileHeader}, open as {@code fd}) names, validate and attach it.
     * Every way this can fail once the memory is taken is answered REJECTED and counted.
     */
    private void attachMemory(final Path path, final int fd, final Object fileKey, final AppFiles.Owner owner)
    {
        final long appPid = appFileHeader.getLong(AppFileDescriptor.APP_PID_OFFSET);
        final long inode = appFileHeader.getLong(AppFileDescriptor.MEMORY_INODE_OFFSET);
        final AppFiles files = new AppFiles(appPid, owner);
        final int memory = files.takeMemory(appFileHeader.getInt(AppFileDescriptor.MEMORY_FD_OFFSET), inode);
        if (memory < 0)
        {
            files.close();
            reject(path, fd, Reason.BAD_ARGUMENT, files.lastRefusal());
            return;
        }
        int reason = Reason.BAD_ARGUMENT;
        String why = null;
        boolean attached = false;
        try (FileChannel channel = FileChannel.open(Path.of("/proc/self/fd/" + memory), StandardOpenOption.READ,
            StandardOpenOption.WRITE))
        {
            final long size = channel.size();
            final AppSession twin = sessionOfMemory(inode);
            if (twin != null)
            {
                why = "its memory is attached already, as " + twin.path.getFileName();
            }
            else if (size < AppFileDescriptor.HEADER_LENGTH)
            {
                why = "its memory is " + size + " bytes, less than a header";
            }
            else
            {
                final MappedByteBuffer headerMap = channel.map(FileChannel.MapMode.READ_WRITE, 0, AppFileDescriptor.HEADER_LENGTH);
                try
                {
                    // Each header field is read once: the app may rewrite them at any time, also between a check
                    // and a use (a size that passed the checks and then grew would size the daemon's arrays).
                    final UnsafeBuffer header = new UnsafeBuffer(headerMap);
                    final Geometry geometry = Geometry.of(header);
                    reason = geometry.appPid == appPid ? validate(header, geometry, size) : Reason.BAD_ARGUMENT;
                    if (reason == Reason.LIMIT_MEMORY)
                    {
                        why = overMemory(geometry);
                    }
                    else if (reason == Reason.NONE && (why = overUsersShare(owner.uid(), geometry)) != null)
                    {
                        reason = Reason.LIMIT_MEMORY;
                    }
                    else if (reason == Reason.NONE)
                    {
                        attached = attach(path, fileKey, fd, files, owner.uid(), inode, channel, geometry);
                        reason = Reason.BAD_ARGUMENT;
                        why = attached ? null : "its memory no longer says ATTACHING (the app gave up)";
                    }
                }
                finally
                {
                    org.agrona.IoUtil.unmap(headerMap);
                }
            }
        }
        catch (final IOException | RuntimeException e)
        {
            reason = Reason.BAD_ARGUMENT;
            why = "its memory cannot be mapped: " + e;
        }
        finally
        {
            Linux.closeQuietly(memory);
            if (!attached)
            {
                files.close();
            }
        }
        if (attached)
        {
            writeState(fd, AppFileDescriptor.STATE_ATTACHED); // so that the scanner passes it over
        }
        else
        {
            reject(path, fd, reason, why);
        }
    }

    private AppSession sessionOfMemory(final long inode)
    {
        for (final AppSession s : sessions)
        {
            if (s.memoryInode == inode)
            {
                return s;
            }
        }
        return null;
    }

    /** The sizes and pid an app's header asks for, each read once. */
    private record Geometry(int maxConnections, int pipeCapacity, int ringCapacity, long appPid)
    {
        static Geometry of(final UnsafeBuffer header)
        {
            return new Geometry(header.getIntVolatile(AppFileDescriptor.MAX_CONNECTIONS_OFFSET),
                header.getIntVolatile(AppFileDescriptor.PIPE_CAPACITY_OFFSET),
                header.getIntVolatile(AppFileDescriptor.RING_CAPACITY_OFFSET),
                header.getLongVolatile(AppFileDescriptor.APP_PID_OFFSET));
        }

        long fileLength()
        {
            return AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);
        }
    }

    private int validate(final UnsafeBuffer header, final Geometry g, final long size)
    {
        final int reason = magicAndVersion(header);
        if (reason != Reason.NONE)
        {
            return reason;
        }
        if (g.maxConnections < 1 || g.maxConnections > MAX_CONNECTIONS
            || g.pipeCapacity < MIN_PIPE_CAPACITY || g.pipeCapacity > MAX_PIPE_CAPACITY || !BitUtil.isPowerOfTwo(g.pipeCapacity)
            || g.ringCapacity < MIN_RING_CAPACITY || g.ringCapacity > MAX_RING_CAPACITY || !BitUtil.isPowerOfTwo(g.ringCapacity)
            || g.appPid <= 0)
        {
            return Reason.BAD_ARGUMENT;
        }
        final long length = g.fileLength();
        if (length > maxFileBytes || length > Integer.MAX_VALUE
            || heapPromised + AppSession.heapBytes(g.maxConnections, g.ringCapacity) > heapBudget)
        {
            return Reason.LIMIT_MEMORY;
        }
        return size == length ? Reason.NONE : Reason.BAD_ARGUMENT;
    }

    /** Which memory limit an app with these sizes passes ({@link #validate} said LIMIT_MEMORY), for the log. */
    private String overMemory(final Geometry g)
    {
        final long length = g.fileLength();
        final long wanted = AppSession.heapBytes(g.maxConnections, g.ringCapacity);
        return length > maxFileBytes || length > Integer.MAX_VALUE
            ? "its shared memory (" + length + " bytes) is over the daemon's limit per app (" + maxFileBytes + ")"
            : "the daemon's heap budget for apps is taken: " + heapPromised + " of " + heapBudget + " bytes promised, and "
                + "this one would need " + wanted + " more";
    }

    /**
     * Why an app of {@code uid} with these sizes would take its user's apps past their share of the heap budget (half
     * of it, {@link #heapBudget}), or null if it would not; a user's first app never does (the largest an app may be,
     * 65,536 connections with 16 MiB rings, takes more than half under the launcher's heap).
     */
    private String overUsersShare(final int uid, final Geometry g)
    {
        if (uid == 0 || uid == ownUid)
        {
            return null;
        }
        long held = 0;
        for (final AppSession s : sessions)
        {
            if (s.ownerUid == uid)
            {
                held += s.heapBytes();
            }
        }
        final long wanted = AppSession.heapBytes(g.maxConnections, g.ringCapacity);
        final long share = heapBudget / 2;
        // A user's first app is held to the whole budget only: however large, it can be run, and it leaves the rest.
        return held > 0 && held + wanted > share ? "over its user's share: uid " + uid + "'s apps may hold " + held + " bytes of heap "
            + "and this one " + wanted + " more, past half the daemon's budget for apps (" + share + ")" : null;
    }

    /**
     * Answer REJECTED with {@code reason} in the app file (open as {@code fd}; the app copies it into its memory): the
     * reason and the daemon's pid and version first, the state last. {@code why} goes to the log if not null.
     */
    private void reject(final Path path, final int fd, final int reason, final String why)
    {
        appFileHeader.putInt(AppFileDescriptor.REASON_OFFSET, reason);
        appFileHeader.putLong(AppFileDescriptor.DAEMON_PID_OFFSET, pid);
        appFileHeader.putInt(AppFileDescriptor.DAEMON_VERSION_OFFSET, AppFileDescriptor.VERSION);
        final int fields = AppFileDescriptor.DAEMON_VERSION_OFFSET + Integer.BYTES - AppFileDescriptor.REASON_OFFSET;
        Linux.LIBC.pwrite(fd, appFileHeader.addressOffset() + AppFileDescriptor.REASON_OFFSET, fields,
            AppFileDescriptor.REASON_OFFSET);
        writeState(fd, AppFileDescriptor.STATE_REJECTED);
        counters.increment(PipeCounter.APPS_REJECTED);
        log.println("nicstack pipes: rejected " + LogText.untrusted(path.getFileName()) + ": " + Reason.describe(reason)
            + (why != null ? " (" + LogText.untrusted(why, LogText.MAX_MESSAGE) + ")" : ""));
    }

    private void writeState(final int fd, final int state)
    {
        appFileHeader.putInt(AppFileDescriptor.STATE_OFFSET, state);
        Linux.LIBC.pwrite(fd, appFileHeader.addressOffset() + AppFileDescriptor.STATE_OFFSET, Integer.BYTES,
            AppFileDescriptor.STATE_OFFSET);
    }

    /**
     * Map the memory with the checked sizes and attach it: ATTACHED replaces ATTACHING in the memory by a compare and
     * set, so an app that gave up meanwhile (it wrote DETACHED) is not attached. Returns whether it was.
     */
    private boolean attach(final Path path, final Object fileKey, final int fd, final AppFiles files, final int ownerUid,
        final long memoryInode, final FileChannel channel, final Geometry g) throws IOException
    {
        // The length the checked sizes give, not the memory's size now.
        final MappedByteBuffer mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, g.fileLength());
        // The session's own descriptor of the app file, held until the reap (AppSession.fileKey).
        final int held = Linux.LIBC.fcntl(fd, Linux.F_DUPFD_CLOEXEC, 0);
        if (held < 0)
        {
            org.agrona.IoUtil.unmap(mapped);
            throw new IOException("the app file cannot be kept open: " + Linux.describe(Linux.errno()));
        }
        final AppSession s;
        try
        {
            s = new AppSession(this, path, fileKey, held, files, ownerUid, memoryInode, mapped, g.ringCapacity,
                g.pipeCapacity, g.maxConnections);
        }
        catch (final RuntimeException | Error e)
        {
            org.agrona.IoUtil.unmap(mapped); // an OutOfMemoryError too: the mapping is not the heap's to reclaim
            Linux.closeQuietly(held);
            throw e;
        }
        s.file.putLong(AppFileDescriptor.DAEMON_PID_OFFSET, pid);
        s.file.putInt(AppFileDescriptor.DAEMON_VERSION_OFFSET, AppFileDescriptor.VERSION);
        s.file.putInt(AppFileDescriptor.REASON_OFFSET, Reason.NONE);
        s.heartbeat(epochClock.time());
        if (!s.file.compareAndSetInt(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_ATTACHING,
            AppFileDescriptor.STATE_ATTACHED))
        {
            s.teardown(0, 0); // nothing of it is in use yet: unmaps
            s.closeAppFile();
            return false;
        }
        synchronized (this) // see reap
        {
            sessions.add(s);
        }
        byPath.put(path, s);
        heapPromised += s.heapBytes();
        counters.increment(PipeCounter.APPS_ATTACHED);
        log.println("nicstack pipes: attached " + LogText.untrusted(path.getFileName()) + " (pid " + g.appPid + ", "
            + g.maxConnections + " connections of " + g.pipeCapacity + "-byte pipes)");
        return true;
    }

    /**
     * Daemon shutdown: every attached app learns the daemon is gone, and every session, draining ones too, lets go of
     * what it holds in the daemon (its connections, which are reset, its listeners, the files SEND_FILEs fill from and
     * the descriptors kept for them, its pidfd, its memory's mapping and its app file's descriptor), as a reap does
     * but leaving the app files to their apps: a process that goes on after the server (a test's, one that embeds it)
     * keeps none of them. Each thing once, however often it is called.
     *
     * <p>Called on the loop's thread, or after that thread has ended, it lets go of all that at once. Called on another
     * thread while the loop's thread lives (a test's in-process daemon closes its server before it stops the loop),
     * it tells the apps and leaves the rest to the loop's next round, or to a close once that thread has ended:
     * unmapped under a round, an app's pipes would fault the loop that sends from them.
     */
    @Override
    public void close()
    {
        final boolean first = !closed;
        closed = true;
        if (first && scanner != null)
        {
            scanner.close();
        }
        final Thread loop = loopThread;
        if (loop == null || loop == Thread.currentThread() || !loop.isAlive())
        {
            release();
        }
        else if (first)
        {
            tellAppsGone();
        }
    }

    /**
     * A close on another thread while the loop's lives: the apps learn now, under the monitor a reap unmaps under and
     * an attach adds under (the loop's thread may reap an app meanwhile: a write into its memory after the unmap was a
     * SIGSEGV, a test's in-process daemon closed before its loop stopped). Not once the loop has let go ({@link #release}
     * tells them itself).
     */
    private synchronized void tellAppsGone()
    {
        if (!released)
        {
            for (final AppSession s : sessions)
            {
                tellGone(s);
            }
        }
    }

    /**
     * Closed: every session learns the daemon is gone and lets go of what it holds, once (on the loop's thread, or
     * after it has ended).
     */
    private synchronized void release()
    {
        if (released)
        {
            return;
        }
        released = true;
        for (final AppSession s : sessions)
        {
            tellGone(s); // also when the loop's thread got here before a close on another thread told the apps
            teardown(s, 0, 0); // the state stays DAEMON_GONE
            s.closeAppFile();
        }
        sessions.clear();
        byPath.clear();
        heapPromised = 0;
    }

    private static void tellGone(final AppSession s)
    {
        try
        {
            s.daemonGone();
        }
        catch (final RuntimeException e)
        {
            // A bug: nothing more to tell it; what it holds is let go all the same.
        }
    }
}
