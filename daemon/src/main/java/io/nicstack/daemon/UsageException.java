package io.nicstack.daemon;

/** A bad command line: printed as one line on stderr, exit code 2. */
public final class UsageException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    public UsageException(final String message)
    {
        super(message);
    }
}
