package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.agrona.BufferUtil;
import org.agrona.collections.Int2IntHashMap;

import io.nicstack.nic.linux.Linux;

import static io.nicstack.nic.linux.Linux.LIBC;

/**
 * The files one attached app hands the daemon to send (SEND_FILE): the app names a file descriptor it
 * holds, and the daemon takes a duplicate of that very open file description with {@code pidfd_getfd(2)},
 * as a NIC that reads the host's page cache itself instead of being handed copies of it.
 *
 * <p>The daemon runs as root, so every check the kernel would make if the app took the descriptor from
 * another process of its own is made here:
 * <ul>
 * <li><b>Whose process.</b> The pid is what the app wrote into its app file. Before the first descriptor
 *     the daemon checks that this process has the attached app file mapped (by device and inode): it is the
 *     app, not a process that pid names in another namespace.</li>
 * <li><b>Could the owner have taken it?</b> After every {@code pidfd_getfd} the process must be one the app
 *     file's owner could ptrace: all four uids the owner's, all four gids the app file's group, dumpable (the
 *     files under {@code /proc/<pid>} belong to root otherwise), and still alive behind the pidfd (not a reused
 *     pid). A process that exec'd a setuid or setgid program, or said {@code prctl(PR_SET_DUMPABLE, 0)}, is
 *     refused: its user could not ptrace it, so neither may its app through the daemon. Not covered: Yama and
 *     other security modules' ptrace rules, and a process of the same user and group that writes into another
 *     process's app file (both could ptrace each other anyway).</li>
 * <li><b>Readable by the app.</b> A descriptor taken with {@code pidfd_getfd} keeps the app's access mode, so
 *     the daemon reads only through what the app opened for reading. (Reopening {@code /proc/<pid>/fd/<n>}
 *     would reopen with root's credentials: an {@code O_PATH} descriptor of a file the app may not read would
 *     become readable. That is why this is not done.)</li>
 * <li><b>An ordinary file.</b> A regular file on a disk or memory filesystem (ext2/3/4, xfs, btrfs, f2fs,
 *     zfs, tmpfs). Pseudo-filesystems (procfs, sysfs...) answer with the reader's privileges, and network or
 *     FUSE filesystems may block the event loop indefinitely; so may overlayfs, whose layers can be any of
 *     those (a user may mount one over FUSE in a user namespace).</li>
 * </ul>
 *
 * <p>Control path only (one SEND_FILE per response body): the checks allocate; the reads do not. A read of
 * a file that is not in the page cache still blocks the event loop for the disk's time. A descriptor number
 * named again while it is still the open file taken before (kcmp(2)) is served from a duplicate kept then,
 * without the checks and their /proc reads (at most 256 kept per app).
 */
final class AppFiles implements AutoCloseable
{
    /** statfs f_type values of the filesystems whose regular files the daemon reads (linux/magic.h). */
    private static final long[] ALLOWED_FILESYSTEMS = {
        0xEF53L,      // ext2, ext3, ext4
        0x58465342L,  // xfs
        0x9123683EL,  // btrfs
        0xF2F52010L,  // f2fs
        0x2FC12FC1L,  // zfs
        0x01021994L,  // tmpfs
    };
    private static final int STATFS_LENGTH = 128;
    /** Descriptors kept for reuse per app at most (each keeps its file open in the daemon). */
    private static final int MAX_KEPT = 256;

    private final Path appFile;
    private final long pid;
    private final Owner owner;
    private final Path procDirectory;
    private final Path procStatus;
    private final ByteBuffer statfs = BufferUtil.allocateDirectAligned(STATFS_LENGTH, 8).order(ByteOrder.nativeOrder());
    private final long statfsAddress = BufferUtil.address(statfs);
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
     * @param appFile  the app's file, as the daemon mapped it.
     * @param pid      the pid the app wrote into it.
     * @param owner    the app file's owner, group and identity when it attached (not followed through links).
     */
    AppFiles(final Path appFile, final long pid, final Owner owner)
    {
        this.appFile = appFile;
        this.pid = pid;
        this.owner = owner;
        this.procDirectory = Path.of("/proc/" + pid);
        this.procStatus = procDirectory.resolve("status");
    }

    /** Who owned the app file at attach, and which file it was (st_dev, st_ino). */
    record Owner(int uid, int gid, long device, long inode)
    {
        static Owner of(final Path file) throws IOException
        {
            return new Owner(
                (Integer)Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS),
                (Integer)Files.getAttribute(file, "unix:gid", LinkOption.NOFOLLOW_LINKS),
                (Long)Files.getAttribute(file, "unix:dev", LinkOption.NOFOLLOW_LINKS),
                (Long)Files.getAttribute(file, "unix:ino", LinkOption.NOFOLLOW_LINKS));
        }
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
        if (pidfd < 0 && unusable == null)
        {
            openProcess();
        }
        if (unusable != null)
        {
            return refuse(unusable);
        }
        lastTakeReused = false;
        final int reused = reuse(appFd);
        if (reused >= 0)
        {
            lastTakeReused = true;
            return reused;
        }
        final int fd = (int)LIBC.syscall(Linux.SYS_PIDFD_GETFD, pidfd, appFd, 0, 0, 0);
        if (fd < 0)
        {
            return refuse("pidfd_getfd of descriptor " + appFd + " of pid " + pid + ": " + Linux.describe(Linux.errno()));
        }
        final String why = check(fd, appFd);
        if (why != null)
        {
            Linux.closeQuietly(fd);
            return refuse(why);
        }
        remember(appFd, fd);
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
        final long same = LIBC.syscall(Linux.SYS_KCMP, (int)pid, selfPid, Linux.KCMP_FILE, appFd, kept);
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
    private String check(final int fd, final int appFd)
    {
        // After the take, so a process that changed before it (exec of a setuid or setgid program, PR_SET_DUMPABLE 0)
        // is caught: what the kernel's ptrace check asks of a process its owner may reach.
        final String why = reachableByOwner();
        if (why != null)
        {
            return why;
        }
        final int flags = LIBC.fcntl(fd, Linux.F_GETFL, 0);
        if (flags < 0 || (flags & Linux.O_PATH) != 0 || (flags & Linux.O_ACCMODE) == Linux.O_WRONLY)
        {
            return "descriptor " + appFd + " is not open for reading";
        }
        if (LIBC.fstatfs(fd, statfsAddress) != 0)
        {
            return "fstatfs of descriptor " + appFd + ": " + Linux.describe(Linux.errno());
        }
        final long type = statfs.getLong(0) & 0xFFFF_FFFFL;
        if (!allowedFilesystem(type))
        {
            return "descriptor " + appFd + " is on a filesystem the daemon does not read from (f_type 0x" +
                Long.toHexString(type) + ")";
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
        if (LIBC.syscall(Linux.SYS_PIDFD_SEND_SIGNAL, pidfd, 0, 0, 0, 0) != 0) // signal 0: is it alive?
        {
            return "pid " + pid + " is gone";
        }
        return null;
    }

    static boolean allowedFilesystem(final long type)
    {
        for (final long allowed : ALLOWED_FILESYSTEMS)
        {
            if (allowed == type)
            {
                return true;
            }
        }
        return false;
    }

    /**
     * pidfd_open first, then the checks, so the process checked is the one the pidfd refers to from then on: it runs
     * as the owner of the app file, and it has the app file mapped.
     */
    private void openProcess()
    {
        final int fd = (int)LIBC.syscall(Linux.SYS_PIDFD_OPEN, (int)pid, 0, 0, 0, 0);
        if (fd < 0)
        {
            unusable = "pidfd_open of pid " + pid + ": " + Linux.describe(Linux.errno());
            return;
        }
        pidfd = fd;
        String why = reachableByOwner();
        try
        {
            if (why == null && !mapsAppFile())
            {
                why = "pid " + pid + " does not have " + appFile.getFileName() + " mapped: not the app that attached it";
            }
        }
        catch (final IOException | RuntimeException e)
        {
            why = "cannot check pid " + pid + ": " + e;
        }
        if (why != null)
        {
            close();
            unusable = why;
        }
    }

    /**
     * Whether the process has the attached app file mapped: a line of {@code /proc/<pid>/maps} with its device and
     * inode (not its path, which the app could have replaced since the attach).
     */
    private boolean mapsAppFile() throws IOException
    {
        // st_dev as glibc encodes it; maps prints major:minor in hex.
        final long major = ((owner.device() >>> 8) & 0xFFF) | ((owner.device() >>> 32) & ~0xFFFL);
        final long minor = (owner.device() & 0xFF) | ((owner.device() >>> 12) & ~0xFFL);
        final String device = String.format("%02x:%02x", major, minor);
        final String inode = Long.toString(owner.inode());
        try (Stream<String> lines = Files.lines(procDirectory.resolve("maps"), StandardCharsets.ISO_8859_1))
        {
            return lines.anyMatch(l ->
            {
                final String[] f = l.trim().split("\\s+", 7);
                return f.length >= 5 && f[3].equals(device) && f[4].equals(inode);
            });
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
