package io.nicstack.pipes.client;

/** The daemon's connection or shared-memory limit for this app is reached ({@code LIMIT_CONNECTIONS}, {@code LIMIT_MEMORY}). */
public final class LimitReachedException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public LimitReachedException(final int reason, final String message)
    {
        super(reason, message);
    }
}
