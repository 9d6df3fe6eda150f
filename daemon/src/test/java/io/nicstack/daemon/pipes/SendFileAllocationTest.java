package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.linux.Linux;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol;
import io.nicstack.pipes.Protocol.Reason;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;

/**
 * SEND_FILE allocates nothing per request on the event loop once its descriptor is kept: the daemon checks with kcmp
 * that the app's descriptor is still the file it took before and duplicates its own (AppFiles.reuse), reads the file
 * into the TX pipe and answers FILE_SENT. The app (played by hand, as in {@link PipeServerTest}) sends a small file
 * back to back on one connection; one thread and a simulated clock drive the loop, and the bytes allocated are
 * counted around the daemon's side only (the pipe server's and stack A's work), after a warm-up, per request. The app
 * directory's scanner has its own thread, as in the daemon; attaching is the only step that waits for it.
 */
class SendFileAllocationTest
{
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
    private static final int A_IP = 0xC612_0002; // 198.18.0.2
    private static final int PORT = 8080;
    private static final int RING = 1 << 16;
    private static final int PIPE = 1 << 16;
    /** Six segments: a request's own cost is not lost among its segments'. */
    private static final int FILE_LENGTH = 8192;
    private static final int WARM_REQUESTS = 3_000;
    private static final int REQUESTS = 2_000;
    /**
     * JVM noise only (the runtime resolving the constants of code it deoptimised, up to 1.8 KiB seen): through the
     * variadic bindings of kcmp and fcntl a request cost 390 B, 780,000 B for these.
     */
    private static final long ALLOWED_BYTES = 4096;

    @TempDir
    Path shm;

    private long now = 1_000_000_000L;
    private NetStack a;
    private NetStack b;
    private PipeCounters counters;
    private PipeServer server;
    /** Bytes the daemon's side (pipe server, stack A) allocated while {@link #counting}. */
    private long daemonBytes;
    private boolean counting;

    /** The remote end: reads and drops. */
    private static final class Sink implements TcpHandler
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[65536]);
        long read;

        @Override
        public void onReadable(final TcpConnection c)
        {
            int n;
            while ((n = c.read(buffer, 0, buffer.capacity())) > 0)
            {
                read += n;
            }
        }
    }

    @BeforeEach
    void setUp() throws IOException
    {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported(), "no per-thread allocation counter");
        THREADS.setThreadAllocatedMemoryEnabled(true);
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        counters = PipeCounters.inMemory();
        server = new PipeServer(a, shm, counters, () -> now, () -> now / 1_000_000L, 1L << 30,
            new PrintStream(OutputStream.nullOutputStream())).start();
    }

    @AfterEach
    void tearDown()
    {
        if (server != null)
        {
            server.close();
        }
    }

    /** One round of the loop: the daemon's side counted while {@link #counting}, then the remote's. */
    private int step()
    {
        final long before = THREADS.getCurrentThreadAllocatedBytes();
        int work = server.doWork() + a.poll(now);
        if (counting)
        {
            daemonBytes += THREADS.getCurrentThreadAllocatedBytes() - before;
        }
        work += b.poll(now);
        now += work > 0 ? 20_000L : 1_000_000L;
        return work;
    }

    private TestApp.Event await(final TestApp app, final int type)
    {
        for (int i = 0; i < 100_000; i++)
        {
            final TestApp.Event e = app.take(type);
            if (e != null)
            {
                return e;
            }
            step();
        }
        throw new AssertionError("no event " + type + "; have " + app.received + "\n" + counters);
    }

    /** {@code count} SEND_FILEs of the whole file, one after the other's FILE_SENT. */
    private void sendFiles(final TestApp app, final long id, final int fd, final int count)
    {
        for (int i = 0; i < count; i++)
        {
            app.sendFile(id, fd, 0, FILE_LENGTH);
            final TestApp.Event sent = await(app, Protocol.FILE_SENT);
            assertEquals(id, sent.longAt(0));
            assertEquals(Reason.NONE, sent.intAt(8), "file sent");
        }
    }

    @Test
    void aSendFileOfAKeptDescriptorAllocatesNothingOnTheLoop() throws IOException
    {
        final TestApp app = new TestApp(server.appsDirectory(), "alloc", ProcessHandle.current().pid(), RING, PIPE, 2)
            .attach();
        final Path body = Files.write(shm.resolve("body.bin"), new byte[FILE_LENGTH]);
        final int fd = Linux.LIBC.open(body.toString(), Linux.O_RDONLY | Linux.O_CLOEXEC);
        assertTrue(fd >= 0, "open");
        try
        {
            // The directory scanner runs on its own thread, as in the daemon (inline, its scans would be counted).
            final long attachDeadline = System.nanoTime() + 10_000_000_000L;
            while (app.state() == AppFileDescriptor.STATE_ATTACHING && System.nanoTime() - attachDeadline < 0)
            {
                step();
                LockSupport.parkNanos(100_000);
            }
            assertEquals(AppFileDescriptor.STATE_ATTACHED, app.state());
            app.send(Protocol.LISTEN, 7, PORT, 8);
            await(app, Protocol.LISTENING);
            final Sink sink = new Sink();
            b.tcp().connect(A_IP, PORT, sink, null);
            final long id = await(app, Protocol.ACCEPTED).longAt(0);

            sendFiles(app, id, fd, WARM_REQUESTS);
            counting = true;
            sendFiles(app, id, fd, REQUESTS);
            counting = false;

            final int requests = WARM_REQUESTS + REQUESTS;
            assertEquals(requests, counters.get(PipeCounter.FILES_SENT));
            assertEquals(requests - 1, counters.get(PipeCounter.FILE_DESCRIPTORS_REUSED), "kept after the first");
            for (int i = 0; i < 10_000 && sink.read < (long)requests * FILE_LENGTH; i++)
            {
                step();
            }
            assertEquals((long)requests * FILE_LENGTH, sink.read, "every byte at the remote");
            final long allocated = daemonBytes;
            assertTrue(allocated < ALLOWED_BYTES, () -> allocated + " B on the loop for " + REQUESTS + " SEND_FILEs ("
                + allocated / REQUESTS + " B per request)");
        }
        finally
        {
            Linux.closeQuietly(fd);
            app.close();
        }
    }
}
