package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol.Reason;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;

/**
 * Each user's apps may hold half the daemon's heap budget for apps ({@link PipeServer#heapBudget}): a review had one
 * user attach about six maximum-size apps, which took the whole budget, and every other user's app was then refused
 * with LIMIT_MEMORY. Apps of users other than this one are played by holders run as those users (setpriv), which
 * needs root. One simulated clock; the stack is not polled for traffic, none is sent.
 */
class PipeServerHeapShareTest
{
    private static final int RING = 1 << 16;
    private static final int PIPE = 1 << 12;
    private static final int CONNECTIONS = 16;
    private static final long ONE_APP = AppSession.heapBytes(CONNECTIONS, RING);

    @TempDir
    Path shm;

    private long now = 1_000_000_000L;
    private NetStack stack;
    private PipeCounters counters;
    private PipeServer server;
    private final ByteArrayOutputStream logged = new ByteArrayOutputStream();
    private final List<TestApp> apps = new ArrayList<>();
    private final List<TestApp.Holder> holders = new ArrayList<>();

    @BeforeEach
    void setUp() throws IOException
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        stack = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        counters = PipeCounters.inMemory();
        server = new PipeServer(stack, shm, counters, () -> now, () -> now / 1_000_000L, 1L << 30,
            new PrintStream(logged, true)).scanInline().start();
    }

    @AfterEach
    void tearDown() throws IOException
    {
        server.close();
        for (final TestApp app : apps)
        {
            app.close();
        }
        for (final TestApp.Holder holder : holders)
        {
            holder.close();
        }
    }

    /**
     * With room in the budget for three apps, user 65534's second app passes its half and is refused, the log saying
     * it was the user's share; user 65533's app still attaches; and when 65534's first app detaches, its half frees.
     * (Before, 65534's second app attached, as a third would have, and then 65533's was refused.)
     */
    @Test
    void oneUsersAppsMayHoldOnlyHalfTheHeapBudget() throws IOException
    {
        assumeTrue("root".equals(System.getProperty("user.name")), "running processes as other users needs root");
        Files.setPosixFilePermissions(shm, PosixFilePermissions.fromString("rwxr-xr-x"));
        server.heapBudget(3 * ONE_APP);

        final TestApp first = app("first", 65534);
        assertEquals(AppFileDescriptor.STATE_ATTACHED, answered(first.attach()));
        final TestApp second = app("second", 65534);
        assertEquals(AppFileDescriptor.STATE_REJECTED, answered(second.attach()), "past the user's half");
        assertEquals(Reason.LIMIT_MEMORY, second.reason());
        assertTrue(logged.toString().contains("over its user's share: uid 65534"), logged.toString());

        final TestApp other = app("other", 65533);
        assertEquals(AppFileDescriptor.STATE_ATTACHED, answered(other.attach()), "another user's app");

        first.file.putIntRelease(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_DETACHED);
        runUntil(() -> server.attached() == 1, 1_000_000_000L, "the first app gone");
        final TestApp third = app("third", 65534);
        assertEquals(AppFileDescriptor.STATE_ATTACHED, answered(third.attach()), "the user's half freed");
    }

    /**
     * A user's first app is held to the whole budget only: one larger than the user's half still attaches (the largest
     * app an ordinary user may run, 65,536 connections with 16 MiB rings, takes more than half under the launcher's
     * heap); the user's next one does not. Before, the first was refused for the share.
     */
    @Test
    void aUsersFirstAppMayTakeMoreThanHalf() throws IOException
    {
        assumeTrue("root".equals(System.getProperty("user.name")), "running processes as other users needs root");
        Files.setPosixFilePermissions(shm, PosixFilePermissions.fromString("rwxr-xr-x"));
        server.heapBudget(ONE_APP * 3 / 2); // a half of 0.75 apps

        final TestApp first = app("big", 65534);
        assertEquals(AppFileDescriptor.STATE_ATTACHED, answered(first.attach()), "more than half, but its first");
        assertFalse(logged.toString().contains("over its user's share"), logged.toString());
        final TestApp second = app("more", 65534);
        assertEquals(AppFileDescriptor.STATE_REJECTED, answered(second.attach()), "past the budget");
        assertEquals(Reason.LIMIT_MEMORY, second.reason());
    }

    /** The daemon's own user (and root), who could stop it anyway, may fill the whole budget. */
    @Test
    void theDaemonsOwnUsersAppsMayHoldTheWholeBudget() throws IOException
    {
        server.heapBudget(3 * ONE_APP);
        final long self = ProcessHandle.current().pid();
        for (int i = 0; i < 3; i++)
        {
            final TestApp app = keep(new TestApp(server.appsDirectory(), "own" + i, self, RING, PIPE, CONNECTIONS));
            assertEquals(AppFileDescriptor.STATE_ATTACHED, answered(app.attach()), "app " + i);
        }
        final TestApp fourth = keep(new TestApp(server.appsDirectory(), "own3", self, RING, PIPE, CONNECTIONS));
        assertEquals(AppFileDescriptor.STATE_REJECTED, answered(fourth.attach()), "past the whole budget");
        assertEquals(Reason.LIMIT_MEMORY, fourth.reason());
    }

    /** An app whose memory a process of {@code uid} holds, in an app file {@code uid} owns (not yet ATTACHING). */
    private TestApp app(final String name, final int uid) throws IOException
    {
        final TestApp.Holder holder = new TestApp.Holder(RING, PIPE, CONNECTIONS, "setpriv", "--reuid=" + uid,
            "--regid=" + uid, "--clear-groups");
        holders.add(holder);
        final TestApp app = keep(new TestApp(server.appsDirectory(), name, holder, RING, PIPE, CONNECTIONS));
        Files.setAttribute(app.path, "unix:uid", uid);
        Files.setAttribute(app.path, "unix:gid", uid);
        return app;
    }

    private TestApp keep(final TestApp app)
    {
        apps.add(app);
        return app;
    }

    /** The state the daemon answered the app with. */
    private int answered(final TestApp app)
    {
        runUntil(() -> app.state() != AppFileDescriptor.STATE_ATTACHING, 1_000_000_000L, "an answer to " + app.path);
        return app.state();
    }

    private void runUntil(final BooleanSupplier done, final long maxNanos, final String what)
    {
        final long end = now + maxNanos;
        while (!done.getAsBoolean())
        {
            if (now - end > 0)
            {
                throw new AssertionError("timed out waiting for " + what + "\n" + counters + "\n" + logged);
            }
            final int work = server.doWork() + stack.poll(now);
            now += work > 0 ? 20_000L : 1_000_000L;
        }
    }
}
