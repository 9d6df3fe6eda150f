package io.nicstack.daemon;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

import io.nicstack.nic.linux.Linux;

import static io.nicstack.nic.linux.Linux.LIBC;
import static io.nicstack.nic.linux.Linux.S_IFBLK;
import static io.nicstack.nic.linux.Linux.S_IFCHR;
import static io.nicstack.nic.linux.Linux.S_IFDIR;
import static io.nicstack.nic.linux.Linux.S_IFIFO;
import static io.nicstack.nic.linux.Linux.S_IFLNK;
import static io.nicstack.nic.linux.Linux.S_IFMT;
import static io.nicstack.nic.linux.Linux.S_IFREG;
import static io.nicstack.nic.linux.Linux.S_IFSOCK;

/**
 * Opening a file that another process may have replaced, or made something else than a file, between a check and the
 * open: open(2) with {@code O_NOFOLLOW} (a symbolic link at the last component is refused, not followed) and
 * {@code O_NONBLOCK} (open(2) of a named pipe for reading waits for a writer, fifo(7), and of some devices for the
 * device), then the descriptor, not the path, checked to be a regular file (fstat(2): stat of its
 * {@code /proc/self/fd} link). {@code stats} and {@code conns} read the daemon's files through it; a check of the path
 * first ({@code Files.isRegularFile}, which follows links) followed by an open of the path let a named pipe swapped in
 * between hang them for ever.
 */
final class NoFollowFiles
{
    /** asm-generic/errno-base.h: a directory component of the path is not a directory. */
    static final int ENOTDIR = 20;
    /** asm-generic/errno.h: with {@code O_NOFOLLOW}, the last component is a symbolic link. */
    static final int ELOOP = 40;

    private NoFollowFiles()
    {
    }

    /**
     * open(2) of {@code path} with {@code flags} and {@code O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC}, unchecked: a
     * descriptor, or -1 with errno set. Without following a symbolic link and without blocking: open(2) of a named pipe
     * for reading waits for a writer (fifo(7)), and of some devices for the device.
     */
    static int open(final Path path, final int flags)
    {
        return LIBC.open(path.toString(), flags | Linux.O_NOFOLLOW | Linux.O_NONBLOCK | Linux.O_CLOEXEC);
    }

    /**
     * The descriptor of {@code path} opened with {@code flags} ({@link Linux#O_RDONLY}, {@link Linux#O_WRONLY}, ...)
     * and {@code O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC}, checked to be a regular file; the caller closes it. A missing
     * file is a {@link NoSuchFileException}, a refused one an {@link AccessDeniedException}, anything but a regular
     * file an {@link IOException} that says what it is; {@code what} names the file ("counters"). Never blocks.
     */
    static int openRegular(final Path path, final int flags, final String what) throws IOException
    {
        final int fd = open(path, flags);
        if (fd < 0)
        {
            final int errno = Linux.errno();
            switch (errno)
            {
                case Linux.ENOENT -> throw new NoSuchFileException(path.toString());
                case Linux.EACCES, Linux.EPERM -> throw new AccessDeniedException(path.toString());
                case ELOOP -> throw notRegular(path, Files.isSymbolicLink(path) ? "a symbolic link, not followed"
                    : "too many levels of symbolic links", what);
                case ENOTDIR -> throw new IOException(path.getParent() + " is not a directory");
                default -> throw new IOException("cannot open " + path + ": " + Linux.describe(errno));
            }
        }
        try
        {
            final String kind = kind(mode(fd, path));
            if (kind != null)
            {
                throw notRegular(path, kind, what);
            }
            return fd;
        }
        catch (final IOException | RuntimeException e)
        {
            LIBC.close(fd);
            throw e;
        }
    }

    /**
     * {@code path}, a regular file of {@code minLength} to {@code maxLength} bytes, mapped read-only; an
     * {@link IOException} as {@link #openRegular}'s, or saying the file is too short or too long. The file mapped is
     * the one checked: it is reopened through its descriptor, never by its path again.
     */
    static MappedByteBuffer mapReadOnly(final Path path, final String what, final long minLength, final long maxLength)
        throws IOException
    {
        final int fd = openRegular(path, Linux.O_RDONLY, what);
        try (FileChannel channel = FileChannel.open(fdPath(fd), StandardOpenOption.READ))
        {
            final long size = channel.size();
            if (size < minLength)
            {
                throw new IOException(what + " file too short (" + size + " bytes): " + path);
            }
            if (size > maxLength)
            {
                throw new IOException(what + " file too large (" + size + " bytes, at most " + maxLength + "): " + path);
            }
            return channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
        }
        finally
        {
            LIBC.close(fd);
        }
    }

    /** What a file of {@code mode} (st_mode, inode(7)) is, or null for a regular file. */
    static String kind(final int mode)
    {
        return switch (mode & S_IFMT)
        {
            case S_IFREG -> null;
            case S_IFIFO -> "a named pipe";
            case S_IFLNK -> "a symbolic link";
            case S_IFDIR -> "a directory";
            case S_IFSOCK -> "a socket";
            case S_IFCHR -> "a character device";
            case S_IFBLK -> "a block device";
            default -> "mode " + Integer.toOctalString(mode);
        };
    }

    /** st_mode of the file open as {@code fd}; {@code path} names it in an error. */
    static int mode(final int fd, final Path path) throws IOException
    {
        final Map<String, Object> attributes;
        try
        {
            attributes = Files.readAttributes(fdPath(fd), "unix:mode");
        }
        catch (final IOException | UnsupportedOperationException e)
        {
            throw new IOException("cannot check what " + path + " is (fstat through /proc/self/fd: " + e.getMessage() + ")");
        }
        return (Integer)attributes.get("mode");
    }

    /** The {@code /proc/self/fd} link of {@code fd}: opening or stat-ing it reaches the open file, whatever its path names now. */
    private static Path fdPath(final int fd)
    {
        return Path.of("/proc/self/fd/" + fd);
    }

    private static IOException notRegular(final Path path, final String kind, final String what)
    {
        return new IOException(path + " is not a regular file (" + kind + "): not a nicstack " + what + " file");
    }
}
