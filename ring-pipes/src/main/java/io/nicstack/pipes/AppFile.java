package io.nicstack.pipes;

import org.agrona.BitUtil;
import org.agrona.IoUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

import static io.nicstack.pipes.AppFileDescriptor.APP_HEARTBEAT_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.APP_PID_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.DAEMON_HEARTBEAT_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.DAEMON_PID_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.DAEMON_VERSION_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.HEADER_LENGTH;
import static io.nicstack.pipes.AppFileDescriptor.MAGIC;
import static io.nicstack.pipes.AppFileDescriptor.MAGIC_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.MAX_CONNECTIONS_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.MAX_NAME_LENGTH;
import static io.nicstack.pipes.AppFileDescriptor.NAME_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.PIPE_CAPACITY_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.REASON_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.RING_CAPACITY_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.SLOT_CONNECTION_ID_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.SLOT_LOCAL_PORT_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.SLOT_REMOTE_ADDRESS_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.SLOT_REMOTE_PORT_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.SLOT_STATE_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.STATE_ATTACHED;
import static io.nicstack.pipes.AppFileDescriptor.STATE_ATTACHING;
import static io.nicstack.pipes.AppFileDescriptor.STATE_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.STATE_REJECTED;
import static io.nicstack.pipes.AppFileDescriptor.VERSION;
import static io.nicstack.pipes.AppFileDescriptor.VERSION_OFFSET;

/**
 * One mapped app file ({@link AppFileDescriptor}): the app {@link #create creates} it, the daemon {@link #open opens}
 * and validates it. Gives the three rings, the per-slot pipes and the header fields.
 *
 * <p>Who writes what: the app writes the header, {@code APP_HEARTBEAT}, the control ring and the TX pipes' tails and
 * data; the daemon writes {@code DAEMON_PID}, {@code DAEMON_VERSION}, {@code DAEMON_HEARTBEAT}, the slot headers,
 * the event and notification rings and the RX pipes' tails and data. {@code STATE} is written by both, in turns
 * (ATTACHING and DETACHED by the app, ATTACHED, REJECTED and DAEMON_GONE by the daemon), always with a release store
 * after the fields it publishes.
 *
 * <p>{@link #open} reads the sizes once and never again, so an app rewriting its header cannot make the daemon
 * index outside the mapping.
 */
public final class AppFile implements AutoCloseable
{
    /** Subdirectory of the shared-memory directory that holds the app files. */
    public static final String APPS_DIRECTORY = "apps";
    public static final String SUFFIX = ".app";
    public static final int MIN_RING_CAPACITY = 1024;
    public static final int MIN_PIPE_CAPACITY = 4096;
    public static final int MAX_CONNECTIONS = 1 << 16;

    private final Path path;
    private final MappedByteBuffer mapped;
    private final UnsafeBuffer buffer;
    private final int ringCapacity;
    private final int pipeCapacity;
    private final int maxConnections;
    private final OneToOneRingBuffer controlRing;
    private final OneToOneRingBuffer eventRing;
    private final OneToOneRingBuffer notificationRing;
    private boolean closed;

    private AppFile(
        final Path path,
        final MappedByteBuffer mapped,
        final int ringCapacity,
        final int pipeCapacity,
        final int maxConnections)
    {
        this.path = path;
        this.mapped = mapped;
        this.buffer = new UnsafeBuffer(mapped);
        this.ringCapacity = ringCapacity;
        this.pipeCapacity = pipeCapacity;
        this.maxConnections = maxConnections;
        final int ringLength = AppFileDescriptor.ringLength(ringCapacity);
        controlRing = new OneToOneRingBuffer(
            new UnsafeBuffer(buffer, AppFileDescriptor.controlRingOffset(), ringLength));
        eventRing = new OneToOneRingBuffer(
            new UnsafeBuffer(buffer, AppFileDescriptor.eventRingOffset(ringCapacity), ringLength));
        notificationRing = new OneToOneRingBuffer(
            new UnsafeBuffer(buffer, AppFileDescriptor.notificationRingOffset(ringCapacity), ringLength));
    }

    /** {@code <dir>/apps/<name>-<pid>.app}. */
    public static Path appFilePath(final Path dir, final String name, final long pid)
    {
        return dir.resolve(APPS_DIRECTORY).resolve(name + "-" + pid + SUFFIX);
    }

    /**
     * App side: create {@code <dir>/apps/<name>-<pid>.app} with mode 0600 (and {@code <dir>/apps} if missing), size
     * it, map it and write the header, the app heartbeat and then {@code STATE_ATTACHING} (release), all under a hidden
     * temporary name that is then renamed atomically to the final one.
     *
     * @throws java.nio.file.NoSuchFileException if {@code dir} itself does not exist.
     * @throws IllegalArgumentException          for a bad name or sizes.
     */
    public static AppFile create(
        final Path dir,
        final String name,
        final long pid,
        final int ringCapacity,
        final int pipeCapacity,
        final int maxConnections,
        final long nowMillis) throws IOException
    {
        final String nameProblem = checkName(name);
        if (nameProblem != null)
        {
            throw new IllegalArgumentException(nameProblem);
        }
        final String sizeProblem = checkSizes(ringCapacity, pipeCapacity, maxConnections);
        if (sizeProblem != null)
        {
            throw new IllegalArgumentException(sizeProblem);
        }
        if (!Files.isDirectory(dir))
        {
            throw new java.nio.file.NoSuchFileException(dir.toString(), null, "shared-memory directory missing");
        }
        final Path apps = dir.resolve(APPS_DIRECTORY);
        Files.createDirectories(apps);
        final Path file = appFilePath(dir, name, pid);
        // Built under a hidden name and renamed when complete, so a scanning daemon never maps a half-made file.
        final Path building = apps.resolve("." + name + "-" + pid + SUFFIX + ".tmp");
        // Same name and pid: leftovers of a dead process that had our pid.
        Files.deleteIfExists(file);
        Files.deleteIfExists(building);
        Files.createFile(building, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));

        final long length = AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);
        MappedByteBuffer mapped = null;
        try
        {
            try (FileChannel channel = FileChannel.open(building, StandardOpenOption.READ, StandardOpenOption.WRITE))
            {
                // A sparse file: pages are only backed once touched.
                channel.position(length - 1);
                channel.write(java.nio.ByteBuffer.wrap(new byte[1]));
                mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, length);
            }

            final AppFile appFile = new AppFile(file, mapped, ringCapacity, pipeCapacity, maxConnections);
            final UnsafeBuffer header = appFile.buffer;
            header.putLong(MAGIC_OFFSET, MAGIC);
            header.putInt(VERSION_OFFSET, VERSION);
            header.putInt(REASON_OFFSET, Protocol.Reason.NONE);
            header.putInt(MAX_CONNECTIONS_OFFSET, maxConnections);
            header.putInt(PIPE_CAPACITY_OFFSET, pipeCapacity);
            header.putInt(RING_CAPACITY_OFFSET, ringCapacity);
            header.putLong(APP_PID_OFFSET, pid);
            header.putStringAscii(NAME_OFFSET, name);
            header.putLongRelease(APP_HEARTBEAT_OFFSET, nowMillis);
            header.putIntRelease(STATE_OFFSET, STATE_ATTACHING);
            Files.move(building, file, StandardCopyOption.ATOMIC_MOVE);
            return appFile;
        }
        catch (final IOException | RuntimeException ex)
        {
            if (mapped != null)
            {
                IoUtil.unmap(mapped);
            }
            Files.deleteIfExists(building);
            throw ex;
        }
    }

    /**
     * Daemon side: map {@code file} and validate its header. Scan for names ending in {@link #SUFFIX} only: files are
     * built under a hidden {@code .tmp} name and appear under their final name complete, in state ATTACHING.
     *
     * @throws AppFileException for a wrong magic, another VERSION, a truncated file or bad sizes or name.
     */
    public static AppFile open(final Path file) throws IOException
    {
        final MappedByteBuffer mapped;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            final long size = channel.size();
            if (size < HEADER_LENGTH)
            {
                throw new AppFileException(
                    AppFileException.Kind.TRUNCATED, file + ": " + size + " bytes, less than the header");
            }
            if (size > Integer.MAX_VALUE)
            {
                throw new AppFileException(AppFileException.Kind.BAD_SIZES, file + ": " + size + " bytes is too large");
            }
            mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, size);
        }

        try
        {
            final UnsafeBuffer header = new UnsafeBuffer(mapped);
            final long magic = header.getLongVolatile(MAGIC_OFFSET);
            if (magic != MAGIC)
            {
                throw new AppFileException(
                    AppFileException.Kind.BAD_MAGIC, file + ": magic 0x" + Long.toHexString(magic));
            }
            final int version = header.getInt(VERSION_OFFSET);
            if (version != VERSION)
            {
                throw new AppFileException(
                    AppFileException.Kind.VERSION_MISMATCH, file + ": version " + version + ", expected " + VERSION);
            }
            final int ringCapacity = header.getInt(RING_CAPACITY_OFFSET);
            final int pipeCapacity = header.getInt(PIPE_CAPACITY_OFFSET);
            final int maxConnections = header.getInt(MAX_CONNECTIONS_OFFSET);
            final String sizeProblem = checkSizes(ringCapacity, pipeCapacity, maxConnections);
            if (sizeProblem != null)
            {
                throw new AppFileException(AppFileException.Kind.BAD_SIZES, file + ": " + sizeProblem);
            }
            final long expected = AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);
            if (mapped.capacity() < expected)
            {
                throw new AppFileException(
                    AppFileException.Kind.TRUNCATED,
                    file + ": " + mapped.capacity() + " bytes, the layout needs " + expected);
            }
            final int nameLength = header.getInt(NAME_OFFSET);
            if (nameLength < 1 || nameLength > MAX_NAME_LENGTH)
            {
                throw new AppFileException(AppFileException.Kind.BAD_NAME, file + ": name length " + nameLength);
            }
            final String nameProblem = checkName(header.getStringAscii(NAME_OFFSET));
            if (nameProblem != null)
            {
                throw new AppFileException(AppFileException.Kind.BAD_NAME, file + ": " + nameProblem);
            }
            return new AppFile(file, mapped, ringCapacity, pipeCapacity, maxConnections);
        }
        catch (final IOException | RuntimeException ex)
        {
            IoUtil.unmap(mapped);
            throw ex;
        }
    }

    /**
     * Daemon side: answer a file that {@link #open} refused with {@code REJECTED} and {@code reason}, touching only
     * the first header fields, which every layout version keeps in place.
     *
     * @return false if the file is too short to hold them.
     */
    public static boolean reject(final Path file, final int reason) throws IOException
    {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            if (channel.size() < REASON_OFFSET + 4)
            {
                return false;
            }
            final MappedByteBuffer mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, REASON_OFFSET + 4);
            try
            {
                final UnsafeBuffer header = new UnsafeBuffer(mapped);
                header.putIntRelease(REASON_OFFSET, reason);
                header.putIntRelease(STATE_OFFSET, STATE_REJECTED);
            }
            finally
            {
                IoUtil.unmap(mapped);
            }
            return true;
        }
    }

    /** Null when {@code name} is fine for a file name and the header, else what is wrong with it. */
    public static String checkName(final String name)
    {
        if (name == null || name.isEmpty() || name.length() > MAX_NAME_LENGTH)
        {
            return "app name must have 1 to " + MAX_NAME_LENGTH + " characters: " + name;
        }
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            final boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
            if (!ok || (i == 0 && c == '.'))
            {
                return "app name may only use [A-Za-z0-9._-] and not start with '.': " + name;
            }
        }
        return null;
    }

    /** Null when the sizes make a valid layout, else what is wrong with them. */
    public static String checkSizes(final int ringCapacity, final int pipeCapacity, final int maxConnections)
    {
        if (ringCapacity < MIN_RING_CAPACITY || !BitUtil.isPowerOfTwo(ringCapacity))
        {
            return "ring capacity must be a power of two of at least " + MIN_RING_CAPACITY + ": " + ringCapacity;
        }
        if (pipeCapacity < MIN_PIPE_CAPACITY || !BitUtil.isPowerOfTwo(pipeCapacity))
        {
            return "pipe capacity must be a power of two of at least " + MIN_PIPE_CAPACITY + ": " + pipeCapacity;
        }
        if (maxConnections < 1 || maxConnections > MAX_CONNECTIONS)
        {
            return "max connections must be in [1, " + MAX_CONNECTIONS + "]: " + maxConnections;
        }
        final long length = AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);
        if (length > Integer.MAX_VALUE)
        {
            return "the layout needs " + length + " bytes, more than one mapping holds";
        }
        return null;
    }

    // ---- rings ------------------------------------------------------------------------------

    /** App → daemon requests ({@link Protocol} LISTEN, CONNECT, ...). */
    public OneToOneRingBuffer controlRing()
    {
        return controlRing;
    }

    /** Daemon → app events ({@link Protocol} LISTENING, ACCEPTED, ...). */
    public OneToOneRingBuffer eventRing()
    {
        return eventRing;
    }

    /** Daemon → app NOTIFY records, paced (see {@link NotificationPacer}). */
    public OneToOneRingBuffer notificationRing()
    {
        return notificationRing;
    }

    // ---- slots ------------------------------------------------------------------------------

    public int maxConnections()
    {
        return maxConnections;
    }

    public int pipeCapacity()
    {
        return pipeCapacity;
    }

    public int ringCapacity()
    {
        return ringCapacity;
    }

    /** A new flyweight over the slot's RX pipe (daemon produces, app consumes); keep it per connection. */
    public Pipe rx(final int slot)
    {
        return rx(slot, new Pipe());
    }

    /** Wrap {@code pipe} over the slot's RX pipe. */
    public Pipe rx(final int slot, final Pipe pipe)
    {
        checkSlot(slot);
        return pipe.wrap(buffer, (int)AppFileDescriptor.rxPipeOffset(ringCapacity, pipeCapacity, slot), pipeCapacity);
    }

    /** A new flyweight over the slot's TX pipe (app produces, daemon consumes); keep it per connection. */
    public Pipe tx(final int slot)
    {
        return tx(slot, new Pipe());
    }

    /** Wrap {@code pipe} over the slot's TX pipe. */
    public Pipe tx(final int slot, final Pipe pipe)
    {
        checkSlot(slot);
        return pipe.wrap(buffer, (int)AppFileDescriptor.txPipeOffset(ringCapacity, pipeCapacity, slot), pipeCapacity);
    }

    /** Slot state (daemon writes, app reads): {@code SLOT_FREE} or {@code SLOT_IN_USE}. */
    public int slotState(final int slot)
    {
        return buffer.getIntVolatile(slotField(slot, SLOT_STATE_OFFSET));
    }

    public long slotConnectionId(final int slot)
    {
        return buffer.getLongVolatile(slotField(slot, SLOT_CONNECTION_ID_OFFSET));
    }

    public int slotRemoteAddress(final int slot)
    {
        return buffer.getInt(slotField(slot, SLOT_REMOTE_ADDRESS_OFFSET));
    }

    public int slotRemotePort(final int slot)
    {
        return buffer.getInt(slotField(slot, SLOT_REMOTE_PORT_OFFSET));
    }

    public int slotLocalPort(final int slot)
    {
        return buffer.getInt(slotField(slot, SLOT_LOCAL_PORT_OFFSET));
    }

    /**
     * Daemon: take a slot for a connection — both pipes back to zero, the ids, then {@code SLOT_IN_USE} (release);
     * call before publishing the ACCEPTED or CONNECTED event.
     */
    public void openSlot(
        final int slot, final long connectionId, final int localPort, final int remoteAddress, final int remotePort)
    {
        rx(slot, new Pipe()).reset();
        tx(slot, new Pipe()).reset();
        buffer.putLong(slotField(slot, SLOT_CONNECTION_ID_OFFSET), connectionId);
        buffer.putInt(slotField(slot, SLOT_REMOTE_ADDRESS_OFFSET), remoteAddress);
        buffer.putInt(slotField(slot, SLOT_REMOTE_PORT_OFFSET), remotePort);
        buffer.putInt(slotField(slot, SLOT_LOCAL_PORT_OFFSET), localPort);
        buffer.putIntRelease(slotField(slot, SLOT_STATE_OFFSET), AppFileDescriptor.SLOT_IN_USE);
    }

    /** Daemon: mark a slot free once the app has sent CLOSE for it. */
    public void freeSlot(final int slot)
    {
        buffer.putIntRelease(slotField(slot, SLOT_STATE_OFFSET), AppFileDescriptor.SLOT_FREE);
    }

    private int slotField(final int slot, final int field)
    {
        checkSlot(slot);
        return (int)AppFileDescriptor.slotOffset(ringCapacity, pipeCapacity, slot) + field;
    }

    private void checkSlot(final int slot)
    {
        if (slot < 0 || slot >= maxConnections)
        {
            throw new IndexOutOfBoundsException("slot " + slot + " of " + maxConnections);
        }
    }

    // ---- header -----------------------------------------------------------------------------

    public Path path()
    {
        return path;
    }

    /** The whole mapping. */
    public AtomicBuffer buffer()
    {
        return buffer;
    }

    public int version()
    {
        return buffer.getInt(VERSION_OFFSET);
    }

    public int state()
    {
        return buffer.getIntVolatile(STATE_OFFSET);
    }

    /** A release store: everything written before it is visible to the other side once it sees the state. */
    public void state(final int state)
    {
        buffer.putIntRelease(STATE_OFFSET, state);
    }

    public int reason()
    {
        return buffer.getIntVolatile(REASON_OFFSET);
    }

    public void reason(final int reason)
    {
        buffer.putIntRelease(REASON_OFFSET, reason);
    }

    public long appPid()
    {
        return buffer.getLong(APP_PID_OFFSET);
    }

    public long daemonPid()
    {
        return buffer.getLongVolatile(DAEMON_PID_OFFSET);
    }

    public int daemonVersion()
    {
        return buffer.getIntVolatile(DAEMON_VERSION_OFFSET);
    }

    /** App heartbeat, epoch millis. */
    public long appHeartbeat()
    {
        return buffer.getLongVolatile(APP_HEARTBEAT_OFFSET);
    }

    public void appHeartbeat(final long epochMillis)
    {
        buffer.putLongRelease(APP_HEARTBEAT_OFFSET, epochMillis);
    }

    /** Daemon heartbeat, epoch millis. */
    public long daemonHeartbeat()
    {
        return buffer.getLongVolatile(DAEMON_HEARTBEAT_OFFSET);
    }

    public void daemonHeartbeat(final long epochMillis)
    {
        buffer.putLongRelease(DAEMON_HEARTBEAT_OFFSET, epochMillis);
    }

    /** The app name: an int length then ASCII bytes at {@code NAME_OFFSET} (Agrona {@code putStringAscii}). */
    public String name()
    {
        final int length = buffer.getInt(NAME_OFFSET);
        return length < 0 || length > MAX_NAME_LENGTH ? "" : buffer.getStringAscii(NAME_OFFSET);
    }

    /** Daemon: accept the app — daemon pid and version, a first heartbeat, then {@code STATE_ATTACHED} (release). */
    public void markAttached(final long daemonPid, final long nowMillis)
    {
        buffer.putLong(DAEMON_PID_OFFSET, daemonPid);
        buffer.putInt(DAEMON_VERSION_OFFSET, VERSION);
        buffer.putLongRelease(DAEMON_HEARTBEAT_OFFSET, nowMillis);
        buffer.putIntRelease(STATE_OFFSET, STATE_ATTACHED);
    }

    /** Daemon: refuse the app with a {@link Protocol.Reason}. */
    public void markRejected(final long daemonPid, final int reason)
    {
        buffer.putLong(DAEMON_PID_OFFSET, daemonPid);
        buffer.putInt(DAEMON_VERSION_OFFSET, VERSION);
        buffer.putInt(REASON_OFFSET, reason);
        buffer.putIntRelease(STATE_OFFSET, STATE_REJECTED);
    }

    public boolean isClosed()
    {
        return closed;
    }

    /** Unmap. Nothing may touch {@link #buffer()}, the rings or the pipes afterwards. */
    @Override
    public void close()
    {
        if (!closed)
        {
            closed = true;
            IoUtil.unmap(mapped);
        }
    }

    /** Remove the file (the mapping, if still open, stays valid until {@link #close()}). */
    public void delete() throws IOException
    {
        Files.deleteIfExists(path);
    }

    @Override
    public String toString()
    {
        return "AppFile{" + path + (closed ? ", closed}" : ", state=" + state() + "}");
    }
}
