package io.nicstack.pipes;

import org.agrona.BitUtil;
import org.agrona.IoUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

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
import static io.nicstack.pipes.AppFileDescriptor.MEMORY_FD_OFFSET;
import static io.nicstack.pipes.AppFileDescriptor.MEMORY_INODE_OFFSET;
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
 * One app's memory and app file ({@link AppFileDescriptor}): the app {@link #create creates} both, a daemon
 * {@link #open opens} the app file and maps the memory it names. Gives the three rings, the per-slot pipes and the
 * header fields of the memory.
 *
 * <p>Who writes what: the app writes the header, {@code APP_HEARTBEAT}, the control ring, the TX pipes' tails and
 * data and the RX pipes' heads, and sets doorbell bits (the daemon clears them); the daemon writes {@code DAEMON_PID}, {@code DAEMON_VERSION}, {@code DAEMON_HEARTBEAT}, the slot headers,
 * the event and notification rings and the RX pipes' tails and data. {@code STATE} is written by both, in turns
 * (ATTACHING and DETACHED by the app, ATTACHED, REJECTED and DAEMON_GONE by the daemon), always with a release store
 * after the fields it publishes. A rejection is written in the app file; the app's {@link #state()} copies it into its
 * memory.
 *
 * <p>{@link #open} reads the sizes once and never again, so an app rewriting its header cannot make the daemon
 * index outside the mapping; and the memory is sealed against shrinking, so it cannot fault the daemon's accesses.
 */
public final class AppFile implements AutoCloseable
{
    /** Subdirectory of the shared-memory directory that holds the app files. */
    public static final String APPS_DIRECTORY = "apps";
    /** The file a running daemon holds locked in the shared-memory directory, for its whole life. */
    public static final String DAEMON_LOCK = "daemon.lock";
    public static final String SUFFIX = ".app";
    public static final int MIN_RING_CAPACITY = 1024;
    public static final int MIN_PIPE_CAPACITY = 4096;
    public static final int MAX_CONNECTIONS = 1 << 16;
    /** The seals the app puts on its memory: its size is fixed, and so are the seals. */
    public static final int MEMORY_SEALS = Libc.F_SEAL_SHRINK | Libc.F_SEAL_GROW | Libc.F_SEAL_SEAL;

    private final Path path;
    /** The app file, read and written at offsets (pread/pwrite), never mapped. */
    private final FileChannel appFile;
    /** App side: the memfd it names in the app file, open until {@link #close()}; -1 on the daemon side. */
    private final int memoryFd;
    /**
     * App files this process created and has not closed: their path is the app's name and our pid, so a second app of
     * one name here would take the first one's file (and the daemon, attached to that path, would skip it).
     */
    private static final Set<Path> OPEN_HERE = java.util.concurrent.ConcurrentHashMap.newKeySet();
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
        final FileChannel appFile,
        final int memoryFd,
        final MappedByteBuffer mapped,
        final int ringCapacity,
        final int pipeCapacity,
        final int maxConnections)
    {
        this.path = path;
        this.appFile = appFile;
        this.memoryFd = memoryFd;
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
     * App side: create the memory (a memfd sized and {@link #MEMORY_SEALS sealed}), map it and write the header, the
     * app heartbeat and {@code STATE_ATTACHING} (release); then the app file {@code <dir>/apps/<name>-<pid>.app} of
     * this process's pid (and {@code <dir>/apps} if missing), mode 0600, a copy of that header naming the memfd, built
     * under a hidden temporary name and renamed atomically to the final one.
     *
     * @throws java.nio.file.NoSuchFileException        if {@code dir} itself does not exist.
     * @throws java.nio.file.FileAlreadyExistsException while an app of this name created here is still open.
     * @throws IllegalArgumentException                 for a bad name or sizes.
     */
    public static AppFile create(
        final Path dir,
        final String name,
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
        final long pid = ProcessHandle.current().pid();
        final Path apps = dir.resolve(APPS_DIRECTORY);
        Files.createDirectories(apps);
        final Path file = appFilePath(dir, name, pid);
        // Built under a hidden name and renamed when complete, so a scanning daemon never reads a half-made file.
        final Path building = apps.resolve("." + name + "-" + pid + SUFFIX + ".tmp");
        final long length = AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);

        final Libc.Calls libc = Libc.calls();
        final int fd = libc.memfd_create("nicstack-app-" + name, Libc.MFD_CLOEXEC | Libc.MFD_ALLOW_SEALING);
        if (fd < 0)
        {
            throw new IOException("memfd_create for the app's memory: " + Libc.lastError());
        }
        if (!OPEN_HERE.add(file.toAbsolutePath().normalize()))
        {
            libc.close(fd);
            throw new java.nio.file.FileAlreadyExistsException(file.toString(), null,
                "an app named " + name + " is already open in this process");
        }
        MappedByteBuffer mapped = null;
        FileChannel appFile = null;
        try
        {
            // Pages are only backed once touched.
            if (libc.ftruncate(fd, length) != 0 || libc.fcntl(fd, Libc.F_ADD_SEALS, MEMORY_SEALS) != 0)
            {
                throw new IOException("sizing and sealing the app's memory: " + Libc.lastError());
            }
            final Path memory = Path.of("/proc/self/fd/" + fd);
            try (FileChannel channel = FileChannel.open(memory, StandardOpenOption.READ, StandardOpenOption.WRITE))
            {
                mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, length);
            }
            final UnsafeBuffer header = new UnsafeBuffer(mapped, 0, HEADER_LENGTH);
            header.putLong(MAGIC_OFFSET, MAGIC);
            header.putInt(VERSION_OFFSET, VERSION);
            header.putInt(REASON_OFFSET, Protocol.Reason.NONE);
            header.putInt(MAX_CONNECTIONS_OFFSET, maxConnections);
            header.putInt(PIPE_CAPACITY_OFFSET, pipeCapacity);
            header.putInt(RING_CAPACITY_OFFSET, ringCapacity);
            header.putLong(APP_PID_OFFSET, pid);
            header.putInt(MEMORY_FD_OFFSET, fd);
            header.putLong(MEMORY_INODE_OFFSET, (Long)Files.getAttribute(memory, "unix:ino"));
            header.putStringAscii(NAME_OFFSET, name);
            header.putLongRelease(APP_HEARTBEAT_OFFSET, nowMillis);
            header.putIntRelease(STATE_OFFSET, STATE_ATTACHING);

            // Same name and pid, not open here (OPEN_HERE): leftovers of a dead process that had our pid.
            Files.deleteIfExists(file);
            Files.deleteIfExists(building);
            Files.createFile(building, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            appFile = FileChannel.open(building, StandardOpenOption.READ, StandardOpenOption.WRITE);
            final byte[] copy = new byte[HEADER_LENGTH];
            header.getBytes(0, copy);
            writeFully(appFile, ByteBuffer.wrap(copy), 0);
            Files.move(building, file, StandardCopyOption.ATOMIC_MOVE);
            return new AppFile(file, appFile, fd, mapped, ringCapacity, pipeCapacity, maxConnections);
        }
        catch (final IOException | RuntimeException ex)
        {
            if (mapped != null)
            {
                IoUtil.unmap(mapped);
            }
            if (appFile != null)
            {
                appFile.close();
            }
            Files.deleteIfExists(building);
            libc.close(fd);
            OPEN_HERE.remove(file.toAbsolutePath().normalize());
            throw ex;
        }
    }

    /**
     * Daemon side, for tools and tests: read the app file {@code file}, map the memory it names and validate its
     * header. The memory is taken with {@code pidfd_getfd(2)}, which needs the privilege to ptrace the app; the daemon
     * itself also checks that the app file's owner could have (and that the memory is on tmpfs, not hugetlbfs). Scan for
     * names ending in {@link #SUFFIX} only: app files are built under a hidden {@code .tmp} name and appear under their
     * final name complete, in state ATTACHING.
     *
     * @throws AppFileException for a wrong magic, another VERSION, a truncated file, bad sizes or name, or a
     *                          descriptor that is not the app's sealed memory.
     */
    public static AppFile open(final Path file) throws IOException
    {
        final FileChannel appFile = FileChannel.open(file, Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS));
        try
        {
            final ByteBuffer read = ByteBuffer.allocate(HEADER_LENGTH);
            while (read.hasRemaining() && appFile.read(read, read.position()) > 0)
            {
                // until the header is read or the file ends
            }
            if (read.hasRemaining())
            {
                throw new AppFileException(
                    AppFileException.Kind.TRUNCATED, file + ": " + read.position() + " bytes, less than the header");
            }
            final UnsafeBuffer named = new UnsafeBuffer(read.array());
            checkMagicAndVersion(file, named);
            final MappedByteBuffer mapped = mapMemory(file, named.getLong(APP_PID_OFFSET),
                named.getInt(MEMORY_FD_OFFSET), named.getLong(MEMORY_INODE_OFFSET));
            try
            {
                final UnsafeBuffer header = new UnsafeBuffer(mapped);
                checkMagicAndVersion(file, header);
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
                        file + ": memory of " + mapped.capacity() + " bytes, the layout needs " + expected);
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
                return new AppFile(file, appFile, -1, mapped, ringCapacity, pipeCapacity, maxConnections);
            }
            catch (final IOException | RuntimeException ex)
            {
                IoUtil.unmap(mapped);
                throw ex;
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            appFile.close();
            throw ex;
        }
    }

    private static void checkMagicAndVersion(final Path file, final UnsafeBuffer header) throws AppFileException
    {
        final long magic = header.getLongVolatile(MAGIC_OFFSET);
        if (magic != MAGIC)
        {
            throw new AppFileException(AppFileException.Kind.BAD_MAGIC, file + ": magic 0x" + Long.toHexString(magic));
        }
        final int version = header.getInt(VERSION_OFFSET);
        if (version != VERSION)
        {
            throw new AppFileException(
                AppFileException.Kind.VERSION_MISMATCH, file + ": version " + version + ", expected " + VERSION);
        }
    }

    /**
     * Map the memory the app file names: descriptor {@code fd} of {@code pid}, taken with {@code pidfd_getfd(2)} (so it
     * keeps the app's access mode), open for reading and writing, sealed, of inode {@code inode}.
     */
    private static MappedByteBuffer mapMemory(final Path file, final long pid, final int fd, final long inode)
        throws IOException
    {
        final Libc.Calls libc = Libc.calls();
        final int pidfd = pid > 0 && pid <= Integer.MAX_VALUE ? (int)libc.syscall(Libc.SYS_PIDFD_OPEN, (int)pid, 0, 0) : -1;
        final int memory = pidfd >= 0 && fd >= 0 ? (int)libc.syscall(Libc.SYS_PIDFD_GETFD, pidfd, fd, 0) : -1;
        final String taking = memory < 0 ? Libc.lastError() : null;
        if (pidfd >= 0)
        {
            libc.close(pidfd);
        }
        if (memory < 0)
        {
            throw new AppFileException(AppFileException.Kind.BAD_MEMORY,
                file + ": cannot take descriptor " + fd + " of pid " + pid + ": " + taking);
        }
        try
        {
            final Path self = Path.of("/proc/self/fd/" + memory);
            String problem = descriptorProblem(libc.fcntl(memory, Libc.F_GETFL, 0), libc.fcntl(memory, Libc.F_GET_SEALS, 0));
            if (problem == null)
            {
                problem = inodeProblem((Long)Files.getAttribute(self, "unix:ino"), inode);
            }
            if (problem != null)
            {
                throw new AppFileException(AppFileException.Kind.BAD_MEMORY, file + ": descriptor " + fd + " of pid "
                    + pid + " " + problem);
            }
            try (FileChannel channel = FileChannel.open(self, StandardOpenOption.READ, StandardOpenOption.WRITE))
            {
                final long size = channel.size();
                if (size < HEADER_LENGTH || size > Integer.MAX_VALUE)
                {
                    throw new AppFileException(AppFileException.Kind.TRUNCATED, file + ": memory of " + size + " bytes");
                }
                return channel.map(FileChannel.MapMode.READ_WRITE, 0, size);
            }
        }
        finally
        {
            libc.close(memory);
        }
    }

    /**
     * Null if a descriptor with {@code flags} (F_GETFL) and {@code seals} (F_GET_SEALS; -1 if either failed) may be an
     * app's memory; else what is wrong, after "descriptor N of pid P". It must be open for reading and writing, its size
     * fixed for good (F_SEAL_SHRINK, and F_SEAL_SEAL so that no seal can come later: F_SEAL_FUTURE_WRITE would fail the
     * daemon's mapping), and writes allowed. Neither fcntl does I/O, so they are asked first, whatever file the
     * descriptor is.
     */
    public static String descriptorProblem(final int flags, final int seals)
    {
        if (flags < 0 || (flags & Libc.O_ACCMODE) != Libc.O_RDWR)
        {
            return "is not open for reading and writing";
        }
        if (seals < 0)
        {
            return "is not a memfd made with MFD_ALLOW_SEALING";
        }
        if ((seals & Libc.F_SEAL_SHRINK) == 0)
        {
            return "is not sealed against shrinking (F_SEAL_SHRINK)";
        }
        if ((seals & Libc.F_SEAL_SEAL) == 0)
        {
            return "is not sealed against further seals (F_SEAL_SEAL)";
        }
        if ((seals & (Libc.F_SEAL_WRITE | Libc.F_SEAL_FUTURE_WRITE)) != 0)
        {
            return "is sealed against writing";
        }
        return null;
    }

    /** Null if {@code inode} is the one the app file names, else what is wrong, after "descriptor N of pid P". */
    public static String inodeProblem(final long inode, final long named)
    {
        return inode == named ? null : "is inode " + inode + ", not the memory the app file names (inode " + named + ")";
    }

    /**
     * Daemon side: answer an app file that {@link #open} refused with {@code REJECTED} and {@code reason}, touching
     * only the first header fields, which every layout version keeps in place.
     *
     * @return false if the file is too short to hold them.
     */
    public static boolean reject(final Path file, final int reason) throws IOException
    {
        try (FileChannel channel = FileChannel.open(file, Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS)))
        {
            if (channel.size() < REASON_OFFSET + 4)
            {
                return false;
            }
            writeInt(channel, REASON_OFFSET, reason);
            writeInt(channel, STATE_OFFSET, STATE_REJECTED);
            return true;
        }
    }

    private static void writeInt(final FileChannel channel, final int offset, final int value) throws IOException
    {
        writeFully(channel, ByteBuffer.allocate(Integer.BYTES).order(ByteOrder.nativeOrder()).putInt(0, value), offset);
    }

    private static void writeFully(final FileChannel channel, final ByteBuffer bytes, final long offset) throws IOException
    {
        while (bytes.hasRemaining())
        {
            channel.write(bytes, offset + bytes.position());
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

    /**
     * Offset in {@link #buffer()} of the long that holds the slot's doorbell ({@link AppFileDescriptor#doorbellBit}):
     * the app's pipes ring it ({@link Pipe#doorbell}).
     */
    public int doorbellOffset(final int slot)
    {
        checkSlot(slot);
        return AppFileDescriptor.doorbellOffset(ringCapacity, slot);
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

    /**
     * The state in the memory. On the app side, while it says ATTACHING, a REJECTED in the app file (where the daemon
     * answers an app whose memory it could not take) is first copied into the memory, with its reason and the
     * daemon's pid and version.
     */
    public int state()
    {
        final int state = buffer.getIntVolatile(STATE_OFFSET);
        if (state == STATE_ATTACHING && memoryFd >= 0)
        {
            copyRejection();
            return buffer.getIntVolatile(STATE_OFFSET);
        }
        return state;
    }

    private void copyRejection()
    {
        final ByteBuffer read = ByteBuffer.allocate(DAEMON_VERSION_OFFSET + Integer.BYTES).order(ByteOrder.nativeOrder());
        try
        {
            while (read.hasRemaining() && appFile.read(read, read.position()) > 0)
            {
                // until the fields are read or the file ends
            }
        }
        catch (final IOException e)
        {
            return; // no answer to read: still attaching as far as the app can tell
        }
        if (!read.hasRemaining() && read.getInt(STATE_OFFSET) == STATE_REJECTED)
        {
            buffer.putLong(DAEMON_PID_OFFSET, read.getLong(DAEMON_PID_OFFSET));
            buffer.putInt(DAEMON_VERSION_OFFSET, read.getInt(DAEMON_VERSION_OFFSET));
            buffer.putInt(REASON_OFFSET, read.getInt(REASON_OFFSET));
            buffer.putIntRelease(STATE_OFFSET, STATE_REJECTED);
        }
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

    /**
     * Daemon: accept the app — daemon pid and version, a first heartbeat, then {@code STATE_ATTACHED} (release) in the
     * memory; then ATTACHED in the app file too, so that a scan passes it over.
     */
    public void markAttached(final long daemonPid, final long nowMillis) throws IOException
    {
        buffer.putLong(DAEMON_PID_OFFSET, daemonPid);
        buffer.putInt(DAEMON_VERSION_OFFSET, VERSION);
        buffer.putLongRelease(DAEMON_HEARTBEAT_OFFSET, nowMillis);
        buffer.putIntRelease(STATE_OFFSET, STATE_ATTACHED);
        writeInt(appFile, STATE_OFFSET, STATE_ATTACHED);
    }

    /** Daemon: refuse the app with a {@link Protocol.Reason}, in the app file (where the app looks for it). */
    public void markRejected(final long daemonPid, final int reason) throws IOException
    {
        writeFully(appFile, ByteBuffer.allocate(Long.BYTES).order(ByteOrder.nativeOrder()).putLong(0, daemonPid),
            DAEMON_PID_OFFSET);
        writeInt(appFile, DAEMON_VERSION_OFFSET, VERSION);
        writeInt(appFile, REASON_OFFSET, reason);
        writeInt(appFile, STATE_OFFSET, STATE_REJECTED);
    }

    public boolean isClosed()
    {
        return closed;
    }

    /**
     * Unmap the memory and close the app file (and, app side, the memfd). Nothing may touch {@link #buffer()}, the
     * rings or the pipes afterwards.
     */
    @Override
    public void close()
    {
        if (!closed)
        {
            closed = true;
            IoUtil.unmap(mapped);
            try
            {
                appFile.close();
            }
            catch (final IOException ignored)
            {
                // Nothing left to do with it.
            }
            if (memoryFd >= 0)
            {
                Libc.calls().close(memoryFd);
                OPEN_HERE.remove(path.toAbsolutePath().normalize());
            }
        }
    }

    /** Remove the app file (the mapping, if still open, stays valid until {@link #close()}). */
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
