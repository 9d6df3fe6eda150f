package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/**
 * The shared-memory directory is missing or not a directory, no daemon runs there (none holds its lock), or the daemon
 * did not attach the app file within the attach timeout.
 */
public final class DaemonNotRunningException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public DaemonNotRunningException(final String message)
    {
        super(Protocol.Reason.NONE, message);
    }
}
