package io.nicstack.nic;

/** A device could not be opened or driven; the message alone says what went wrong and what to do. */
public class NicException extends RuntimeException
{
    public NicException(final String message)
    {
        super(message);
    }
}
