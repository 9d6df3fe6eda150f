package io.nicstack.daemon;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

/**
 * The daemon's shared-memory directory ({@code --shm}), checked before anything is written into it, and held by
 * one daemon at a time.
 *
 * <p>The default, {@code /dev/shm/nicstack}, lives in a directory every user may write to, so anyone can create it
 * first (or a symbolic link in its place) and have the daemon, which runs as root, write files and set modes where
 * they choose. So, every check made with {@code lstat} (no symbolic link followed):
 * <ul>
 *   <li>the existing part of the parent path is resolved to its real path once, and from there on only that path
 *       is used; each of its directories must be owned by root or by the daemon's uid, and not writable by group or
 *       others unless it has the sticky bit (as {@code /}, {@code /dev/shm}, {@code /tmp}): then nobody else can
 *       rename or replace what the daemon creates below it;</li>
 *   <li>missing parents and the directory itself are created with mode 0755 (no symbolic link is followed:
 *       {@code mkdir} fails on an existing name);</li>
 *   <li>the directory itself, created or found, must be a real directory (not a symbolic link), owned by the
 *       daemon's uid, not writable by group or others.</li>
 * </ul>
 * Anything else is refused with an {@link IOException} that says what is wrong. The {@code apps} subdirectory is
 * the pipe server's (it checks it the same way, then makes it 01777).
 *
 * <p>{@link #lock()} takes the directory's {@link DaemonLock}: a second daemon on the same directory is refused
 * instead of replacing the first one's counters and connections files, and readers know whether the daemon that
 * wrote a file still runs.
 */
final class ShmDirectory implements AutoCloseable
{
    private static final String DIRECTORY_MODE = "rwxr-xr-x";
    private static final int GROUP_OR_OTHER_WRITE = 0022;
    private static final int STICKY = 01000;

    private final Path path;
    private DaemonLock lock;

    private ShmDirectory(final Path path)
    {
        this.path = path;
    }

    /** The uid this process runs as (files it creates are owned by it). */
    static int ownUid()
    {
        return (int)new com.sun.security.auth.module.UnixSystem().getUid();
    }

    /**
     * Create {@code dir} (and missing parents) or accept it as it is, if safe for a daemon running as {@code uid};
     * see the class comment for the checks.
     */
    static ShmDirectory prepare(final Path dir, final int uid) throws IOException
    {
        for (final Path name : dir)
        {
            if ("..".equals(name.toString()))
            {
                // normalize() would drop "link/.." by its text, where the kernel (stats, conns, the apps) goes through
                // the link: the daemon and they would name different directories.
                throw new IOException("--shm " + dir + ": give a path without '..'");
            }
        }
        final Path absolute = dir.toAbsolutePath().normalize();
        if (absolute.getParent() == null)
        {
            throw new IOException("--shm " + dir + ": not usable as the shared-memory directory");
        }
        // The deepest existing ancestor, resolved once; the missing part below it is created by us.
        Path existing = absolute.getParent();
        while (!Files.exists(existing, LinkOption.NOFOLLOW_LINKS) && existing.getParent() != null)
        {
            existing = existing.getParent();
        }
        final Path real;
        try
        {
            real = existing.toRealPath();
        }
        catch (final IOException e)
        {
            throw new IOException("--shm " + dir + ": cannot resolve " + existing + " (" + e + ")");
        }
        for (Path p = real; p != null; p = p.getParent())
        {
            checkAncestor(dir, p, uid);
        }
        Path current = real;
        for (final Path name : existing.relativize(absolute))
        {
            current = current.resolve(name);
            try
            {
                Files.createDirectory(current, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(DIRECTORY_MODE)));
            }
            catch (final FileAlreadyExistsException e)
            {
                // Checked below like one we made.
            }
            checkOwn(dir, current, uid);
        }
        return new ShmDirectory(current);
    }

    private static Map<String, Object> lstat(final Path p) throws IOException
    {
        return Files.readAttributes(p, "unix:uid,mode,isDirectory,isSymbolicLink", LinkOption.NOFOLLOW_LINKS);
    }

    /** A directory above the shm directory: root's or ours, and nobody else may replace its entries. */
    private static void checkAncestor(final Path dir, final Path p, final int uid) throws IOException
    {
        final Map<String, Object> a = lstat(p);
        final int owner = (Integer)a.get("uid");
        final int mode = (Integer)a.get("mode");
        if (!(Boolean)a.get("isDirectory"))
        {
            throw new IOException("--shm " + dir + ": " + p + " is not a directory");
        }
        if (owner != 0 && owner != uid)
        {
            throw new IOException("--shm " + dir + ": " + p + " is owned by uid " + owner
                + " (a parent of the shared-memory directory must be root's or uid " + uid + "'s); refusing to use it");
        }
        if ((mode & GROUP_OR_OTHER_WRITE) != 0 && (mode & STICKY) == 0)
        {
            throw new IOException("--shm " + dir + ": " + p + " is writable by group or others without the sticky bit "
                + "(mode " + Integer.toOctalString(mode & 07777) + "); refusing to use it");
        }
    }

    /** The shm directory itself or a parent we were to create: a real directory of ours that only we may write. */
    private static void checkOwn(final Path dir, final Path p, final int uid) throws IOException
    {
        final Map<String, Object> a = lstat(p);
        final int owner = (Integer)a.get("uid");
        final int mode = (Integer)a.get("mode");
        if ((Boolean)a.get("isSymbolicLink"))
        {
            throw new IOException("--shm " + dir + ": " + p + " is a symbolic link; refusing to use it (remove it, "
                + "or give the real directory)");
        }
        if (!(Boolean)a.get("isDirectory"))
        {
            throw new IOException("--shm " + dir + ": " + p + " exists and is not a directory");
        }
        if (owner != uid)
        {
            throw new IOException("--shm " + dir + ": " + p + " is owned by uid " + owner + ", not by the daemon's uid "
                + uid + "; refusing to use it (someone may have created it first: remove it)");
        }
        if ((mode & GROUP_OR_OTHER_WRITE) != 0)
        {
            throw new IOException("--shm " + dir + ": " + p + " is writable by group or others (mode "
                + Integer.toOctalString(mode & 07777) + "); refusing to use it (chmod 755 it, or remove it)");
        }
    }

    /** The checked directory, by its real path: use this one, not the name given. */
    Path path()
    {
        return path;
    }

    /** Take the directory's {@link DaemonLock}, or say which daemon holds it. */
    ShmDirectory lock() throws IOException
    {
        lock = DaemonLock.acquire(path);
        return this;
    }

    @Override
    public void close()
    {
        if (lock != null)
        {
            lock.close();
            lock = null;
        }
    }
}
