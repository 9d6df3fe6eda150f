package io.nicstack.examples;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

import org.agrona.CloseHelper;

import io.nicstack.pipes.Libc;
import io.nicstack.pipes.client.SendableFile;

/**
 * A file opened for response bodies: a channel to copy from and, when asked for, the same file as a
 * {@link SendableFile} for SEND_FILE, and the file's modification time (of the file opened, not of whatever its path
 * names by now). The channel is always opened through a sendable file, so both name the
 * same inode even if the path is replaced meanwhile, and a path swapped for a FIFO after the server's stat is
 * refused at once instead of blocking the server's thread in open(2) until a writer comes.
 *
 * <p><b>The file looked up, and no other.</b> {@link StaticFiles#lookup} vets a file's real path (symbolic links
 * resolved, under the root), but an open by that path walks it again: a directory on it swapped for a symbolic link
 * in between would make open(2) follow the link out of the root. So the path is opened once, and the descriptor's
 * own path ({@code /proc/self/fd/N}, the kernel's name of the file it holds) must be the path asked for, else it is
 * refused ({@link AccessDeniedException}); the body's descriptors are then opened from that descriptor, never from
 * the path again. (Neither {@link FileChannel} nor {@link SendableFile} exposes its descriptor's number, hence the
 * one open(2) through {@link Libc} here.)
 */
record BodyFile(FileChannel channel, SendableFile sendable, FileTime modified) implements AutoCloseable
{
    private static final String DELETED = " (deleted)";

    /**
     * Open {@code file}, a real path (as {@link StaticFiles#lookup} gives), for a body.
     *
     * @throws AccessDeniedException if the file opened is not the one at {@code file} (a symbolic link swapped onto
     *                               the path since it was looked up).
     * @throws IOException           if it cannot be opened or is no regular file.
     */
    static BodyFile open(final Path file, final boolean sendable) throws IOException
    {
        // O_NONBLOCK: a FIFO swapped in is opened at once (and refused below), not waited on for a writer.
        final int fd = Libc.calls().open(file.toString(), Libc.O_RDONLY | Libc.O_CLOEXEC | Libc.O_NONBLOCK);
        if (fd < 0)
        {
            throw new IOException("open " + file + ": " + Libc.lastError());
        }
        try
        {
            final Path opened = Path.of("/proc/self/fd/" + fd);
            final String name = Files.readSymbolicLink(opened).toString();
            // The file looked up, or that file unlinked since the open (still the one it vetted).
            if (!name.equals(file.toString()) && !name.equals(file + DELETED))
            {
                throw new AccessDeniedException(file.toString(), name,
                    "opened another file: a symbolic link on the path since the lookup");
            }
            // Reopened through the descriptor (the same inode, whatever its path names now).
            return openVetted(opened, sendable);
        }
        finally
        {
            Libc.calls().close(fd);
        }
    }

    private static BodyFile openVetted(final Path file, final boolean sendable) throws IOException
    {
        final FileTime modified = Files.getLastModifiedTime(file); // through the descriptor: the file opened
        final SendableFile s = SendableFile.open(file);
        if (!sendable)
        {
            try (s)
            {
                return new BodyFile(s.openChannel(), null, modified);
            }
        }
        try
        {
            return new BodyFile(s.openChannel(), s, modified);
        }
        catch (final IOException | RuntimeException e)
        {
            s.close();
            throw e;
        }
    }

    @Override
    public void close()
    {
        CloseHelper.quietCloseAll(channel, sendable);
    }
}
