package io.nicstack.pipes.client;

import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.IdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client's blocking waits are timed on its monotonic clock ({@link ClientOptions#clock}), as the daemon's heartbeat
 * is: a wall clock that steps back cannot stretch them. Here the clock moves a second per idle, and only then.
 */
class ClientWaitClockTest
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2;
    private static final long WAIT_MILLIS = TimeUnit.HOURS.toMillis(1);
    /** Far more idles than the wait takes on the test's clock (3600); a wall-clock wait would take them all. */
    private static final int MAX_IDLES = 20_000;

    @TempDir
    Path dir;

    private final CachedNanoClock clock = new CachedNanoClock();
    private final ClockMovingIdleStrategy idle = new ClockMovingIdleStrategy(clock);
    private FakeDaemon daemon;
    private NicstackClient client;

    @AfterEach
    void tearDown()
    {
        idle.moving = false;
        if (client != null)
        {
            client.close();
        }
        if (daemon != null)
        {
            daemon.close();
        }
    }

    private ClientOptions options()
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 2;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        options.clock = clock;
        options.idleStrategy = idle;
        // The fake daemon beats on its own thread, in real time: no stall while the test's clock runs ahead.
        options.daemonTimeoutMillis = TimeUnit.DAYS.toMillis(10);
        return options;
    }

    @Test
    void attachGivesUpAfterItsTimeoutOnTheClientsClock()
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.IGNORE);
        final ClientOptions options = options();
        options.attachTimeoutMillis = WAIT_MILLIS;
        idle.moving = true;

        assertThrows(DaemonNotRunningException.class, () -> NicstackClient.attach(dir, "patient", options));
        assertTrue(clock.nanoTime() >= TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS), "gave up early: " + clock.nanoTime());
    }

    @Test
    void awaitReadableGivesUpAfterItsTimeoutOnTheClientsClock() throws Exception
    {
        daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        client = NicstackClient.attach(dir, "patient", options());
        final PipeListener listener = client.listen(8080, 4);
        daemon.call(d -> d.accept(8080, PEER, 50000));
        final PipeConnection connection = listener.accept();
        idle.moving = true;
        final long start = clock.nanoTime();

        assertEquals(0, connection.awaitReadable(WAIT_MILLIS));
        assertTrue(clock.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS),
            "gave up early: " + (clock.nanoTime() - start));
    }

    /** While moving, each idle moves the clock a second, and a wait that outlasts {@link #MAX_IDLES} fails. */
    private static final class ClockMovingIdleStrategy implements IdleStrategy
    {
        private final CachedNanoClock clock;
        private volatile boolean moving;
        private int idles;

        ClockMovingIdleStrategy(final CachedNanoClock clock)
        {
            this.clock = clock;
        }

        @Override
        public void idle(final int workCount)
        {
            idle();
        }

        @Override
        public void idle()
        {
            if (!moving)
            {
                Thread.yield(); // the fake daemon's thread answers in real time
                return;
            }
            assertTrue(++idles < MAX_IDLES, "the wait did not end on the client's clock");
            clock.advance(TimeUnit.SECONDS.toNanos(1));
        }

        @Override
        public void reset()
        {
        }
    }
}
