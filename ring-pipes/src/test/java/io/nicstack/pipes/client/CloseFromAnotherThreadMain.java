package io.nicstack.pipes.client;

import org.agrona.concurrent.BusySpinIdleStrategy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Run in a JVM of its own by {@link CloseFromAnotherThreadTest}, since a read of memory unmapped under it ends the JVM
 * (SIGSEGV): {@code args[2]} trials of one thread blocked in a call of the client ({@code args[1]}: read, read-busy,
 * write, accept, await-readable, connection-close, abort, listener-close) while another thread closes the client (or,
 * for the last three, the connection or listener it waits on) at a random moment, up to 3 ms into the call. Prints one
 * line per kind of outcome, "outcome: count", each "ok" or "BAD", and exits 1 if any is bad, 2 if a blocked call did not
 * end within 5 s of the close. Its directories are made in {@code args[0]}.
 */
public final class CloseFromAnotherThreadMain
{
    private static final int PEER = (198 << 24) | (18 << 16) | 2;

    public static void main(final String[] args) throws Exception
    {
        final Path root = Path.of(args[0]);
        final String mode = args[1];
        final int trials = Integer.parseInt(args[2]);
        final Map<String, Integer> outcomes = new TreeMap<>();
        for (int trial = 0; trial < trials; trial++)
        {
            final String outcome = trial(Files.createTempDirectory(root, "trial"), mode);
            if (outcome == null)
            {
                System.out.println("HANG: the blocked call did not end within 5 s of the close, trial " + trial);
                System.out.flush();
                Runtime.getRuntime().halt(2);
            }
            outcomes.merge(outcome, 1, Integer::sum);
        }
        boolean bad = false;
        for (final Map.Entry<String, Integer> entry : outcomes.entrySet())
        {
            System.out.println(entry.getKey() + ": " + entry.getValue());
            bad |= entry.getKey().startsWith("BAD");
        }
        System.out.flush();
        Runtime.getRuntime().halt(bad ? 1 : 0);
    }

    /** One trial: the outcome of the blocked call ("ok ..." or "BAD ..."), null if it did not end. */
    private static String trial(final Path dir, final String mode) throws Exception
    {
        final FakeDaemon daemon = new FakeDaemon(dir, FakeDaemon.Mode.ATTACH);
        try
        {
            final ClientOptions options = new ClientOptions();
            options.maxConnections = 4;
            options.pipeCapacity = 16 * 1024;
            options.ringCapacity = 16 * 1024;
            if (mode.endsWith("-busy"))
            {
                options.idleStrategy = new BusySpinIdleStrategy();
            }
            final NicstackClient client = NicstackClient.attach(dir, "closer", options);
            final PipeListener listener = client.listen(8080, 4);
            daemon.call(d -> d.accept(8080, PEER, 50000));
            final PipeConnection c = listener.accept();
            if (mode.equals("write"))
            {
                daemon.drainTx(false); // the pipe fills, and the write waits for room
            }
            final AtomicReference<Throwable> thrown = new AtomicReference<>();
            final Thread blocked = new Thread(() ->
            {
                try
                {
                    switch (mode)
                    {
                        case "write" -> c.outputStream().write(new byte[1 << 20]);
                        case "accept", "listener-close" -> listener.accept();
                        case "await-readable" -> c.awaitReadable(TimeUnit.MINUTES.toMillis(1));
                        default -> c.inputStream().read();
                    }
                    thrown.set(new AssertionError("the blocked call returned"));
                }
                catch (final Throwable ex)
                {
                    thrown.set(ex);
                }
            }, "blocked");
            blocked.start();
            LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(TimeUnit.MILLISECONDS.toNanos(3)));
            switch (mode)
            {
                case "connection-close" -> c.close();
                case "abort" -> c.abort();
                case "listener-close" -> listener.close();
                default -> client.close();
            }
            blocked.join(5000);
            if (blocked.isAlive())
            {
                return null;
            }
            client.close();
            return judge(mode, thrown.get());
        }
        finally
        {
            daemon.close();
        }
    }

    private static String judge(final String mode, final Throwable thrown)
    {
        // The connection and port as the messages name them, made alike across trials.
        final String message = String.valueOf(thrown.getMessage())
            .replaceAll("[0-9.]+:[0-9]+ <-> :[0-9]+ #[0-9a-f]+", "C").replaceAll("port [0-9]+", "port P");
        final String expected = switch (mode)
        {
            case "connection-close", "abort" -> "connection C was closed";
            case "listener-close" -> "listener on port P is closed";
            default -> "client closer ";
        };
        final boolean ok = thrown instanceof IOException && message.contains(expected);
        return (ok ? "ok " : "BAD (expected an IOException saying \"" + expected + "...\") ")
            + thrown.getClass().getSimpleName() + ": " + message;
    }
}
