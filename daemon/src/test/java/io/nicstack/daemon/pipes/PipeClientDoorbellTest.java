package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.daemon.TcpServices;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.PipeConnection;
import io.nicstack.pipes.client.PipeListener;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;

/**
 * The real client library against the real pipe server: every position the app publishes is rung, so the safety net
 * never finds one moved without its bell ({@link PipeCounter#DOORBELLS_MISSED} stays 0) while a stream goes out to an
 * echo on stack B and comes back byte-exact. The loop runs on the system clock, as the daemon's does (the sweeps 50 ms
 * apart); the app runs on a thread of its own.
 */
class PipeClientDoorbellTest
{
    private static final int A_IP = 0xC612_0002; // 198.18.0.2
    private static final int PORT = 8080;

    @TempDir
    Path shm;

    @Test
    void theClientRingsEveryPublishAndNothingIsMissed() throws Exception
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        final long start = System.nanoTime();
        final NetStack a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), start);
        final NetStack b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), start);
        final PipeCounters counters = PipeCounters.inMemory();
        final PipeServer server = new PipeServer(a, shm, counters, System::nanoTime, System::currentTimeMillis, 1L << 30,
            new PrintStream(new java.io.ByteArrayOutputStream(), true)).scanInline().start();

        final int total = 2 << 20;
        final byte[] out = new byte[total];
        new SplittableRandom(11).nextBytes(out);
        final byte[] back = new byte[total];
        final AtomicBoolean listening = new AtomicBoolean();
        final AtomicBoolean done = new AtomicBoolean();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread app = new Thread(() ->
        {
            final ClientOptions options = new ClientOptions();
            options.maxConnections = 4;
            options.pipeCapacity = 64 * 1024;
            options.ringCapacity = 64 * 1024;
            try (NicstackClient client = NicstackClient.attach(shm, "bells", options))
            {
                final PipeListener listener = client.listen(PORT, 4);
                listening.set(true);
                final PipeConnection c = listener.accept();
                int sent = 0;
                int got = 0;
                for (long spins = 0; got < total && spins < 2_000_000_000L && !stop.get(); spins++)
                {
                    final int room = sent < total ? c.claim(Math.min(total - sent, 3000)) : 0;
                    if (room > 0)
                    {
                        c.txBuffer().putBytes(c.txIndex(), out, sent, room);
                        c.commit(room);
                        sent += room;
                    }
                    final int readable = c.peek();
                    if (readable > 0)
                    {
                        final int n = Math.min(readable, 5000);
                        c.rxBuffer().getBytes(c.rxIndex(), back, got, n);
                        c.release(n);
                        got += n;
                    }
                    client.poll();
                }
                c.close();
            }
            catch (final Throwable t)
            {
                failure.set(t);
            }
            finally
            {
                done.set(true);
            }
        }, "doorbell-app");
        app.start();
        try
        {
            boolean connected = false;
            final long deadline = System.nanoTime() + 120_000_000_000L; // a bound on a hang, not a timing assertion
            for (long round = 0; !done.get() && round < 500_000_000L && System.nanoTime() - deadline < 0; round++)
            {
                if (!connected && listening.get())
                {
                    b.tcp().connect(A_IP, PORT, new TcpServices().echoHandler(), null);
                    connected = true;
                }
                final long now = System.nanoTime();
                server.doWork();
                a.poll(now);
                b.poll(now);
            }
        }
        finally
        {
            stop.set(true);
            app.join();
            server.close();
        }
        assertNull(failure.get(), () -> "the app failed: " + failure.get());
        assertArrayEquals(out, back, "the echo came back byte-exact");
        assertTrue(counters.get(PipeCounter.DOORBELLS) > 0);
        assertEquals(0, counters.get(PipeCounter.DOORBELLS_MISSED), "every publish was rung\n" + counters);
    }
}
