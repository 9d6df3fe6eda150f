package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** The daemon stopped: its heartbeat is older than the daemon timeout, it wrote DAEMON_GONE, or its process is dead. */
public final class DaemonGoneException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public DaemonGoneException(final String message)
    {
        super(Protocol.Reason.NONE, message);
    }
}
