package io.nicstack.examples;

import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;

import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

/**
 * An app under test on an {@link InProcessDaemon}: its client, attached to the daemon, and (once {@link #serve}d) its
 * {@link AppServer}, which no thread runs: the test's thread turns it, one {@code doWork} pass at a time, until what
 * the test waits for holds ({@link #spinUntil}), on a clock the test may move by hand.
 */
final class InProcessApp implements AutoCloseable
{
    final InProcessDaemon daemon;
    final NicstackClient client;
    /** Null until {@link #serve}: a test may drive the client itself. */
    AppServer server;

    /** A daemon of its own in {@code dir}, and a client attached to it as {@code name}. */
    InProcessApp(final Path dir, final String name, final ClientOptions options) throws Exception
    {
        daemon = new InProcessDaemon(dir);
        try
        {
            client = daemon.attach(name, options);
        }
        catch (final NicstackException | RuntimeException e)
        {
            daemon.close();
            throw e;
        }
    }

    /** Client options: at most {@code maxConnections}, pipes of {@code pipeCapacity} bytes, the rest default. */
    static ClientOptions options(final int maxConnections, final int pipeCapacity)
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = maxConnections;
        options.pipeCapacity = pipeCapacity;
        return options;
    }

    /** An {@link AppServer} on {@code port} ({@code backlog}), a handler per connection, on the system clock. */
    AppServer serve(final int port, final int backlog, final Function<PipeConnection, ConnectionHandler> handlers)
        throws NicstackException
    {
        server = new AppServer(client, client.listen(port, backlog), handlers);
        return server;
    }

    /** As {@link #serve(int, int, Function)}, the {@code now} handed to every connection read from {@code clock}. */
    AppServer serve(final int port, final int backlog, final Function<PipeConnection, ConnectionHandler> handlers,
        final LongSupplier clock) throws NicstackException
    {
        server = new AppServer(client, client.listen(port, backlog), handlers, clock);
        return server;
    }

    /** Server passes until {@code done} holds (bounded in real time: the daemon's thread works meanwhile). */
    void spinUntil(final String what, final BooleanSupplier done) throws Exception
    {
        InProcessDaemon.spinUntil(what, done, server::doWork);
    }

    /** Until the server found nothing to do for 200 passes in a row: every byte that could move has. */
    void spinUntilQuiet() throws Exception
    {
        final int[] quiet = {0};
        spinUntil("the app to go quiet", () ->
        {
            try
            {
                quiet[0] = server.doWork() == 0 ? quiet[0] + 1 : 0;
            }
            catch (final Exception e)
            {
                throw new IllegalStateException(e);
            }
            return quiet[0] >= 200;
        });
    }

    /** Every acknowledgement stack B owed sent and taken by the daemon, then {@link #spinUntilQuiet()}. */
    void settle() throws Exception
    {
        daemon.awaitTwoRounds();
        spinUntilQuiet();
    }

    /** The server's connections. */
    int connections()
    {
        return server.connections();
    }

    /** A daemon stalled by the test resumed, the client closed (DETACHED), then the daemon shut down. */
    @Override
    public void close() throws Exception
    {
        try
        {
            daemon.resume();
            client.close();
        }
        finally
        {
            daemon.close();
        }
    }
}
