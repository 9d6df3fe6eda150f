package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;

import io.nicstack.daemon.Netns;
import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Libc;
import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.pipes.Protocol;

/**
 * The app side of the contract played by hand: the memory (a sealed memfd) and the app file naming it, the rings through
 * Agrona, the pipes by their descriptor.
 */
final class TestApp implements AutoCloseable
{
    /** One event or notification as the app reads it. */
    record Event(int type, UnsafeBuffer body)
    {
        long longAt(final int offset)
        {
            return body.getLong(offset);
        }

        int intAt(final int offset)
        {
            return body.getInt(offset);
        }

        @Override
        public String toString()
        {
            return "Event(" + type + ", " + longAt(0) + ", " + intAt(8) + ")";
        }
    }

    /** The app file. */
    final Path path;
    final int ringCapacity;
    final int pipeCapacity;
    final int maxConnections;
    final MappedByteBuffer mapped;
    /** The memory. */
    final UnsafeBuffer file;
    final OneToOneRingBuffer control;
    final OneToOneRingBuffer events;
    final OneToOneRingBuffer notifications;
    final List<Event> received = new ArrayList<>();
    final List<Event> notified = new ArrayList<>();
    /** Whether {@link #read} and {@link #write} ring the doorbell, as the client library does (a hostile app does not). */
    boolean rings = true;
    private final UnsafeBuffer message = new UnsafeBuffer(new byte[64]);
    /** This process's memfd, or -1 when a {@link Holder} holds the memory. */
    final int memoryFd;

    /**
     * Memory of this process (a memfd sealed as apps seal it), named in the app file as descriptor {@link #memoryFd} of
     * {@code pid}: a pid that is not this process's names some other descriptor, or none.
     */
    TestApp(final Path appsDirectory, final String name, final long pid, final int ringCapacity, final int pipeCapacity,
        final int maxConnections) throws IOException
    {
        this(appsDirectory, name, pid, ownMemory(AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections),
            AppFile.MEMORY_SEALS), -1, ringCapacity, pipeCapacity, maxConnections);
    }

    /** Memory of this process with {@code seals} (0: none, a memfd that can shrink), named as descriptor of this pid. */
    static TestApp withSeals(final Path appsDirectory, final String name, final int seals, final int ringCapacity,
        final int pipeCapacity, final int maxConnections) throws IOException
    {
        return new TestApp(appsDirectory, name, ProcessHandle.current().pid(),
            ownMemory(AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections), seals), -1, ringCapacity,
            pipeCapacity, maxConnections);
    }

    /** The memory {@code holder} made, named as its descriptor. */
    TestApp(final Path appsDirectory, final String name, final Holder holder, final int ringCapacity, final int pipeCapacity,
        final int maxConnections) throws IOException
    {
        this(appsDirectory, name, holder.pid(), -1, holder.fd, ringCapacity, pipeCapacity, maxConnections);
    }

    private TestApp(final Path appsDirectory, final String name, final long pid, final int ownFd, final int holderFd,
        final int ringCapacity, final int pipeCapacity, final int maxConnections) throws IOException
    {
        this.ringCapacity = ringCapacity;
        this.pipeCapacity = pipeCapacity;
        this.maxConnections = maxConnections;
        this.memoryFd = ownFd;
        path = appsDirectory.resolve(name + "-" + pid + ".app");
        final long length = AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections);
        final Path memory = Path.of(ownFd >= 0 ? "/proc/self/fd/" + ownFd : "/proc/" + pid + "/fd/" + holderFd);
        try (FileChannel channel = FileChannel.open(memory, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, length);
        }
        file = new UnsafeBuffer(mapped);
        file.putLong(AppFileDescriptor.MAGIC_OFFSET, AppFileDescriptor.MAGIC);
        file.putInt(AppFileDescriptor.VERSION_OFFSET, AppFileDescriptor.VERSION);
        file.putInt(AppFileDescriptor.MAX_CONNECTIONS_OFFSET, maxConnections);
        file.putInt(AppFileDescriptor.PIPE_CAPACITY_OFFSET, pipeCapacity);
        file.putInt(AppFileDescriptor.RING_CAPACITY_OFFSET, ringCapacity);
        file.putLong(AppFileDescriptor.APP_PID_OFFSET, pid);
        file.putInt(AppFileDescriptor.MEMORY_FD_OFFSET, ownFd >= 0 ? ownFd : holderFd);
        file.putLong(AppFileDescriptor.MEMORY_INODE_OFFSET, (Long)Files.getAttribute(memory, "unix:ino"));
        final int ringLength = AppFileDescriptor.ringLength(ringCapacity);
        control = new OneToOneRingBuffer(new UnsafeBuffer(file, AppFileDescriptor.controlRingOffset(), ringLength));
        events = new OneToOneRingBuffer(new UnsafeBuffer(file, AppFileDescriptor.eventRingOffset(ringCapacity), ringLength));
        notifications = new OneToOneRingBuffer(new UnsafeBuffer(file, AppFileDescriptor.notificationRingOffset(ringCapacity), ringLength));
        writeAppFile(); // state 0 as yet: the scanner passes it over
    }

    /** A memfd of {@code length} bytes with {@code seals}. */
    static int ownMemory(final long length, final int seals) throws IOException
    {
        final Libc.Calls libc = Libc.calls();
        final int fd = libc.memfd_create("nicstack-test-app", Libc.MFD_CLOEXEC | Libc.MFD_ALLOW_SEALING);
        if (fd < 0 || libc.ftruncate(fd, length) != 0 || (seals != 0 && libc.fcntl(fd, Libc.F_ADD_SEALS, seals) != 0))
        {
            throw new IOException("memfd: " + Libc.lastError());
        }
        return fd;
    }

    /** The memory's header, as it is now, into the app file. */
    void writeAppFile() throws IOException
    {
        final byte[] header = new byte[AppFileDescriptor.HEADER_LENGTH];
        file.getBytes(0, header);
        Files.write(path, header);
    }

    /** ATTACHING in the memory, then the app file a copy of the header. */
    TestApp attach()
    {
        file.putIntRelease(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_ATTACHING);
        try
        {
            writeAppFile();
        }
        catch (final IOException e)
        {
            throw new java.io.UncheckedIOException(e);
        }
        return this;
    }

    /** The state in the memory, or REJECTED if the app file says so while the memory says ATTACHING. */
    int state()
    {
        final int state = file.getIntVolatile(AppFileDescriptor.STATE_OFFSET);
        return state == AppFileDescriptor.STATE_ATTACHING && appFileField(AppFileDescriptor.STATE_OFFSET) == AppFileDescriptor.STATE_REJECTED
            ? AppFileDescriptor.STATE_REJECTED : state;
    }

    /** The reason of a rejection (in the app file), else the memory's. */
    int reason()
    {
        return appFileField(AppFileDescriptor.STATE_OFFSET) == AppFileDescriptor.STATE_REJECTED
            ? appFileField(AppFileDescriptor.REASON_OFFSET) : file.getIntVolatile(AppFileDescriptor.REASON_OFFSET);
    }

    private int appFileField(final int offset)
    {
        try
        {
            final byte[] header = Files.readAllBytes(path);
            return header.length >= offset + 4 ? new UnsafeBuffer(header).getInt(offset) : -1;
        }
        catch (final IOException e)
        {
            return -1;
        }
    }

    /** A control message of {@code length} bytes: long @0, int @8, int @12, long @16. */
    void send(final int type, final int length, final long l0, final int i8, final int i12, final long l16)
    {
        message.setMemory(0, 64, (byte)0);
        message.putLong(0, l0);
        message.putInt(8, i8);
        message.putInt(12, i12);
        message.putLong(16, l16);
        if (!control.write(type, message, 0, length))
        {
            throw new IllegalStateException("control ring full");
        }
    }

    /** SEND_FILE: long id @0, int fd @8, long position @16, long length @24. */
    void sendFile(final long connectionId, final int fd, final long position, final long length)
    {
        message.setMemory(0, 64, (byte)0);
        message.putLong(0, connectionId);
        message.putInt(8, fd);
        message.putLong(16, position);
        message.putLong(24, length);
        if (!control.write(Protocol.SEND_FILE, message, 0, Protocol.CONTROL_LENGTH))
        {
            throw new IllegalStateException("control ring full");
        }
    }

    void send(final int type, final long l0, final int i8, final int i12)
    {
        send(type, Protocol.CONTROL_LENGTH, l0, i8, i12, 0);
    }

    /** Take what the daemon posted on the event and notification rings. */
    void poll()
    {
        events.read((type, buffer, index, length) ->
        {
            final byte[] copy = new byte[length];
            buffer.getBytes(index, copy);
            received.add(new Event(type, new UnsafeBuffer(copy)));
        });
        notifications.read((type, buffer, index, length) ->
        {
            final byte[] copy = new byte[length];
            buffer.getBytes(index, copy);
            notified.add(new Event(type, new UnsafeBuffer(copy)));
        });
    }

    Event take(final int type)
    {
        poll();
        for (int i = 0; i < received.size(); i++)
        {
            if (received.get(i).type() == type)
            {
                return received.remove(i);
            }
        }
        return null;
    }

    UnsafeBuffer rxPipe(final int slot)
    {
        return new UnsafeBuffer(file, (int)AppFileDescriptor.rxPipeOffset(ringCapacity, pipeCapacity, slot), PipeDescriptor.length(pipeCapacity));
    }

    UnsafeBuffer txPipe(final int slot)
    {
        return new UnsafeBuffer(file, (int)AppFileDescriptor.txPipeOffset(ringCapacity, pipeCapacity, slot), PipeDescriptor.length(pipeCapacity));
    }

    /** Consume up to {@code max} readable RX bytes into {@code sink}, then ring the doorbell; returns the count. */
    int read(final int slot, final byte[] sink, final int max)
    {
        final UnsafeBuffer pipe = rxPipe(slot);
        final long tail = pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET);
        final long head = pipe.getLong(PipeDescriptor.HEAD_OFFSET);
        final int n = (int)Math.min(max, tail - head);
        for (int i = 0; i < n; i++)
        {
            sink[i] = pipe.getByte(PipeDescriptor.DATA_OFFSET + (int)((head + i) & (pipeCapacity - 1)));
        }
        if (n > 0)
        {
            pipe.putLongRelease(PipeDescriptor.HEAD_OFFSET, head + n);
            ringIfRinging(slot);
        }
        return n;
    }

    /** Append up to {@code length} bytes of {@code source} from {@code offset} to the TX pipe, then ring the doorbell. */
    int write(final int slot, final byte[] source, final int offset, final int length)
    {
        final UnsafeBuffer pipe = txPipe(slot);
        final long tail = pipe.getLong(PipeDescriptor.TAIL_OFFSET);
        final long head = pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET);
        final int n = (int)Math.min(length, pipeCapacity - (tail - head));
        for (int i = 0; i < n; i++)
        {
            pipe.putByte(PipeDescriptor.DATA_OFFSET + (int)((tail + i) & (pipeCapacity - 1)), source[offset + i]);
        }
        if (n > 0)
        {
            pipe.putLongRelease(PipeDescriptor.TAIL_OFFSET, tail + n);
            ringIfRinging(slot);
        }
        return n;
    }

    private void ringIfRinging(final int slot)
    {
        if (rings)
        {
            ring(slot);
        }
    }

    /** Set the slot's doorbell bit (a CAS: the daemon clears the word concurrently), after the position it announces. */
    void ring(final int slot)
    {
        final int at = AppFileDescriptor.doorbellOffset(ringCapacity, slot);
        final long bit = AppFileDescriptor.doorbellBit(slot);
        long word;
        do
        {
            word = file.getLongVolatile(at);
        }
        while (!file.compareAndSetLong(at, word, word | bit));
    }

    /** The doorbell word that holds {@code slot}'s bit, as it is now. */
    long doorbellWord(final int slot)
    {
        return file.getLongVolatile(AppFileDescriptor.doorbellOffset(ringCapacity, slot));
    }

    @Override
    public void close()
    {
        IoUtil.unmap(mapped);
        if (memoryFd >= 0)
        {
            Libc.calls().close(memoryFd);
        }
    }

    /**
     * Another process that holds an app's memory: python, as root or as another user, making a sealed memfd, mapping
     * it and printing its descriptor number; then, a line at a time: {@code open PATH} (prints the descriptor),
     * {@code name} (a process name that is not UTF-8), {@code undump} (PR_SET_DUMPABLE 0), an empty line to exit.
     * It gets SIGKILL when the test JVM dies ({@link Netns#dieWithParent()}; a {@code prefix} that changes the
     * process's user drops that signal, but such a holder exits at the end of its input): one that holds a file of a
     * FUSE mount whose server hangs would otherwise, when its input ends, wait for ever to close it.
     */
    static final class Holder implements AutoCloseable
    {
        private static final String SCRIPT = String.join("\n",
            "import ctypes, fcntl, mmap, os, sys",
            "length = int(sys.argv[1])",
            "fd = os.memfd_create('nicstack-test-app', os.MFD_ALLOW_SEALING)",
            "os.ftruncate(fd, length)",
            "fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)",
            "m = mmap.mmap(fd, length)",
            "print(fd, flush=True)",
            "libc = ctypes.CDLL(None)",
            "while True:",
            "    command = sys.stdin.readline().split()",
            "    if not command: break",
            "    if command[0] == 'open': print(os.open(command[1], os.O_RDONLY), flush=True)",
            "    if command[0] == 'name': print(libc.prctl(15, b'app\\xff\\xfe', 0, 0, 0), flush=True)",
            "    if command[0] == 'undump': print(libc.prctl(4, 0, 0, 0, 0), flush=True)",
            "    if command[0] == 'dup2': print(os.dup2(int(command[1]), int(command[2])), flush=True)");

        private final Process process;
        private final java.io.PrintStream in;
        private final java.io.BufferedReader out;
        final int fd;

        /** A holder of memory for the layout of these sizes, run with {@code prefix} before python (setpriv ...). */
        Holder(final int ringCapacity, final int pipeCapacity, final int maxConnections, final String... prefix)
            throws IOException
        {
            final List<String> command = new ArrayList<>(Netns.dieWithParent());
            command.addAll(List.of(prefix));
            command.addAll(List.of("/usr/bin/python3", "-c", SCRIPT,
                Long.toString(AppFileDescriptor.fileLength(ringCapacity, pipeCapacity, maxConnections))));
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
            in = new java.io.PrintStream(process.getOutputStream(), true);
            out = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream()));
            fd = Integer.parseInt(answer());
        }

        long pid()
        {
            return process.pid();
        }

        /** Send one command line; its answer. */
        String command(final String line) throws IOException
        {
            in.println(line);
            return answer();
        }

        private String answer() throws IOException
        {
            final String line = out.readLine();
            if (line == null)
            {
                throw new IOException("the holder exited");
            }
            return line.strip();
        }

        /** Exit, and wait until it has. */
        @Override
        public void close() throws IOException
        {
            in.println();
            process.destroy();
            try
            {
                process.waitFor();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
