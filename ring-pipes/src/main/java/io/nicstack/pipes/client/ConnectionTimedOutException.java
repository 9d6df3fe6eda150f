package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/**
 * The connection attempt or the connection timed out; {@link #reason()} is {@code UNREACHABLE} rather than
 * {@code TIMED_OUT} when ICMP said the host or network was unreachable meanwhile.
 */
public final class ConnectionTimedOutException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public ConnectionTimedOutException(final String message)
    {
        super(Protocol.Reason.TIMED_OUT, message);
    }

    public ConnectionTimedOutException(final int reason, final String message)
    {
        super(reason, message);
    }
}
