package io.nicstack.pipes.client;

import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client library rings a connection's doorbell ({@link AppFileDescriptor#doorbellOffset}) after each TX tail it
 * commits and each RX head it releases, by whichever API, and only that connection's bit.
 */
class ClientDoorbellTest
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
        options.maxConnections = 130;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        client = NicstackClient.attach(dir, "bells", options);
        final PipeListener listener = client.listen(8080, 4);
        daemon.drainTx(false); // the fake daemon leaves the TX pipes alone: the bytes committed stay put
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

    /** The daemon takes the word, as its round does: what it was. */
    private long take()
    {
        final int slot = Protocol.slotOf(id);
        return daemon.call(d -> d.file().buffer().getAndSetLong(d.file().doorbellOffset(slot), 0));
    }

    @Test
    void commitAndReleaseRingTheConnectionsBit() throws Exception
    {
        final long bit = AppFileDescriptor.doorbellBit(Protocol.slotOf(id));
        take();

        assertEquals(10, connection.claim(10));
        connection.commit(10);
        assertEquals(bit, take(), "commit rang");
        assertEquals(0, take(), "once taken, the word stays clear until the next publish");

        final OutputStream out = connection.outputStream();
        out.write(new byte[100]);
        assertEquals(bit, take(), "the output stream's write rang");

        daemon.call(d -> d.sendRx(id, new byte[300]));
        pollUntil(() -> connection.peek() > 0);
        assertEquals(0, take(), "peeking is not a publish");
        connection.release(1);
        assertEquals(bit, take(), "release rang");
        assertTrue(connection.inputStream().read(new byte[50]) > 0);
        assertEquals(bit, take(), "the input stream's read rang");
    }

    private interface Condition
    {
        boolean met() throws NicstackException;
    }

    private void pollUntil(final Condition condition) throws NicstackException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.met())
        {
            client.poll();
            assertTrue(System.nanoTime() < deadline, "condition not met in time");
            Thread.onSpinWait();
        }
    }
}
