package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** The peer refused the connection (RST in answer to the SYN). */
public final class ConnectionRefusedException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public ConnectionRefusedException(final String message)
    {
        super(Protocol.Reason.REFUSED, message);
    }
}
