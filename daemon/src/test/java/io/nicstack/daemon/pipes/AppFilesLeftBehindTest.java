package io.nicstack.daemon.pipes;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The files apps leave behind when a daemon stops: a daemon that exits leaves each attached app its file (ATTACHED on
 * disk; the app deletes it when it closes), so an app that dies while no daemon runs leaves it for the next daemon to
 * delete. Two pipe servers in turn on one shm directory, each on its own stack, scanning inline on the test's clock.
 */
class AppFilesLeftBehindTest
{
    private static final int RING = 1 << 12;
    private static final int PIPE = 1 << 12;

    @TempDir
    Path shm;

    private long now = 1_000_000_000L;
    private final long self = ProcessHandle.current().pid();
    private final List<PipeServer> servers = new ArrayList<>();
    private PipeServer server;
    private NetStack stack;
    private PipeCounters counters;
    private ByteArrayOutputStream logged;

    @AfterEach
    void tearDown()
    {
        servers.forEach(PipeServer::close);
    }

    /** A daemon's pipe server, started: the current one from now on. */
    private PipeServer startServer() throws IOException
    {
        final MemoryWire wire = MemoryWire.pair(1500, 64);
        stack = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        counters = PipeCounters.inMemory();
        logged = new ByteArrayOutputStream();
        server = new PipeServer(stack, shm, counters, () -> now, () -> now / 1_000_000L, 1L << 30,
            new PrintStream(logged, true)).scanInline().start();
        servers.add(server);
        return server;
    }

    /** Run the current server's loop for {@code nanos} of the test's clock. */
    private void idle(final long nanos)
    {
        final long end = now + nanos;
        while (now - end < 0)
        {
            server.doWork();
            stack.poll(now);
            now += 1_000_000L;
        }
    }

    private void awaitAttached(final TestApp app)
    {
        for (int i = 0; i < 1000 && app.state() == AppFileDescriptor.STATE_ATTACHING; i++)
        {
            idle(1_000_000L);
        }
        assertEquals(AppFileDescriptor.STATE_ATTACHED, app.state(), "attached\n" + logged);
    }

    private static int stateOnDisk(final Path path) throws IOException
    {
        return new UnsafeBuffer(Files.readAllBytes(path)).getInt(AppFileDescriptor.STATE_OFFSET);
    }

    /**
     * The review's repro, one daemon after the other: an app attached to the first daemon, which stopped, then the
     * app was killed. Its file, ATTACHED, stayed for ever: the next daemon deleted only REJECTED files. Now the next
     * daemon's scanner deletes it, counts it and says so; the file of an app that lives on is kept.
     */
    @Test
    void theNextDaemonDeletesTheFileOfAnAppThatDiedWhileNoDaemonRan() throws Exception
    {
        startServer();
        final TestApp.Holder holder = new TestApp.Holder(RING, PIPE, 1);
        final TestApp dies = new TestApp(server.appsDirectory(), "bulk", holder, RING, PIPE, 1).attach();
        final TestApp lives = new TestApp(server.appsDirectory(), "lives", self, RING, PIPE, 1).attach();
        awaitAttached(dies);
        awaitAttached(lives);
        server.close(); // the first daemon stops: it leaves the files to their apps
        holder.close(); // and then the app dies
        assertEquals(AppFileDescriptor.STATE_ATTACHED, stateOnDisk(dies.path));
        assertEquals(AppFileDescriptor.STATE_ATTACHED, stateOnDisk(lives.path));

        startServer();
        idle(1_000_000_000L);
        assertFalse(Files.exists(dies.path), "the dead app's file\n" + logged);
        assertEquals(1, counters.get(PipeCounter.APP_FILES_ABANDONED));
        assertTrue(logged.toString().contains("deleted " + dies.path.getFileName() + ": left ATTACHED, and its app (pid "
            + holder.pid() + ") is gone"), logged.toString());
        idle(120_000_000_000L);
        assertTrue(Files.exists(lives.path), "a live app's file is kept");
        assertEquals(1, counters.get(PipeCounter.APP_FILES_ABANDONED));
        assertEquals(0, server.attached(), "an ATTACHED file is not attached again");
        dies.close();
        lives.close();
    }

    /**
     * A file this daemon attached is its loop's to delete, when it reaps the app: its scanner leaves it alone, also
     * when the pid in it names no process, before the loop has seen the app gone (here the scan runs before the loop's
     * next round) or because the app wrote another pid into its file (the scanner then takes it for another app's
     * file, and only the session's descriptor of it shows whose it is).
     */
    @Test
    void theScannerLeavesTheFilesOfThisDaemonsSessionsToItsLoop() throws Exception
    {
        startServer();
        final TestApp.Holder holder = new TestApp.Holder(RING, PIPE, 1);
        final TestApp dies = new TestApp(server.appsDirectory(), "dies", holder, RING, PIPE, 1).attach();
        final TestApp rewrites = new TestApp(server.appsDirectory(), "rewrites", self, RING, PIPE, 1).attach();
        awaitAttached(dies);
        awaitAttached(rewrites);
        final Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        try (FileChannel file = FileChannel.open(rewrites.path, StandardOpenOption.WRITE))
        {
            file.write(ByteBuffer.allocate(Long.BYTES).order(ByteOrder.nativeOrder()).putLong(0, gone.pid()),
                AppFileDescriptor.APP_PID_OFFSET);
        }
        holder.close();
        for (int i = 0; i < 4; i++)
        {
            now += AppDirectoryScanner.MAX_RELOOK_NANOS;
            server.scanner().scan();
        }
        assertTrue(Files.exists(dies.path), "the dead app's file, before the loop reaps it");
        assertTrue(Files.exists(rewrites.path), "the file of an attached app that wrote a dead pid into it");
        assertEquals(0, server.scanner().abandonedDeleted(), logged.toString());

        idle(1_000_000_000L);
        assertEquals(1, server.attached(), "the dead app reaped");
        assertFalse(Files.exists(dies.path), "deleted by the loop");
        assertEquals(1, counters.get(PipeCounter.APPS_REAPED_DEAD));
        idle(120_000_000_000L);
        assertTrue(Files.exists(rewrites.path), "kept while its session lives\n" + logged);
        assertEquals(0, counters.get(PipeCounter.APP_FILES_ABANDONED));
        dies.close();
        rewrites.close();
    }
}
