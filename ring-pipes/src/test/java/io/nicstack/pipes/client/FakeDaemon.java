package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.NotificationPacer;
import io.nicstack.pipes.Pipe;
import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.pipes.Protocol;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * Plays the daemon's side of the app file in the test JVM: finds the app file, attaches (or ignores, or rejects) it,
 * beats its heart, answers LISTEN and CONNECT, accepts connections on request, feeds RX pipes with paced NOTIFYs and
 * drains TX pipes. Everything that touches the file runs on its own thread; tests talk to it through {@link #call}.
 */
final class FakeDaemon implements AutoCloseable
{
    enum Mode
    {
        ATTACH, IGNORE, REJECT_VERSION
    }

    /** One control-ring record as the daemon read it. */
    record Control(int type, long l0, int i8, int i12, long l16, long l24)
    {
    }

    static final int BUSY_PORT = 9999;
    static final int REFUSING_PORT = 1;

    private final Path dir;
    private final Mode mode;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Control> controls = new ConcurrentLinkedQueue<>();
    private volatile boolean running = true;
    volatile boolean heartbeat = true;
    /** The daemon pid written at the attach: this JVM's, or another process a test plays the daemon's process with. */
    volatile long pid = ProcessHandle.current().pid();
    /** While false, TX pipes are not read: committed bytes stay unreleased (a peer that acknowledges nothing). */
    private volatile boolean drainTx = true;
    /** While false, the control ring is not read (a daemon behind on this app). */
    volatile boolean readControl = true;
    /**
     * What each SEND_FILE's descriptor named when it was read, as the real daemon takes its duplicate then: the file's
     * real path, or "(closed)".
     */
    final ConcurrentLinkedQueue<String> filesTaken = new ConcurrentLinkedQueue<>();

    // Daemon-thread state.
    private AppFile file;
    private NotificationPacer pacer;
    private Pipe[] rx;
    private Pipe[] tx;
    private int[] generation;
    private long[] connectionIds;
    private ByteArrayOutputStream[] received;
    private byte[][] backlog;
    private int[] backlogSent;
    private final UnsafeBuffer message = new UnsafeBuffer(new byte[32]);

    FakeDaemon(final Path dir, final Mode mode)
    {
        this.dir = dir;
        this.mode = mode;
        try
        {
            // As the daemon's pipe server makes it at start: a client makes nothing where no daemon is.
            Files.createDirectories(dir.resolve(AppFile.APPS_DIRECTORY));
        }
        catch (final IOException e)
        {
            throw new java.io.UncheckedIOException(e);
        }
        thread = new Thread(this::run, "fake-daemon");
        thread.setDaemon(true);
        thread.start();
    }

    /** Stop reading the control ring; once this returns, the daemon reads no more of it until it is resumed. */
    void pauseControl()
    {
        readControl = false;
        call(d -> null); // a task runs at the start of a round, and the round it ends reads no control
    }

    /** Stop (or resume) reading TX pipes; once this returns, the daemon reads no more of them until resumed. */
    void drainTx(final boolean drain)
    {
        drainTx = drain;
        call(d -> null); // a task runs at the start of a round, and the round it ends reads no TX pipe
    }

    /**
     * Options for a client of this daemon in a test: 8 connections, 64 KiB pipes, the least ring capacity (a control
     * ring of 25 records, soon full), a 3 s attach timeout.
     */
    static ClientOptions smallOptions()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 8;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 1024;
        options.attachTimeoutMillis = 3000;
        return options;
    }

    /** Announce a connection from {@code remoteAddress:remotePort} to {@code listener}, and accept it. */
    PipeConnection accepted(final PipeListener listener, final int remoteAddress, final int remotePort)
        throws NicstackException
    {
        call(d -> d.accept(listener.port(), remoteAddress, remotePort));
        return listener.accept();
    }

    /** Run {@code action} on the daemon thread and wait for its result. */
    <T> T call(final Function<FakeDaemon, T> action)
    {
        final CompletableFuture<T> result = new CompletableFuture<>();
        tasks.add(() ->
        {
            try
            {
                result.complete(action.apply(this));
            }
            catch (final Throwable ex)
            {
                result.completeExceptionally(ex);
            }
        });
        try
        {
            return result.get(10, TimeUnit.SECONDS);
        }
        catch (final Exception ex)
        {
            throw new AssertionError("fake daemon task failed", ex);
        }
    }

    AppFile file()
    {
        return file;
    }

    /** Take a free slot for a new connection on {@code localPort} and send ACCEPTED; returns the connection id. */
    long accept(final int localPort, final int remoteAddress, final int remotePort)
    {
        return announceAccepted(openConnection(localPort, remoteAddress, remotePort), localPort, remoteAddress, remotePort);
    }

    private long announceAccepted(final long id, final int localPort, final int remoteAddress, final int remotePort)
    {
        message.setMemory(0, 32, (byte)0);
        message.putLong(0, id);
        message.putInt(8, localPort);
        message.putInt(12, remoteAddress);
        message.putInt(16, remotePort);
        event(Protocol.ACCEPTED);
        return id;
    }

    /**
     * As {@link #accept}, but the RX pipe announced with its head at {@code rxHead} and its tail at {@code rxTail} (as a
     * broken daemon might leave them; an honest one starts every connection at 0).
     */
    long acceptWithRxPositions(final int localPort, final int remoteAddress, final int remotePort, final long rxHead,
        final long rxTail)
    {
        final long id = openConnection(localPort, remoteAddress, remotePort);
        final Pipe pipe = rx[Protocol.slotOf(id)];
        final int positions = pipe.index(0) - PipeDescriptor.DATA_OFFSET;
        pipe.buffer().putLongRelease(positions + PipeDescriptor.TAIL_OFFSET, rxTail);
        pipe.buffer().putLongRelease(positions + PipeDescriptor.HEAD_OFFSET, rxHead);
        return announceAccepted(id, localPort, remoteAddress, remotePort);
    }

    /** Open a slot and answer CONNECTED for {@code requestId} (without reading any CONNECT). */
    long connected(final long requestId, final int remoteAddress, final int remotePort)
    {
        final long id = openConnection(49152, remoteAddress, remotePort);
        message.setMemory(0, 32, (byte)0);
        message.putLong(0, requestId);
        message.putLong(8, id);
        message.putInt(16, 49152);
        message.putInt(20, remoteAddress);
        message.putInt(24, remotePort);
        event(Protocol.CONNECTED);
        return id;
    }

    /** Queue {@code bytes} for the connection's RX pipe; the loop writes them as space frees and notifies, paced. */
    boolean sendRx(final long connectionId, final byte[] bytes)
    {
        final int slot = Protocol.slotOf(connectionId);
        backlog[slot] = bytes;
        backlogSent[slot] = 0;
        return true;
    }

    boolean rxBacklogDone(final long connectionId)
    {
        final int slot = Protocol.slotOf(connectionId);
        return backlog[slot] == null;
    }

    /** Everything read from the connection's TX pipe so far. */
    byte[] received(final long connectionId)
    {
        return received[Protocol.slotOf(connectionId)].toByteArray();
    }

    boolean event(final int type, final long id, final int reason)
    {
        message.setMemory(0, 32, (byte)0);
        message.putLong(0, id);
        message.putInt(8, reason);
        event(type);
        return true;
    }

    /** CLOSED with TcpConnection's close reason and the last ICMP error believed ({@code type << 8 | code}). */
    boolean closed(final long connectionId, final int tcpReason, final int icmpError)
    {
        message.setMemory(0, 32, (byte)0);
        message.putLong(0, connectionId);
        message.putInt(8, tcpReason);
        message.putInt(12, icmpError);
        event(Protocol.CLOSED);
        return true;
    }

    /** Answer a SEND_FILE as the daemon does: append {@code fileBytes} to the TX pipe (as the producer), then FILE_SENT. */
    boolean fileSent(final long connectionId, final int reason, final byte[] fileBytes)
    {
        appendTx(connectionId, fileBytes);
        message.setMemory(0, 32, (byte)0);
        message.putLong(0, connectionId);
        message.putInt(8, reason);
        message.putLong(16, fileBytes.length);
        event(Protocol.FILE_SENT);
        return true;
    }

    /** Part of a SEND_FILE as the daemon fills it in: append {@code fileBytes} to the TX pipe, no answer yet. */
    boolean appendTx(final long connectionId, final byte[] fileBytes)
    {
        final Pipe pipe = tx[Protocol.slotOf(connectionId)];
        if (pipe.write(fileBytes, 0, fileBytes.length) != fileBytes.length)
        {
            throw new IllegalStateException("TX pipe full");
        }
        return true;
    }

    /** Send a raw NOTIFY (for stale-id tests). */
    boolean notify(final long connectionId, final long tail)
    {
        message.putLong(0, connectionId);
        message.putLong(8, tail);
        return file.notificationRing().write(Protocol.NOTIFY, message, 0, Protocol.NOTIFY_LENGTH);
    }

    List<Control> controlsOfType(final int type)
    {
        final List<Control> list = new ArrayList<>();
        for (final Control control : controls)
        {
            if (control.type() == type)
            {
                list.add(control);
            }
        }
        return list;
    }

    @Override
    public void close()
    {
        running = false;
        try
        {
            thread.join(5000);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    // ---- daemon thread ----------------------------------------------------------------------

    private void run()
    {
        long lastBeat = 0;
        try
        {
            while (running)
            {
                Runnable task;
                while ((task = tasks.poll()) != null)
                {
                    task.run();
                }
                if (file == null)
                {
                    findApp();
                }
                else if (mode == Mode.ATTACH && file.state() == AppFileDescriptor.STATE_DETACHED)
                {
                    // The app left: drain what it sent on its way out (its CLOSEs), then stop.
                    file.controlRing().read(this::onControl);
                }
                else if (mode == Mode.ATTACH && file.state() == AppFileDescriptor.STATE_ATTACHED)
                {
                    final long now = System.currentTimeMillis();
                    if (heartbeat && now - lastBeat >= 20)
                    {
                        file.daemonHeartbeat(now);
                        lastBeat = now;
                    }
                    if (readControl)
                    {
                        file.controlRing().read(this::onControl);
                    }
                    pumpPipes();
                }
                Thread.onSpinWait();
                Thread.yield();
            }
        }
        catch (final Throwable ex)
        {
            ex.printStackTrace();
        }
        finally
        {
            if (file != null)
            {
                file.close();
            }
        }
    }

    private void findApp() throws IOException
    {
        final Path apps = dir.resolve(AppFile.APPS_DIRECTORY);
        if (!Files.isDirectory(apps))
        {
            return;
        }
        try (Stream<Path> files = Files.list(apps))
        {
            for (final Path path : (Iterable<Path>)files::iterator)
            {
                if (!path.toString().endsWith(AppFile.SUFFIX))
                {
                    continue;
                }
                final AppFile candidate = AppFile.open(path);
                if (candidate.state() != AppFileDescriptor.STATE_ATTACHING)
                {
                    candidate.close();
                    continue;
                }
                file = candidate;
                final int slots = file.maxConnections();
                pacer = new NotificationPacer(slots);
                rx = new Pipe[slots];
                tx = new Pipe[slots];
                generation = new int[slots];
                connectionIds = new long[slots];
                received = new ByteArrayOutputStream[slots];
                backlog = new byte[slots][];
                backlogSent = new int[slots];
                for (int i = 0; i < slots; i++)
                {
                    rx[i] = file.rx(i);
                    tx[i] = file.tx(i);
                }
                switch (mode)
                {
                    case ATTACH -> file.markAttached(pid, System.currentTimeMillis());
                    case REJECT_VERSION -> file.markRejected(ProcessHandle.current().pid(), Protocol.Reason.VERSION_MISMATCH);
                    case IGNORE ->
                    {
                    }
                }
                return;
            }
        }
    }

    private void onControl(final int type, final org.agrona.MutableDirectBuffer buffer, final int index, final int length)
    {
        final Control control = new Control(
            type, buffer.getLong(index), buffer.getInt(index + 8), buffer.getInt(index + 12), buffer.getLong(index + 16),
            buffer.getLong(index + 24));
        controls.add(control);
        switch (type)
        {
            case Protocol.LISTEN ->
            {
                if (control.i8() == BUSY_PORT)
                {
                    event(Protocol.ERROR, control.l0(), Protocol.Reason.PORT_IN_USE);
                }
                else
                {
                    event(Protocol.LISTENING, control.l0(), control.i8() == 0 ? 40000 : control.i8());
                }
            }
            case Protocol.CONNECT ->
            {
                if (control.i12() == REFUSING_PORT)
                {
                    event(Protocol.ERROR, control.l0(), Protocol.Reason.REFUSED);
                }
                else
                {
                    final long id = openConnection(49152, control.i8(), control.i12());
                    message.setMemory(0, 32, (byte)0);
                    message.putLong(0, control.l0());
                    message.putLong(8, id);
                    message.putInt(16, 49152);
                    message.putInt(20, control.i8());
                    message.putInt(24, control.i12());
                    event(Protocol.CONNECTED);
                }
            }
            case Protocol.SEND_FILE ->
            {
                try
                {
                    filesTaken.add(Path.of("/proc/self/fd/" + control.i8()).toRealPath().toString());
                }
                catch (final IOException ex)
                {
                    filesTaken.add("(closed)");
                }
            }
            case Protocol.CLOSE ->
            {
                final int slot = Protocol.slotOf(control.l0());
                if (connectionIds[slot] == control.l0())
                {
                    pumpPipes(); // what was committed before CLOSE is part of the stream
                    connectionIds[slot] = -1;
                    file.freeSlot(slot);
                }
            }
            default ->
            {
            }
        }
    }

    private long openConnection(final int localPort, final int remoteAddress, final int remotePort)
    {
        for (int slot = 0; slot < connectionIds.length; slot++)
        {
            if (file.slotState(slot) == AppFileDescriptor.SLOT_FREE)
            {
                final long id = Protocol.connectionId(slot, ++generation[slot]);
                file.openSlot(slot, id, localPort, remoteAddress, remotePort);
                // openSlot reset the pipes through flyweights of its own: wrap ours again, or their caches are stale.
                rx[slot] = file.rx(slot, rx[slot]);
                tx[slot] = file.tx(slot, tx[slot]);
                connectionIds[slot] = id;
                received[slot] = new ByteArrayOutputStream();
                pacer.reset(slot);
                return id;
            }
        }
        throw new IllegalStateException("no free slot");
    }

    private void event(final int type)
    {
        if (!file.eventRing().write(type, message, 0, Protocol.EVENT_LENGTH))
        {
            throw new IllegalStateException("event ring full");
        }
    }

    private void pumpPipes()
    {
        final byte[] chunk = new byte[4096];
        for (int slot = 0; slot < connectionIds.length; slot++)
        {
            if (connectionIds[slot] <= 0)
            {
                continue;
            }
            // TX: read what the app committed, then "acknowledge" it.
            final Pipe txPipe = tx[slot];
            int count;
            while (drainTx && (count = txPipe.read(chunk, 0, chunk.length)) > 0)
            {
                received[slot].write(chunk, 0, count);
            }
            // RX: push the backlog as the app frees space, notify with Enso pacing.
            final Pipe rxPipe = rx[slot];
            final byte[] bytes = backlog[slot];
            if (bytes != null)
            {
                backlogSent[slot] += rxPipe.write(bytes, backlogSent[slot], bytes.length - backlogSent[slot]);
                if (backlogSent[slot] == bytes.length)
                {
                    backlog[slot] = null;
                }
            }
            final long tail = rxPipe.tail();
            if (pacer.isPending(slot, tail) && pacer.shouldNotify(slot, tail, rxPipe.headVolatile()))
            {
                final UnsafeBuffer notification = new UnsafeBuffer(new byte[Protocol.NOTIFY_LENGTH]);
                notification.putLong(0, connectionIds[slot]);
                notification.putLong(8, tail);
                file.notificationRing().write(Protocol.NOTIFY, notification, 0, Protocol.NOTIFY_LENGTH);
            }
        }
    }
}
