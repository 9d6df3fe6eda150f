package io.nicstack.daemon;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersManager;
import org.agrona.concurrent.status.CountersReader;

import static io.nicstack.daemon.CountersFileDescriptor.*;

/** The memory-mapped counters file; see {@link CountersFileDescriptor} for the layout. */
public final class CountersFile implements AutoCloseable
{
    private static final int COUNTERS = 256;

    private final Path path;
    private final MappedByteBuffer mapped;
    private final UnsafeBuffer header;
    private final UnsafeBuffer metadata;
    private final UnsafeBuffer values;

    private CountersFile(final Path path, final MappedByteBuffer mapped, final int metadataLength, final int valuesLength)
    {
        this.path = path;
        this.mapped = mapped;
        this.header = new UnsafeBuffer(mapped, 0, HEADER_LENGTH);
        this.metadata = new UnsafeBuffer(mapped, HEADER_LENGTH, metadataLength);
        this.values = new UnsafeBuffer(mapped, HEADER_LENGTH + metadataLength, valuesLength);
    }

    /** Create (or replace) the counters file in the existing {@code dir} (see {@link ShmDirectory}), owned by this process. */
    public static CountersFile create(final Path dir) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        final int metadataLength = COUNTERS * CountersReader.METADATA_LENGTH;
        final int valuesLength = COUNTERS * CountersReader.COUNTER_LENGTH;
        final int total = HEADER_LENGTH + metadataLength + valuesLength;
        Files.deleteIfExists(path);
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, total);
        }
        final CountersFile file = new CountersFile(path, mapped, metadataLength, valuesLength);
        file.header.putLong(MAGIC_OFFSET, MAGIC);
        file.header.putInt(METADATA_LENGTH_OFFSET, metadataLength);
        file.header.putInt(VALUES_LENGTH_OFFSET, valuesLength);
        file.header.putLong(PID_OFFSET, ProcessHandle.current().pid());
        file.header.putLong(START_TIME_OFFSET, System.currentTimeMillis());
        file.header.putIntRelease(VERSION_OFFSET, VERSION);
        return file;
    }

    /** Map an existing counters file for reading; a clear exception when absent or of another layout. */
    public static CountersFile open(final Path dir) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        if (!Files.exists(path))
        {
            throw new IOException("no counters file at " + path + " (is the daemon running with --shm " + dir + "?)");
        }
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ))
        {
            if (channel.size() < HEADER_LENGTH)
            {
                throw new IOException("counters file too short: " + path);
            }
            mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size());
        }
        final UnsafeBuffer header = new UnsafeBuffer(mapped, 0, HEADER_LENGTH);
        if (header.getLong(MAGIC_OFFSET) != MAGIC)
        {
            throw new IOException("not a nicstack counters file: " + path);
        }
        final int version = header.getIntVolatile(VERSION_OFFSET);
        if (version != VERSION)
        {
            throw new IOException("counters file layout version " + version + ", this build reads " + VERSION + ": " + path);
        }
        final int metadataLength = header.getInt(METADATA_LENGTH_OFFSET);
        final int valuesLength = header.getInt(VALUES_LENGTH_OFFSET);
        if (metadataLength <= 0 || valuesLength <= 0 || (long)HEADER_LENGTH + metadataLength + valuesLength > mapped.capacity())
        {
            throw new IOException("counters file lengths inconsistent: " + path);
        }
        return new CountersFile(path, mapped, metadataLength, valuesLength);
    }

    public CountersManager manager()
    {
        return new CountersManager(metadata, values);
    }

    public CountersReader reader()
    {
        return new CountersReader(metadata, values);
    }

    public long pid()
    {
        return header.getLong(PID_OFFSET);
    }

    public Path path()
    {
        return path;
    }

    @Override
    public void close()
    {
        IoUtil.unmap(mapped);
    }
}
