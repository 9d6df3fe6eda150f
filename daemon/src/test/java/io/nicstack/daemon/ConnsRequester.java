package io.nicstack.daemon;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

import org.agrona.BufferUtil;

import io.nicstack.nic.linux.Linux;

/** Asks a {@link ConnectionsFile} for a table as {@code conns} does, allocating nothing per request (allocation tests). */
final class ConnsRequester implements AutoCloseable
{
    private final int fd;
    private final ByteBuffer word = ByteBuffer.allocateDirect(Long.BYTES).order(ByteOrder.nativeOrder());
    private final long address = BufferUtil.address(word);
    private long next = 1;

    ConnsRequester(final Path shm)
    {
        fd = Linux.LIBC.open(shm.resolve(ConnectionsFile.REQUEST_FILE_NAME).toString(), Linux.O_WRONLY | Linux.O_CLOEXEC);
        if (fd < 0)
        {
            throw new IllegalStateException("cannot open the request file: " + Linux.describe(Linux.errno()));
        }
    }

    /** Write a new request word. */
    void ask()
    {
        word.putLong(0, next++);
        if (Linux.LIBC.pwrite(fd, address, Long.BYTES, 0) != Long.BYTES)
        {
            throw new IllegalStateException("cannot write the request file: " + Linux.describe(Linux.errno()));
        }
    }

    @Override
    public void close()
    {
        Linux.LIBC.close(fd);
    }
}
