package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/** The daemon runs another layout version of the app file. */
public final class VersionMismatchException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public VersionMismatchException(final String message)
    {
        super(Protocol.Reason.VERSION_MISMATCH, message);
    }
}
