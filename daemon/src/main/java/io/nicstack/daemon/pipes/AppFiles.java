package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.nicstack.nic.linux.Linux;

import static io.nicstack.nic.linux.Linux.LIBC;

/**
 * The files one attached app hands the daemon to send (SEND_FILE): the app names a file descriptor it
 * holds, and the daemon takes a duplicate of that very open file description with {@code pidfd_getfd(2)},
 * as a NIC that reads the host's page cache itself instead of being handed copies of it.
 *
 * <p>Why not open {@code /proc/<pid>/fd/<n>}: that reopens the file with the daemon's (root's)
 * credentials, so an app could name an {@code O_PATH} descriptor of a file it may not read and have the
 * daemon read it. A descriptor taken with {@code pidfd_getfd} keeps the app's access mode: the daemon can
 * read through it only what the app could read. Before the first descriptor the daemon also checks that
 * the process behind the app file's pid runs under the user that owns the app file (real, effective,
 * saved and filesystem uid), so an app cannot claim another user's process as its own. The descriptor
 * must be open for reading and name a regular file.
 *
 * <p>Control path only (one SEND_FILE per response body): the checks allocate; the reads do not.
 */
final class AppFiles implements AutoCloseable
{
    private final Path appFile;
    private final long pid;
    private int pidfd = -1;
    /** Why descriptors of this app cannot be taken at all (set once, then every SEND_FILE is refused). */
    private String unusable;
    private String lastRefusal;

    AppFiles(final Path appFile, final long pid)
    {
        this.appFile = appFile;
        this.pid = pid;
    }

    /**
     * A descriptor of the daemon's own for the app's descriptor {@code appFd}, readable and naming a regular
     * file, or -1 with {@link #lastRefusal()} saying why.
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
        final int fd = (int)LIBC.syscall(Linux.SYS_PIDFD_GETFD, pidfd, appFd, 0);
        if (fd < 0)
        {
            return refuse("pidfd_getfd of descriptor " + appFd + " of pid " + pid + ": " + Linux.describe(Linux.errno()));
        }
        final int flags = LIBC.fcntl(fd, Linux.F_GETFL, 0);
        if (flags < 0 || (flags & Linux.O_PATH) != 0 || (flags & Linux.O_ACCMODE) == Linux.O_WRONLY)
        {
            Linux.closeQuietly(fd);
            return refuse("descriptor " + appFd + " is not open for reading");
        }
        if (!Files.isRegularFile(Path.of("/proc/self/fd/" + fd)))
        {
            Linux.closeQuietly(fd);
            return refuse("descriptor " + appFd + " is not a regular file");
        }
        return fd;
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
    }

    /** pidfd_open first, then the uid check, so the process checked is the one the pidfd refers to. */
    private void openProcess()
    {
        final int fd = (int)LIBC.syscall(Linux.SYS_PIDFD_OPEN, (int)pid, 0, 0);
        if (fd < 0)
        {
            unusable = "pidfd_open of pid " + pid + ": " + Linux.describe(Linux.errno());
            return;
        }
        try
        {
            final int owner = (Integer)Files.getAttribute(appFile, "unix:uid");
            final String uids = uidLine(Files.readAllLines(Path.of("/proc/" + pid + "/status")));
            if (!sameUser(uids, owner))
            {
                Linux.closeQuietly(fd);
                unusable = "pid " + pid + " does not run as uid " + owner + ", the owner of " + appFile.getFileName() +
                    " (" + uids + ")";
                return;
            }
        }
        catch (final IOException | RuntimeException e)
        {
            Linux.closeQuietly(fd);
            unusable = "cannot check the user of pid " + pid + ": " + e;
            return;
        }
        pidfd = fd;
    }

    private int refuse(final String why)
    {
        lastRefusal = why;
        return -1;
    }

    private static String uidLine(final List<String> status)
    {
        for (final String line : status)
        {
            if (line.startsWith("Uid:"))
            {
                return line;
            }
        }
        return "no Uid line";
    }

    /** Whether a {@code /proc/<pid>/status} "Uid:" line (real, effective, saved, filesystem) is {@code uid} four times. */
    static boolean sameUser(final String uidLine, final int uid)
    {
        if (!uidLine.startsWith("Uid:"))
        {
            return false;
        }
        final String[] fields = uidLine.substring(4).trim().split("\\s+");
        if (fields.length != 4)
        {
            return false;
        }
        for (final String f : fields)
        {
            if (!f.equals(Integer.toString(uid)))
            {
                return false;
            }
        }
        return true;
    }
}
