package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** Another listener holds the port. */
public final class PortInUseException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public PortInUseException(final String message)
    {
        super(Protocol.Reason.PORT_IN_USE, message);
    }
}
