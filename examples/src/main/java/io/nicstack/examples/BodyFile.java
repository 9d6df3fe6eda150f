package io.nicstack.examples;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;

import org.agrona.CloseHelper;

import io.nicstack.pipes.Libc;
import io.nicstack.pipes.client.SendableFile;

/**
 * A file opened for response bodies: the same file as a {@link SendableFile} for SEND_FILE or as a channel to copy
 * from, each only where it is used, and the file's size and modification time (of the file opened, not of whatever
 * its path names by now). The file is always opened through a sendable file, so a channel opened later names the
 * same inode even if the path is replaced meanwhile, and a path swapped for a FIFO after the server's stat is refused
 * at once instead of blocking the server's thread in open(2) until a writer comes.
 *
 * <p><b>One descriptor, not two.</b> A body the daemon sends (SEND_FILE) needs the sendable file's descriptor, the one
 * the daemon takes a duplicate of with {@code pidfd_getfd(2)}; a body the app copies needs a {@link FileChannel}. One
 * descriptor cannot be both: {@link SendableFile} keeps its descriptor's number to itself (it counts the SEND_FILEs
 * that still name it before it closes it) and has no reads, and a JDK channel always opens a descriptor of its own. So
 * a body file holds the one its use needs: a sendable one only the sendable file, its channel opened when first asked
 * for (a copy after the daemon refused, or a size check after a failed send) and kept from then on; a file not made
 * sendable only the channel. An open-file cache of sendable files so costs one descriptor per file, not two.
 *
 * <p><b>The file looked up, and no other.</b> {@link StaticFiles#lookup} vets a file's real path (symbolic links
 * resolved, under the root), but an open by that path walks it again: a directory on it swapped for a symbolic link
 * in between would make open(2) follow the link out of the root. So the path is opened once, and the descriptor's
 * own path ({@code /proc/self/fd/N}, the kernel's name of the file it holds) must be the path asked for, else it is
 * refused ({@link AccessDeniedException}); the body's descriptors are then opened from that descriptor, never from
 * the path again. (Neither {@link FileChannel} nor {@link SendableFile} exposes its descriptor's number, hence the
 * one open(2) through {@link Libc} here.) One thread uses a body file.
 */
final class BodyFile implements AutoCloseable
{
    private static final String DELETED = " (deleted)";

    private final SendableFile sendable;
    private final long size;
    private final FileTime modified;
    private FileChannel channel;

    private BodyFile(final FileChannel channel, final SendableFile sendable, final long size, final FileTime modified)
    {
        this.channel = channel;
        this.sendable = sendable;
        this.size = size;
        this.modified = modified;
    }

    /**
     * Open {@code file}, a real path (as {@link StaticFiles#lookup} gives), for a body.
     *
     * @param sendable whether for SEND_FILE ({@link #sendable()}): then only the sendable file is opened now.
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
        // Through the descriptor: the file opened (fstat(2) of it, as FileChannel.size would be).
        final BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
        final SendableFile s = SendableFile.open(file);
        if (!sendable)
        {
            try (s)
            {
                return new BodyFile(s.openChannel(), null, attributes.size(), attributes.lastModifiedTime());
            }
        }
        return new BodyFile(null, s, attributes.size(), attributes.lastModifiedTime());
    }

    /**
     * The open file, for positional reads and {@link FileChannel#size()} only (its position is shared by every user);
     * opened on the first call where the body was made sendable.
     *
     * @throws IOException if it cannot be opened.
     */
    FileChannel channel() throws IOException
    {
        if (channel == null)
        {
            channel = sendable.openChannel();
        }
        return channel;
    }

    /** The file for {@link io.nicstack.pipes.client.PipeConnection#sendFile}, null unless opened sendable. */
    SendableFile sendable()
    {
        return sendable;
    }

    /** The file's size when it was opened. */
    long size()
    {
        return size;
    }

    /** The file's modification time when it was opened. */
    FileTime modified()
    {
        return modified;
    }

    /** Whether a channel is open now (for tests: a sendable body opens one only when asked for). */
    boolean channelOpen()
    {
        return channel != null;
    }

    @Override
    public void close()
    {
        CloseHelper.quietCloseAll(channel, sendable);
    }
}
