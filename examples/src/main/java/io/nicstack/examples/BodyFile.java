package io.nicstack.examples;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

import org.agrona.CloseHelper;

import io.nicstack.pipes.client.SendableFile;

/**
 * A file opened for response bodies: a channel to copy from and, when asked for, the same file as a
 * {@link SendableFile} for SEND_FILE. The channel is always opened through a sendable file, so both name the
 * same inode even if the path is replaced meanwhile, and a path swapped for a FIFO after the server's stat is
 * refused at once instead of blocking the server's thread in open(2) until a writer comes.
 */
record BodyFile(FileChannel channel, SendableFile sendable) implements AutoCloseable
{
    static BodyFile open(final Path file, final boolean sendable) throws IOException
    {
        final SendableFile s = SendableFile.open(file);
        if (!sendable)
        {
            try (s)
            {
                return new BodyFile(s.openChannel(), null);
            }
        }
        try
        {
            return new BodyFile(s.openChannel(), s);
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
