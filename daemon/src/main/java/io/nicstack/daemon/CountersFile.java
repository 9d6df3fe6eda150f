package io.nicstack.daemon;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
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
        file.header.putLong(START_TIME_OFFSET, DaemonLock.ownStartTicks());
        file.header.putIntRelease(VERSION_OFFSET, VERSION);
        return file;
    }

    /**
     * Map an existing counters file for reading; an {@link IOException} that says what is wrong when it is absent,
     * unreadable, or not a consistent file of this layout (another process wrote it: nothing in it is trusted).
     */
    public static CountersFile open(final Path dir) throws IOException
    {
        final Path path = dir.resolve(FILE_NAME);
        final MappedByteBuffer mapped = mapForReading(dir, FILE_NAME, "counters", HEADER_LENGTH, Integer.MAX_VALUE);
        final UnsafeBuffer header = new UnsafeBuffer(mapped, 0, HEADER_LENGTH);
        final String problem = checkHeader(header, mapped.capacity());
        if (problem != null)
        {
            IoUtil.unmap(mapped);
            throw new IOException(problem + ": " + path);
        }
        return new CountersFile(path, mapped, header.getInt(METADATA_LENGTH_OFFSET), header.getInt(VALUES_LENGTH_OFFSET));
    }

    /**
     * Map {@code dir/fileName}, a file the daemon writes and another process reads, read-only; an {@link IOException}
     * saying what is wrong when the directory or the file is missing or not what it should be (a named pipe, a
     * symbolic link: never followed nor waited on, see {@link NoFollowFiles}), unreadable, shorter than
     * {@code minLength} or longer than {@code maxLength}. {@code what} names the file ("counters").
     */
    static MappedByteBuffer mapForReading(final Path dir, final String fileName, final String what, final int minLength,
        final int maxLength) throws IOException
    {
        final Path path = dir.resolve(fileName);
        if (!Files.isDirectory(dir))
        {
            throw new IOException(Files.exists(dir) ? dir + " is not a directory (--shm names the daemon's directory)"
                : "no directory " + dir + " (is the daemon running with --shm " + dir + "?)");
        }
        try
        {
            return NoFollowFiles.mapReadOnly(path, what, minLength, maxLength);
        }
        catch (final NoSuchFileException e)
        {
            throw new IOException("no " + what + " file at " + path + " (is the daemon running with --shm " + dir + "?)");
        }
        catch (final AccessDeniedException e)
        {
            throw new IOException("permission denied reading " + path);
        }
    }

    /** What is wrong with a header over a file of {@code fileLength} bytes, or null. */
    private static String checkHeader(final UnsafeBuffer header, final long fileLength)
    {
        if (header.getLong(MAGIC_OFFSET) != MAGIC)
        {
            return "not a nicstack counters file";
        }
        final int version = header.getIntVolatile(VERSION_OFFSET);
        if (version != VERSION)
        {
            return "counters file layout version " + version + ", this build reads " + VERSION;
        }
        final int metadataLength = header.getInt(METADATA_LENGTH_OFFSET);
        final int valuesLength = header.getInt(VALUES_LENGTH_OFFSET);
        if (metadataLength <= 0 || valuesLength <= 0
            || metadataLength % CountersReader.METADATA_LENGTH != 0 || valuesLength % CountersReader.COUNTER_LENGTH != 0
            || metadataLength / CountersReader.METADATA_LENGTH != valuesLength / CountersReader.COUNTER_LENGTH
            || (long)HEADER_LENGTH + metadataLength + valuesLength > fileLength)
        {
            return "counters file inconsistent (metadata " + metadataLength + " bytes, values " + valuesLength
                + " bytes, file " + fileLength + " bytes)";
        }
        return null;
    }

    /** One counter of the file. */
    @FunctionalInterface
    public interface CounterVisitor
    {
        void accept(int id, int typeId, String label, long value);
    }

    /**
     * Every allocated counter in id order, as {@link CountersReader#forEach} but checking each record first: a bad
     * record status or label length is an {@link IOException}, and a label's control characters are shown as '?'.
     */
    public void forEachCounter(final CounterVisitor visitor) throws IOException
    {
        final int count = metadata.capacity() / CountersReader.METADATA_LENGTH;
        for (int id = 0; id < count; id++)
        {
            final int offset = id * CountersReader.METADATA_LENGTH;
            final int status = metadata.getIntVolatile(offset);
            if (status == CountersReader.RECORD_UNUSED)
            {
                return;
            }
            if (status == CountersReader.RECORD_RECLAIMED)
            {
                continue;
            }
            final int labelLength = metadata.getInt(offset + CountersReader.LABEL_OFFSET);
            if (status != CountersReader.RECORD_ALLOCATED || labelLength < 0 || labelLength > CountersReader.MAX_LABEL_LENGTH)
            {
                throw new IOException("counters file inconsistent (counter " + id + ": status " + status
                    + ", label length " + labelLength + "): " + path);
            }
            final byte[] label = new byte[labelLength];
            metadata.getBytes(offset + CountersReader.LABEL_OFFSET + Integer.BYTES, label);
            for (int i = 0; i < label.length; i++)
            {
                if (label[i] < 0x20 || label[i] > 0x7E)
                {
                    label[i] = '?';
                }
            }
            visitor.accept(id, metadata.getInt(offset + CountersReader.TYPE_ID_OFFSET),
                new String(label, StandardCharsets.US_ASCII), values.getLongVolatile(id * CountersReader.COUNTER_LENGTH));
        }
    }

    /**
     * Whether the daemon that created this file still runs: it holds the directory's {@link DaemonLock} (a later
     * daemon on the same directory, or a pid reused by another process, does not count); an {@link IOException} when
     * the lock file is not a regular file.
     */
    public boolean daemonRunning() throws IOException
    {
        // Absolute: a file named relative to the working directory ("counters.dat") has no parent of its own.
        return DaemonLock.heldBy(path.toAbsolutePath().getParent(),
            DaemonLock.identity(pid(), header.getLong(START_TIME_OFFSET)));
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
