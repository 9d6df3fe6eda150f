package io.nicstack.pipes.client;

import io.nicstack.pipes.Pipe;
import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.pipes.Protocol;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The RX pipe's head is the app's: a daemon that writes it (back, forward, past the tail) changes nothing the app
 * reads, which gets every byte exactly once and in order; the app's next release publishes its own head again.
 */
class RxHeadTest
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2;
    private static final int CAPACITY = 64 * 1024;

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
        options.pipeCapacity = CAPACITY;
        options.ringCapacity = 16 * 1024;
        client = NicstackClient.attach(dir, "rx-head", options);
        final PipeListener listener = client.listen(8080, 4);
        id = daemon.call(d -> d.accept(8080, PEER, 50000));
        connection = listener.accept();
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
    void aDaemonWritingTheRxHeadChangesNothingTheAppReads() throws Exception
    {
        final byte[] stream = new byte[6000];
        new Random(42).nextBytes(stream);
        send(stream, 0, 3000);

        assertArrayEquals(Arrays.copyOfRange(stream, 0, 1000), take(1000));
        writeRxHead(0); // back: the app would read bytes 0..999 again
        assertArrayEquals(Arrays.copyOfRange(stream, 1000, 2000), take(1000), "after the head was moved back");
        writeRxHead(2900); // forward: the app would skip to 2900
        assertArrayEquals(Arrays.copyOfRange(stream, 2000, 2500), take(500), "after the head was moved forward");
        assertEquals(2500, rxHeadWord(), "the app's release published its own head again");

        send(stream, 3000, 6000);
        writeRxHead(9000); // past the tail: not corrupt, the word is not the app's head
        daemon.call(d -> d.event(Protocol.PEER_CLOSED, id, 0));
        pollUntil(connection::isPeerClosed);
        final ByteArrayOutputStream rest = new ByteArrayOutputStream();
        final InputStream in = connection.inputStream();
        final byte[] sink = new byte[700];
        for (int n; (n = in.read(sink)) >= 0; )
        {
            rest.write(sink, 0, n);
        }

        assertArrayEquals(
            Arrays.copyOfRange(stream, 2500, 6000), rest.toByteArray(), "after the head was moved past the tail");
        assertEquals(6000, rxHeadWord());
        assertFalse(client.isGone());
    }

    /** The daemon publishes {@code stream[from, to)} on the RX pipe (its NOTIFY is paced: not waited for). */
    private void send(final byte[] stream, final int from, final int to) throws NicstackException
    {
        daemon.call(d -> d.sendRx(id, Arrays.copyOfRange(stream, from, to)));
        pollUntil(() -> daemon.call(d -> d.rxBacklogDone(id)));
    }

    /** {@code n} bytes through the zero-copy API; all of them are published already. */
    private byte[] take(final int n) throws NicstackException
    {
        final byte[] out = new byte[n];
        int got = 0;
        while (got < n)
        {
            final int readable = connection.peek();
            assertTrue(readable > 0, "nothing readable after " + got + " of " + n + " bytes");
            final int count = Math.min(readable, n - got);
            connection.rxBuffer().getBytes(connection.rxIndex(), out, got, count);
            connection.release(count);
            got += count;
        }
        return out;
    }

    /**
     * Every connection's stream starts at position 0 in its pipes (the daemon resets both words when it opens a slot),
     * so a connection announced with its RX head anywhere else fails the session (BAD_MESSAGE), as a corrupt ring does.
     * Before, the app took the head it found as its own and silently skipped the first 100 bytes of the stream.
     */
    @Test
    void aConnectionAnnouncedWithItsRxHeadPastZeroFailsTheSession()
    {
        final PipeListener second;
        try
        {
            second = client.listen(8081, 4);
        }
        catch (final NicstackException e)
        {
            throw new AssertionError(e);
        }
        daemon.call(d -> d.acceptWithRxPositions(8081, PEER, 50001, 100, 1000));
        final DaemonGoneException gone = assertThrows(DaemonGoneException.class, () -> pollUntil(() -> false));
        assertEquals(Protocol.Reason.BAD_MESSAGE, gone.reason());
        assertTrue(gone.getMessage().contains("head"), gone.getMessage());
        assertThrows(NicstackException.class, second::accept, "no connection to accept from a lost session");
    }

    /** The daemon writes the app's head word of the RX pipe (on the daemon's thread). */
    private void writeRxHead(final long head)
    {
        daemon.call(d ->
        {
            final Pipe rx = d.file().rx(Protocol.slotOf(id));
            rx.buffer().putLongRelease(headOffset(rx), head);
            return null;
        });
    }

    private long rxHeadWord()
    {
        return daemon.call(d ->
        {
            final Pipe rx = d.file().rx(Protocol.slotOf(id));
            return rx.buffer().getLongVolatile(headOffset(rx));
        });
    }

    private static int headOffset(final Pipe pipe)
    {
        return pipe.index(0) - PipeDescriptor.DATA_OFFSET + PipeDescriptor.HEAD_OFFSET;
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
