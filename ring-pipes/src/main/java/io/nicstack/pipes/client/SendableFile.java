package io.nicstack.pipes.client;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import io.nicstack.pipes.Libc;

/**
 * A file opened read-only for {@link PipeConnection#sendFile}: the daemon reads its bytes into the TX pipe
 * itself (the app names this file's descriptor; the daemon takes a duplicate with {@code pidfd_getfd(2)}
 * and checks it may read through it), so the host app neither copies nor touches the body. One open file
 * can serve any number of connections at once; close it when none uses it any more.
 *
 * <p>Opened with open(2) rather than a {@code FileChannel}, whose descriptor the JDK does not expose.
 */
public final class SendableFile implements AutoCloseable
{
    private final Path path;
    private int fd;
    /** SEND_FILEs naming this descriptor that the daemon has not answered (FILE_SENT) yet. */
    private int pending;
    private boolean closeRequested;

    private SendableFile(final Path path, final int fd)
    {
        this.path = path;
        this.fd = fd;
    }

    /** Open {@code path} for reading. */
    public static SendableFile open(final Path path) throws IOException
    {
        final int fd = Libc.calls().open(path.toString(), Libc.O_RDONLY | Libc.O_CLOEXEC);
        if (fd < 0)
        {
            throw new IOException("open " + path + ": " + Libc.lastError());
        }
        return new SendableFile(path, fd);
    }

    public Path path()
    {
        return path;
    }

    /**
     * A {@link FileChannel} for reading the same file (the same inode, even if its path was replaced or removed
     * since), for an app that also copies from it; close it separately.
     */
    public FileChannel openChannel() throws IOException
    {
        if (closeRequested)
        {
            throw new IllegalStateException(path + " is closed");
        }
        return FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ);
    }

    /** Whether {@link #close()} was not called yet. */
    public boolean isOpen()
    {
        return !closeRequested;
    }

    /**
     * Close the file. The descriptor itself is closed once the daemon has answered every SEND_FILE naming it:
     * until then the daemon may still be about to take it, and a number closed and reused meanwhile would
     * name another file.
     */
    @Override
    public void close()
    {
        closeRequested = true;
        closeIfUnused();
    }

    /** A SEND_FILE naming this file is about to be sent; returns the descriptor to name. */
    int acquire()
    {
        if (closeRequested)
        {
            throw new IllegalStateException(path + " is closed");
        }
        pending++;
        return fd;
    }

    /** The daemon answered one SEND_FILE (or is gone). */
    void release()
    {
        pending--;
        closeIfUnused();
    }

    private void closeIfUnused()
    {
        if (closeRequested && pending <= 0 && fd >= 0)
        {
            Libc.calls().close(fd);
            fd = -1;
        }
    }

    @Override
    public String toString()
    {
        return "SendableFile{" + path + (closeRequested ? ", closed" : ", fd " + fd) + "}";
    }
}
