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
    /** A close another thread asked for, done by the thread that holds the client. */
    private volatile boolean closeAsked;

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
     * @throws NicstackException   if this listener or its client was closed (also by another thread meanwhile), or the
     *                             thread is interrupted while this waits (its interrupt status kept set).
     */
    public PipeConnection accept() throws NicstackException
    {
        final boolean held = client.enterBlocking();
        try
        {
            client.idleStrategy().reset();
            while (true)
            {
                checkOpen();
                final PipeConnection connection = accepted.poll();
                if (connection != null)
                {
                    return connection;
                }
                if (!client.idle(client.poll()))
                {
                    throw client.interrupted("accepting on port " + port);
                }
            }
        }
        finally
        {
            if (held)
            {
                client.leave();
            }
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

    /**
     * UNLISTEN, and close the accepted connections nobody took. May be called from any thread, as
     * {@link PipeConnection#close()}: an {@link #accept()} blocked on this listener then throws.
     */
    @Override
    public void close()
    {
        closeAsked = true; // for the thread that holds the client, if another does
        client.runClose(this::closeNow);
    }

    private void closeNow()
    {
        closeAsked = false;
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

    /** Whether another thread asked for a close the thread that holds the client has not done yet. */
    boolean closeAsked()
    {
        return closeAsked;
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
