package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A daemon whose RX tail goes back, below what the client saw (its own read of the tail, or a NOTIFY), or runs more
 * than the pipe past the app's head: the session is lost, as for a corrupt ring, and the stream never ends cleanly
 * short of what the daemon had published, nor goes on with stale ring contents.
 */
class RxTailCorruptionTest
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2;

    @TempDir
    Path dir;

    private FakeDaemon daemon;
    private NicstackClient client;
    private PipeConnection connection;
    private long id;

    @BeforeEach
    void setUp() throws Exception
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 2;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        client = NicstackClient.attach(dir, "tail-back", options);
        final PipeListener listener = client.listen(8080, 4);
        id = daemon.call(d -> d.accept(8080, PEER, 50000));
        connection = listener.accept();
        daemon.call(d -> d.sendRx(id, new byte[1000]));
        pollUntil(() -> connection.notifiedTail() == 1000);
    }

    @AfterEach
    void tearDown()
    {
        if (client != null)
        {
            client.close();
        }
        if (daemon != null)
        {
            daemon.close();
        }
    }

    @Test
    void aTailBelowTheNotifiedOneFailsTheSessionInsteadOfEndingTheStreamShort() throws Exception
    {
        moveRxTail(600);
        daemon.call(d -> d.event(Protocol.PEER_CLOSED, id, 0));
        pollUntil(connection::isPeerClosed);

        final InputStream in = connection.inputStream();
        final byte[] sink = new byte[4096];
        long total = 0;
        try
        {
            for (int n; (n = in.read(sink)) >= 0; )
            {
                total += n;
            }
            fail("the stream ended cleanly after " + total + " of the 1000 bytes the daemon had notified");
        }
        catch (final DaemonGoneException ex)
        {
            assertEquals(Protocol.Reason.BAD_MESSAGE, ex.reason(), ex.getMessage());
            assertTrue(ex.getMessage().contains("RX pipe"), ex.getMessage());
        }
        assertTrue(total <= 600, "read " + total + " bytes past the tail");
        assertTrue(client.isGone());
        assertThrows(DaemonGoneException.class, client::poll);
    }

    @Test
    void aTailBelowOneTheClientReadFailsTheSessionAtOnce() throws Exception
    {
        assertEquals(1000, connection.peek());
        connection.release(300);
        moveRxTail(600);

        final DaemonGoneException ex = assertThrows(DaemonGoneException.class, connection::peek);
        assertEquals(Protocol.Reason.BAD_MESSAGE, ex.reason(), ex.getMessage());
        assertTrue(client.isGone());
        assertThrows(DaemonGoneException.class, client::poll);
    }

    @Test
    void aTailMoreThanAPipePastTheHeadFailsTheSessionInsteadOfGivingStaleBytes() throws Exception
    {
        assertEquals(1000, connection.peek());
        connection.release(1000);
        // The daemon writes only below head + capacity: past it the ring holds older bytes, not these positions.
        moveRxTail(1000 + 64 * 1024 + 1);

        final DaemonGoneException ex = assertThrows(DaemonGoneException.class, connection::peek);
        assertEquals(Protocol.Reason.BAD_MESSAGE, ex.reason(), ex.getMessage());
        assertTrue(ex.getMessage().contains("RX pipe"), ex.getMessage());
        assertTrue(client.isGone());
        assertThrows(DaemonGoneException.class, client::poll);
    }

    /** The daemon's side of the RX pipe goes bad: its tail word is written lower (on the daemon's thread). */
    private void moveRxTail(final long tail)
    {
        daemon.call(d ->
        {
            d.file().rx(Protocol.slotOf(id)).publishTail(tail);
            return null;
        });
    }

    private void pollUntil(final BooleanSupplier condition) throws NicstackException
    {
        // The fake daemon runs on its own thread: a bound on waiting for it, as the other client tests have.
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            client.poll();
            assertTrue(System.nanoTime() < deadline, "condition not met in time");
            Thread.onSpinWait();
        }
    }
}
