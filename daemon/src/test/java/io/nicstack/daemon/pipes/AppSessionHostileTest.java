package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol;
import io.nicstack.pipes.Protocol.Reason;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;

/**
 * Hostile apps against one {@link AppSession}: the app is played by hand through the shared-memory contract
 * ({@link TestApp}), the pipe server runs on stack A, a peer stack B sits across a memory wire, one simulated clock.
 */
class AppSessionHostileTest
{
    private static final int A_IP = 0xC612_0002; // 198.18.0.2
    private static final int B_IP = 0xC612_0003; // 198.18.0.3
    private static final int RING = 1 << 16;
    private static final int PIPE = 1 << 12;

    @TempDir
    Path shm;

    private long now = 1_000_000_000L;
    private NetStack a;
    private NetStack b;
    private PipeCounters counters;
    private PipeServer server;
    private java.io.ByteArrayOutputStream logged;
    private final long self = ProcessHandle.current().pid();

    @BeforeEach
    void setUp() throws IOException
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        counters = PipeCounters.inMemory();
        logged = new java.io.ByteArrayOutputStream();
        server = new PipeServer(a, shm, counters, () -> now, () -> now / 1_000_000L, 1L << 30,
            new PrintStream(logged, true)).scanInline().start();
    }

    @AfterEach
    void tearDown()
    {
        server.close();
    }

    private void step()
    {
        final int work = server.doWork() + a.poll(now) + b.poll(now);
        now += work > 0 ? 20_000L : 1_000_000L;
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
            step();
        }
    }

    private TestApp.Event answer(final TestApp app, final long requestId)
    {
        final TestApp.Event[] found = new TestApp.Event[1];
        runUntil(() ->
        {
            app.poll();
            for (int i = 0; i < app.received.size() && found[0] == null; i++)
            {
                if (app.received.get(i).longAt(0) == requestId)
                {
                    found[0] = app.received.remove(i);
                }
            }
            return found[0] != null;
        }, 1_000_000_000L, "the answer to request " + requestId);
        return found[0];
    }

    private TestApp.Event await(final TestApp app, final int type)
    {
        final TestApp.Event[] found = new TestApp.Event[1];
        runUntil(() -> (found[0] = app.take(type)) != null, 1_000_000_000L, "event " + type);
        return found[0];
    }

    /** LISTEN on {@code port}: the port LISTENING names, or minus the reason of the ERROR. */
    private int listen(final TestApp app, final long requestId, final int port)
    {
        app.send(Protocol.LISTEN, requestId, port, 8);
        final TestApp.Event e = answer(app, requestId);
        assertEquals(e.type() == Protocol.LISTENING ? Protocol.LISTENING : Protocol.ERROR, e.type(), e.toString());
        return e.type() == Protocol.LISTENING ? e.intAt(8) : -e.intAt(8);
    }

    private static boolean root()
    {
        return new com.sun.security.auth.module.UnixSystem().getUid() == 0;
    }

    private TestApp attach(final TestApp app)
    {
        app.attach();
        runUntil(() -> app.state() != AppFileDescriptor.STATE_ATTACHING, 1_000_000_000L, "attach");
        assertEquals(AppFileDescriptor.STATE_ATTACHED, app.state(), logged.toString());
        return app;
    }

    /**
     * CONNECTs and LISTENs an app wrote before its DETACHED are taken in the one call that begins the drain (up to a
     * ring's worth): acted on, each CONNECT opened a connection only to reset it, and each cost the shared loop an
     * ephemeral port search. They are refused, unopened, as the SEND_FILEs there are.
     */
    @Test
    void connectsAndListensWrittenBeforeTheDetachOpenNothing() throws IOException
    {
        final TestApp app = attach(new TestApp(server.appsDirectory(), "detach-connects", self, RING, PIPE, 4));
        final int requests = 16;
        for (int i = 0; i < requests; i++)
        {
            app.send(Protocol.CONNECT, 100 + i, B_IP, 9);
            app.send(Protocol.LISTEN, 200 + i, 9000 + i, 8);
        }
        app.file.putIntRelease(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_DETACHED);
        assertEquals(0, server.session(app.path).beginDrain(now), "no connection to reset");
        assertEquals(0, a.counters().get(StackCounter.TCP_ACTIVE_OPENS), "no SYN sent");
        assertEquals(0, counters.get(PipeCounter.CONNECTIONS_OPENED));
        app.poll();
        assertEquals(2 * requests, app.received.size(), "each answered once: " + app.received);
        for (final TestApp.Event e : app.received)
        {
            assertEquals(Protocol.ERROR, e.type(), "no LISTENING: " + app.received);
            assertEquals(Reason.LIMIT_CONNECTIONS, e.intAt(8));
        }
        runUntil(() -> server.attached() == 0, 1_000_000_000L, "drained and gone");
        assertEquals(1, counters.get(PipeCounter.APPS_DETACHED));
        app.close();
    }

    /**
     * Linux refuses bind(2) below net.ipv4.ip_unprivileged_port_start (1024) without CAP_NET_BIND_SERVICE. An app of an
     * ordinary user holds no capability (AppFiles refuses one that does), so it may not take 22, 80 or 443 on the
     * stack's address ahead of the service meant to have it: PERMISSION_DENIED. Ports from 1024, and 0 (the stack
     * picks), it may.
     */
    @Test
    void anAppOfAnOrdinaryUserMayNotListenBelow1024() throws Exception
    {
        assumeTrue(root(), "running a process as nobody needs root");
        Files.setPosixFilePermissions(shm, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (TestApp.Holder nobody = new TestApp.Holder(RING, PIPE, 1, "setpriv", "--reuid=65534", "--regid=65534",
            "--clear-groups"))
        {
            final TestApp app = new TestApp(server.appsDirectory(), "squatter", nobody, RING, PIPE, 1);
            Files.setAttribute(app.path, "unix:uid", 65534);
            Files.setAttribute(app.path, "unix:gid", 65534);
            attach(app);
            assertEquals(-Reason.PERMISSION_DENIED, listen(app, 1, 80));
            assertEquals(-Reason.PERMISSION_DENIED, listen(app, 2, 22));
            assertEquals(-Reason.PERMISSION_DENIED, listen(app, 3, 1));
            assertEquals(-Reason.PERMISSION_DENIED, listen(app, 4, 1023));
            assertEquals(1024, listen(app, 5, 1024));
            assertEquals(8080, listen(app, 6, 8080));
            final int picked = listen(app, 7, 0);
            assertNotEquals(0, picked, "the stack picks a port");
            assertTrue(picked >= 1024, "from the dynamic range: " + picked);
            app.close();
        }
    }

    /** The app of root (as a process with CAP_NET_BIND_SERVICE) may listen on any port. */
    @Test
    void anAppOfRootMayListenBelow1024() throws IOException
    {
        assumeTrue(root(), "an app file root owns needs root");
        final TestApp app = attach(new TestApp(server.appsDirectory(), "service", self, RING, PIPE, 1));
        assertEquals(80, listen(app, 1, 80));
        assertEquals(1, listen(app, 2, 1));
        assertEquals(8080, listen(app, 3, 8080));
        app.close();
    }

    /**
     * An app's slots (a PipeSlot each, with its pipes' views and reassembly ranges) are built when a connection first
     * takes them, not at the attach: built on the event loop, all 65,536 of one large app held every other app's
     * round for some 100 ms, and an app attaching and detaching again and again kept the loop busy. Freed slots are
     * taken again before a new one is built, as before.
     */
    @Test
    void slotsAreBuiltWhenAConnectionFirstTakesThem() throws IOException
    {
        final int max = 1024;
        final TestApp app = attach(new TestApp(server.appsDirectory(), "lazy", self, RING, PIPE, max));
        final AppSession session = server.session(app.path);
        assertEquals(0, builtSlots(session), "nothing built at the attach");
        assertEquals(max, session.freeSlots());
        assertEquals(9000, listen(app, 1, 9000));

        b.tcp().connect(A_IP, 9000, new TcpHandler() { }, null);
        final long first = await(app, Protocol.ACCEPTED).longAt(0);
        b.tcp().connect(A_IP, 9000, new TcpHandler() { }, null);
        final long second = await(app, Protocol.ACCEPTED).longAt(0);
        assertEquals(0, Protocol.slotOf(first));
        assertEquals(1, Protocol.slotOf(second));
        assertEquals(2, builtSlots(session));
        assertEquals(max - 2, session.freeSlots());

        app.send(Protocol.ABORT, first, 0, 0);
        runUntil(() -> session.freeSlots() == max - 1, 1_000_000_000L, "the aborted connection's slot freed");
        b.tcp().connect(A_IP, 9000, new TcpHandler() { }, null);
        final long third = await(app, Protocol.ACCEPTED).longAt(0);
        assertEquals(0, Protocol.slotOf(third), "the freed slot, taken again");
        assertNotEquals(first, third, "under a new generation");
        assertEquals(2, builtSlots(session));
        app.close();
    }

    private static int builtSlots(final AppSession session)
    {
        int built = 0;
        for (int i = 0; i < session.maxConnections; i++)
        {
            built += session.slot(i) != null ? 1 : 0;
        }
        return built;
    }
}
