package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

import java.util.ArrayDeque;

/** A port the daemon listens on for this app; connections it accepted wait here until {@link #accept()}. */
public final class PipeListener implements AutoCloseable
{
    private final NicstackClient client;
    private final int port;
    private final ArrayDeque<PipeConnection> accepted = new ArrayDeque<>();
    private boolean closed;

    PipeListener(final NicstackClient client, final int port)
    {
        this.client = client;
        this.port = port;
    }

    /** The port the daemon listens on (the one it picked when {@code listen(0, ...)}). */
    public int port()
    {
        return port;
    }

    /**
     * Wait for the next accepted connection, polling the client.
     *
     * @throws DaemonGoneException if the daemon dies meanwhile.
     * @throws NicstackException   if this listener or its client was closed.
     */
    public PipeConnection accept() throws NicstackException
    {
        client.idleStrategy().reset();
        while (true)
        {
            final PipeConnection connection = tryAccept();
            if (connection != null)
            {
                return connection;
            }
            client.idleStrategy().idle();
        }
    }

    /**
     * Poll the client once and return an accepted connection, or null if none is waiting.
     *
     * @throws NicstackException if this listener or its client was closed, or the daemon is gone.
     */
    public PipeConnection tryAccept() throws NicstackException
    {
        checkOpen();
        PipeConnection connection = accepted.poll();
        if (connection == null)
        {
            client.poll();
            connection = accepted.poll();
        }
        return connection;
    }

    public boolean isClosed()
    {
        return closed;
    }

    /** UNLISTEN, and close the accepted connections nobody took. */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        PipeConnection connection;
        while ((connection = accepted.poll()) != null)
        {
            connection.close();
        }
        client.onListenerClosed(this);
    }

    void onAccepted(final PipeConnection connection)
    {
        accepted.add(connection);
    }

    private void checkOpen() throws NicstackException
    {
        client.checkOpen();
        if (closed)
        {
            throw new NicstackException(Protocol.Reason.BAD_ARGUMENT, "listener on port " + port + " is closed");
        }
    }

    @Override
    public String toString()
    {
        return "PipeListener{port=" + port + (closed ? ", closed}" : ", waiting=" + accepted.size() + "}");
    }
}
