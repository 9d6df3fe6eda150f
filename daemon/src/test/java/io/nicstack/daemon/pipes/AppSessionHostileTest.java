package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
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

/**
 * Hostile apps against one {@link AppSession}: the app is played by hand through the shared-memory contract
 * ({@link TestApp}), the pipe server runs on stack A, a peer stack B sits across a memory wire, one simulated clock.
 */
class AppSessionHostileTest
{
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
}
