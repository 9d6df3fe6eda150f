package io.nicstack.daemon;

import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import org.agrona.BufferUtil;

import io.nicstack.nic.linux.Linux;
import io.nicstack.pipes.AppFile;

import static io.nicstack.nic.linux.Linux.LIBC;
import static io.nicstack.nic.linux.Linux.S_IFDIR;
import static io.nicstack.nic.linux.Linux.S_IFMT;

/**
 * {@code daemon.lock} in the shared-memory directory: held by the running daemon for its whole life, and naming it.
 *
 * <p>The daemon takes an exclusive open-file-description lock on the file (fcntl {@code F_OFD_SETLK}) and writes its
 * identity in it, {@code "<pid> <start ticks>\n"}: its pid as it sees it and its start in clock ticks since boot, the
 * pair the counters and connections files carry. The kernel drops the lock when the daemon exits, however it exits.
 * So a reader ({@code stats}, {@code conns}) knows the daemon that wrote its file runs exactly when the lock is held
 * ({@code F_OFD_GETLK}) and the file names the same daemon as the lock file: it never looks at {@code /proc/<pid>},
 * which does not show a daemon in another pid namespace (where its pid names another process, or none) nor, under
 * {@code hidepid}, another user's daemon.
 *
 * <p>Open-file-description locks, not Java's {@link java.nio.channels.FileLock} (classic POSIX locks): a classic lock
 * belongs to the process, is dropped when that process closes any descriptor of the file, and is never reported to
 * its own process, so a reader in the daemon's JVM (the tests) would either not see it or release it.
 *
 * <p>The lock on the file tells readers; what keeps a second daemon out is a lock on the directory itself: an exclusive
 * {@code flock(2)} on a descriptor of the directory, taken first and held as long. A lock belongs to a file, not to its
 * name: with the file lock alone, a {@code daemon.lock} deleted under a running daemon (by an operator, or a tmp
 * cleaner where {@code --shm} is under {@code /tmp}) let a second daemon make a new one, lock that, and take the
 * directory the first one still used. The directory cannot be replaced under its files. (A {@code daemon.lock} so
 * deleted stays missing while that daemon runs: readers and apps take it for gone until it is restarted.)
 */
final class DaemonLock implements AutoCloseable
{
    static final String FILE_NAME = AppFile.DAEMON_LOCK;
    /** The identity is short ASCII; a longer file is not ours. */
    private static final int MAX_LENGTH = 64;

    private final Path path;
    private int fd;
    /** The directory, flock'ed. */
    private int directoryFd;

    private DaemonLock(final Path path, final int fd, final int directoryFd)
    {
        this.path = path;
        this.fd = fd;
        this.directoryFd = directoryFd;
    }

    /** This process's identity: its pid and its start in ticks since boot ({@code /proc/self/stat}, field 22). */
    static String identity()
    {
        return identity(ProcessHandle.current().pid(), ownStartTicks());
    }

    /** The identity of the daemon a counters or connections file names by its pid and start ticks. */
    static String identity(final long pid, final long startTicks)
    {
        return pid + " " + startTicks;
    }

    /** When this process started, in clock ticks since boot, or -1 if {@code /proc} cannot say. */
    static long ownStartTicks()
    {
        try
        {
            final String stat = Files.readString(Path.of("/proc/self/stat"), StandardCharsets.ISO_8859_1);
            final String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" "); // the name may hold anything
            return Long.parseLong(fields[19]); // fields[0] is field 3 (state)
        }
        catch (final IOException | RuntimeException e)
        {
            return -1;
        }
    }

    /**
     * Take the lock of {@code dir} (the directory's, then its file's) and write this process's identity in the file, or
     * say which daemon holds it.
     */
    static DaemonLock acquire(final Path dir) throws IOException
    {
        final int directoryFd = lockDirectory(dir);
        try
        {
            return acquire(dir, directoryFd);
        }
        catch (final IOException | RuntimeException e)
        {
            Linux.closeQuietly(directoryFd);
            throw e;
        }
    }

    /**
     * An exclusive flock(2) of the directory {@code dir} itself, on a descriptor of its own (a lock of the open file,
     * as the file's: no other descriptor of this process can drop it), or an {@link IOException} naming the daemon that
     * holds it. The descriptor.
     */
    private static int lockDirectory(final Path dir) throws IOException
    {
        final int fd = NoFollowFiles.open(dir, Linux.O_RDONLY);
        if (fd < 0)
        {
            throw new IOException("cannot open " + dir + ": " + Linux.describe(Linux.errno()));
        }
        try
        {
            if ((NoFollowFiles.mode(fd, dir) & S_IFMT) != S_IFDIR)
            {
                throw new IOException("--shm " + dir + " is not a directory");
            }
            if (LIBC.flock(fd, Linux.LOCK_EX | Linux.LOCK_NB) != 0)
            {
                final int errno = Linux.errno();
                if (errno != Linux.EAGAIN) // EWOULDBLOCK
                {
                    throw new IOException("cannot lock " + dir + ": " + Linux.describe(errno));
                }
                throw inUse(dir, holder(dir.resolve(FILE_NAME)));
            }
            return fd;
        }
        catch (final IOException | RuntimeException e)
        {
            Linux.closeQuietly(fd);
            throw e;
        }
    }

    /** The text of the lock file {@code path}, or null if it is missing, not a regular file or not an identity. */
    private static String holder(final Path path)
    {
        final int fd = NoFollowFiles.open(path, Linux.O_RDONLY);
        if (fd < 0)
        {
            return null;
        }
        try
        {
            checkRegular(path, fd);
            return read(fd);
        }
        catch (final IOException e)
        {
            return null;
        }
        finally
        {
            LIBC.close(fd);
        }
    }

    private static IOException inUse(final Path dir, final String holder)
    {
        final int space = holder == null ? -1 : holder.indexOf(' ');
        return new IOException("--shm " + dir + " is in use by another daemon"
            + (space > 0 ? " (pid " + holder.substring(0, space) + ")" : "") + "; give each daemon its own --shm");
    }

    /** Take the file's lock in {@code dir}, whose directory lock this process holds as {@code directoryFd}. */
    private static DaemonLock acquire(final Path dir, final int directoryFd) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        try
        {
            Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-r--r--")));
        }
        catch (final FileAlreadyExistsException e)
        {
            // An earlier daemon's: taken over below if nobody holds it.
        }
        final int fd = NoFollowFiles.open(path, Linux.O_RDWR);
        if (fd < 0)
        {
            throw new IOException("cannot open " + path + ": " + Linux.describe(Linux.errno()));
        }
        try
        {
            checkRegular(path, fd);
        }
        catch (final IOException e)
        {
            LIBC.close(fd);
            throw e;
        }
        final ByteBuffer request = flock(Linux.F_WRLCK);
        final int taken = LIBC.fcntl(fd, Linux.F_OFD_SETLK, BufferUtil.address(request));
        Reference.reachabilityFence(request);
        if (taken != 0)
        {
            final int errno = Linux.errno();
            final String holder = read(fd);
            LIBC.close(fd);
            if (errno != Linux.EAGAIN && errno != Linux.EACCES)
            {
                throw new IOException("cannot lock " + path + ": " + Linux.describe(errno));
            }
            throw inUse(dir, holder); // a daemon of a version that locked the file alone
        }
        final DaemonLock lock = new DaemonLock(path, fd, directoryFd);
        try
        {
            Files.write(path, (identity() + "\n").getBytes(StandardCharsets.US_ASCII),
                StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS);
            // Readable by every user who may read the counters, whatever the umask it was first made under: a reader
            // that cannot open it takes the daemon for gone.
            Files.setAttribute(path, "unix:mode", 0644, LinkOption.NOFOLLOW_LINKS);
        }
        catch (final IOException e)
        {
            lock.fd = -1; // closed here; the directory by the caller
            LIBC.close(fd);
            throw e;
        }
        return lock;
    }

    /**
     * Whether the daemon {@code identity} ({@link #identity()}, as a file in {@code dir} recorded it) runs: it holds
     * the lock of {@code dir} now. False when no daemon holds it, another daemon does (the file is an older daemon's),
     * or the lock file is missing or cannot be read; an {@link IOException} when it is not a regular file (no daemon
     * takes such a file: {@link #acquire} refuses it), such as a named pipe. Never blocks.
     */
    static boolean heldBy(final Path dir, final String identity) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        final Map<String, Object> attributes;
        try
        {
            attributes = Files.readAttributes(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        }
        catch (final IOException e) // missing or unreadable
        {
            return false;
        }
        final String kind = NoFollowFiles.kind((Integer)attributes.get("mode"));
        if (kind != null)
        {
            throw notRegular(path, kind);
        }
        // Checked again on the descriptor (checkRegular): the file may have been replaced since.
        final int fd = NoFollowFiles.open(path, Linux.O_RDONLY);
        if (fd < 0)
        {
            return false;
        }
        final ByteBuffer query = flock(Linux.F_WRLCK);
        try
        {
            checkRegular(path, fd);
            // F_OFD_GETLK answers with the first lock that would conflict with a write lock, or F_UNLCK for none.
            if (LIBC.fcntl(fd, Linux.F_OFD_GETLK, BufferUtil.address(query)) != 0
                || query.getShort(Linux.FLOCK_TYPE_OFFSET) == Linux.F_UNLCK)
            {
                return false;
            }
            final String holder = read(fd);
            return holder != null && holder.equals(identity + "\n");
        }
        finally
        {
            Reference.reachabilityFence(query);
            LIBC.close(fd);
        }
    }

    /**
     * That {@code fd}, opened on {@code path}, is a regular file: fstat(2) of the descriptor (stat of its
     * {@code /proc/self/fd} link), not of the path, which may name another file by now. Without {@code /proc} this
     * check is skipped: a read of anything but a file then fails (pread(2): ESPIPE, EISDIR) rather than blocks.
     */
    private static void checkRegular(final Path path, final int fd) throws IOException
    {
        final int mode;
        try
        {
            mode = NoFollowFiles.mode(fd, path);
        }
        catch (final IOException e)
        {
            return;
        }
        final String kind = NoFollowFiles.kind(mode);
        if (kind != null)
        {
            throw notRegular(path, kind);
        }
    }

    private static IOException notRegular(final Path path, final String kind)
    {
        return new IOException(path + " is " + kind + ", not a daemon lock file (a regular file)");
    }

    /** A {@code struct flock} of {@code type} for the whole file, in native memory (keep it reachable over the call). */
    private static ByteBuffer flock(final short type)
    {
        // l_whence SEEK_SET, l_start 0, l_len 0 (to the end, however long), l_pid 0 (required for OFD locks).
        final ByteBuffer b = ByteBuffer.allocateDirect(Linux.FLOCK_LENGTH).order(ByteOrder.nativeOrder());
        b.putShort(Linux.FLOCK_TYPE_OFFSET, type);
        return b;
    }

    /** The text of the lock file open as {@code fd}, or null if it cannot be read or is longer than an identity. */
    private static String read(final int fd)
    {
        final ByteBuffer b = ByteBuffer.allocateDirect(MAX_LENGTH + 1);
        final long address = BufferUtil.address(b);
        int length = 0;
        while (length < b.capacity())
        {
            // pread: from the start whatever the file position; on a named pipe it fails (ESPIPE), never waits.
            final long n = LIBC.pread(fd, address + length, b.capacity() - length, length);
            if (n < 0)
            {
                Reference.reachabilityFence(b);
                return null;
            }
            if (n == 0)
            {
                break;
            }
            length += (int)n;
        }
        final byte[] text = new byte[length];
        b.get(0, text);
        Reference.reachabilityFence(b);
        return length > MAX_LENGTH ? null : new String(text, StandardCharsets.US_ASCII);
    }

    Path path()
    {
        return path;
    }

    /** Release the lock, the file's and then the directory's (the file stays; the next daemon takes it over). */
    @Override
    public void close()
    {
        if (fd >= 0)
        {
            LIBC.close(fd);
            fd = -1;
        }
        if (directoryFd >= 0)
        {
            LIBC.close(directoryFd);
            directoryFd = -1;
        }
    }
}
