package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;

import org.agrona.BufferUtil;
import org.agrona.collections.Int2IntHashMap;

import io.nicstack.nic.linux.Linux;
import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.Libc;

import static io.nicstack.nic.linux.Linux.LIBC;

/**
 * The descriptors the daemon takes from one app's process with {@code pidfd_getfd(2)}: first its memory (the sealed
 * memfd its app file names, {@link #takeMemory}), then the files it hands the daemon to send (SEND_FILE), each a
 * duplicate of that very open file description, as a NIC that reads the host's page cache itself instead of being
 * handed copies of it.
 *
 * <p>The daemon runs as root, so every check the kernel would make if the app took the descriptor from
 * another process of its own is made here:
 * <ul>
 * <li><b>Whose process.</b> The pid is what the app wrote into its app file. The first descriptor taken is
 *     the memory, and only the memfd of the inode the app file names is accepted: the process holds the app's
 *     memory, so it is the app, not a process that pid names in another namespace. Later SEND_FILEs take from
 *     the same pidfd.</li>
 * <li><b>Could the owner have taken it?</b> After every {@code pidfd_getfd} the process must be one the app
 *     file's owner could ptrace: all four uids the owner's, all four gids the app file's group, dumpable (the
 *     files under {@code /proc/<pid>} belong to root otherwise), no permitted capabilities unless the owner is
 *     root, and still alive behind the pidfd (not a reused pid). A process that exec'd a setuid or setgid
 *     program, or said {@code prctl(PR_SET_DUMPABLE, 0)}, is refused: its user could not ptrace it, so neither
 *     may its app through the daemon. Not covered: Yama and other security modules' ptrace rules, and a process
 *     of the same user and group that writes into another process's app file (both could ptrace each other
 *     anyway).</li>
 * <li><b>Readable by the app.</b> A descriptor taken with {@code pidfd_getfd} keeps the app's access mode, so
 *     the daemon reads only through what the app opened for reading. (Reopening {@code /proc/<pid>/fd/<n>}
 *     would reopen with root's credentials: an {@code O_PATH} descriptor of a file the app may not read would
 *     become readable. That is why this is not done.)</li>
 * <li><b>An ordinary file.</b> A regular file on a disk or memory filesystem (ext2/3/4, xfs, btrfs, f2fs,
 *     zfs, tmpfs). Pseudo-filesystems (procfs, sysfs...) answer with the reader's privileges, and network or
 *     FUSE filesystems may block the event loop indefinitely; so may overlayfs, whose layers can be any of
 *     those (a user may mount one over FUSE in a user namespace). The filesystem is known before the descriptor is
 *     taken, from procfs alone ({@link Mounts}): once taken, even closing a file of a FUSE mount whose server hangs
 *     waits on it (FLUSH), as a statfs or stat of it would. The taken descriptor is judged again the same way (its
 *     mount, pinned by it now, whatever the app did to the number meanwhile); one that fails is closed on a thread of
 *     its own, and the app may take no more.</li>
 * </ul>
 *
 * <p>Control path only (one SEND_FILE per response body): the checks allocate; the reads do not. A read of
 * a file that is not in the page cache still blocks the event loop for the disk's time. A descriptor number
 * named again while it is still the open file taken before (kcmp(2)) is served from a duplicate kept then,
 * without the checks and their /proc reads (at most 256 kept per app).
 */
final class AppFiles implements AutoCloseable
{
    /** The filesystems whose regular files the daemon reads, as mountinfo names them (and memfds, on tmpfs). */
    private static final Set<String> ALLOWED_FILESYSTEMS = Set.of("ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs",
        "tmpfs");
    private static final Path SELF_MOUNTINFO = Path.of("/proc/self/mountinfo");
    /** Descriptors kept for reuse per app at most (each keeps its file open in the daemon). */
    private static final int MAX_KEPT = 256;

    /** Tests only: run between the look at an app's descriptor and its take (where an app may swap it). */
    static volatile Runnable betweenLookAndTake;

    private final long pid;
    private final Owner owner;
    private final Path procStatus;
    private final Path procMountinfo;
    private final org.agrona.concurrent.UnsafeBuffer pollfd = new org.agrona.concurrent.UnsafeBuffer(
        BufferUtil.allocateDirectAligned(Linux.POLLFD_LENGTH, 8));
    private int pidfd = -1;
    /**
     * Descriptors taken and checked before, by the app's descriptor number: a SEND_FILE naming a number whose open
     * file description is still the one taken (kcmp(2)) gets a duplicate without the checks again. It is the file
     * the app held, and the daemon checked, then.
     */
    private final Int2IntHashMap taken = new Int2IntHashMap(-1);
    private final int selfPid = (int)ProcessHandle.current().pid();
    private boolean kcmpWorks = Linux.SYS_KCMP > 0;
    /** Whether the last {@link #take} was served from {@link #taken}. */
    boolean lastTakeReused;
    /** Why descriptors of this app cannot be taken at all (set once, then every SEND_FILE is refused). */
    private String unusable;
    private String lastRefusal;

    /**
     * @param pid      the pid the app wrote into its app file.
     * @param owner    the app file's owner and group when it attached (not followed through links).
     */
    AppFiles(final long pid, final Owner owner)
    {
        this.pid = pid;
        this.owner = owner;
        this.procStatus = Path.of("/proc/" + pid + "/status");
        this.procMountinfo = Path.of("/proc/" + pid + "/mountinfo");
    }

    /** Who owned the app file at attach. */
    record Owner(int uid, int gid)
    {
        /** Of the file {@code opened}, {@code /proc/self/fd/<n>} of the descriptor the daemon opened it as (followed). */
        static Owner of(final Path opened) throws IOException
        {
            return new Owner((Integer)Files.getAttribute(opened, "unix:uid"), (Integer)Files.getAttribute(opened, "unix:gid"));
        }
    }

    /**
     * The app's memory: a descriptor of the daemon's own for the app's {@code appFd}, the memfd of inode {@code inode}
     * on tmpfs, open for reading and writing and sealed for good against shrinking ({@link AppFile#descriptorProblem}),
     * taken from a process the app file's owner could ptrace; or -1 with {@link #lastRefusal()} saying why. Opens the
     * pidfd later SEND_FILEs take from.
     */
    int takeMemory(final int appFd, final long inode)
    {
        if (pidfd >= 0 || appFd < 0)
        {
            return refuse(pidfd >= 0 ? "the memory was taken already" : "descriptor " + appFd + " is negative");
        }
        openProcess();
        if (unusable != null)
        {
            return refuse(unusable);
        }
        return takeChecked(appFd, true, inode);
    }

    /**
     * A descriptor of the daemon's own for the app's descriptor {@code appFd}, readable and naming a regular
     * file on an allowed filesystem, or -1 with {@link #lastRefusal()} saying why.
     */
    int take(final int appFd)
    {
        if (appFd < 0)
        {
            return refuse("descriptor " + appFd + " is negative");
        }
        if (pidfd < 0 || unusable != null)
        {
            return refuse(unusable != null ? unusable : "the app's memory was not taken from its process");
        }
        lastTakeReused = false;
        final int reused = reuse(appFd);
        if (reused >= 0)
        {
            lastTakeReused = true;
            return reused;
        }
        final int fd = takeChecked(appFd, false, 0);
        if (fd >= 0)
        {
            remember(appFd, fd);
        }
        return fd;
    }

    /**
     * pidfd_getfd of the app's {@code appFd}, then the checks, after the take, so a process that changed before it
     * (exec of a setuid or setgid program, PR_SET_DUMPABLE 0) is caught: the process is one its owner may reach, and
     * the descriptor is the app's memory of inode {@code inode} ({@code memory}) or a file the daemon may read. The
     * daemon's own descriptor, or -1 with {@link #lastRefusal()} saying why.
     */
    private int takeChecked(final int appFd, final boolean memory, final long inode)
    {
        final String where = mountProblem(Mounts.mountId(Path.of("/proc/" + pid + "/fdinfo/" + appFd)), appFd, memory);
        if (where != null)
        {
            return refuse(where);
        }
        final Runnable hook = betweenLookAndTake;
        if (hook != null)
        {
            hook.run();
        }
        final int fd = (int)Linux.syscall(Linux.SYS_PIDFD_GETFD, pidfd, appFd, 0, 0, 0);
        if (fd < 0)
        {
            return refuse("pidfd_getfd of descriptor " + appFd + " of pid " + pid + ": " + Linux.describe(Linux.errno()));
        }
        // Judged again by what the daemon now holds: the app may have put another file on that number since the look,
        // even one on a new mount that took the old one's id (ids are reused, lowest free first). The daemon's own
        // descriptor pins its mount, so this id cannot change under the check. A file that fails it could make its
        // close wait on its filesystem too: it is closed off the loop, and the app may take no more.
        final String held = mountProblem(Mounts.mountId(Path.of("/proc/self/fdinfo/" + fd)), appFd, memory);
        if (held != null)
        {
            Closer.close(fd);
            unusable = held + " (the descriptor was swapped while it was taken)";
            return refuse(unusable);
        }
        String why = reachableByOwner();
        if (why == null && memory)
        {
            final String problem = memoryProblem(fd, inode);
            why = problem == null ? null : "descriptor " + appFd + " of pid " + pid + " " + problem;
        }
        else if (why == null)
        {
            why = readProblem(fd, appFd);
        }
        if (why != null)
        {
            Linux.closeQuietly(fd);
            return refuse(why);
        }
        return fd;
    }

    /** A duplicate of the descriptor taken before for {@code appFd} if the app's is still that open file, else -1. */
    private int reuse(final int appFd)
    {
        final int kept = taken.get(appFd);
        if (kept < 0)
        {
            return -1;
        }
        final long same = Linux.syscall(Linux.SYS_KCMP, (int)pid, selfPid, Linux.KCMP_FILE, appFd, kept);
        if (same == 0)
        {
            final int dup = LIBC.fcntl(kept, Linux.F_DUPFD_CLOEXEC, 0);
            if (dup >= 0)
            {
                return dup;
            }
        }
        else if (same < 0 && Linux.errno() == Linux.ENOSYS)
        {
            kcmpWorks = false; // a kernel without kcmp: every SEND_FILE takes and checks anew
        }
        taken.remove(appFd); // the app closed that number, maybe opened another file on it: take it anew
        Linux.closeQuietly(kept);
        return -1;
    }

    /** Keep a duplicate of {@code fd} (checked) for later SEND_FILEs naming {@code appFd}; at most MAX_KEPT. */
    private void remember(final int appFd, final int fd)
    {
        if (!kcmpWorks)
        {
            return;
        }
        if (taken.size() >= MAX_KEPT)
        {
            forgetAll();
        }
        final int kept = LIBC.fcntl(fd, Linux.F_DUPFD_CLOEXEC, 0);
        if (kept >= 0)
        {
            taken.put(appFd, kept);
        }
    }

    private void forgetAll()
    {
        taken.forEach((appFd, kept) -> Linux.closeQuietly(kept));
        taken.clear();
    }

    /** Why the last {@link #take} returned -1. */
    String lastRefusal()
    {
        return lastRefusal;
    }

    @Override
    public void close()
    {
        Linux.closeQuietly(pidfd);
        pidfd = -1;
        forgetAll();
    }

    /** Null if the daemon may read through {@code fd} (taken from the app's {@code appFd}), else why not. */
    private String readProblem(final int fd, final int appFd)
    {
        final int flags = LIBC.fcntl(fd, Linux.F_GETFL, 0);
        if (flags < 0 || (flags & Linux.O_PATH) != 0 || (flags & Linux.O_ACCMODE) == Linux.O_WRONLY)
        {
            return "descriptor " + appFd + " is not open for reading";
        }
        if (!Files.isRegularFile(Path.of("/proc/self/fd/" + fd)))
        {
            return "descriptor " + appFd + " is not a regular file";
        }
        return null;
    }

    /**
     * Null if the process is one its owner could ptrace: all its uids the app file's owner, all its gids the app
     * file's group, dumpable (the files under {@code /proc/<pid>} belong to root otherwise; the directory itself does
     * not change), and still the process the pidfd refers to (not a reused pid).
     */
    private String reachableByOwner()
    {
        final List<String> status;
        final int statusOwner;
        try
        {
            statusOwner = (Integer)Files.getAttribute(procStatus, "unix:uid", LinkOption.NOFOLLOW_LINKS);
            // Bytes as Latin-1: the Name line is the process's own choice and need not be UTF-8.
            status = List.of(new String(Files.readAllBytes(procStatus), StandardCharsets.ISO_8859_1).split("\n"));
        }
        catch (final IOException | RuntimeException e)
        {
            return "pid " + pid + " is gone";
        }
        if (statusOwner != owner.uid())
        {
            return "pid " + pid + " is not dumpable (its /proc status belongs to uid " + statusOwner + ")";
        }
        final String uids = line(status, "Uid:");
        final String gids = line(status, "Gid:");
        if (!allEqual(uids, "Uid:", owner.uid()) || !allEqual(gids, "Gid:", owner.gid()))
        {
            return "pid " + pid + " does not run as uid " + owner.uid() + " and gid " + owner.gid() + " alone (" + uids +
                ", " + gids + ")";
        }
        // The kernel lets a process ptrace another only if the target's permitted capabilities are a subset of its own;
        // a user's processes hold none, so neither may a process its app names (one given capabilities by a service
        // manager, say). Root's processes hold them all.
        final String capabilities = line(status, "CapPrm:");
        if (owner.uid() != 0 && !noCapabilities(capabilities))
        {
            return "pid " + pid + " holds capabilities its user's processes do not (" + capabilities.replace('\t', ' ') + ")";
        }
        if (Linux.syscall(Linux.SYS_PIDFD_SEND_SIGNAL, pidfd, 0, 0, 0, 0) != 0) // signal 0: is it alive?
        {
            return "pid " + pid + " is gone";
        }
        return null;
    }

    /** Whether a {@code /proc/<pid>/status} line "CapPrm:" says no capability (a hex mask of 0). */
    static boolean noCapabilities(final String line)
    {
        final String mask = line.startsWith("CapPrm:") ? line.substring("CapPrm:".length()).trim() : "";
        return !mask.isEmpty() && mask.chars().allMatch(c -> c == '0');
    }

    /**
     * Null if the app's {@code appFd}, open on mount {@code mount} (-1: not open), may be taken: for its memory, a memfd
     * on tmpfs (a hugetlbfs memfd seals too, but its pages may fail to fault, SIGBUS, when the huge page pool runs
     * dry); for SEND_FILE, a file on a mount of an allowed filesystem that the app's or the daemon's mountinfo lists.
     */
    private String mountProblem(final long mount, final int appFd, final boolean memory)
    {
        final String descriptor = "descriptor " + appFd + " of pid " + pid;
        if (mount < 0)
        {
            return descriptor + " is not open";
        }
        if (mount == Mounts.MEMFD_MOUNT)
        {
            return null;
        }
        if (memory)
        {
            return descriptor + " is not memory of tmpfs (not a memfd, or one made with MFD_HUGETLB)";
        }
        final String type = Mounts.filesystemType(mount, procMountinfo, SELF_MOUNTINFO);
        if (type == null)
        {
            return descriptor + " is on a mount the daemon cannot see";
        }
        return ALLOWED_FILESYSTEMS.contains(type) ? null
            : descriptor + " is on a filesystem the daemon does not read from (" + type + ")";
    }

    /**
     * Null if {@code fd}, a memfd ({@link #mountProblem}), is memory the daemon may map for an app file naming inode
     * {@code inode}, else what is wrong: the access mode and the seals, then the inode.
     */
    private String memoryProblem(final int fd, final long inode)
    {
        final String descriptor = AppFile.descriptorProblem(LIBC.fcntl(fd, Linux.F_GETFL, 0), LIBC.fcntl(fd, Libc.F_GET_SEALS, 0));
        if (descriptor != null)
        {
            return descriptor;
        }
        try
        {
            return AppFile.inodeProblem((Long)Files.getAttribute(Path.of("/proc/self/fd/" + fd), "unix:ino"), inode);
        }
        catch (final IOException | RuntimeException e)
        {
            return "cannot be examined: " + e;
        }
    }

    /**
     * Whether the app's process has exited (its pidfd reads as ready: poll(2) POLLIN), by the pidfd opened when its
     * memory was taken, so a reused pid cannot pass for it. False before the memory was taken.
     */
    boolean processExited()
    {
        if (pidfd < 0)
        {
            return false;
        }
        return pidfdReady(pollfd, pidfd, (short)(Linux.POLLIN | Linux.POLLHUP));
    }

    /**
     * Whether {@code pidfd} polls (without waiting) with any of {@code events} in its revents: a pidfd reads as ready
     * (POLLIN) once its process has exited, zombie included. {@code pollfd} is a {@code struct pollfd} of the caller's.
     */
    static boolean pidfdReady(final org.agrona.concurrent.UnsafeBuffer pollfd, final int pidfd, final short events)
    {
        pollfd.putInt(0, pidfd);
        pollfd.putShort(Linux.POLLFD_EVENTS_OFFSET, Linux.POLLIN);
        pollfd.putShort(Linux.POLLFD_REVENTS_OFFSET, (short)0);
        return LIBC.poll(pollfd.addressOffset(), 1, 0) > 0 && (pollfd.getShort(Linux.POLLFD_REVENTS_OFFSET) & events) != 0;
    }

    /**
     * pidfd_open first, then the check, so the process checked is the one the pidfd refers to from then on: it runs
     * as the owner of the app file.
     */
    private void openProcess()
    {
        final int fd = (int)Linux.syscall(Linux.SYS_PIDFD_OPEN, (int)pid, 0, 0, 0, 0);
        if (fd < 0)
        {
            unusable = "pidfd_open of pid " + pid + ": " + Linux.describe(Linux.errno());
            return;
        }
        pidfd = fd;
        final String why = reachableByOwner();
        if (why != null)
        {
            close();
            unusable = why;
        }
    }

    /**
     * Closes descriptors whose close may wait on their filesystem's server (a FUSE FLUSH), on a thread of its own
     * rather than the event loop. Started on first use; rarely used: only for a descriptor an app swapped mid-take.
     */
    private static final class Closer
    {
        private static final LinkedBlockingQueue<Integer> DESCRIPTORS = new LinkedBlockingQueue<>();

        static
        {
            final Thread thread = new Thread(Closer::run, "nicstack-closer");
            thread.setDaemon(true);
            thread.start();
        }

        static void close(final int fd)
        {
            DESCRIPTORS.add(fd);
        }

        private static void run()
        {
            while (true)
            {
                try
                {
                    Linux.closeQuietly(DESCRIPTORS.take());
                }
                catch (final InterruptedException e)
                {
                    return;
                }
            }
        }
    }

    private int refuse(final String why)
    {
        lastRefusal = why;
        return -1;
    }

    private static String line(final List<String> status, final String key)
    {
        for (final String line : status)
        {
            if (line.startsWith(key))
            {
                return line;
            }
        }
        return "no " + key + " line";
    }

    /** Whether a {@code /proc/<pid>/status} line such as "Uid:" (real, effective, saved, filesystem) is {@code id} four times. */
    static boolean allEqual(final String line, final String key, final int id)
    {
        if (!line.startsWith(key))
        {
            return false;
        }
        final String[] fields = line.substring(key.length()).trim().split("\\s+");
        if (fields.length != 4)
        {
            return false;
        }
        for (final String f : fields)
        {
            if (!f.equals(Integer.toString(id)))
            {
                return false;
            }
        }
        return true;
    }
}
