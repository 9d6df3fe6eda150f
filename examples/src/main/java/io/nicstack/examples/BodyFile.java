package io.nicstack.examples;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.agrona.CloseHelper;

import io.nicstack.pipes.client.SendableFile;

/**
 * A file opened for response bodies: a channel to copy from and, when asked for, the same file as a
 * {@link SendableFile} for SEND_FILE. The channel is then opened through the sendable file, so both name the
 * same inode even if the path is replaced meanwhile.
 */
record BodyFile(FileChannel channel, SendableFile sendable) implements AutoCloseable
{
    static BodyFile open(final Path file, final boolean sendable) throws IOException
    {
        if (!sendable)
        {
            return new BodyFile(FileChannel.open(file, StandardOpenOption.READ), null);
        }
        final SendableFile s = SendableFile.open(file);
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
