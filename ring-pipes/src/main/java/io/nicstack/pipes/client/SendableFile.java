package io.nicstack.pipes.client;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.nicstack.pipes.Libc;

/**
 * A file opened read-only for {@link PipeConnection#sendFile}: the daemon reads its bytes into the TX pipe
 * itself (the app names this file's descriptor; the daemon takes a duplicate with {@code pidfd_getfd(2)}
 * and checks it may read through it), so the host app neither copies nor touches the body. One open file
 * can serve any number of connections at once, of any clients and threads; close it when none uses it any more.
 *
 * <p>Opened with open(2) rather than a {@code FileChannel}, whose descriptor the JDK does not expose.
 */
public final class SendableFile implements AutoCloseable
{
    private final Path path;
    private final int fd;
    /**
     * Holders of the descriptor: 1 for the app until {@link #close()}, plus one per SEND_FILE naming it that the
     * daemon may still take (see {@link #acquire()}). The descriptor is closed when this reaches 0, exactly once,
     * whichever thread lets go last.
     */
    private final AtomicInteger references = new AtomicInteger(1);
    private final AtomicBoolean closeRequested = new AtomicBoolean();

    private SendableFile(final Path path, final int fd)
    {
        this.path = path;
        this.fd = fd;
    }

    /**
     * Open {@code path} for reading.
     *
     * @throws IOException if it cannot be opened, or is not a regular file (the daemon sends only those). A FIFO or
     *                     device there is refused at once: the open does not wait for a writer (O_NONBLOCK, which
     *                     reads of a regular file ignore), so a path swapped after the caller's stat cannot block it.
     */
    public static SendableFile open(final Path path) throws IOException
    {
        final int fd = Libc.calls().open(path.toString(), Libc.O_RDONLY | Libc.O_CLOEXEC | Libc.O_NONBLOCK);
        if (fd < 0)
        {
            throw new IOException("open " + path + ": " + Libc.lastError());
        }
        if (!Files.isRegularFile(Path.of("/proc/self/fd/" + fd)))
        {
            Libc.calls().close(fd);
            throw new IOException(path + " is not a regular file");
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
     *
     * @throws IllegalStateException if this file was closed.
     */
    public FileChannel openChannel() throws IOException
    {
        if (closeRequested.get())
        {
            throw new IllegalStateException(path + " is closed");
        }
        return FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ);
    }

    /** Whether {@link #close()} was not called yet. */
    public boolean isOpen()
    {
        return !closeRequested.get();
    }

    /**
     * Close the file; idempotent, and safe from any thread. The descriptor itself is closed once the daemon can no
     * longer take it for any SEND_FILE naming it (it answered, or it read the request of a connection aborted
     * meanwhile, or it is gone): until then a number closed and reused by the next open(2) would name another file.
     */
    @Override
    public void close()
    {
        if (closeRequested.compareAndSet(false, true))
        {
            release();
        }
    }

    /**
     * A SEND_FILE naming this file is about to be sent; returns the descriptor to name, which stays open until the
     * matching {@link #release()}.
     *
     * @throws IllegalStateException if this file was closed.
     */
    int acquire()
    {
        while (true)
        {
            final int held = references.get();
            if (held == 0 || closeRequested.get())
            {
                throw new IllegalStateException(path + " is closed");
            }
            if (references.compareAndSet(held, held + 1))
            {
                return fd;
            }
        }
    }

    /** The daemon can no longer take the descriptor for one SEND_FILE (it read it, or it is gone). */
    void release()
    {
        final int held = references.decrementAndGet();
        if (held == 0)
        {
            Libc.calls().close(fd);
        }
        else if (held < 0)
        {
            throw new IllegalStateException(path + " released more often than acquired");
        }
    }

    /** Holders of the descriptor (for tests): 0 once it is closed. */
    int references()
    {
        return references.get();
    }

    @Override
    public String toString()
    {
        return "SendableFile{" + path + (references.get() == 0 ? ", closed" : ", fd " + fd) + "}";
    }
}
