package io.nicstack.examples;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.IntSupplier;

import org.agrona.BitUtil;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.DaemonGoneException;
import io.nicstack.pipes.client.DaemonNotRunningException;
import io.nicstack.pipes.client.LimitReachedException;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;
import io.nicstack.pipes.client.PipeListener;
import io.nicstack.pipes.client.PortInUseException;
import io.nicstack.pipes.client.VersionMismatchException;

/**
 * {@code nicstack app echo|http|bulk --shm DIR --port N [--root DIR] [--mode source|sink] ...} (an option's value
 * also as {@code --port=N}, as the daemon's commands take it): attach
 * to the daemon serving {@code DIR}, listen, print {@code nicstack app ready <name> <port>}, serve
 * until SIGINT/SIGTERM, close the client, exit 0. Bad options: one line on stderr, exit 2. Failures
 * (no daemon, daemon gone, port in use, version mismatch, limits): one line on stderr, exit 1.
 * {@code http --copy} copies file bodies into the TX pipe instead of handing large ones to the daemon
 * (SEND_FILE). The system property {@code nicstack.app.attachTimeoutMillis} (default 5000) bounds the wait for the
 * daemon to attach the app ({@link ClientOptions#attachTimeoutMillis}). {@code echo} and {@code bulk} close a connection
 * idle for {@code --idle-timeout-s} seconds (default 60, as the HTTP apps' idle timeout; 0: never), see
 * {@link IdleTimeout}.
 *
 * <p>{@code app nio-http --port N --root DIR [--bind A.B.C.D] [--copy]} is the same HTTP server on the
 * JDK's NIO sockets over the kernel ({@link NioHttpApp}), the baseline of {@code scripts/bench-http.sh};
 * it needs no daemon, prints {@code nicstack app ready nio-http <port>} and exits the same way (a port
 * it cannot bind is exit 1).
 */
public final class Main
{
    static final String USAGE = "usage: nicstack app echo|http|bulk --shm DIR --port N [--root DIR] [--mode source|sink]"
        + " [--rate BYTES_PER_S] [--pause-ms N] [--digest] [--max-connections N] [--pipe-kb N] [--backlog N]"
        + " [--idle-timeout-s N (echo, bulk; default 60, 0: never)] [--copy (http: copy file bodies, no SEND_FILE)]"
        + " | nicstack app nio-http --port N --root DIR [--bind A.B.C.D] [--copy] [--max-connections N] [--backlog N]"
        + " (the same HTTP server on JDK NIO over the kernel, for comparison); a value also as --port=N";

    /** The options that take a value; every other name but the flags is unknown. */
    private static final Set<String> VALUED_OPTIONS = Set.of("--shm", "--bind", "--port", "--root", "--mode", "--rate",
        "--pause-ms", "--max-connections", "--pipe-kb", "--backlog", "--idle-timeout-s");

    private static volatile AppServer server;
    private static volatile NioHttpApp nioServer;
    private static volatile boolean stopRequested;
    private static volatile int exitStatus;
    /** A daemon's per-app shared memory limit (its MAX_APP_FILE_BYTES): a bigger layout is refused at attach. */
    static final long DAEMON_APP_MEMORY_LIMIT = 1L << 30;
    private static final CountDownLatch CLEANED_UP = new CountDownLatch(1);
    private static final long MIB = 1L << 20;

    private Main()
    {
    }

    /** Parsed command line. */
    record Options(String app, Path shm, int port, Path root, String mode, long rate, long pauseMillis, boolean digest,
        int maxConnections, int pipeKb, int backlog, InetAddress bind, boolean copy, int idleTimeoutSeconds)
    {
        /** {@link #idleTimeoutSeconds} in nanoseconds (0: never). */
        long idleTimeoutNanos()
        {
            return TimeUnit.SECONDS.toNanos(idleTimeoutSeconds);
        }
    }

    /** Bad command line; the message is printed as is. */
    static final class UsageException extends Exception
    {
        private static final long serialVersionUID = 1L;

        UsageException(final String message)
        {
            super(message);
        }
    }

    public static void main(final String[] args)
    {
        installSignalHandlers();
        System.exit(runThenRelease(() -> run(args, System.out, System.err), CLEANED_UP));
    }

    /**
     * Runs the app, then lets the shutdown hook go on with the app's status, also when an exception escapes the app
     * (status 1, as an uncaught exception's): the hook, started by that exception's exit, would otherwise wait its
     * whole 10 s for a cleanup that is already over.
     */
    static int runThenRelease(final IntSupplier app, final CountDownLatch cleanedUp)
    {
        exitStatus = 1;
        try
        {
            final int status = app.getAsInt();
            exitStatus = status;
            return status;
        }
        finally
        {
            cleanedUp.countDown();
        }
    }

    /** The status the shutdown hook ends the JVM with, once released. */
    static int exitStatus()
    {
        return exitStatus;
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        final Options o;
        try
        {
            o = parse(args);
        }
        catch (final UsageException e)
        {
            err.println("nicstack app: " + e.getMessage());
            return 2;
        }
        if (o == null)
        {
            out.println(USAGE);
            return 0;
        }
        if (o.app().equals("nio-http"))
        {
            return runNio(o, out, err);
        }

        final Function<PipeConnection, ConnectionHandler> factory;
        try
        {
            factory = factory(o, out);
        }
        catch (final IOException e)
        {
            err.println("nicstack app: --root " + o.root() + ": " + e.getMessage());
            return 2;
        }

        final ClientOptions options = clientOptions(o.maxConnections(), o.pipeKb());
        try (NicstackClient client = NicstackClient.attach(o.shm(), o.app(), options);
            PipeListener listener = client.listen(o.port(), o.backlog()))
        {
            final AppServer s = new AppServer(client, listener, factory);
            server = s;
            if (stopRequested)
            {
                s.stop();
            }
            out.println("nicstack app ready " + o.app() + " " + listener.port());
            out.flush();
            s.run();
            return 0;
        }
        catch (final DaemonNotRunningException e)
        {
            // The client says which: no directory, no daemon running in it, or no answer from the one that runs.
            err.println("nicstack app: " + e.getMessage());
        }
        catch (final DaemonGoneException e)
        {
            err.println("nicstack app: the daemon went away: " + e.getMessage());
        }
        catch (final VersionMismatchException e)
        {
            err.println("nicstack app: shared-memory layout version differs from the daemon's (rebuild both): "
                + e.getMessage());
        }
        catch (final PortInUseException e)
        {
            err.println("nicstack app: port " + o.port() + " is already in use on the daemon: " + e.getMessage());
        }
        catch (final LimitReachedException e)
        {
            err.println("nicstack app: limit reached: " + e.getMessage());
        }
        catch (final NicstackException e)
        {
            err.println("nicstack app: " + e.getMessage());
        }
        catch (final RuntimeException e)
        {
            err.println("nicstack app: internal error: " + e);
        }
        finally
        {
            server = null;
        }
        return 1;
    }

    private static int runNio(final Options o, final PrintStream out, final PrintStream err)
    {
        final StaticFiles files;
        try
        {
            files = new StaticFiles(o.root());
        }
        catch (final IOException e)
        {
            err.println("nicstack app: --root " + o.root() + ": " + e.getMessage());
            return 2;
        }
        final NioHttpApp s;
        try
        {
            s = new NioHttpApp(files, new InetSocketAddress(o.bind(), o.port()), o.backlog(), o.maxConnections(),
                o.copy());
        }
        catch (final IOException | RuntimeException e)
        {
            err.println("nicstack app: cannot listen on " + o.bind().getHostAddress() + ":" + o.port() + ": "
                + (e.getMessage() != null ? e.getMessage() : e));
            return 1;
        }
        try
        {
            nioServer = s;
            if (stopRequested)
            {
                s.stop();
            }
            out.println("nicstack app ready nio-http " + s.port());
            out.flush();
            s.run();
            return 0;
        }
        catch (final IOException | RuntimeException e)
        {
            err.println("nicstack app: internal error: " + e);
            return 1;
        }
        finally
        {
            nioServer = null;
        }
    }

    private static Function<PipeConnection, ConnectionHandler> factory(final Options o, final PrintStream out)
        throws IOException
    {
        switch (o.app())
        {
            case "echo":
                final long idleTimeoutNanos = o.idleTimeoutNanos();
                return c -> EchoApp.handler(c, idleTimeoutNanos);
            case "http":
                final HttpApp http = new HttpApp(new StaticFiles(o.root()), !o.copy());
                return http::handler;
            case "bulk":
                final BulkApp.Config config =
                    new BulkApp.Config(o.mode().equals("source"), o.rate(), o.pauseMillis(), o.digest(),
                        o.idleTimeoutNanos(), out);
                return c -> BulkApp.handler(c, config);
            default:
                throw new IllegalStateException(o.app());
        }
    }

    private static void installSignalHandlers()
    {
        // SIGINT/SIGTERM start the JVM's shutdown: stop the loop, let the main thread close the listener
        // and the client, then end with status 0 (a signal would otherwise give 130/143).
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            requestStop();
            try
            {
                if (CLEANED_UP.await(10, TimeUnit.SECONDS))
                {
                    Runtime.getRuntime().halt(exitStatus);
                }
            }
            catch (final InterruptedException ignored)
            {
                Thread.currentThread().interrupt();
            }
        }, "nicstack-app-shutdown"));
    }

    static void requestStop()
    {
        stopRequested = true;
        final AppServer s = server;
        if (s != null)
        {
            s.stop();
        }
        final NioHttpApp n = nioServer;
        if (n != null)
        {
            n.stop();
        }
    }

    /** Returns null for --help. */
    static Options parse(final String[] args) throws UsageException
    {
        int i = 0;
        if (i < args.length && args[i].equals("app"))
        {
            i++;
        }
        if (i >= args.length)
        {
            throw new UsageException("which app? " + USAGE);
        }
        final String app = args[i++];
        if (app.equals("-h") || app.equals("--help") || app.equals("help"))
        {
            return null;
        }
        if (!app.equals("echo") && !app.equals("http") && !app.equals("bulk") && !app.equals("nio-http"))
        {
            throw new UsageException("unknown app '" + app + "' (echo, http, bulk or nio-http)");
        }
        final boolean nio = app.equals("nio-http");
        final boolean httpLike = app.equals("http") || nio;
        Path shm = Path.of("/dev/shm/nicstack");
        int port = -1;
        Path root = null;
        String mode = null;
        long rate = 0;
        long pauseMillis = 0;
        boolean digest = false;
        int maxConnections = httpLike ? 1024 : 0;
        int pipeKb = 0;
        int backlog = httpLike ? 1024 : 128;
        InetAddress bind = null;
        boolean copy = false;
        int idleTimeoutSeconds = (int)TimeUnit.NANOSECONDS.toSeconds(IdleTimeout.DEFAULT_NANOS);
        boolean shmGiven = false;
        final Set<String> seen = new HashSet<>();
        while (i < args.length)
        {
            final String arg = args[i++];
            if (arg.equals("-h") || arg.equals("--help"))
            {
                return null;
            }
            // --name=value, as the daemon's commands take it (split at the first '='; a flag takes no value).
            final int eq = arg.startsWith("--") ? arg.indexOf('=') : -1;
            final String opt = eq > 0 ? arg.substring(0, eq) : arg;
            final String inline = eq > 0 ? arg.substring(eq + 1) : null;
            if (inline != null && !VALUED_OPTIONS.contains(opt))
            {
                throw new UsageException("unknown option '" + arg + "' (" + USAGE + ")");
            }
            if ((opt.equals("--digest") || opt.equals("--copy")) && !seen.add(opt))
            {
                throw new UsageException("option " + opt + " given twice");
            }
            if (opt.equals("--digest"))
            {
                digest = true;
                continue;
            }
            if (opt.equals("--copy"))
            {
                if (!httpLike)
                {
                    throw new UsageException("--copy only applies to http and nio-http");
                }
                copy = true;
                continue;
            }
            if (!VALUED_OPTIONS.contains(opt))
            {
                // Named first: an unknown flag last on the line is not a known option missing its value.
                throw new UsageException("unknown option '" + opt + "' (" + USAGE + ")");
            }
            if (!seen.add(opt))
            {
                throw new UsageException("option " + opt + " given twice");
            }
            if (inline == null && i >= args.length)
            {
                throw new UsageException(opt + " needs a value");
            }
            final String value = inline != null ? inline : args[i++];
            if (value.isEmpty())
            {
                throw new UsageException(opt + " needs a value (got an empty one)");
            }
            switch (opt)
            {
                case "--shm":
                    shm = path(opt, value);
                    shmGiven = true;
                    break;
                case "--bind":
                    if (!nio)
                    {
                        throw new UsageException("--bind only applies to nio-http");
                    }
                    bind = ipv4(value);
                    break;
                case "--port":
                    port = integer(opt, value, 1, 65535);
                    break;
                case "--root":
                    root = path(opt, value);
                    break;
                case "--mode":
                    if (!value.equals("source") && !value.equals("sink"))
                    {
                        throw new UsageException("--mode must be source or sink, not '" + value + "'");
                    }
                    mode = value;
                    break;
                case "--rate":
                    rate = integer(opt, value, 1, Integer.MAX_VALUE);
                    break;
                case "--pause-ms":
                    pauseMillis = integer(opt, value, 1, Integer.MAX_VALUE);
                    break;
                case "--max-connections":
                    maxConnections = integer(opt, value, 1, 65535);
                    break;
                case "--pipe-kb":
                    pipeKb = integer(opt, value, 4, 1 << 20);
                    break;
                case "--backlog":
                    backlog = integer(opt, value, 1, 65535);
                    break;
                case "--idle-timeout-s":
                    if (httpLike)
                    {
                        throw new UsageException("--idle-timeout-s only applies to echo and bulk (the HTTP apps have"
                            + " their own deadlines)");
                    }
                    idleTimeoutSeconds = integer(opt, value, 0, Integer.MAX_VALUE);
                    break;
                default:
                    throw new UsageException("unknown option '" + opt + "' (" + USAGE + ")");
            }
        }
        if (port < 0)
        {
            throw new UsageException("--port N is required");
        }
        if (!nio)
        {
            checkLayout(maxConnections, pipeKb);
        }
        if (nio && (shmGiven || pipeKb > 0))
        {
            throw new UsageException("--shm and --pipe-kb do not apply to nio-http (it runs on the kernel's sockets)");
        }
        if (httpLike)
        {
            if (root == null)
            {
                throw new UsageException(app + " needs --root DIR");
            }
            if (!Files.isDirectory(root))
            {
                throw new UsageException("--root " + root + " is not a directory");
            }
        }
        else if (root != null)
        {
            throw new UsageException("--root only applies to the http app");
        }
        if (app.equals("bulk"))
        {
            if (mode == null)
            {
                throw new UsageException("bulk needs --mode source|sink");
            }
            if ((rate > 0 || pauseMillis > 0 || digest) && mode.equals("source"))
            {
                throw new UsageException("--rate, --pause-ms and --digest only apply to --mode sink");
            }
        }
        else if (mode != null || rate > 0 || pauseMillis > 0 || digest)
        {
            throw new UsageException("--mode, --rate, --pause-ms and --digest only apply to the bulk app");
        }
        return new Options(app, shm, port, root, mode, rate, pauseMillis, digest, maxConnections, pipeKb, backlog,
            bind == null ? ipv4("0.0.0.0") : bind, copy, idleTimeoutSeconds);
    }

    /** The client's layout: its defaults, with the options given (0: not given). */
    private static ClientOptions clientOptions(final int maxConnections, final int pipeKb)
    {
        final ClientOptions options = new ClientOptions();
        options.attachTimeoutMillis = Long.getLong("nicstack.app.attachTimeoutMillis", options.attachTimeoutMillis);
        if (maxConnections > 0)
        {
            options.maxConnections = maxConnections;
        }
        if (pipeKb > 0)
        {
            options.pipeCapacity = pipeKb * 1024;
        }
        return options;
    }

    /** That the shared-memory layout these options ask for is one the client builds and a default daemon accepts. */
    private static void checkLayout(final int maxConnections, final int pipeKb) throws UsageException
    {
        if (pipeKb > 0 && !BitUtil.isPowerOfTwo(pipeKb))
        {
            throw new UsageException("--pipe-kb must be a power of two (4, 8, 16 ... 1048576), not " + pipeKb);
        }
        final ClientOptions o = clientOptions(maxConnections, pipeKb);
        final String problem = AppFile.checkSizes(o.ringCapacity, o.pipeCapacity, o.maxConnections);
        final long bytes = AppFileDescriptor.fileLength(o.ringCapacity, o.pipeCapacity, o.maxConnections);
        if (problem != null || bytes > DAEMON_APP_MEMORY_LIMIT)
        {
            // The need in MiB rounded up: one just over the limit must not read as the limit itself.
            throw new UsageException("--pipe-kb " + o.pipeCapacity / 1024 + " with --max-connections " + o.maxConnections
                + (problem != null ? ": " + problem : " needs " + ((bytes + MIB - 1) / MIB) + " MiB of shared memory, more than the "
                + DAEMON_APP_MEMORY_LIMIT / MIB + " MiB a daemon allows an app") + " (use smaller pipes or fewer connections)");
        }
    }

    /**
     * {@code --bind}: an IPv4 address in dotted decimal, four numbers 0..255 without leading zeros (which some parsers
     * read as octal). Never a host name: no DNS lookup, and a name that does not resolve is a bad option like any other.
     */
    private static InetAddress ipv4(final String value) throws UsageException
    {
        final String[] parts = value.split("\\.", -1);
        final byte[] address = new byte[4];
        boolean ok = parts.length == 4;
        for (int i = 0; ok && i < 4; i++)
        {
            final String p = parts[i];
            ok = p.matches("0|[1-9][0-9]{0,2}") && Integer.parseInt(p) <= 255;
            address[i] = ok ? (byte)Integer.parseInt(p) : 0;
        }
        if (!ok)
        {
            throw new UsageException("--bind must be an IPv4 address A.B.C.D (digits, no host name), not '" + value + "'");
        }
        try
        {
            return InetAddress.getByAddress(address);
        }
        catch (final UnknownHostException e)
        {
            throw new IllegalStateException(e); // four bytes are always an address
        }
    }

    /**
     * A path option's value as a path. A name is bytes in the encoding the JVM took from the locale at start-up
     * ({@code sun.jnu.encoding}, from LC_ALL/LC_CTYPE/LANG): under POSIX or C that is ASCII, where a non-ASCII name has no
     * bytes at all. Such a value, or one with a NUL, is a bad option like any other.
     */
    private static Path path(final String opt, final String value) throws UsageException
    {
        try
        {
            return Path.of(value);
        }
        catch (final InvalidPathException e)
        {
            if (value.indexOf('\0') >= 0)
            {
                throw new UsageException(opt + " must not contain a NUL character");
            }
            throw new UsageException(opt + " " + value + ": the path cannot be represented in the current locale's"
                + " encoding (" + System.getProperty("sun.jnu.encoding") + "); run under a UTF-8 locale, e.g. LC_ALL=C.UTF-8");
        }
    }

    private static int integer(final String opt, final String value, final int min, final int max) throws UsageException
    {
        try
        {
            // ASCII digits alone, as the daemon's options: Long.parseLong also takes a plus sign and digits of any script.
            if (!value.matches("[0-9]{1,18}"))
            {
                throw new NumberFormatException(value);
            }
            final long v = Long.parseLong(value);
            if (v < min || v > max)
            {
                throw new UsageException(opt + " must be between " + min + " and " + max + ", not " + value);
            }
            return (int)v;
        }
        catch (final NumberFormatException e)
        {
            throw new UsageException(opt + " needs a number, not '" + value + "'");
        }
    }
}
