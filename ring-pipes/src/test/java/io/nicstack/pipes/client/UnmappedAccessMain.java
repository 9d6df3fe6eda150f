package io.nicstack.pipes.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.ToIntFunction;

/**
 * Run in a JVM of its own by {@link ClientFailureModesTest}: every accessor of a connection's pipes after
 * {@code client.close()}, which must throw rather than touch the unmapped memory (a SIGSEGV would end this JVM).
 * Prints one line per accessor, "name: exception class". Its directory is made in {@code args[0]} (the test's own
 * temporary directory, deleted after it), or in java.io.tmpdir without an argument.
 */
public final class UnmappedAccessMain
{
    public static void main(final String[] args) throws Exception
    {
        final Path dir = args.length > 0 ? Files.createTempDirectory(Path.of(args[0]), "unmapped")
            : Files.createTempDirectory("unmapped");
        final FakeDaemon daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 4;
        options.pipeCapacity = 1 << 20;
        final NicstackClient client = NicstackClient.attach(dir, "unmapped", options);
        final PipeConnection c = client.connect("198.18.0.2", 80);
        client.close();
        try
        {
            access("rxIndex", c, PipeConnection::rxIndex);
            access("txIndex", c, PipeConnection::txIndex);
            access("rxBuffer", c, connection -> connection.rxBuffer().getByte(0));
            access("txBuffer", c, connection -> connection.txBuffer().getByte(0));
            access("txFree", c, PipeConnection::txFree);
            access("release", c, connection ->
            {
                connection.release(0);
                return 0;
            });
        }
        finally
        {
            daemon.close();
        }
    }

    private static void access(final String name, final PipeConnection c, final ToIntFunction<PipeConnection> accessor)
    {
        System.out.flush();
        String outcome;
        try
        {
            outcome = "returned " + accessor.applyAsInt(c);
        }
        catch (final RuntimeException ex)
        {
            outcome = ex.getClass().getSimpleName();
        }
        System.out.println(name + ": " + outcome);
        System.out.flush();
    }
}
