package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** The connection attempt or the connection timed out. */
public final class ConnectionTimedOutException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public ConnectionTimedOutException(final String message)
    {
        super(Protocol.Reason.TIMED_OUT, message);
    }
}
