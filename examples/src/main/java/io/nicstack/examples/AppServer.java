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
    /** The first report of the daemon stall this server is riding out, or null while the daemon beats. */
    private DaemonGoneException stall;

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

    /**
     * Serve until {@link #stop()}; throws when the session with the daemon is lost (it shut down, died, reaped this
     * app, or stalled past the client's loss bound), not while it only stalls. Ends every connection on the way out.
     */
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

    /**
     * One pass: poll, accept, a turn for every connection. While the daemon stalls (its heartbeat has not moved for the
     * client's daemon timeout, its process alive) nothing moves and this returns 0, every connection kept; it throws
     * {@link DaemonGoneException} only once the session is lost.
     */
    int doWork() throws NicstackException
    {
        int work;
        try
        {
            work = client.poll();
            work += acceptPending();
        }
        catch (final DaemonGoneException e)
        {
            return rideOut(e);
        }
        if (stall != null)
        {
            System.err.println("nicstack app: the daemon's heartbeat moves again; " + handlers.size()
                + " connections kept through the stall");
            stall = null;
        }
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
                // A stall met in a connection's turn (a send spinning on a full control ring, as SEND_FILE's): the
                // turn did not happen, and the connection tries again once the daemon beats.
                return work + rideOut(e);
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

    /**
     * A poll or a connection's turn failed with {@code e}: throw it if the session is lost; else the daemon stalls and
     * the session is kept ({@link NicstackClient#isGone()}), so keep every connection, report the stall once, and
     * return 0.
     */
    private int rideOut(final DaemonGoneException e) throws NicstackException
    {
        if (client.isGone())
        {
            throw e;
        }
        if (stall == null)
        {
            stall = e;
            System.err.println("nicstack app: " + e.getMessage() + "; " + handlers.size()
                + " connections kept, serving on once it beats again");
        }
        return 0;
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
