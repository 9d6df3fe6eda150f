package io.nicstack.pipes.client;

import java.nio.file.Path;

/**
 * Run in a JVM of its own by {@link AttachMessagesTest} (one whose rights the test chose): attach app {@code args[1]}
 * to the directory {@code args[0]} and print {@code attached}, or the exception's class and message.
 */
public final class AttachMain
{
    private AttachMain()
    {
    }

    public static void main(final String[] args)
    {
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 2;
        options.pipeCapacity = 64 * 1024;
        options.ringCapacity = 16 * 1024;
        options.attachTimeoutMillis = 200;
        try (NicstackClient client = NicstackClient.attach(Path.of(args[0]), args[1], options))
        {
            System.out.println("attached");
        }
        catch (final NicstackException e)
        {
            System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }
}
