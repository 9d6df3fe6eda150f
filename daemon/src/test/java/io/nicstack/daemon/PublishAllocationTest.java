package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

import org.agrona.concurrent.status.CountersManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.daemon.pipes.PipeCounter;
import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;

/**
 * What the daemon publishes on the event loop, the connection table (twice a second) and the shared-memory counters
 * of the stack and the pipes (on every update), allocates nothing after a warm-up: counted with the JVM's per-thread
 * allocation counter over 200 publications of 60 connections, after 2,000.
 */
class PublishAllocationTest
{
    private static final int CONNECTIONS = 60;

    @TempDir
    Path dir;

    @Test
    void publicationAndCountersAllocateNothingAfterWarmUp() throws Exception
    {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (DaemonLock lock = DaemonLock.acquire(shm); CountersFile counters = CountersFile.create(shm);
            ConnectionsFile file = ConnectionsFile.create(shm); ConnsRequester requester = new ConnsRequester(shm))
        {
            // One manager for both, as DaemonCommand has: each manager() allocates counter ids from the first.
            final CountersManager manager = counters.manager();
            final StackCounters stackCounters = new StackCounters(manager);
            final PipeCounters pipeCounters = new PipeCounters(manager);
            final NetStack a = ConnectionsFilePublishTest.servingConnections(stackCounters, CONNECTIONS);
            final long framesIn = stackCounters.get(StackCounter.FRAMES_IN);
            for (int i = 0; i < 2000; i++)
            {
                requester.ask(); // every publication builds the table, as when conns asks for each
                file.publish(a.tcp(), 0xC612_0002);
                stackCounters.add(StackCounter.FRAMES_IN, 1);
                pipeCounters.increment(PipeCounter.APPS_ATTACHED);
            }
            final long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 200; i++)
            {
                requester.ask();
                file.publish(a.tcp(), 0xC612_0002);
                stackCounters.add(StackCounter.FRAMES_IN, 1);
                pipeCounters.increment(PipeCounter.APPS_ATTACHED);
            }
            final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertTrue(ConnectionsFilePublishTest.served(shm, file, a).startsWith(CONNECTIONS + " connections\n"),
                "the table is published");
            assertEquals(framesIn + 2200, stackCounters.get(StackCounter.FRAMES_IN), "the counters count");
            assertTrue(allocated < 1024, () -> allocated + " B for 200 publications of " + CONNECTIONS
                + " connections and as many counter updates");
        }
    }
}
