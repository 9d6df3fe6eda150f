package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

import java.io.IOException;

/** A failure reported by or about the nicstack daemon; {@link #reason()} is a {@link Protocol.Reason} code. */
public class NicstackException extends IOException
{
    private static final long serialVersionUID = 1L;

    private final int reason;

    public NicstackException(final int reason, final String message)
    {
        super(message);
        this.reason = reason;
    }

    public NicstackException(final int reason, final String message, final Throwable cause)
    {
        super(message, cause);
        this.reason = reason;
    }

    /** The {@link Protocol.Reason} code. */
    public int reason()
    {
        return reason;
    }

    /** The exception class that fits {@code reason}. */
    static NicstackException of(final int reason, final String message)
    {
        final String text = message + ": " + Protocol.Reason.describe(reason);
        switch (reason)
        {
            case Protocol.Reason.PORT_IN_USE:
                return new PortInUseException(text);
            case Protocol.Reason.REFUSED:
                return new ConnectionRefusedException(text);
            case Protocol.Reason.RESET:
                return new ConnectionResetException(text);
            case Protocol.Reason.TIMED_OUT:
            case Protocol.Reason.UNREACHABLE:
                return new ConnectionTimedOutException(reason, text);
            case Protocol.Reason.LIMIT_CONNECTIONS:
            case Protocol.Reason.LIMIT_MEMORY:
                return new LimitReachedException(reason, text);
            case Protocol.Reason.VERSION_MISMATCH:
                return new VersionMismatchException(text);
            default:
                return new NicstackException(reason, text);
        }
    }
}
