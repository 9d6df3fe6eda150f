package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** No daemon attached the app file within the attach timeout, or the shared-memory directory is missing. */
public final class DaemonNotRunningException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public DaemonNotRunningException(final String message)
    {
        super(Protocol.Reason.NONE, message);
    }
}
