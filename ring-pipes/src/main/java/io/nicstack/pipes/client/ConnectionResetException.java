package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** The peer reset the connection. */
public final class ConnectionResetException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public ConnectionResetException(final String message)
    {
        super(Protocol.Reason.RESET, message);
    }
}
