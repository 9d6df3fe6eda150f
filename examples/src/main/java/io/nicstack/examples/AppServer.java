package io.nicstack.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.LongSupplier;

import io.nicstack.pipes.client.DaemonGoneException;
import io.nicstack.pipes.client.LimitReachedException;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;
import io.nicstack.pipes.client.PipeListener;

/**
 * The event loop every example server runs on one thread: {@code poll()} the client, accept what
 * is pending, give every connection a non-blocking turn; park when passes find nothing to do, for as
 * long as the {@link ParkPolicy} says. No thread per connection, no blocking calls.
 */
final class AppServer
{
    private final NicstackClient client;
    private final PipeListener listener;
    private final Function<PipeConnection, ConnectionHandler> factory;
    private final List<ConnectionHandler> handlers = new ArrayList<>();
    private final LongSupplier clock;
    private final ParkPolicy parking = new ParkPolicy();
    private volatile boolean running = true;
    private boolean limitReported;
    private boolean hurried;

    AppServer(final NicstackClient client, final PipeListener listener,
        final Function<PipeConnection, ConnectionHandler> factory)
    {
        this(client, listener, factory, System::nanoTime);
    }

    /** @param clock the {@code now} handed to every connection (tests move it by hand). */
    AppServer(final NicstackClient client, final PipeListener listener,
        final Function<PipeConnection, ConnectionHandler> factory, final LongSupplier clock)
    {
        this.clock = clock;
        this.client = client;
        this.listener = listener;
        this.factory = factory;
    }

    /** Ask {@link #run()} to return (any thread, signal handlers included). */
    void stop()
    {
        running = false;
    }

    int connections()
    {
        return handlers.size();
    }

    /** Serve until {@link #stop()}; throws when the daemon is gone. Closes every connection on the way out. */
    void run() throws NicstackException
    {
        try
        {
            while (running)
            {
                idle(doWork());
            }
        }
        finally
        {
            for (final ConnectionHandler h : handlers)
            {
                h.abort(null);
            }
            handlers.clear();
        }
    }

    /** After a pass that did {@code work}: go on, or park as the policy says. */
    private void idle(final int work)
    {
        final long park = parking.afterPass(work, hurried);
        hurried = false;
        if (park > 0)
        {
            LockSupport.parkNanos(park);
        }
    }

    int doWork() throws NicstackException
    {
        int work = client.poll();
        work += acceptPending();
        final long now = clock.getAsLong();
        for (int i = 0; i < handlers.size();)
        {
            final ConnectionHandler h = handlers.get(i);
            try
            {
                work += h.service(now);
            }
            catch (final DaemonGoneException e)
            {
                throw e;
            }
            catch (final NicstackException | RuntimeException e)
            {
                h.abort(e);
                work++;
            }
            hurried |= h.takeHurry();
            if (h.done())
            {
                final int last = handlers.size() - 1;
                handlers.set(i, handlers.get(last));
                handlers.remove(last);
            }
            else
            {
                i++;
            }
        }
        return work;
    }

    private int acceptPending() throws NicstackException
    {
        int accepted = 0;
        try
        {
            PipeConnection c;
            while ((c = listener.tryAccept()) != null)
            {
                handlers.add(factory.apply(c));
                accepted++;
            }
        }
        catch (final LimitReachedException e)
        {
            if (!limitReported)
            {
                limitReported = true;
                System.err.println("nicstack app: " + e.getMessage() + " (further refusals not reported)");
            }
        }
        return accepted;
    }
}
