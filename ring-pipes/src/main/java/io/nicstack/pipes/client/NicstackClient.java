package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.CheckedRingReader;
import io.nicstack.pipes.Libc;
import io.nicstack.pipes.Pipe;
import io.nicstack.pipes.Protocol;
import org.agrona.BufferUtil;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A host application's session with the nicstack daemon, over one shared-memory app file
 * ({@link AppFileDescriptor}): requests go out on the control ring, events and paced RX notifications come back, and
 * each connection's payload moves through its slot's RX and TX pipes without any system call.
 *
 * <p>Single threaded: one thread calls every method of the client, its listeners and its connections. Blocking calls
 * spin {@link #poll()} with the {@link ClientOptions#idleStrategy}; none waits forever on a dead daemon, since every
 * poll checks the daemon's heartbeat, state and process. A small daemon thread of the client also writes the app
 * heartbeat, so a busy app that does not poll for a while still looks alive.
 *
 * <p>One exception, the socket idiom to wake a thread blocked in a read: {@link #close()}, and
 * {@link PipeConnection#close()}, {@link PipeConnection#abort()} and {@link PipeListener#close()}, may be called from
 * any thread. A close that finds a thread in a blocking call of this client (a stream adapter's read, write or
 * available, {@link PipeConnection#awaitReadable}, {@link PipeListener#accept}, {@link #listen}, {@link #connect}, and
 * the calls that wait for room in the control ring: {@link PipeConnection#sendFile}, {@link PipeConnection#setOption},
 * {@link PipeConnection#shutdownOutput}) only asks, and returns at once: that thread does it at its next turn, within
 * one idle, so that nothing is unmapped or written under it. A client closed so makes the blocked call throw a
 * {@link NicstackException} saying so (an IOException, also from the stream adapters); a connection or listener closed
 * so makes a call waiting on it throw as a call on a closed one does. A close that finds no blocking call in progress
 * is done on the calling thread when it returns (after a moment, if another thread's close is in progress). A close of
 * a connection or listener done so never waits for the daemon: with the control ring full, its message waits in the
 * client, to be sent before any other by the next poll or blocking call, or the client's close; so it holds the client
 * for a moment only. Nothing else may be called from a second thread, and a close from
 * another thread is safe only while the owning thread is in a blocking call or leaves the client alone: a non-blocking
 * call ({@link #poll()}, {@link PipeConnection#peek()}, {@link PipeConnection#claim}, {@link PipeConnection#commit},
 * {@link PipeConnection#release}, {@link PipeListener#tryAccept}, or the buffers they hand out) may run into memory the
 * close unmaps, and a JVM that reads unmapped memory dies (SIGSEGV). So the zero-copy idiom,
 * {@link PipeConnection#awaitReadable} then {@link PipeConnection#peek()}, {@link PipeConnection#rxBuffer()} and
 * {@link PipeConnection#release}, can be woken by a close from another thread only while it waits in awaitReadable:
 * where a close may come at any moment, read with the stream adapters, or close on the owning thread. "Leaves the
 * client alone" needs the owning thread's last call to have been a poll or a blocking call (the end of each publishes
 * what it did to the close), or a hand-off that orders the two threads (a join, a lock, a queue). Such calls cost no
 * more than a volatile read for this, and a poll two release stores of an int (plain stores on x86); a blocking call
 * takes and gives back the client with one compare-and-set each. A second thread that polls or makes a blocking call
 * while another thread is in one, or inside a poll, gets an IllegalStateException that names both threads (one caught
 * in the act: other uses of a second thread go unseen, and are as unsafe).
 *
 * <p>A blocking call that has to wait ends when its thread is interrupted, and leaves the interrupt status set: the
 * stream adapters throw {@link java.io.InterruptedIOException}, the other calls a {@link NicstackException} saying so.
 * The closes and {@link PipeConnection#shutdownOutput} do not fail: their message to the daemon waits in the client, to
 * be sent by a later poll or the client's close, and {@link #close()} on an interrupted thread still waits as it says.
 * {@link #attach} ends too.
 *
 * <p>Request ids have the top bit set, connection ids ({@code (generation << 16) | slot}) never do, so an ERROR's
 * first field tells which it answers.
 */
public final class NicstackClient implements AutoCloseable
{
    private static final int EVENTS_PER_POLL = 64;
    private static final int NOTIFICATIONS_PER_POLL = 256;
    private static final long HEARTBEAT_PERIOD_MILLIS = 50;
    private static final long PROCESS_CHECK_PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long REQUEST_ID_FLAG = Long.MIN_VALUE;
    /** {@link #watch}: a struct pollfd at 0, a struct flock at {@link #WATCH_FLOCK}. */
    private static final int WATCH_FLOCK = 8;
    private static final int WATCH_LENGTH = WATCH_FLOCK + Libc.FLOCK_LENGTH;
    /** One deferred control message: its type, then its {@link Protocol#CONTROL_LENGTH} bytes. */
    private static final int DEFERRED_RECORD = 4 + Protocol.CONTROL_LENGTH;
    /** The daemon's limit of listeners per app: at most one UNLISTEN each can be owed. */
    private static final int MAX_LISTENERS = 64;

    // TcpConnection.CLOSE_* as carried by CLOSED (ring-pipes does not depend on stack-core).
    private static final int CLOSE_NORMAL = 0;
    private static final int CLOSE_RESET = 1;
    private static final int CLOSE_REFUSED = 2;
    private static final int CLOSE_TIMED_OUT = 3;

    // Who holds the client (see the class Javadoc): a thread in a blocking call, or closing something.
    private static final VarHandle HOLD;
    private static final VarHandle HOLDER;
    private static final VarHandle POLLING;
    /** Nobody: non-blocking calls of the owning thread, or none. */
    private static final int FREE = 0;
    /** {@link #holder} is in a blocking call, and does what closes of other threads asked at each turn. */
    private static final int BLOCKED = 1;
    /** {@link #holder} closes a connection or listener, having found the client free. */
    private static final int CLOSING_ONE = 2;
    /** {@link #holder} closes the client. */
    private static final int CLOSING = 3;
    private static final int CLOSED = 4;
    private static final int HOLD_MASK = 7;
    /** Flag: other threads closed connections or listeners (marked closeAsked) for the holder to close. */
    private static final int CLOSE_ONES_ASKED = 8;
    /** Flag: another thread closed the client, for the holder to close once its call ends. */
    private static final int CLOSE_ASKED = 16;
    /** What {@link #enterClose} tells a close of a connection or listener to do. */
    private static final int CLOSE_NOW = 0;
    private static final int CLOSE_HELD = 1;
    private static final int CLOSE_LEFT = 2;

    /**
     * The clients of this process not closed yet, by app file path (absolute, normalized, as AppFile keeps the ones
     * open here, so a directory named another way finds them): an attach refused because the file exists tells
     * whether the client that has it lost its daemon (close it first), or is in use.
     */
    private static final ConcurrentHashMap<Path, NicstackClient> OPEN = new ConcurrentHashMap<>();

    static
    {
        try
        {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            HOLD = lookup.findVarHandle(NicstackClient.class, "hold", int.class);
            HOLDER = lookup.findVarHandle(NicstackClient.class, "holder", Thread.class);
            POLLING = lookup.findVarHandle(NicstackClient.class, "polling", int.class);
        }
        catch (final ReflectiveOperationException ex)
        {
            throw new ExceptionInInitializerError(ex);
        }
    }

    private final AppFile file;
    private final Path dir;
    private final String appName;
    private final IdleStrategy idleStrategy;
    private final long daemonTimeoutNanos;
    private final long daemonLossNanos;
    /** The client's own monotonic clock: the daemon's liveness is judged by its heartbeat moving, timed on this. */
    private final NanoClock clock;
    private final OneToOneRingBuffer controlRing;
    private final CheckedRingReader eventRing;
    private final CheckedRingReader notificationRing;
    private final PipeConnection[] connections;
    private final Int2ObjectHashMap<PipeListener> listeners = new Int2ObjectHashMap<>();
    private final CheckedRingReader.Handler eventHandler = this::onEvent;
    private final CheckedRingReader.Handler notificationHandler = this::onNotification;
    private final Thread heartbeatThread;
    /**
     * Files of SEND_FILEs no FILE_SENT will be read for (the connection was aborted, or the client is closing), each
     * with the control ring position after its request: the descriptor is released once the daemon's head passed it
     * (the daemon takes its duplicate, or refuses, as it reads the request), never before, so that no number the
     * daemon may still take is closed and reused.
     */
    private final ArrayList<SendableFile> unreadFiles = new ArrayList<>();
    private long[] unreadFilePositions = new long[8];
    /**
     * 1 while a thread is inside poll (handling events, say), else 0. Handlers never poll (a nested read would start
     * again from the head the outer one has not moved yet, and handle every event of the batch twice): a control
     * message they send that finds the ring full waits in {@link #deferred} instead. A poll of another thread meanwhile
     * is told the client is single-threaded. Both stores are releases (plain stores on x86): the one that ends a poll
     * publishes what the poll did to a close of another thread that then finds the client free, which reads this with
     * acquire ({@link #tookFree}). An int, not the thread: a reference store costs a GC write barrier.
     */
    private int polling;
    /** The thread that polled last (for the message to a second thread), written only when another thread polls. */
    private Thread poller;
    /**
     * Control messages that found the ring full while events were handled, or while the daemon stalled (a CLOSE, ABORT,
     * SHUTDOWN or UNLISTEN, which the session that is kept must not lose), in order; sent before any other. Each is owed
     * for a slot (at most a SHUTDOWN and then a CLOSE or ABORT: the daemon reuses a slot only after reading it) or a
     * listener of the daemon's, so at most {@link #maxDeferred} wait: more, and the client has lost count of the
     * daemon's state, so the session is declared lost.
     */
    private final ExpandableArrayBuffer deferred = new ExpandableArrayBuffer(0);
    private final int maxDeferred;
    private int deferredHead;
    private int deferredTail;
    private volatile boolean heartbeatRunning = true;

    private long nextRequestId = 1;
    private long awaitedRequestId;
    private boolean replied;
    private int replyType;
    private int replyReason;
    private int replyPort;
    private long replyConnectionId;
    private int replyLocalPort;
    private int replyRemoteAddress;
    private int replyRemotePort;

    private long lastHeartbeatMillis;
    /** The daemon's heartbeat value last seen, and when it was first seen ({@link #clock}). */
    private long daemonHeartbeatSeen;
    private long daemonHeartbeatSeenAtNanos;
    /**
     * Whether a poll has reported the current stall (the heartbeat past the timeout) and kept the session: a loss needs
     * one first, so a silence nobody watched (both processes frozen together, then the app first to run) is a stall.
     */
    private boolean stallReported;
    private long lastProcessCheckNanos;
    /**
     * The daemon's process, taken at attach (pidfd_open(2), close-on-exec): it polls readable once the process has
     * exited, a zombie its parent has not waited for too, and never names another process (a pid may be reused); or -1
     * where it could not be taken (a kernel before 5.3), when the pid is looked up instead.
     */
    private int daemonPidfd = -1;
    /**
     * The directory's daemon.lock, open since attach (close-on-exec), or -1 where there is none (a pipe server without
     * one): nobody holding it means the daemon has stopped, which its pid cannot tell from another PID namespace.
     */
    private int daemonLockFd = -1;
    /** A struct pollfd, then a struct flock, for the process checks: native memory taken once. */
    private final UnsafeBuffer watch = new UnsafeBuffer(BufferUtil.allocateDirectAligned(WATCH_LENGTH, Long.BYTES));
    private DaemonGoneException gone;
    /** Whether {@link #gone} was declared because the heartbeat stopped for the loss bound, its process alive or not. */
    private boolean silent;
    /** Set before the mapping goes: every call that touches it checks this first (volatile: see the class Javadoc). */
    private volatile boolean closed;

    /** FREE, BLOCKED, CLOSING_ONE, CLOSING or CLOSED, with the *_ASKED flags; changed by compare-and-set only. */
    private volatile int hold;
    /**
     * The thread that holds the client while {@link #hold} is BLOCKED, CLOSING_ONE or CLOSING. Written by that thread only
     * (release stores: the compare-and-sets of hold order what matters), after it took the client and before it gives
     * it back, so a thread never reads itself here unless it is the holder; other threads read it only to name it.
     */
    private Thread holder;
    /** Whether the holder is closing what other threads asked (closeAskedOnes). */
    private boolean closingAsked;

    private NicstackClient(final AppFile file, final Path dir, final String appName, final ClientOptions options)
    {
        this.file = file;
        this.dir = dir;
        this.appName = appName;
        this.idleStrategy = options.idleStrategy;
        this.daemonTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(options.daemonTimeoutMillis);
        this.daemonLossNanos = Math.max(2 * daemonTimeoutNanos, TimeUnit.MILLISECONDS.toNanos(options.daemonLossMillis));
        this.clock = options.clock;
        this.controlRing = file.controlRing();
        this.eventRing = new CheckedRingReader(file.eventRing().buffer());
        this.notificationRing = new CheckedRingReader(file.notificationRing().buffer());
        this.connections = new PipeConnection[file.maxConnections()];
        this.maxDeferred = 2 * connections.length + 2 * MAX_LISTENERS;
        heartbeatThread = new Thread(this::heartbeatLoop, "nicstack-heartbeat-" + appName);
        heartbeatThread.setDaemon(true);
    }

    /** Attach with default {@link ClientOptions}. */
    public static NicstackClient attach(final Path dir, final String appName) throws NicstackException
    {
        return attach(dir, appName, new ClientOptions());
    }

    /**
     * Create the app file in {@code <dir>/apps}, and wait until the daemon attaches it. Where no daemon runs (none
     * holds {@code <dir>/daemon.lock}: there is none, or the daemon that held it stopped) it fails at once and makes
     * nothing; it does not wait for a daemon that starts later. Nor, while it waits for the answer, for one that stops
     * meanwhile (it was shutting down, or its start failed): the lock is looked at again every 100 ms.
     *
     * <p>An app file, and so an app name, is this process's until its client is closed. A client never reconnects by
     * itself: after a {@link DaemonGoneException} that lost the session ({@link #isGone()}), {@link #close()} the lost
     * client, then attach again, to the same daemon or a new one.
     *
     * @throws DaemonNotRunningException if {@code dir} is missing or not a directory, no daemon runs there, or the
     *                                   daemon did not answer within {@link ClientOptions#attachTimeoutMillis}.
     * @throws VersionMismatchException  if the daemon runs another layout version.
     * @throws NicstackException         if an option is out of its range (reason BAD_ARGUMENT, the message names it), the
     *                                   daemon rejected the app for another reason or the file cannot be made, or the
     *                                   thread is interrupted while this waits (its interrupt status kept set).
     */
    public static NicstackClient attach(final Path dir, final String appName, final ClientOptions options)
        throws NicstackException
    {
        final String nameProblem = AppFile.checkName(appName);
        if (nameProblem != null)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, nameProblem);
        }
        final String optionsProblem = options.problem();
        if (optionsProblem != null)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, optionsProblem);
        }
        if (!Files.isDirectory(dir))
        {
            throw new DaemonNotRunningException("nicstack directory " + dir
                + (Files.exists(dir) ? " is not a directory" : " does not exist: is the daemon running?"));
        }
        final String noDaemon = noDaemon(dir);
        if (noDaemon != null)
        {
            throw new DaemonNotRunningException(noDaemon);
        }

        final AppFile file;
        try
        {
            file = AppFile.create(dir, appName, options.ringCapacity, options.pipeCapacity, options.maxConnections,
                System.currentTimeMillis());
        }
        catch (final NoSuchFileException ex)
        {
            throw new DaemonNotRunningException("nicstack directory " + dir + " does not exist: is the daemon running?");
        }
        catch (final AccessDeniedException ex)
        {
            final Path apps = dir.resolve(AppFile.APPS_DIRECTORY);
            throw new NicstackException(Protocol.Reason.NONE, "permission denied creating "
                + (apps.toString().equals(ex.getFile()) ? apps : "the app file in " + apps), ex);
        }
        catch (final FileAlreadyExistsException ex)
        {
            // AppFile.create refuses a second app of one name and pid, which would share its file.
            throw new NicstackException(Protocol.Reason.NONE,
                AppFile.appFilePath(dir, appName, ProcessHandle.current().pid()).toString().equals(ex.getFile())
                    ? alreadyRunning(appName, ex.getFile())
                    : "cannot create the app file in " + dir.resolve(AppFile.APPS_DIRECTORY) + ": " + ex.getFile()
                    + " already exists", ex);
        }
        catch (final IOException ex)
        {
            // A FileSystemException's message names the file and says why; others say what failed.
            throw new NicstackException(Protocol.Reason.NONE,
                "cannot create the app file in " + dir.resolve(AppFile.APPS_DIRECTORY) + ": " + ex.getMessage(), ex);
        }

        final NicstackClient client = new NicstackClient(file, dir, appName, options);
        OPEN.put(file.path().toAbsolutePath().normalize(), client);
        client.heartbeatThread.start();
        try
        {
            client.awaitAttached(options.attachTimeoutMillis);
            client.watchDaemon();
        }
        catch (final NicstackException | RuntimeException ex)
        {
            client.discard(AppFileDescriptor.STATE_DETACHED);
            throw ex;
        }
        return client;
    }

    /**
     * Why no daemon can be serving {@code dir}, or null when one may be (attach then waits for its answer). A daemon
     * holds an exclusive lock on {@code dir/daemon.lock} for its whole life (an open-file-description lock, fcntl
     * F_OFD_SETLK, which the kernel drops when it exits however it exits), taken before it makes anything else there.
     * So no lock file, or one nobody holds, means no daemon; except that a directory with an {@code apps} directory and
     * no lock file is taken for a pipe server that runs without one (in the app's own process, a benchmark's) and
     * waited for as before.
     *
     * <p>The lock is looked at with fcntl F_OFD_GETLK (Linux 3.15), which reports a lock that would conflict with a
     * shared one (the daemon's write lock; a classic POSIX lock too, of any process, this one also) and takes none. So
     * a daemon that starts meanwhile gets its lock as if no client had looked. (Before, the look took a shared lock for
     * a moment, and a daemon starting in that moment was refused as if another held the directory.) Whatever cannot be
     * told (an unreadable file, a kernel without F_OFD_GETLK) is left to the wait. Package-private for tests.
     */
    static String noDaemon(final Path dir)
    {
        final Path lock = dir.resolve(AppFile.DAEMON_LOCK);
        final BasicFileAttributes attributes;
        try
        {
            attributes = Files.readAttributes(lock, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        }
        catch (final NoSuchFileException e)
        {
            return Files.isDirectory(dir.resolve(AppFile.APPS_DIRECTORY), LinkOption.NOFOLLOW_LINKS) ? null
                : "no nicstack daemon runs in " + dir + " (no daemon has used it: it has no " + AppFile.DAEMON_LOCK + ")";
        }
        catch (final IOException e)
        {
            return null;
        }
        if (!attributes.isRegularFile())
        {
            // No daemon takes such a file; and a named pipe's open would wait for a writer.
            return "no nicstack daemon runs in " + dir + " (its " + AppFile.DAEMON_LOCK + " is not a regular file)";
        }
        // Without following a link, and without waiting: a named pipe put in its place since would wait for a writer.
        final Libc.Calls libc = Libc.calls();
        final int fd = libc.open(lock.toString(), Libc.O_RDONLY | Libc.O_NONBLOCK | Libc.O_NOFOLLOW | Libc.O_CLOEXEC);
        if (fd < 0)
        {
            return null;
        }
        final UnsafeBuffer query = new UnsafeBuffer(BufferUtil.allocateDirectAligned(Libc.FLOCK_LENGTH, Long.BYTES));
        try
        {
            // Held: a daemon runs (or, the call failing, who knows).
            return lockReleased(fd, query, 0) ? stopped(dir) : null;
        }
        finally
        {
            libc.close(fd);
        }
    }

    private static String stopped(final Path dir)
    {
        return "no nicstack daemon runs in " + dir + " (nobody holds its " + AppFile.DAEMON_LOCK
            + ": the daemon that used it has stopped)";
    }

    /**
     * Whether nobody holds a lock on the file open as {@code fd}: F_OFD_GETLK with the struct flock at {@code offset}
     * of {@code query}; false when it cannot be told. No allocation.
     */
    private static boolean lockReleased(final int fd, final UnsafeBuffer query, final int offset)
    {
        // Whole file (l_whence, l_start, l_len 0), l_pid 0 as F_OFD_GETLK requires; the call writes a conflict over it.
        query.setMemory(offset, Libc.FLOCK_LENGTH, (byte)0);
        query.putShort(offset + Libc.FLOCK_TYPE_OFFSET, Libc.F_RDLCK);
        return Libc.calls().fcntl(fd, Libc.F_OFD_GETLK, query.addressOffset() + offset) == 0
            && query.getShort(offset + Libc.FLOCK_TYPE_OFFSET) == Libc.F_UNLCK;
    }

    /** The message of an attach that found the app file of {@code appName} in this process taken, {@code path}. */
    private static String alreadyRunning(final String appName, final String path)
    {
        final NicstackClient other = OPEN.get(Path.of(path).toAbsolutePath().normalize());
        final DaemonGoneException lost = other == null ? null : other.gone;
        if (lost == null)
        {
            return "an app named " + appName + " is already running in this process";
        }
        return "an app named " + appName + " is already running in this process, its client lost with its daemon (" +
            lost.getMessage() + "): close the lost client first, then attach again";
    }

    /**
     * Once attached: take a pidfd of the daemon's process and open the directory's daemon.lock, for the process checks
     * ({@link #daemonExited()}). A daemon that died and whose pid was reused between its ATTACHED and the pidfd_open
     * here is not seen by the pidfd; the lock, released as it died, still tells.
     */
    private void watchDaemon()
    {
        final Libc.Calls libc = Libc.calls();
        final long pid = file.daemonPid();
        if (pid > 0 && pid <= Integer.MAX_VALUE)
        {
            daemonPidfd = (int)libc.syscall(Libc.SYS_PIDFD_OPEN, (int)pid, 0, 0); // close-on-exec, as pidfds always are
        }
        final Path lock = dir.resolve(AppFile.DAEMON_LOCK);
        try
        {
            if (Files.readAttributes(lock, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).isRegularFile())
            {
                // Without waiting: a named pipe put in its place since would wait for a writer.
                daemonLockFd =
                    libc.open(lock.toString(), Libc.O_RDONLY | Libc.O_NONBLOCK | Libc.O_NOFOLLOW | Libc.O_CLOEXEC);
            }
        }
        catch (final IOException ex)
        {
            // None (a pipe server without a lock), or not readable: the pid alone tells.
        }
    }

    /**
     * Why the daemon is known to have stopped, or null: its pidfd polls readable (it exited, reaped or not), or without
     * one the pid names no live process, or nobody holds daemon.lock any more. One poll(2) and one fcntl(2), no
     * allocation with a pidfd: made at the process check cadence only, and by a closing client.
     */
    private String daemonExited()
    {
        final long pid = file.daemonPid();
        if (daemonPidfd >= 0)
        {
            watch.putInt(0, daemonPidfd);
            watch.putShort(Libc.POLLFD_EVENTS_OFFSET, Libc.POLLIN);
            watch.putShort(Libc.POLLFD_REVENTS_OFFSET, (short)0);
            if (Libc.calls().poll(watch.addressOffset(), 1, 0) > 0
                && (watch.getShort(Libc.POLLFD_REVENTS_OFFSET) & Libc.POLLIN) != 0)
            {
                return "the daemon process " + pid + " is dead";
            }
        }
        else if (processDead(pid))
        {
            return "the daemon process " + pid + " is dead";
        }
        if (daemonLockFd >= 0 && lockReleased(daemonLockFd, watch, WATCH_FLOCK))
        {
            return "the daemon process " + pid + " is gone: nobody holds " + dir.resolve(AppFile.DAEMON_LOCK);
        }
        return null;
    }

    private void awaitAttached(final long timeoutMillis) throws NicstackException
    {
        // On the monotonic clock, as the heartbeat: a wall clock stepping back would stretch the wait by as much.
        final long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        final long start = clock.nanoTime();
        long lockCheckNanos = start;
        idleStrategy.reset();
        while (true)
        {
            final int state = file.state();
            switch (state)
            {
                case AppFileDescriptor.STATE_ATTACHED:
                    if (file.daemonVersion() != AppFileDescriptor.VERSION)
                    {
                        throw new VersionMismatchException(
                            "daemon runs app file version " + file.daemonVersion() + ", this client " +
                            AppFileDescriptor.VERSION);
                    }
                    daemonHeartbeatSeen = file.daemonHeartbeat();
                    daemonHeartbeatSeenAtNanos = clock.nanoTime();
                    lastProcessCheckNanos = daemonHeartbeatSeenAtNanos;
                    return;

                case AppFileDescriptor.STATE_REJECTED:
                    throw NicstackException.of(file.reason(), "the daemon rejected app " + appName);

                case AppFileDescriptor.STATE_DAEMON_GONE:
                    throw new DaemonGoneException("the daemon went away while attaching " + appName);

                default:
                    break;
            }
            final long now = clock.nanoTime();
            if (now - lockCheckNanos >= PROCESS_CHECK_PERIOD_NANOS)
            {
                // A daemon that stops meanwhile (it was shutting down, or failed to start) will never answer.
                lockCheckNanos = now;
                final String noDaemon = noDaemon(dir);
                if (noDaemon != null)
                {
                    throw new DaemonNotRunningException(noDaemon);
                }
            }
            if (now - start >= timeoutNanos)
            {
                throw new DaemonNotRunningException(
                    "no nicstack daemon attached " + file.path() + " within " + timeoutMillis + " ms");
            }
            if (Thread.currentThread().isInterrupted())
            {
                throw interrupted("waiting for the daemon to attach " + file.path());
            }
            idleStrategy.idle();
        }
    }

    /**
     * Listen on {@code port} (0: the daemon picks one; see {@link PipeListener#port()}), blocking until the daemon
     * answers.
     *
     * @throws PortInUseException    if another listener holds the port.
     * @throws LimitReachedException if the daemon's limits are reached.
     * @throws NicstackException     if this client was closed, or the daemon is gone, or the thread is interrupted
     *                               while this waits (its interrupt status kept set).
     */
    public PipeListener listen(final int port, final int backlog) throws NicstackException
    {
        checkOpen();
        if (port < 0 || port > 0xFFFF || backlog < 0)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, "listen(" + port + ", " + backlog + ")");
        }
        final boolean held = enterBlocking();
        try
        {
            final long requestId = request(Protocol.LISTEN, port, backlog);
            awaitReply(requestId);
            if (replyType != Protocol.LISTENING)
            {
                throw NicstackException.of(replyReason, "listen on port " + port);
            }
            final PipeListener listener = new PipeListener(this, replyPort);
            listeners.put(replyPort, listener);
            return listener;
        }
        finally
        {
            if (held)
            {
                leave();
            }
        }
    }

    /**
     * Open a connection to {@code ipv4Address:port}, blocking until the daemon answers CONNECTED or an error (the
     * daemon times the handshake out itself).
     *
     * @throws ConnectionRefusedException  if the peer answers the SYN with RST.
     * @throws ConnectionTimedOutException if the handshake timed out (its reason UNREACHABLE when ICMP said the host
     *                                     or network was unreachable meanwhile).
     * @throws LimitReachedException       if no slot is free.
     * @throws NicstackException           if this client was closed, or the daemon is gone, or the thread is
     *                                     interrupted while this waits (its interrupt status kept set).
     */
    public PipeConnection connect(final String ipv4Address, final int port) throws NicstackException
    {
        checkOpen();
        final int address = parseIpv4(ipv4Address);
        if (port <= 0 || port > 0xFFFF)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, "port " + port);
        }
        final boolean held = enterBlocking();
        try
        {
            final long requestId = request(Protocol.CONNECT, address, port);
            awaitReply(requestId);
            if (replyType != Protocol.CONNECTED)
            {
                throw NicstackException.of(replyReason, "connect to " + ipv4Address + ":" + port);
            }
            final PipeConnection connection =
                register(replyConnectionId, replyLocalPort, replyRemoteAddress, replyRemotePort);
            if (connection == null)
            {
                throw new NicstackException(
                    Protocol.Reason.BAD_MESSAGE, "daemon answered CONNECTED with a bad connection id " + replyConnectionId);
            }
            return connection;
        }
        finally
        {
            if (held)
            {
                leave();
            }
        }
    }

    /**
     * Drain events and notifications, write the app heartbeat, and check that the daemon is alive.
     *
     * @return how many events and notifications were handled (for an idle strategy).
     * @throws DaemonGoneException if the daemon wrote DAEMON_GONE or its process is dead (a zombie too) or nobody holds
     *                             its daemon.lock any more (looked at every 100 ms), or it reaped this app
     *                             (REJECTED: the exception's reason says why), or the event or notification ring,
     *                             or an RX pipe {@link PipeConnection#peek()} read, is corrupt (reason BAD_MESSAGE):
     *                             the session is lost, every connection with it, and
     *                             every later poll throws it again; the same once the daemon's heartbeat has not
     *                             moved for {@link ClientOptions#daemonLossMillis}, whatever its pid says. Also,
     *                             without losing anything, while the heartbeat has not moved for the daemon timeout
     *                             but less than that, and its process lives (a stall): polls go on once it moves.
     * @throws NicstackException   if this client was closed.
     */
    public int poll() throws NicstackException
    {
        final int h = hold;
        if (h != FREE)
        {
            checkHolder(h); // closed, or another thread's blocking call
        }
        if (gone != null)
        {
            throw gone;
        }
        final Thread me = Thread.currentThread();
        if ((int)POLLING.getAcquire(this) != 0)
        {
            final Thread inside = poller;
            throw new IllegalStateException(
                inside == me ? "poll() from poll()'s own event handling" : usedFrom(me, inside, "polls"));
        }
        if (poller != me)
        {
            poller = me; // the first poll of a thread only: no reference store per poll
        }
        POLLING.setRelease(this, 1);
        try
        {
            return pollInside();
        }
        finally
        {
            POLLING.setRelease(this, 0);
        }
    }

    private int pollInside() throws NicstackException
    {
        final int events = eventRing.read(eventHandler, EVENTS_PER_POLL);
        final int notifications = events == CheckedRingReader.CORRUPT ? 0 :
            notificationRing.read(notificationHandler, NOTIFICATIONS_PER_POLL);
        if (events == CheckedRingReader.CORRUPT || notifications == CheckedRingReader.CORRUPT)
        {
            final CheckedRingReader ring = events == CheckedRingReader.CORRUPT ? eventRing : notificationRing;
            throw declareGone(Protocol.Reason.BAD_MESSAGE, "the " + (ring == eventRing ? "event" : "notification") +
                " ring of app " + appName + " is corrupt at position " + ring.position() + ": the session is lost");
        }
        if (gone != null)
        {
            throw gone; // the deferred messages overflowed while events were handled
        }
        final int work = events + notifications;
        if (deferredHead != deferredTail)
        {
            flushDeferred();
        }
        if (!unreadFiles.isEmpty())
        {
            releaseReadFiles();
        }

        final long now = System.currentTimeMillis();
        if (now != lastHeartbeatMillis)
        {
            lastHeartbeatMillis = now;
            file.appHeartbeat(now);
        }
        checkDaemon(clock.nanoTime());
        return work;
    }

    /**
     * The daemon is gone for good when it says so (DAEMON_GONE, REJECTED) or its process is dead (its pidfd polls
     * readable: it exited, whether its parent has waited for it or not), or nobody holds daemon.lock any more, each
     * looked at every {@link #PROCESS_CHECK_PERIOD_NANOS}: the session is lost.
     * A heartbeat that does not move for the daemon timeout while the process lives (a stall: a blocked event loop,
     * a long pause) fails this poll, so no blocking call waits for ever, but the session is kept: a later poll finds
     * the daemon again once its heartbeat moves. A stall that lasts past the loss bound is a loss too: a pid that lives
     * proves nothing for ever (the daemon was killed and its pid reused, or it runs in another PID namespace, where
     * its pid names some other process of ours, or none), and an app must not keep dead connections open for good. The
     * heartbeat is judged by its value changing, timed on the client's monotonic clock, so neither the wall clock
     * stepping nor the two clocks disagreeing matters.
     */
    private void checkDaemon(final long now) throws DaemonGoneException
    {
        String why = null;
        int reason = Protocol.Reason.NONE;
        final int state = file.state();
        if (state == AppFileDescriptor.STATE_DAEMON_GONE)
        {
            why = "the daemon shut down";
        }
        else if (state == AppFileDescriptor.STATE_REJECTED)
        {
            // Reaped (PipeServer): the daemon reset this app's connections and unmapped its memory; it beats no more.
            reason = file.reason();
            why = "the daemon dropped app " + appName + ": " + Protocol.Reason.describe(reason);
        }
        else
        {
            final long heartbeat = file.daemonHeartbeat();
            if (heartbeat != daemonHeartbeatSeen)
            {
                daemonHeartbeatSeen = heartbeat;
                daemonHeartbeatSeenAtNanos = now;
                stallReported = false;
            }
            if (now - lastProcessCheckNanos >= PROCESS_CHECK_PERIOD_NANOS)
            {
                lastProcessCheckNanos = now;
                why = daemonExited();
            }
            final long stalledNanos = now - daemonHeartbeatSeenAtNanos;
            if (why == null && stallReported && stalledNanos > daemonLossNanos)
            {
                // A live pid proves nothing for ever: it may have been reused, or name another PID namespace's process.
                why = "the daemon's heartbeat has not moved for " + TimeUnit.NANOSECONDS.toMillis(stalledNanos) +
                    " ms, past the loss bound of " + TimeUnit.NANOSECONDS.toMillis(daemonLossNanos) + " ms";
                silent = true;
            }
            else if (why == null && stalledNanos > daemonTimeoutNanos)
            {
                stallReported = true;
                throw new DaemonGoneException("the daemon's heartbeat has not moved for " +
                    TimeUnit.NANOSECONDS.toMillis(stalledNanos) + " ms (its process " + file.daemonPid() +
                    " lives: the session is kept, and a later poll goes on once the heartbeat moves within " +
                    TimeUnit.NANOSECONDS.toMillis(daemonLossNanos) + " ms of its last move)");
            }
        }
        if (why != null)
        {
            throw declareGone(reason, why);
        }
    }

    /**
     * A connection found its RX pipe corrupt (the tail went back): the daemon's side of the shared memory is not to be
     * trusted, so the session is lost as for a corrupt ring; returns the exception every poll throws from now on.
     */
    DaemonGoneException onCorruptPipe(final String why)
    {
        return gone != null ? gone : declareGone(Protocol.Reason.BAD_MESSAGE, why + ": the session is lost");
    }

    /** From now on every poll throws the returned exception, and every connection is lost. */
    private DaemonGoneException declareGone(final int reason, final String why)
    {
        gone = new DaemonGoneException(reason, why);
        for (final PipeConnection connection : connections)
        {
            if (connection != null)
            {
                connection.onDaemonGone();
            }
        }
        return gone;
    }

    /**
     * Take the events already written (answers to files, connections the daemon closed), UNLISTEN every listener,
     * CLOSE every connection, write DETACHED, stop the heartbeat thread, unmap and delete the app file. Idempotent;
     * nothing of this client may be used afterwards. As after close(2), the daemon still sends what each connection had
     * committed, then its FIN, from the memory it keeps mapped; but a connection with received bytes still unread, or
     * that receives more, is reset instead, what it committed and had not sent dropped (RFC 9293 §3.6.1, SHLD-3; as
     * Linux's tcp_close): see {@link PipeConnection#close()} for how to end a stream cleanly. A connection whose file the daemon is still sending
     * (SEND_FILE, not answered yet) is closed too: the daemon sends the rest of the file, then the FIN; a file it
     * refuses or cannot finish resets the connection instead, never a FIN after a short stream. Descriptors of files being sent are held until the daemon has
     * read their SEND_FILEs, and the UNLISTENs and CLOSEs that find the control ring full wait in the client, so this
     * may wait for a daemon behind on its control ring, while it reads on, and for the daemon timeout at most once it
     * stops (not at all once its heartbeat stopped for the loss bound). Messages still unsent then are dropped: the
     * daemon resets the connections of an app that detached (DETACHED) which the app did not close, and gives its ports
     * back.
     *
     * <p>May be called from any thread (see the class Javadoc): while another thread is in a blocking call of this
     * client, this only asks that thread to close, and returns at once; {@link #isClosed()} is true from then on.
     */
    @Override
    public void close()
    {
        final Thread me = Thread.currentThread();
        while (true)
        {
            final int h = hold;
            if (h == FREE)
            {
                if (HOLD.compareAndSet(this, FREE, CLOSING))
                {
                    tookFree(me);
                    closeHeld();
                    return;
                }
            }
            else if ((h & HOLD_MASK) >= CLOSING || (h & CLOSE_ASKED) != 0)
            {
                return; // closed, or being closed
            }
            else if ((h & HOLD_MASK) == CLOSING_ONE && holder != me)
            {
                Thread.onSpinWait(); // another thread's close of a connection or listener, which never waits: a moment
            }
            else if (HOLD.compareAndSet(this, h, h | CLOSE_ASKED))
            {
                return; // the holder closes the client as its call ends
            }
        }
    }

    /** The close, by the thread that holds the client (CLOSING). */
    private void closeHeld()
    {
        drainEvents();
        for (final PipeListener listener : new ArrayList<>(listeners.values()))
        {
            listener.close(); // first: an ACCEPTED read from here on is answered with CLOSE
        }
        for (final PipeConnection connection : connections)
        {
            if (connection != null)
            {
                connection.closeForDetach();
            }
        }
        awaitControlRead();
        discard(AppFileDescriptor.STATE_DETACHED);
    }

    /**
     * Handle the events the daemon has written so far (a FILE_SENT unread would leave its connection's CLOSE unsent,
     * and the daemon resets a connection the app did not close at the detach).
     */
    private void drainEvents()
    {
        if (gone != null)
        {
            return;
        }
        poller = Thread.currentThread();
        POLLING.setRelease(this, 1);
        try
        {
            // Bounded: a daemon still writing cannot keep the close here.
            for (int batches = file.ringCapacity() / Protocol.EVENT_LENGTH / EVENTS_PER_POLL + 1; batches > 0; batches--)
            {
                if (eventRing.read(eventHandler, EVENTS_PER_POLL) <= 0)
                {
                    break;
                }
            }
        }
        finally
        {
            POLLING.setRelease(this, 0);
        }
    }

    /**
     * Before the mapping goes: send the deferred control messages, and wait until the daemon has read every SEND_FILE
     * whose descriptor is still held for it, releasing each, while its control ring head moves. A daemon that can read
     * no more (it shut down, reaped this app, or its process is dead) frees them all. One that stalls for the daemon
     * timeout without its head moving leaves them open for the life of the process: it might still take them, and a
     * leaked descriptor is better than another file sent. The deferred messages not sent then are dropped: the daemon
     * resets the connections left open at the detach.
     */
    private void awaitControlRead()
    {
        if (silent)
        {
            unreadFiles.clear(); // judged lost, yet it may read on: leaked on purpose, as after a stall below
            return;
        }
        long head = controlRing.consumerPosition();
        long progressAtNanos = clock.nanoTime();
        // An interrupt neither cuts this bounded wait short (what waits are closes) nor makes it spin (a park returns at
        // once while the status is set): the status is set aside, and set again when the wait ends.
        boolean interrupted = false;
        idleStrategy.reset();
        try
        {
            while (true)
            {
                final boolean flushed = flushDeferred();
                if (!unreadFiles.isEmpty())
                {
                    releaseReadFiles();
                }
                if (flushed && unreadFiles.isEmpty())
                {
                    return;
                }
                if (daemonCannotTake())
                {
                    break;
                }
                final long now = clock.nanoTime();
                final long position = controlRing.consumerPosition();
                if (position != head)
                {
                    head = position;
                    progressAtNanos = now;
                }
                else if (now - progressAtNanos > daemonTimeoutNanos)
                {
                    unreadFiles.clear(); // leaked on purpose, see above
                    return;
                }
                interrupted |= Thread.interrupted();
                idleStrategy.idle();
            }
        }
        finally
        {
            if (interrupted)
            {
                Thread.currentThread().interrupt();
            }
        }
        for (final SendableFile file : unreadFiles)
        {
            file.release();
        }
        unreadFiles.clear();
    }

    /** Whether the daemon will never read this app's control ring again. */
    private boolean daemonCannotTake()
    {
        final int state = file.state();
        if (state == AppFileDescriptor.STATE_DAEMON_GONE || state == AppFileDescriptor.STATE_REJECTED)
        {
            return true;
        }
        return daemonExited() != null;
    }

    /** Whether the daemon's process {@code pid} (0 or less: not known) is gone. */
    private static boolean processDead(final long pid)
    {
        return pid > 0 && !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    private void discard(final int finalState)
    {
        heartbeatRunning = false;
        LockSupport.unpark(heartbeatThread);
        boolean interrupted = false;
        while (heartbeatThread.isAlive())
        {
            try
            {
                heartbeatThread.join();
            }
            catch (final InterruptedException ex)
            {
                interrupted = true;
            }
        }
        if (interrupted)
        {
            Thread.currentThread().interrupt();
        }
        if (!file.isClosed())
        {
            file.state(finalState);
        }
        final Libc.Calls libc = daemonPidfd >= 0 || daemonLockFd >= 0 ? Libc.calls() : null;
        if (daemonPidfd >= 0)
        {
            libc.close(daemonPidfd);
            daemonPidfd = -1;
        }
        if (daemonLockFd >= 0)
        {
            libc.close(daemonLockFd);
            daemonLockFd = -1;
        }
        OPEN.remove(file.path().toAbsolutePath().normalize(), this);
        closed = true;
        hold = CLOSED;
        HOLDER.setRelease(this, null);
        file.close();
        try
        {
            file.delete();
        }
        catch (final IOException ignore)
        {
            // The daemon removes files of detached apps too.
        }
    }

    /** Whether the client is closed, or closing: a close from another thread asked of a blocked call counts. */
    public boolean isClosed()
    {
        final int h = hold;
        return closed || (h & HOLD_MASK) >= CLOSING || (h & CLOSE_ASKED) != 0;
    }

    /** Whether the mapping is gone, or going: the check of every call that touches it. */
    boolean isUnmapped()
    {
        return closed;
    }

    /** The app file, for diagnostics. */
    public Path appFile()
    {
        return file.path();
    }

    public String appName()
    {
        return appName;
    }

    @Override
    public String toString()
    {
        return "NicstackClient{" + appName + ", " + file.path() + (closed ? ", closed}" : "}");
    }

    // ---- package: used by listeners and connections -----------------------------------------

    AppFile file()
    {
        return file;
    }

    IdleStrategy idleStrategy()
    {
        return idleStrategy;
    }

    /** The monotonic clock blocking calls time their waits on ({@link ClientOptions#clock}). */
    NanoClock clock()
    {
        return clock;
    }

    /**
     * Whether the session with the daemon is lost (it shut down, died, reaped this app, or its heartbeat stood still past
     * {@link ClientOptions#daemonLossMillis}): every connection is lost with it, and every poll throws the same
     * {@link DaemonGoneException}. False while the daemon only stalls, when a poll's exception loses nothing: an app
     * asks this to tell the two apart.
     */
    public boolean isGone()
    {
        return gone != null;
    }

    /** As a closed socket's SocketException: a NicstackException, the one exception every blocking call declares. */
    void checkOpen() throws NicstackException
    {
        if (closed)
        {
            throw closedException();
        }
    }

    /**
     * A close took the client it found free (CLOSING_ONE, CLOSING). What the owning thread did up to the end of its
     * last poll is visible from here (that end is a release store, read here with acquire; a blocking call's end is a
     * compare-and-set of hold). A poll the owning thread is seen inside now (a misuse: see the class Javadoc) is waited
     * out: that narrows the misuse, it does not make it safe (a poll may pass its check of hold before the take, and
     * mark itself after this looked).
     */
    private void tookFree(final Thread me)
    {
        HOLDER.setRelease(this, me);
        while ((int)POLLING.getAcquire(this) != 0 && poller != me)
        {
            Thread.onSpinWait();
        }
    }

    /**
     * Take the client for a blocking call of this thread, which gives it back with {@link #leave()} when this returns
     * true; false when this thread holds it already (a wait inside a blocking call or a close of its own). No other
     * thread closes or unmaps anything meanwhile: its closes are asked of this one (see {@link #idle}).
     *
     * @throws NicstackException     if the client is closed, or being closed.
     * @throws IllegalStateException if another thread is in a blocking call of this client.
     */
    boolean enterBlocking() throws NicstackException
    {
        final Thread me = Thread.currentThread();
        while (true)
        {
            final int h = hold;
            if (h == FREE)
            {
                if (HOLD.compareAndSet(this, FREE, BLOCKED))
                {
                    HOLDER.setRelease(this, me);
                    return true;
                }
                continue;
            }
            if (holder == me)
            {
                return false;
            }
            final int held = h & HOLD_MASK;
            if (held >= CLOSING || (h & CLOSE_ASKED) != 0)
            {
                throw closedException();
            }
            if (held == CLOSING_ONE)
            {
                // Another thread closes a connection or listener: a moment, as such a close never waits for the daemon.
                if (me.isInterrupted())
                {
                    throw interrupted("waiting for another thread's close of a connection or listener");
                }
                Thread.yield();
                continue;
            }
            throw new IllegalStateException(usedFrom(me, holder, "waits in a blocking call"));
        }
    }

    /**
     * A close of a connection or listener ({@code close}, its own work) run as {@link #enterClose} allows: at once,
     * holding the client if it had to take it, or not at all when it is left to the thread that holds the client.
     */
    void runClose(final Runnable close)
    {
        final int how = enterClose();
        if (how == CLOSE_LEFT)
        {
            return;
        }
        try
        {
            close.run();
        }
        finally
        {
            if (how == CLOSE_HELD)
            {
                leave();
            }
        }
    }

    /**
     * For a close of a connection or listener: {@link #CLOSE_HELD} when this thread took the client for it (give it back
     * with {@link #leave()}), {@link #CLOSE_NOW} when it may close without (it holds the client already, or the client
     * is closed and nothing is mapped), {@link #CLOSE_LEFT} when it must not: another thread is in a blocking call and
     * will close what is marked {@code closeAsked} at its next turn, or the client is closing and closes everything.
     * Another thread's close of a connection or listener is waited out (it never waits for the daemon: a moment), so a
     * close that finds no blocking call is done, on the calling thread, when it returns.
     */
    private int enterClose()
    {
        final Thread me = Thread.currentThread();
        while (true)
        {
            final int h = hold;
            if (h == FREE)
            {
                if (HOLD.compareAndSet(this, FREE, CLOSING_ONE))
                {
                    tookFree(me);
                    return CLOSE_HELD;
                }
                continue;
            }
            if (holder == me)
            {
                return CLOSE_NOW;
            }
            final int held = h & HOLD_MASK;
            if (held == CLOSED)
            {
                return CLOSE_NOW;
            }
            if (held == CLOSING || (h & CLOSE_ASKED) != 0)
            {
                return CLOSE_LEFT;
            }
            if (held == CLOSING_ONE)
            {
                Thread.onSpinWait();
                continue;
            }
            if (HOLD.compareAndSet(this, h, h | CLOSE_ONES_ASKED))
            {
                return CLOSE_LEFT;
            }
        }
    }

    /**
     * Give back the client taken by {@link #enterBlocking()} or {@link #enterClose()}, after doing what other threads
     * asked meanwhile: their closes of connections and listeners, then theirs of the client.
     */
    void leave()
    {
        final Thread me = Thread.currentThread();
        while (true)
        {
            final int h = hold;
            if ((h & CLOSE_ONES_ASKED) != 0)
            {
                closeAskedOnes();
            }
            else if ((h & CLOSE_ASKED) != 0)
            {
                if (HOLD.compareAndSet(this, h, CLOSING))
                {
                    closeHeld();
                    return;
                }
            }
            else
            {
                HOLDER.setRelease(this, null);
                if (HOLD.compareAndSet(this, h, FREE))
                {
                    return;
                }
                HOLDER.setRelease(this, me);
            }
        }
    }

    /**
     * Between two polls of a blocking call: close the connections and listeners other threads closed meanwhile, idle,
     * and close those closed during the idle; false, without idling, when the thread is interrupted (its status stays set): the call ends, as the class
     * Javadoc says, rather than spin (a park returns at once while the status is set).
     *
     * @throws NicstackException if another thread closed the client meanwhile (the call gives it back, and so closes it).
     */
    boolean idle(final int work) throws NicstackException
    {
        final int h = hold;
        if (h != BLOCKED)
        {
            onAsked();
        }
        if (Thread.currentThread().isInterrupted())
        {
            return false;
        }
        idleStrategy.idle(work);
        if (hold != BLOCKED)
        {
            onAsked(); // and those asked during the idle, before the call goes on with what may be closed now
        }
        return true;
    }

    /** What a blocking call other than the stream adapters' throws when its thread is interrupted. */
    NicstackException interrupted(final String waiting)
    {
        return new NicstackException(Protocol.Reason.NONE,
            "interrupted while " + waiting + " (client " + appName + "; the thread's interrupt status is kept)");
    }

    private void onAsked() throws NicstackException
    {
        closeAskedOnes();
        if ((hold & CLOSE_ASKED) != 0)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT,
                "client " + appName + " was closed by another thread during this call");
        }
    }

    /**
     * Close the connections and listeners other threads marked closeAsked, on the holder's thread, until none is asked;
     * not again from a wait of one of these closes (the loop here takes what was asked meanwhile).
     */
    private void closeAskedOnes()
    {
        if (closingAsked)
        {
            return;
        }
        closingAsked = true;
        try
        {
            int h;
            while (((h = hold) & CLOSE_ONES_ASKED) != 0)
            {
                if (HOLD.compareAndSet(this, h, h & ~CLOSE_ONES_ASKED))
                {
                    closeAsked();
                }
            }
        }
        finally
        {
            closingAsked = false;
        }
    }

    private void closeAsked()
    {
        for (final PipeConnection connection : connections)
        {
            if (connection != null)
            {
                connection.closeIfAsked();
            }
        }
        // Closing a listener removes it from the map: look again after each.
        PipeListener asked;
        do
        {
            asked = null;
            for (final PipeListener listener : listeners.values())
            {
                if (listener.closeAsked())
                {
                    asked = listener;
                    break;
                }
            }
            if (asked != null)
            {
                asked.close();
            }
        }
        while (asked != null);
    }

    private NicstackException closedException()
    {
        return new NicstackException(Protocol.Reason.BAD_ARGUMENT, "client " + appName + " is closed");
    }

    /**
     * For a poll of a thread that does not hold the client: whether it may go on (the client is free again, or it holds
     * it after all); else what it is told.
     */
    private void checkHolder(final int first) throws NicstackException
    {
        final Thread me = Thread.currentThread();
        int h = first;
        while (h != FREE)
        {
            final int held = h & HOLD_MASK;
            if (held == CLOSED)
            {
                throw closedException();
            }
            final Thread other = holder;
            if (other == me)
            {
                return;
            }
            if (held == CLOSING || (h & CLOSE_ASKED) != 0)
            {
                throw closedException();
            }
            if (held != CLOSING_ONE)
            {
                throw new IllegalStateException(usedFrom(me, other, "waits in a blocking call"));
            }
            Thread.yield(); // another thread closes a connection or listener, which never waits for the daemon: a moment
            h = hold;
        }
    }

    private String usedFrom(final Thread me, final Thread other, final String doing)
    {
        return "client " + appName + " used from thread \"" + me.getName() + "\" while thread \"" +
            (other == null ? "(unknown)" : other.getName()) + "\" " + doing +
            "; a NicstackClient is single-threaded (only close may come from another thread)";
    }

    /**
     * Send a message of {@code connection}'s (SEND_FILE, SET_OPTION; l24 is SEND_FILE's length), spinning while the
     * control ring is full (deferred while events are handled). The caller holds the client, in a blocking call.
     *
     * @throws NicstackException as a call on a closed connection when the connection was closed while this waited
     *                           (another thread's close, done at an idle here), or lost: nothing was sent then.
     */
    void send(final PipeConnection connection, final int type, final int i8, final long l16, final long l24)
        throws NicstackException
    {
        checkOpen();
        if (polling != 0)
        {
            if (!offerOrDefer(type, connection.id(), i8, 0, l16, l24))
            {
                throw gone;
            }
            return;
        }
        idleStrategy.reset();
        while (!offer(type, connection.id(), i8, 0, l16, l24))
        {
            if (!idle(poll()))
            {
                throw interrupted("waiting for room in the control ring");
            }
            // An idle does the closes other threads asked for: a message behind this connection's CLOSE would reach
            // the daemon for a connection it no longer has, or another's in its slot, and nobody would read the answer.
            connection.checkSendable(type);
        }
    }

    /**
     * Send without throwing, for messages the daemon must get while the session lasts (CLOSE, ABORT, SHUTDOWN,
     * UNLISTEN): in a blocking call, spins while the control ring is full, and defers the message, to be sent before any
     * other once the ring has room (by the next poll, or the client's close), when the daemon stalls. Outside a blocking
     * call, a close that found the client free or the client's close, and while events are handled, defers it at once:
     * such a close never waits for the daemon, so another thread's close holds the client for a moment only, and the
     * client's close bounds its wait in {@link #awaitControlRead}. Returns whether it was sent or deferred: false once the
     * client is closed or the session lost (the daemon resets what is left at the detach). The caller holds the client.
     */
    boolean sendQuietly(final int type, final long id, final int i8)
    {
        if (closed)
        {
            return false;
        }
        if (polling != 0 || (hold & HOLD_MASK) != BLOCKED)
        {
            return gone == null && offerOrDefer(type, id, i8, 0, 0, 0);
        }
        idleStrategy.reset();
        while (!offer(type, id, i8, 0, 0))
        {
            if (gone != null)
            {
                return false;
            }
            boolean waited;
            try
            {
                waited = idle(poll());
            }
            catch (final NicstackException ex)
            {
                waited = false;
            }
            if (!waited)
            {
                // A stall keeps the session, a close another thread asked for meanwhile sends what waits before it
                // detaches, and an interrupt ends the wait, not the message: it must not be lost. A later poll, or the
                // client's close, sends it.
                return gone == null && offerOrDefer(type, id, i8, 0, 0, 0);
            }
        }
        return true;
    }

    /** The control ring position after the last message offered. */
    long controlPosition()
    {
        return controlRing.producerPosition();
    }

    /**
     * Release {@code file} (one SEND_FILE's hold) once the daemon has read the control ring up to {@code position}:
     * now if it has, else from a later poll or {@link #close()}.
     */
    void releaseOnceRead(final SendableFile file, final long position)
    {
        if (closed || controlRing.consumerPosition() >= position)
        {
            file.release();
            return;
        }
        final int n = unreadFiles.size();
        if (n == unreadFilePositions.length)
        {
            unreadFilePositions = Arrays.copyOf(unreadFilePositions, 2 * n);
        }
        unreadFiles.add(file);
        unreadFilePositions[n] = position;
    }

    private void releaseReadFiles()
    {
        final long head = controlRing.consumerPosition();
        for (int i = unreadFiles.size() - 1; i >= 0; i--)
        {
            if (head >= unreadFilePositions[i])
            {
                final int last = unreadFiles.size() - 1;
                final SendableFile file = unreadFiles.get(i);
                unreadFiles.set(i, unreadFiles.get(last));
                unreadFilePositions[i] = unreadFilePositions[last];
                unreadFiles.remove(last);
                file.release();
            }
        }
    }

    void onListenerClosed(final PipeListener listener)
    {
        if (listeners.get(listener.port()) == listener)
        {
            listeners.remove(listener.port());
        }
        sendQuietly(Protocol.UNLISTEN, nextRequestId(), listener.port());
    }

    void onConnectionClosed(final PipeConnection connection)
    {
        forget(connection);
        sendQuietly(Protocol.CLOSE, connection.id(), 0);
    }

    void onConnectionAborted(final PipeConnection connection)
    {
        forget(connection);
        sendQuietly(Protocol.ABORT, connection.id(), 0);
    }

    private void forget(final PipeConnection connection)
    {
        final int slot = Protocol.slotOf(connection.id());
        if (connections[slot] == connection)
        {
            connections[slot] = null;
        }
    }

    // ---- control ring -----------------------------------------------------------------------

    private long nextRequestId()
    {
        return REQUEST_ID_FLAG | nextRequestId++;
    }

    private long request(final int type, final int i8, final int i12) throws NicstackException
    {
        final long requestId = nextRequestId();
        awaitedRequestId = requestId;
        replied = false;
        idleStrategy.reset();
        try
        {
            while (!offer(type, requestId, i8, i12, 0))
            {
                if (!idle(poll()))
                {
                    throw interrupted("waiting for room in the control ring");
                }
            }
        }
        catch (final NicstackException | RuntimeException ex)
        {
            awaitedRequestId = 0; // never sent: no answer will come
            throw ex;
        }
        return requestId;
    }

    /**
     * Poll until the answer to {@code requestId} is read. A stall that fails the poll which read the answer does not
     * fail the request: the daemon acted on it (a listener, a slot), and no later event would undo that. An answer read
     * after this gave up (a stall, a loss) is undone instead: a late LISTENING gets UNLISTEN, a late CONNECTED CLOSE.
     */
    private void awaitReply(final long requestId) throws NicstackException
    {
        idleStrategy.reset();
        try
        {
            while (!replied)
            {
                try
                {
                    if (!idle(poll()))
                    {
                        throw interrupted("waiting for the daemon's answer");
                    }
                }
                catch (final DaemonGoneException ex)
                {
                    if (!replied || gone != null)
                    {
                        throw ex;
                    }
                }
            }
        }
        finally
        {
            if (awaitedRequestId == requestId)
            {
                awaitedRequestId = 0;
            }
        }
    }

    /** One control record: long @0, int @8, int @12, long @16 (see {@link Protocol} for which fields a type uses). */
    private boolean offer(final int type, final long l0, final int i8, final int i12, final long l16)
    {
        return offer(type, l0, i8, i12, l16, 0);
    }

    /** Offer one control record after the deferred ones (false, and nothing written, while any of those waits). */
    private boolean offer(final int type, final long l0, final int i8, final int i12, final long l16, final long l24)
    {
        if (deferredHead != deferredTail && !flushDeferred())
        {
            return false;
        }
        return write(type, l0, i8, i12, l16, l24);
    }

    /**
     * Offer, or defer when the ring is full; false, with the session declared lost, when {@link #maxDeferred} messages
     * wait already.
     */
    private boolean offerOrDefer(
        final int type, final long l0, final int i8, final int i12, final long l16, final long l24)
    {
        if (!offer(type, l0, i8, i12, l16, l24))
        {
            if (deferredTail - deferredHead >= maxDeferred * DEFERRED_RECORD)
            {
                declareGone(Protocol.Reason.NONE, maxDeferred + " control messages of app " + appName +
                    " wait for room in a control ring the daemon does not read: the session is lost");
                return false;
            }
            if (deferredHead > 0 && deferredTail + DEFERRED_RECORD > maxDeferred * DEFERRED_RECORD)
            {
                // Partly flushed: move what waits to the front, so the buffer never outgrows the bound.
                deferred.putBytes(0, deferred, deferredHead, deferredTail - deferredHead);
                deferredTail -= deferredHead;
                deferredHead = 0;
            }
            final int at = deferredTail;
            deferred.putInt(at, type);
            deferred.putLong(at + 4, l0);
            deferred.putInt(at + 12, i8);
            deferred.putInt(at + 16, i12);
            deferred.putLong(at + 20, l16);
            deferred.putLong(at + 28, l24);
            deferredTail = at + DEFERRED_RECORD;
        }
        return true;
    }

    /** Write deferred control records while the ring takes them; returns whether none is left. */
    private boolean flushDeferred()
    {
        while (deferredHead != deferredTail)
        {
            final int at = deferredHead;
            if (!write(deferred.getInt(at), deferred.getLong(at + 4), deferred.getInt(at + 12), deferred.getInt(at + 16),
                deferred.getLong(at + 20), deferred.getLong(at + 28)))
            {
                return false;
            }
            deferredHead = at + DEFERRED_RECORD;
        }
        deferredHead = 0;
        deferredTail = 0;
        return true;
    }

    private boolean write(final int type, final long l0, final int i8, final int i12, final long l16, final long l24)
    {
        final int index = controlRing.tryClaim(type, Protocol.CONTROL_LENGTH);
        if (index <= 0)
        {
            return false;
        }
        final AtomicBuffer buffer = controlRing.buffer();
        buffer.setMemory(index, Protocol.CONTROL_LENGTH, (byte)0);
        buffer.putLong(index, l0);
        buffer.putInt(index + 8, i8);
        buffer.putInt(index + 12, i12);
        buffer.putLong(index + 16, l16);
        buffer.putLong(index + 24, l24);
        controlRing.commit(index);
        return true;
    }

    // ---- event and notification rings -------------------------------------------------------

    private void onEvent(final int type, final MutableDirectBuffer buffer, final int index, final int length)
    {
        if (length < 16)
        {
            return; // Malformed: every event carries at least a long and an int.
        }
        final long id = buffer.getLong(index);
        switch (type)
        {
            case Protocol.LISTENING:
                if (id == awaitedRequestId && !replied)
                {
                    reply(type, Protocol.Reason.NONE);
                    replyPort = buffer.getInt(index + 8);
                }
                else
                {
                    // Nobody waits for it any more (listen() gave up in a stall): give the port back, as a late
                    // CONNECTED gives its slot back, or a retried listen on it finds it in use for the whole session.
                    offerOrDefer(Protocol.UNLISTEN, nextRequestId(), buffer.getInt(index + 8), 0, 0, 0);
                }
                break;

            case Protocol.ERROR:
            {
                final int reason = buffer.getInt(index + 8);
                if (id < 0)
                {
                    if (id == awaitedRequestId && !replied)
                    {
                        reply(type, reason);
                    }
                }
                else
                {
                    final PipeConnection connection = lookup(id);
                    if (connection != null)
                    {
                        connection.onError(reason);
                    }
                }
                break;
            }

            case Protocol.ACCEPTED:
                if (length >= 20)
                {
                    onAccepted(id, buffer.getInt(index + 8), buffer.getInt(index + 12), buffer.getInt(index + 16));
                }
                break;

            case Protocol.CONNECTED:
                if (length >= 28)
                {
                    final long connectionId = buffer.getLong(index + 8);
                    if (id == awaitedRequestId && !replied)
                    {
                        reply(type, Protocol.Reason.NONE);
                        replyConnectionId = connectionId;
                        replyLocalPort = buffer.getInt(index + 16);
                        replyRemoteAddress = buffer.getInt(index + 20);
                        replyRemotePort = buffer.getInt(index + 24);
                    }
                    else
                    {
                        // Nobody waits for it any more: give the slot back (after the batch if the ring is full).
                        offerOrDefer(Protocol.CLOSE, connectionId, 0, 0, 0, 0);
                    }
                }
                break;

            case Protocol.PEER_CLOSED:
            {
                final PipeConnection connection = lookup(id);
                if (connection != null)
                {
                    connection.onPeerClosed();
                }
                break;
            }

            case Protocol.DELIVERY_PROBLEM:
            {
                final PipeConnection connection = lookup(id);
                if (connection != null)
                {
                    connection.onDeliveryProblem();
                }
                break;
            }

            case Protocol.CLOSED:
            {
                final PipeConnection connection = lookup(id);
                if (connection != null)
                {
                    connection.onClosed(closeReasonOf(buffer.getInt(index + 8), buffer.getInt(index + 12)));
                }
                break;
            }

            case Protocol.RESET:
            {
                final PipeConnection connection = lookup(id);
                if (connection != null)
                {
                    connection.onClosed(Protocol.Reason.RESET);
                }
                break;
            }

            case Protocol.FILE_SENT:
                if (length >= 24)
                {
                    final PipeConnection connection = lookup(id);
                    if (connection != null)
                    {
                        connection.onFileSent(buffer.getInt(index + 8), buffer.getLong(index + 16));
                    }
                }
                break;

            default:
                break;
        }
    }

    private void reply(final int type, final int reason)
    {
        replied = true;
        replyType = type;
        replyReason = reason;
    }

    private void onAccepted(final long connectionId, final int localPort, final int remoteAddress, final int remotePort)
    {
        final PipeListener listener = listeners.get(localPort);
        if (listener == null || listener.isClosed())
        {
            offerOrDefer(Protocol.CLOSE, connectionId, 0, 0, 0, 0); // after the batch if the ring is full
            return;
        }
        final PipeConnection connection = register(connectionId, localPort, remoteAddress, remotePort);
        if (connection != null)
        {
            listener.onAccepted(connection);
        }
    }

    private PipeConnection register(
        final long connectionId, final int localPort, final int remoteAddress, final int remotePort)
    {
        final int slot = Protocol.slotOf(connectionId);
        if (connectionId < 0 || slot >= connections.length || connections[slot] != null)
        {
            return null; // The daemon reuses a slot only after our CLOSE; anything else is a stale or bad id.
        }
        final Pipe rx = file.rx(slot);
        if (rx.head() != 0)
        {
            // Every connection's stream starts at position 0 (the daemon resets both words when it opens the slot):
            // a head elsewhere would have the app skip bytes of it, or read bytes that are not of it.
            declareGone(Protocol.Reason.BAD_MESSAGE, "connection #" + Long.toHexString(connectionId) + " was announced "
                + "with its RX pipe's head at " + rx.head() + ", not 0: the session is lost");
            return null;
        }
        // Each head the app releases and tail it commits rings the slot's doorbell: the daemon reads the pipes' positions
        // only for slots whose bit it finds (AppFileDescriptor).
        final int doorbell = file.doorbellOffset(slot);
        final long bit = AppFileDescriptor.doorbellBit(slot);
        rx.doorbell(doorbell, bit);
        final PipeConnection connection = new PipeConnection(
            this, connectionId, localPort, remoteAddress, remotePort, rx, file.tx(slot).doorbell(doorbell, bit));
        connections[slot] = connection;
        return connection;
    }

    private PipeConnection lookup(final long connectionId)
    {
        if (connectionId < 0)
        {
            return null;
        }
        final int slot = Protocol.slotOf(connectionId);
        if (slot >= connections.length)
        {
            return null;
        }
        final PipeConnection connection = connections[slot];
        // A stale generation is an old connection's id, never this one's.
        return connection != null && connection.id() == connectionId ? connection : null;
    }

    private void onNotification(final int type, final MutableDirectBuffer buffer, final int index, final int length)
    {
        if (type == Protocol.NOTIFY && length >= Protocol.NOTIFY_LENGTH)
        {
            final PipeConnection connection = lookup(buffer.getLong(index));
            if (connection != null)
            {
                connection.onNotify(buffer.getLong(index + 8));
            }
        }
    }

    private static int closeReasonOf(final int tcpCloseReason, final int icmpError)
    {
        switch (tcpCloseReason)
        {
            case CLOSE_NORMAL:
                return Protocol.Reason.NONE;
            case CLOSE_REFUSED:
                return Protocol.Reason.REFUSED;
            case CLOSE_TIMED_OUT:
                return Protocol.Reason.ofTimeout(icmpError);
            case CLOSE_RESET:
            default:
                // Reset by the peer, or aborted by the daemon: either way the stream did not end cleanly.
                return Protocol.Reason.RESET;
        }
    }

    // ---- helpers ----------------------------------------------------------------------------

    private void heartbeatLoop()
    {
        while (heartbeatRunning)
        {
            // The mapping is only unmapped after this thread has ended (see discard).
            file.appHeartbeat(System.currentTimeMillis());
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(HEARTBEAT_PERIOD_MILLIS));
        }
    }

    /** Dotted quad to an int with the first octet most significant; no name lookup. */
    static int parseIpv4(final String address) throws NicstackException
    {
        int value = 0;
        int octets = 0;
        int octet = -1;
        for (int i = 0, n = address == null ? 0 : address.length(); i <= n; i++)
        {
            final char c = i < n ? address.charAt(i) : '.';
            if (c >= '0' && c <= '9')
            {
                octet = (octet < 0 ? 0 : octet * 10) + (c - '0');
                if (octet > 255)
                {
                    octets = 5;
                    break;
                }
            }
            else if (c == '.' && octet >= 0)
            {
                value = (value << 8) | octet;
                octets++;
                octet = -1;
            }
            else
            {
                octets = 5;
                break;
            }
        }
        if (octets != 4)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, "not an IPv4 address: " + address);
        }
        return value;
    }
}
