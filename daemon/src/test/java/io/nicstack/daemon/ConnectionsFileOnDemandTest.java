package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounters;

/**
 * The connection table is built on demand: the event loop's publish costs nothing until conns asks, a request is
 * answered by the next publish, and a reader whose daemon does not answer in time ends with the last table and its
 * age, or an error.
 */
class ConnectionsFileOnDemandTest
{
    private static final int CONNECTIONS = 10;
    private static final int ADDRESS = 0xC612_0002;

    @TempDir
    Path dir;

    private Path shm;
    private NetStack stack;
    private DaemonLock lock;
    private ConnectionsFile file;

    @BeforeEach
    void daemon() throws IOException
    {
        stack = ConnectionsFilePublishTest.servingConnections(StackCounters.inMemory(), CONNECTIONS);
        shm = Files.createDirectory(dir.resolve("shm"));
        lock = DaemonLock.acquire(shm);
        file = ConnectionsFile.create(shm);
    }

    @AfterEach
    void stop()
    {
        file.close();
        lock.close();
    }

    private long sequence() throws IOException
    {
        try (RandomAccessFile raf = new RandomAccessFile(shm.resolve(ConnectionsFile.FILE_NAME).toFile(), "r"))
        {
            raf.seek(ConnectionsFile.SEQUENCE_OFFSET);
            return Long.reverseBytes(raf.readLong());
        }
    }

    /** A clock that moves 10 ms each time it is read: a reader's wait ends after its budget, without sleeping it. */
    private static org.agrona.concurrent.NanoClock steppingClock()
    {
        final long[] now = {0};
        return () -> now[0] += 10_000_000L;
    }

    /**
     * Nobody asked: publish builds no table (the sequence does not move). Before, every call built and wrote the
     * whole table, 100 ms and more of the event loop at 100,000 connections.
     */
    @Test
    void publishWithoutARequestBuildsNothing() throws Exception
    {
        for (int i = 0; i < 100; i++)
        {
            file.publish(stack.tcp(), ADDRESS);
        }
        assertEquals(0, sequence(), "tables published unasked");
        try (ConnsRequester requester = new ConnsRequester(shm))
        {
            requester.ask();
        }
        for (int i = 0; i < 100; i++)
        {
            file.publish(stack.tcp(), ADDRESS);
        }
        assertEquals(2, sequence(), "one request, one table");
    }

    /** A request is answered by the next publish, and the reader gets that table. */
    @Test
    void aRequestIsAnsweredByTheNextPublish() throws Exception
    {
        final int[] publishes = {0};
        final String text = ConnectionsFile.read(shm, steppingClock(), ConnectionsFile.READ_BUDGET_NANOS, () ->
        {
            publishes[0]++;
            file.publish(stack.tcp(), ADDRESS);
        });
        assertTrue(text.startsWith(CONNECTIONS + " connections\n" + ConnectionsFile.HEADER + "\n"), text);
        assertEquals(1, publishes[0], "answered by the first publish after the request");
        assertEquals(2, sequence());
        file.publish(stack.tcp(), ADDRESS);
        assertEquals(2, sequence(), "answered once");
    }

    /**
     * Another reader asks after us, before the daemon looks: its word replaces ours, and the table that answers it
     * answers us too (it was built after our request).
     */
    @Test
    void aLaterRequestOfAnotherReaderAnswersOursToo() throws Exception
    {
        try (ConnsRequester other = new ConnsRequester(shm))
        {
            final int[] publishes = {0};
            final String text = ConnectionsFile.read(shm, steppingClock(), ConnectionsFile.READ_BUDGET_NANOS, () ->
            {
                if (publishes[0]++ == 0)
                {
                    other.ask();
                }
                file.publish(stack.tcp(), ADDRESS);
            });
            assertTrue(text.startsWith(CONNECTIONS + " connections\n"), text);
            assertEquals(2, sequence(), "one table for both requests");
        }
    }

    /** A daemon that does not answer within the budget (busy, or its loop stuck): its last table, saying how old. */
    @Test
    void aSilentDaemonsLastTableIsShownWithItsAge() throws Exception
    {
        final String answered = ConnectionsFilePublishTest.served(shm, file, stack);
        final String text = ConnectionsFile.read(shm, steppingClock(), ConnectionsFile.READ_BUDGET_NANOS);
        final String note = "(the daemon, pid " + ProcessHandle.current().pid() + ", did not answer within "
            + ConnectionsFile.READ_BUDGET_NANOS / 1_000_000 + " ms (busy?); its last table, published ";
        assertTrue(text.startsWith(note), text);
        final int tableStart = text.indexOf('\n') + 1;
        assertTrue(text.substring(note.length(), tableStart).matches("\\d+\\.\\d s ago:\\)\n"), text.substring(0, tableStart));
        assertEquals(answered, text.substring(tableStart));
        assertEquals(2, sequence(), "nothing published while nobody answered");
    }

    /** A daemon that does not answer and never published a table: an error that says so. */
    @Test
    void aSilentDaemonWithoutATableIsAnError() throws Exception
    {
        final IOException e = assertThrows(IOException.class,
            () -> ConnectionsFile.read(shm, steppingClock(), ConnectionsFile.READ_BUDGET_NANOS));
        assertEquals("no table: the daemon (pid " + ProcessHandle.current().pid() + ") did not answer within "
            + ConnectionsFile.READ_BUDGET_NANOS / 1_000_000 + " ms (busy?) and has published none ("
            + shm.resolve(ConnectionsFile.FILE_NAME) + ")", e.getMessage());
    }

    /** A reader that cannot ask (the request file is gone) says so with the last table. */
    @Test
    void aReaderThatCannotAskSaysWhy() throws Exception
    {
        final String answered = ConnectionsFilePublishTest.served(shm, file, stack);
        Files.delete(shm.resolve(ConnectionsFile.REQUEST_FILE_NAME));
        final String text = ConnectionsFile.read(shm, steppingClock(), ConnectionsFile.READ_BUDGET_NANOS);
        assertTrue(text.startsWith("(the daemon, pid " + ProcessHandle.current().pid() + ", was not asked (no such file or directory: "
            + shm.resolve(ConnectionsFile.REQUEST_FILE_NAME) + "); its last table, published "), text);
        assertTrue(text.endsWith(answered), text);
    }
}
