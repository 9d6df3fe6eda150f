package io.nicstack.daemon;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.CachedNanoClock;
import org.agrona.concurrent.NanoClock;
import org.agrona.concurrent.SystemEpochNanoClock;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.SystemNanoClock;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.CountersManager;

import io.nicstack.daemon.pipes.PipeCounters;
import io.nicstack.daemon.pipes.PipeServer;
import io.nicstack.nic.AsciiDigits;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NicException;
import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.nic.fault.FaultInjectingDevice;
import io.nicstack.nic.fault.FaultStats;
import io.nicstack.nic.linux.Linux;
import io.nicstack.nic.pcap.PcapWritingDevice;
import io.nicstack.nic.tap.TapDevice;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.loop.EventLoop;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.MacAddress;

import static io.nicstack.nic.linux.Linux.LIBC;

/**
 * {@code nicstack daemon}: opens the device, wires device, stack and services, publishes counters in
 * shared memory, prints one ready line, and runs the event loop on the main thread until SIGINT or
 * SIGTERM; then flushes the pcap, closes the device (a tap it created goes away) and exits 0, as it does for a signal
 * at any step of its start (the capture waiting for its named pipe's reader, say).
 */
final class DaemonCommand
{
    static final String USAGE = "usage: nicstack daemon --device tap:NAME --ip A.B.C.D/N [--host-ip A.B.C.D[/N]] [--mac MAC]\n"
        + "         [--mtu N] [--ttl N] [--gateway A.B.C.D] [--pcap FILE]\n"
        + "         [--faults loss=P,reorder=P,dup=P,corrupt=P,delay=T,rate=R,seed=S] [--shm DIR]\n"
        + "         [--services echo,discard,chargen] [--no-offload] [--busy-poll] [--no-send-file]\n"
        + "  runs the stack on a tap until SIGINT or SIGTERM; --shm defaults to " + StatsCommand.DEFAULT_SHM + "\n"
        + "  (README.md, \"Running the daemon\", says what each option does)";

    private static final Set<String> WITH_VALUE = Set.of(
        "--device", "--ip", "--host-ip", "--mac", "--mtu", "--ttl", "--gateway", "--pcap", "--faults", "--shm",
        "--services");

    /**
     * {@code --no-offload}: open the tap without checksum offload and TSO (virtio-net headers), on by default;
     * {@code --busy-poll}: never park the loop (lowest latency, one core always busy);
     * {@code --no-send-file}: refuse every SEND_FILE (apps copy their files into their pipes themselves).
     */
    private static final Set<String> FLAGS = Set.of("--no-offload", "--busy-poll", "--no-send-file");

    /** Per-app shared memory limit: a larger app file is rejected with LIMIT_MEMORY. */
    private static final long MAX_APP_FILE_BYTES = 1L << 30;

    /** How often the connection table is published for {@code nicstack conns}. */
    private static final long SNAPSHOT_INTERVAL_NANOS = 500_000_000L;

    private final String deviceSpec;
    private final StackConfig config;
    /** {@code --host-ip} as A.B.C.D/N with the daemon's prefix, or null. */
    private final String hostIp;
    private final Integer mtu;
    private final Path pcap;
    private final FaultConfig faults;
    private final Path shm;
    private final boolean checksumOffload;
    /** {@code --busy-poll}: the loop never parks (DPDK style): lowest latency, one core always busy. */
    private final boolean busyPoll;
    /** {@code --no-send-file}: the daemon reads no app's files. */
    private final boolean sendFile;
    private final List<String> services = new ArrayList<>();
    private final CountDownLatch cleanedUp = new CountDownLatch(1);
    /** The status the shutdown hook halts with: {@link #run}'s, once it has cleaned up. */
    private volatile int exitStatus = 70;
    /** Set by the shutdown hook (SIGINT, SIGTERM): stop at whatever step of the start the daemon is. */
    private volatile boolean stopRequested;
    /** The event loop once it is made, for the shutdown hook to stop. */
    private volatile EventLoop loop;
    /** While the capture is opened on a named pipe: an open(2) that may wait for the pipe's reader (fifo(7)). */
    private volatile boolean openingNamedPipe;

    /** The link the daemon runs on, opened and configured. */
    interface Link
    {
        NetDevice device();

        /** After the device (and its decorators) closed: remove what was created for it. */
        void remove();
    }

    /** Opens the link: a tap in production; tests give a memory device (no interface, no ip commands). */
    @FunctionalInterface
    interface LinkOpener
    {
        Link open(String ifName, boolean checksumOffload, Integer mtu, String hostIp) throws IOException;
    }

    private final LinkOpener links;

    DaemonCommand(final String[] args)
    {
        this(args, DaemonCommand::openTap);
    }

    DaemonCommand(final String[] args, final LinkOpener links)
    {
        this(options(args), links);
    }

    private DaemonCommand(final Options o, final LinkOpener links)
    {
        this.links = links;
        deviceSpec = o.require("daemon", "--device");
        if (!deviceSpec.startsWith("tap:") || deviceSpec.length() == 4)
        {
            throw new UsageException("daemon: --device must be tap:NAME (got '" + deviceSpec + "')");
        }
        checkInterfaceName(deviceSpec.substring(4));
        final String ip = o.require("daemon", "--ip");
        config = cidr("--ip", ip);
        checkHostAddress("--ip " + ip, config.address());
        checkNotNetworkOrBroadcast("--ip " + ip, config, config.address());
        if (o.has("--mac"))
        {
            final long mac = parse("--mac", o.get("--mac"), "aa:bb:cc:dd:ee:ff (six pairs of hex digits)", MacAddress::parse);
            if (mac == 0 || MacAddress.isMulticast(mac))
            {
                // RFC 7042 2.1: the group bit (also set in the broadcast address) marks a multicast address.
                throw new UsageException("daemon: --mac " + o.get("--mac") + ": must be a unicast address "
                    + "(not all zeros, not multicast or broadcast: the first octet's lowest bit clear)");
            }
            config.mac(mac);
        }
        if (o.has("--gateway"))
        {
            final String text = "--gateway " + o.get("--gateway");
            final int gateway = parse("--gateway", o.get("--gateway"), "A.B.C.D", Ipv4Address::parse);
            checkHostAddress(text, gateway);
            checkNeighbour(text, config, gateway);
            config.gateway(gateway);
        }
        // Parsed, then set: StackConfig refuses a number out of range, and either failure names the option.
        mtu = o.has("--mtu") ? parse("--mtu", o.get("--mtu"), "a number of bytes, 576..9000", AsciiDigits::parseInt) : null;
        if (mtu != null)
        {
            parse("--mtu", o.get("--mtu"), "a number of bytes, 576..9000", v -> config.mtu(mtu));
        }
        if (o.has("--ttl"))
        {
            parse("--ttl", o.get("--ttl"), "a number of hops, 1..255", v -> config.defaultTtl(AsciiDigits.parseInt(v)));
        }
        hostIp = o.has("--host-ip") ? kernelSideAddress(o.get("--host-ip"), config) : null;
        try
        {
            faults = o.has("--faults") ? FaultConfig.parse(checkList("--faults", o.get("--faults"), "setting")) : null;
        }
        catch (final IllegalArgumentException e)
        {
            throw new UsageException("daemon: --faults " + o.get("--faults") + ": " + e.getMessage());
        }
        pcap = o.has("--pcap") ? o.path("--pcap", null) : null;
        shm = o.path("--shm", StatsCommand.DEFAULT_SHM);
        checksumOffload = !o.has("--no-offload");
        busyPoll = o.has("--busy-poll");
        sendFile = !o.has("--no-send-file");
        if (o.has("--services"))
        {
            final String list = checkList("--services", o.get("--services"), "name");
            for (final String s : list.split(","))
            {
                if (!s.equals("echo") && !s.equals("discard") && !s.equals("chargen"))
                {
                    throw new UsageException("daemon: unknown service '" + s + "' (known: echo, discard, chargen)");
                }
                if (services.contains(s))
                {
                    throw new UsageException("daemon: --services " + list + ": " + s + " given twice");
                }
                services.add(s);
            }
        }
    }

    /** A comma-separated {@code value} of {@code option} with no empty item (a stray comma is a mistake, not nothing). */
    private static String checkList(final String option, final String value, final String item)
    {
        // split(",", -1) keeps empty items at the end ("echo,"); the Options refuse an empty value.
        for (final String s : value.split(",", -1))
        {
            if (s.isBlank())
            {
                throw new UsageException("daemon: " + option + " " + value + ": an empty " + item + " between commas");
            }
        }
        return value;
    }

    /** {@code nicstack daemon ARGS}, as {@link Main} runs it: the usage for {@code --help}, else the daemon until it stops. */
    static int run(final String[] args, final PrintStream out, final PrintStream err)
    {
        final Options o = options(args);
        if (o.help())
        {
            out.println(USAGE);
            return 0;
        }
        return new DaemonCommand(o, DaemonCommand::openTap).run(out, err);
    }

    private static Options options(final String[] args)
    {
        return new Options("daemon", args, 1, WITH_VALUE, FLAGS);
    }

    /** An IOException in words: the JDK's NoSuchFile and AccessDenied messages are a bare path. */
    static String describe(final IOException e)
    {
        if (e instanceof NoSuchFileException)
        {
            return "no such file or directory: " + e.getMessage();
        }
        if (e instanceof AccessDeniedException)
        {
            return "permission denied: " + e.getMessage();
        }
        if (e instanceof FileAlreadyExistsException)
        {
            return "already exists: " + e.getMessage();
        }
        return e.getMessage();
    }

    /** Parse an option's value; a failure names the option and the form expected. */
    private static <T> T parse(final String option, final String value, final String expected,
        final java.util.function.Function<String, T> parser)
    {
        try
        {
            return parser.apply(value);
        }
        catch (final IllegalArgumentException e)
        {
            throw new UsageException("daemon: " + option + " " + value + ": expected " + expected);
        }
    }

    /** A.B.C.D/N, N 1..30 (or A.B.C.D alone, /24; for {@code --host-ip}, see {@link #kernelSideAddress}). */
    private static StackConfig cidr(final String option, final String value)
    {
        // StackConfig.of reads N as one or two ASCII digits; any refusal is said in the daemon's words.
        return parse(option, value, "A.B.C.D/N, N a prefix length 1..30", StackConfig::of);
    }

    /**
     * {@code --host-ip} as {@code ip addr replace} takes it, A.B.C.D/N: the kernel side of the link on the daemon's
     * subnet. An address alone takes the daemon's prefix ({@code ip} would make it a /32, with no route to the daemon);
     * another prefix is refused: the two ends would disagree on which addresses are on the link.
     */
    private static String kernelSideAddress(final String value, final StackConfig config)
    {
        final String option = "--host-ip " + value;
        final StackConfig host = cidr("--host-ip", value);
        checkHostAddress(option, host.address());
        checkNeighbour(option, config, host.address());
        if (value.indexOf('/') >= 0 && host.prefixLength() != config.prefixLength())
        {
            throw new UsageException("daemon: " + option + ": prefix /" + host.prefixLength() + ", but the daemon's subnet"
                + " (--ip) is " + Ipv4Address.format(config.address() & config.netmask()) + "/" + config.prefixLength()
                + "; both ends of the link need the same (give /" + config.prefixLength() + " or the address alone)");
        }
        return Ipv4Address.format(host.address()) + "/" + config.prefixLength();
    }

    /** An interface name Linux accepts, by the rules TapDevice opens with, found while the options are parsed. */
    private static void checkInterfaceName(final String name)
    {
        try
        {
            TapDevice.validateName(name);
        }
        catch (final IllegalArgumentException e)
        {
            throw new UsageException("daemon: --device tap:" + name + ": an interface name has 1 to " + (Linux.IFNAMSIZ - 1)
                + " printable ASCII characters, no '/', ':', '%' or space (a template such as nst%d is refused: give the"
                + " name itself), and is not '.' or '..'");
        }
    }

    /** An address a host may have: not 0.0.0.0/8 ("this network"), loopback, multicast or reserved (240/4). */
    private static void checkHostAddress(final String option, final int address)
    {
        final int first = address >>> 24;
        final String problem = first == 0 ? "0.0.0.0/8 is \"this network\" (RFC 1122 3.2.1.3), not a host's address"
            : first == 127 ? "127.0.0.0/8 is loopback (RFC 1122 3.2.1.3), not a link's address"
            : Ipv4Address.isMulticast(address) ? "a multicast address (224.0.0.0/4) is no host's address"
            : first >= 240 ? "240.0.0.0/4 is reserved (RFC 1112 4), and 255.255.255.255 is broadcast"
            : null;
        if (problem != null)
        {
            throw new UsageException("daemon: " + option + ": " + problem);
        }
    }

    /** Not the subnet's network or broadcast address (RFC 1122 3.2.1.3, RFC 919). */
    private static void checkNotNetworkOrBroadcast(final String option, final StackConfig config, final int address)
    {
        final int host = address & ~config.netmask();
        if (host == 0 || host == ~config.netmask())
        {
            throw new UsageException("daemon: " + option + ": the " + (host == 0 ? "network" : "broadcast") + " address of "
                + Ipv4Address.format(config.address() & config.netmask()) + "/" + config.prefixLength() + ", not a host's");
        }
    }

    /** Another host on the daemon's subnet: the kernel side of the link, or the gateway. */
    private static void checkNeighbour(final String option, final StackConfig config, final int address)
    {
        if (address == config.address())
        {
            throw new UsageException("daemon: " + option + ": the daemon's own address (--ip); give the other host's");
        }
        if (!config.onLink(address))
        {
            throw new UsageException("daemon: " + option + ": not on the daemon's subnet "
                + Ipv4Address.format(config.address() & config.netmask()) + "/" + config.prefixLength());
        }
        checkNotNetworkOrBroadcast(option, config, address);
    }

    /** That {@code --pcap FILE} can be created or written (it is opened for good, and truncated, later). */
    static void checkWritable(final Path file) throws IOException
    {
        // First, and never followed: root's daemon would create a dangling link's target, or truncate a live one, at a
        // path such as /tmp/lab.pcap that any local user can plant. The capture refuses links too (O_NOFOLLOW).
        if (Files.isSymbolicLink(file))
        {
            throw new IOException("--pcap " + file + " is a symbolic link, which the capture does not follow");
        }
        if (Files.isDirectory(file))
        {
            throw new IOException("--pcap " + file + " is a directory");
        }
        final Path parent = file.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent))
        {
            throw new IOException("--pcap " + file + ": no directory " + parent);
        }
        if (Files.exists(file) && !Files.isRegularFile(file))
        {
            // A named pipe (a live capture: tcpdump -r, wireshark -k -i): opening and closing it here would hand its
            // reader an end of file before the pcap header. The real open reports what is wrong with it.
            return;
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS))
        {
            // Opened: writable.
        }
        catch (final AccessDeniedException e)
        {
            throw new IOException("--pcap " + file + ": permission denied");
        }
        catch (final IOException e)
        {
            throw new IOException("--pcap " + file + ": cannot write it (" + e.getMessage() + ")");
        }
    }

    /**
     * Open (or create) tap {@code ifName} with its MTU set, then set the host's address and the link up; undone on
     * failure. The MTU is set as the tap opens, before the device sizes its frames from it (set afterwards, the kernel
     * would send frames the device drops as too long).
     *
     * @throws UsageException when the kernel refuses the MTU (exit 2, as for other bad options).
     */
    static Link openTap(final String ifName, final boolean checksumOffload, final Integer mtu, final String hostIp)
        throws IOException
    {
        final TapDevice tap;
        try
        {
            tap = TapDevice.open(ifName, checksumOffload, mtu == null ? TapDevice.KEEP_MTU : mtu);
        }
        catch (final NicException e)
        {
            throw new IOException(e.getMessage(), e);
        }
        catch (final IllegalArgumentException e)
        {
            // The name was checked with the options: the MTU is what the tap refused.
            throw new UsageException("daemon: --mtu " + mtu + ": " + e.getMessage());
        }
        final Link link = new Link()
        {
            @Override
            public NetDevice device()
            {
                return tap;
            }

            @Override
            public void remove()
            {
                if (tap.created())
                {
                    Shell.runQuietly("ip", "link", "del", "dev", ifName);
                }
            }
        };
        try
        {
            if (hostIp != null)
            {
                Shell.run("ip", "addr", "replace", hostIp, "dev", ifName);
            }
            Shell.run("ip", "link", "set", "dev", ifName, "up");
            return link;
        }
        catch (final IOException e)
        {
            tap.close();
            link.remove();
            throw e;
        }
    }

    /**
     * Run the daemon until SIGINT or SIGTERM; returns its exit status. The shutdown hook is there from the start: a
     * signal at any step (the capture waiting for its named pipe's reader, say) stops the daemon there, undoes what was
     * done (the tap removed) and ends the JVM with the status returned here, 0 for a stop as asked, not 130 or 143.
     */
    int run(final PrintStream out, final PrintStream err)
    {
        final Thread hook = new Thread(this::shutDown, "nicstack-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        int status = 70;
        try
        {
            status = start(out, err);
            return status;
        }
        finally
        {
            exitStatus = status;
            try
            {
                // Returned, not stopped by a signal: the caller exits with the status (a test JVM goes on).
                Runtime.getRuntime().removeShutdownHook(hook);
            }
            catch (final IllegalStateException shuttingDown)
            {
                // The hook runs: it halts with exitStatus once cleanedUp is counted down.
            }
            cleanedUp.countDown();
        }
    }

    /**
     * The shutdown hook (SIGINT, SIGTERM): stop the loop, or the start wherever it is; let the thread of {@link #run}
     * clean up, then end with its status (a signal would otherwise give 130/143).
     */
    private void shutDown()
    {
        stopRequested = true;
        final EventLoop running = loop;
        if (running != null)
        {
            running.stop();
        }
        // The capture's open(2) of its named pipe waits for a reader: be one (read and write, which never waits, and
        // never reads), so that the open returns and the start sees it is to stop. Checked after stopRequested is set,
        // as openCapture checks stopRequested after setting openingNamedPipe: one of the two sees the other.
        final int reader = openingNamedPipe ? LIBC.open(pcap.toString(), Linux.O_RDWR | Linux.O_NONBLOCK | Linux.O_CLOEXEC) : -1;
        try
        {
            if (cleanedUp.await(10, TimeUnit.SECONDS))
            {
                Runtime.getRuntime().halt(exitStatus);
            }
        }
        catch (final InterruptedException ignored)
        {
            Thread.currentThread().interrupt();
        }
        finally
        {
            if (reader >= 0)
            {
                LIBC.close(reader);
            }
        }
    }

    private int start(final PrintStream out, final PrintStream err)
    {
        // Before the tap exists: a pcap file we cannot write, a directory we may not use (or another daemon's) end
        // here, with nothing to undo.
        final ShmDirectory shmDirectory;
        try
        {
            if (pcap != null)
            {
                checkWritable(pcap);
            }
            shmDirectory = ShmDirectory.prepare(shm, ShmDirectory.ownUid()).lock();
        }
        catch (final IOException e)
        {
            err.println("daemon: " + describe(e));
            return 1;
        }
        try (shmDirectory)
        {
            return stopRequested ? 0 : serve(shmDirectory.path(), out, err);
        }
    }

    /**
     * The {@code --pcap} capture on {@code device}, or null when a signal came before it was made. A named pipe's open
     * waits for its reader (fifo(7)), which is said on stderr, and which a signal ends ({@link #shutDown}).
     */
    private PcapWritingDevice openCapture(final NetDevice device, final PrintStream err)
    {
        int writer = -1;
        if (isNamedPipe(pcap))
        {
            // Without a reader, a non-blocking open for writing fails with ENXIO instead of waiting. One that succeeds
            // is kept open until the capture's own: a reader that saw its last writer close would read end of file.
            writer = LIBC.open(pcap.toString(), Linux.O_WRONLY | Linux.O_NONBLOCK | Linux.O_CLOEXEC);
            if (writer < 0 && Linux.errno() == Linux.ENXIO)
            {
                err.println("nicstack pcap: waiting for a reader of the named pipe " + pcap + " (tcpdump -r " + pcap
                    + ", say) before the daemon starts");
                err.flush();
            }
            openingNamedPipe = true;
        }
        try
        {
            return stopRequested ? null : new PcapWritingDevice(device, pcap, new SystemEpochNanoClock());
        }
        finally
        {
            openingNamedPipe = false;
            if (writer >= 0)
            {
                LIBC.close(writer);
            }
        }
    }

    /** Whether {@code file} is a named pipe (not following a symbolic link: open(2) would, but then finds a pipe too). */
    private static boolean isNamedPipe(final Path file)
    {
        try
        {
            return ((Integer)Files.getAttribute(file, "unix:mode") & Linux.S_IFMT) == Linux.S_IFIFO;
        }
        catch (final IOException | UnsupportedOperationException e)
        {
            return false; // missing (a regular file is made) or unreadable: the capture's open says what is wrong
        }
    }

    private int serve(final Path shm, final PrintStream out, final PrintStream err)
    {
        final String ifName = deviceSpec.substring(4);
        final Link link;
        try
        {
            link = links.open(ifName, checksumOffload, mtu, hostIp);
        }
        catch (final IOException e)
        {
            err.println("daemon: " + describe(e));
            return 1;
        }
        NetDevice device = link.device();
        PipeServer pipes = null;
        try (CountersFile countersFile = CountersFile.create(shm);
            ConnectionsFile connectionsFile = ConnectionsFile.create(shm))
        {
            final NanoClock clock = new SystemNanoClock();
            final FaultInjectingDevice injector = faults == null ? null
                : new FaultInjectingDevice(device, faults, faults.withSeed(faults.seed() + 1), clock);
            if (injector != null)
            {
                err.println("nicstack faults: " + faults);
                device = injector;
            }
            final PcapWritingDevice capture = pcap == null ? null : openCapture(device, err);
            if (pcap != null && capture == null)
            {
                return 0; // stopped (SIGINT, SIGTERM) while the capture waited for its reader: cleaned up below
            }
            if (capture != null)
            {
                device = capture;
            }
            // One manager for all counters: two managers over the same file would hand out the same ids.
            final CountersManager countersManager = countersFile.manager();
            final StackCounters counters = new StackCounters(countersManager);
            final NetStack stack = new NetStack(device, config, counters, clock.nanoTime());
            // The shared-memory pipes to host apps (always on; apps attach under <shm>/apps). Logs go to stderr.
            // Read once per loop round by the EventLoop; the pipe server and the snapshot task use that reading.
            final CachedNanoClock roundClock = new CachedNanoClock();
            roundClock.update(clock.nanoTime());
            pipes = new PipeServer(stack, shm, new PipeCounters(countersManager), roundClock, new SystemEpochClock(),
                MAX_APP_FILE_BYTES, err).sendFileAllowed(sendFile).start();
            if (services.contains("echo"))
            {
                final AtomicCounter dropped = countersManager.newCounter(UdpEchoService.DROPPED_LABEL, StackCounters.TYPE_ID);
                final AtomicCounter broadcast =
                    countersManager.newCounter(UdpEchoService.BROADCAST_DROPPED_LABEL, StackCounters.TYPE_ID);
                stack.udp().bind(UdpEchoService.PORT, new UdpEchoService(dropped::increment, broadcast::increment));
            }
            new TcpServices().start(stack.tcp(), services.contains("echo"), services.contains("discard"), services.contains("chargen"));
            final DeviceCounters deviceCounters = new DeviceCounters(countersManager, injector, capture);
            final long[] nextSnapshot = {clock.nanoTime()};
            final boolean[] captureStopped = {false};
            final EventLoop loop = new EventLoop(stack, clock, roundClock,
                busyPoll ? new BusySpinIdleStrategy() : new BackoffIdleStrategy(), pipes, () ->
            {
                final long now = roundClock.nanoTime();
                if (now - nextSnapshot[0] >= 0)
                {
                    nextSnapshot[0] = now + SNAPSHOT_INTERVAL_NANOS;
                    connectionsFile.publish(stack.tcp(), config.address());
                    deviceCounters.update();
                    if (capture != null && !captureStopped[0])
                    {
                        // A daemon killed (SIGKILL, a crash) loses at most this half second of its capture.
                        capture.flushCapture();
                        if (capture.captureFailure() != null)
                        {
                            captureStopped[0] = true;
                            err.println("nicstack pcap: " + capture.captureFailure() + "; capture stopped, the network goes on");
                        }
                    }
                }
                return 0;
            });
            // SIGINT/SIGTERM: the shutdown hook stops the loop (set first, then stopRequested read: see shutDown).
            this.loop = loop;
            if (!stopRequested)
            {
                out.println("nicstack ready " + Ipv4Address.format(config.address()) + " " + MacAddress.format(config.mac()) + " " + deviceSpec);
                out.flush();
                loop.run();
            }
            // Stopped (SIGINT, SIGTERM): the stack goes away with the daemon, so every peer gets a reset now rather
            // than waiting on a connection nobody serves (an idle one for ever, a sending one until R2).
            stack.tcp().abortAll();
            stack.flush();
            deviceCounters.update();
            return 0;
        }
        catch (final IOException e)
        {
            err.println("daemon: " + describe(e));
            return 1;
        }
        catch (final NicException e)
        {
            err.println("daemon: " + e.getMessage());
            return 1;
        }
        catch (final UncheckedIOException e)
        {
            // The pcap file (a full disk, say): the environment, not a bug.
            err.println("daemon: " + e.getMessage());
            return 1;
        }
        catch (final RuntimeException | Error e)
        {
            // A bug (or a StackOverflowError, an OutOfMemoryError), not bad input: say so with the whole trace, and
            // still clean up below. An Error must end in 70 too: when a signal started the JVM's shutdown, only the
            // hook's halt sets the status, and a supervisor must not take a crash for a clean stop.
            err.println("daemon: internal error, shutting down");
            e.printStackTrace(err);
            return 70;
        }
        finally
        {
            if (pipes != null)
            {
                // Attached apps learn the daemon is gone (STATE_DAEMON_GONE) instead of waiting for the heartbeat to stop.
                pipes.close();
            }
            // Closes the decorators first: the pcap is flushed, then the tap fd (a tap we created vanishes).
            device.close();
            link.remove();
            err.flush();
        }
    }

    /**
     * The device decorators' counters in the counters file: the faults {@code --faults} injected in each direction
     * ({@link FaultStats}) and the frames {@code --pcap} could not record. The decorators count in fields of the event
     * loop's; {@link #update}, on the loop, copies them into the file twice a second and when the loop stops.
     */
    static final class DeviceCounters
    {
        /** Type id of these counters in the counters file (beside {@link StackCounters#TYPE_ID}, {@link PipeCounters#TYPE_ID}). */
        static final int TYPE_ID = 1003;

        private final FaultStats[] faultStats;
        /** Per direction, in and out: one counter per {@link FaultStats} figure, in {@link #update}'s order. */
        private final AtomicCounter[][] faults;
        private final PcapWritingDevice capture;
        private final AtomicCounter notCaptured;

        /** Counters for the decorators in use: {@code injector} and {@code capture} may each be null. */
        DeviceCounters(final CountersManager manager, final FaultInjectingDevice injector, final PcapWritingDevice capture)
        {
            faultStats = injector == null ? new FaultStats[0] : new FaultStats[] {injector.rxStats(), injector.txStats()};
            faults = new AtomicCounter[faultStats.length][];
            for (int d = 0; d < faultStats.length; d++)
            {
                final String prefix = d == 0 ? "faults in: " : "faults out: ";
                faults[d] = new AtomicCounter[] {
                    manager.newCounter(prefix + "frames lost (loss)", TYPE_ID),
                    manager.newCounter(prefix + "frames duplicated (dup)", TYPE_ID),
                    manager.newCounter(prefix + "frames corrupted, one bit flipped (corrupt)", TYPE_ID),
                    manager.newCounter(prefix + "frames held back to be reordered (reorder)", TYPE_ID),
                    manager.newCounter(prefix + "frames delayed (delay)", TYPE_ID),
                    manager.newCounter(prefix + "frames dropped by the rate limit (rate)", TYPE_ID),
                    manager.newCounter(prefix + "frames dropped, too many delayed", TYPE_ID),
                };
            }
            this.capture = capture;
            notCaptured = capture == null ? null : manager.newCounter("pcap: frames not captured", TYPE_ID);
        }

        /** Copy the decorators' counts into the file; on the event loop thread, theirs. */
        void update()
        {
            for (int d = 0; d < faultStats.length; d++)
            {
                final FaultStats s = faultStats[d];
                final AtomicCounter[] c = faults[d];
                c[0].setRelease(s.lost());
                c[1].setRelease(s.duplicated());
                c[2].setRelease(s.corrupted());
                c[3].setRelease(s.reordered());
                c[4].setRelease(s.delayed());
                c[5].setRelease(s.rateDropped());
                c[6].setRelease(s.overflowDropped());
            }
            if (capture != null)
            {
                notCaptured.setRelease(capture.framesNotCaptured());
            }
        }
    }
}
