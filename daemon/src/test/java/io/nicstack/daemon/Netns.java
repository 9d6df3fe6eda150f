package io.nicstack.daemon;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A network namespace owned by one test: unique name {@code nst-<pid>-<n>}, deleted on close (also
 * when the test fails). Commands run inside it with a time limit. Shared with other modules' tests
 * through this module's test jar.
 *
 * <p>Created with IPv6 off (before any link exists, so no tap or veth in it sends DAD, router solicitations or MLD
 * reports: only 198.18.0.0/15 traffic). Before creating one, namespaces {@code nst-<pid>-<n>} left by a test JVM
 * that no longer runs (killed with SIGKILL, say) are deleted, their processes first. Long-running commands
 * ({@link #start}) get SIGKILL when the test JVM dies (util-linux {@code setpriv --pdeathsig KILL}), and a shutdown
 * hook deletes the namespaces still open when the JVM exits.
 */
public final class Netns implements AutoCloseable
{
    private static final AtomicInteger COUNTER = new AtomicInteger();
    private static final Pattern OWN_NAME = Pattern.compile("nst-(\\d+)-\\d+");
    /** Namespaces of this JVM not yet closed, for the shutdown hook. */
    private static final Set<String> OPEN = ConcurrentHashMap.newKeySet();
    private static final String SETPRIV = "/usr/bin/setpriv";
    private static final boolean PDEATHSIG = Files.isExecutable(Path.of(SETPRIV));

    static
    {
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            for (final String name : OPEN)
            {
                try
                {
                    delete(name);
                }
                catch (final IOException ignored)
                {
                    // Best effort at exit; the next run reaps what is left (see reapStale).
                }
            }
        }, "netns-cleanup"));
    }

    public final String name;
    private boolean closed;

    /** Output and exit code of a finished command. */
    public record Result(int exitCode, String output)
    {
        public Result assertOk(final String what)
        {
            if (exitCode != 0)
            {
                throw new AssertionError(what + " failed (exit " + exitCode + "):\n" + output);
            }
            return this;
        }
    }

    public Netns() throws IOException
    {
        synchronized (Netns.class)
        {
            reapStale();
            name = "nst-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
        }
        run(10, "ip", "netns", "add", name).assertOk("ip netns add " + name);
        OPEN.add(name);
        try
        {
            exec(10, "sh", "-c", disableIpv6Script()).assertOk("disable IPv6 in " + name);
            exec(10, "ip", "link", "set", "lo", "up").assertOk("lo up");
        }
        catch (final RuntimeException | IOException e)
        {
            try
            {
                close();
            }
            catch (final IOException | RuntimeException suppressed)
            {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * The shell command that turns IPv6 off in a fresh namespace (for all links and for those created later); a
     * kernel without IPv6 has nothing to turn off.
     */
    public static String disableIpv6Script()
    {
        return "[ ! -d /proc/sys/net/ipv6 ] || { echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && "
            + "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; }";
    }

    /**
     * Delete namespaces {@code nst-<pid>-<n>} whose test JVM {@code pid} no longer runs: a test JVM killed with
     * SIGKILL (or by surefire's fork timeout) could not delete its own. Their processes get SIGKILL first. Until this
     * JVM has named a namespace, those with its own pid are stale too: an earlier test JVM that had this pid and was
     * killed left them, and {@code ip netns add} of the same name would fail with "File exists" (as scripts/lib.sh's
     * reap_stale). Synchronized with the naming in the constructor, so no namespace this JVM names is taken for one.
     */
    public static synchronized void reapStale() throws IOException
    {
        final Result list = run(10, "ip", "netns", "list");
        if (list.exitCode() != 0)
        {
            return;
        }
        final long self = ProcessHandle.current().pid();
        final boolean noneOfOurOwnYet = COUNTER.get() == 0;
        for (final String line : list.output().split("\n"))
        {
            final String[] fields = line.trim().split("\\s+");
            final Matcher m = OWN_NAME.matcher(fields[0]);
            if (!m.matches())
            {
                continue;
            }
            final long pid = Long.parseLong(m.group(1));
            final boolean ours = pid == self;
            if (ours ? noneOfOurOwnYet : !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
            {
                System.err.println("[netns] deleting " + fields[0] + ", left by " + (ours
                    ? "an earlier test JVM with this JVM's pid " + pid : "test JVM " + pid + " which is gone"));
                delete(fields[0]);
            }
        }
    }

    /** SIGKILL the processes in namespace {@code name}, then delete it; throws when it is still there. */
    static void delete(final String name) throws IOException
    {
        final Result pids = run(10, "ip", "netns", "pids", name);
        if (pids.exitCode() == 0)
        {
            for (final String pid : pids.output().trim().split("\\s+"))
            {
                if (pid.matches("\\d+"))
                {
                    final Optional<ProcessHandle> p = ProcessHandle.of(Long.parseLong(pid));
                    p.ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        }
        Result del = null;
        for (int attempt = 0; attempt < 5; attempt++)
        {
            del = run(10, "ip", "netns", "del", name);
            if (del.exitCode() == 0 || !Files.exists(Path.of("/run/netns", name)))
            {
                OPEN.remove(name);
                return;
            }
            try
            {
                Thread.sleep(200);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                break;
            }
        }
        throw new IOException("ip netns del " + name + " failed (exit " + del.exitCode() + "): " + del.output());
    }

    /** Run a command inside the namespace, killed after {@code timeoutSeconds}. */
    public Result exec(final int timeoutSeconds, final String... command) throws IOException
    {
        final List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
        full.addAll(Arrays.asList(command));
        return run(timeoutSeconds, full.toArray(new String[0]));
    }

    /** Start a long-running command inside the namespace; it gets SIGKILL if this JVM dies first. */
    public Process start(final String... command) throws IOException
    {
        final List<String> full = new ArrayList<>(dieWithParent());
        full.addAll(List.of("ip", "netns", "exec", name));
        full.addAll(Arrays.asList(command));
        return new ProcessBuilder(full).redirectErrorStream(true).start();
    }

    /**
     * The prefix that makes a child process get SIGKILL when this JVM dies ({@code setpriv --pdeathsig KILL}, which
     * {@code ip netns exec} and the JVM it execs keep), empty where util-linux's setpriv is missing. The signal comes
     * when the thread that started the child ends: start children from the test's own thread, not a short-lived one.
     */
    public static List<String> dieWithParent()
    {
        return PDEATHSIG ? List.of(SETPRIV, "--pdeathsig", "KILL") : List.of();
    }

    /**
     * Run a command to completion, killed after {@code timeoutSeconds}; its output (stdout and stderr) is read on
     * another thread while it runs, so a chatty command neither blocks on a full pipe nor escapes the time limit.
     */
    public static Result run(final int timeoutSeconds, final String... command) throws IOException
    {
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        final ByteArrayOutputStream output = new ByteArrayOutputStream();
        final Thread reader = new Thread(() ->
        {
            try (InputStream in = p.getInputStream())
            {
                in.transferTo(output);
            }
            catch (final IOException ignored)
            {
                // Closed under us: the process was killed.
            }
        }, "netns-run-output");
        reader.setDaemon(true);
        reader.start();
        try
        {
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS))
            {
                p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                reader.join(1_000);
                return new Result(-1, "timed out after " + timeoutSeconds + " s: " + String.join(" ", command) + "\n"
                    + output.toString(StandardCharsets.UTF_8));
            }
            // A grandchild that inherited the pipe may keep it open: wait for the output only briefly.
            reader.join(5_000);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted", e);
        }
        return new Result(p.exitValue(), output.toString(StandardCharsets.UTF_8));
    }

    /**
     * A fresh work directory {@code <tmp>/<prefix>-<pid>-<n>} for a test of this JVM; first deletes this user's
     * {@code <prefix>-<pid>-<n>} directories whose JVM no longer runs (a test JVM killed with SIGKILL cannot delete
     * its own, and a kernel test's may hold a 64 MB pcap or a 100 MB file), after unmounting what is mounted in them
     * ({@link #unmountUnder}). Delete it with {@link #deleteTree}.
     */
    public static Path workDir(final String prefix) throws IOException
    {
        final Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        final Pattern own = Pattern.compile(Pattern.quote(prefix) + "-(\\d+)-\\d+");
        try (java.nio.file.DirectoryStream<Path> dirs = Files.newDirectoryStream(tmp, prefix + "-*"))
        {
            for (final Path dir : dirs)
            {
                final Matcher m = own.matcher(dir.getFileName().toString());
                if (m.matches()
                    && Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    && Files.getOwner(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS).getName().equals(System.getProperty("user.name"))
                    && !ProcessHandle.of(Long.parseLong(m.group(1))).map(ProcessHandle::isAlive).orElse(false))
                {
                    System.err.println("[netns] deleting " + dir + ", left by test JVM " + m.group(1) + " which is gone");
                    unmountUnder(dir);
                    deleteTree(dir);
                }
            }
        }
        return Files.createTempDirectory(prefix + "-" + ProcessHandle.current().pid() + "-");
    }

    /**
     * Lazily unmount ({@code umount -l}) every mount point at or below {@code dir} that {@code /proc/self/mountinfo}
     * lists, deepest first, stacked mounts one by one; nothing outside {@code dir}. A test JVM killed while it had
     * something mounted in its work directory (KernelAppTest's ramfs) leaves it mounted, and deleting the tree would
     * fail on the mount point (EBUSY) on every later run. Throws when mounts are still there after a few rounds.
     */
    static void unmountUnder(final Path dir) throws IOException
    {
        final Path root = dir.toRealPath(java.nio.file.LinkOption.NOFOLLOW_LINKS);
        List<Path> mounts = mountsUnder(root);
        for (int round = 0; round < 5 && !mounts.isEmpty(); round++)
        {
            mounts.sort(java.util.Comparator.comparingInt(Path::getNameCount).reversed());
            for (final Path mount : mounts)
            {
                System.err.println("[netns] unmounting " + mount
                    + " (umount -l), left mounted by a test JVM which is gone");
                final Result umount = run(10, "umount", "-l", mount.toString());
                if (umount.exitCode() != 0)
                {
                    System.err.println("[netns] umount -l " + mount + " failed (exit " + umount.exitCode() + "): "
                        + umount.output().strip());
                }
            }
            mounts = mountsUnder(root);
        }
        if (!mounts.isEmpty())
        {
            throw new IOException("still mounted under " + root + " after umount -l: " + mounts);
        }
    }

    /** The mount points at or below {@code root} (a real path) in this process's mount namespace, once per mount. */
    private static List<Path> mountsUnder(final Path root) throws IOException
    {
        final List<Path> mounts = new ArrayList<>();
        for (final String line : Files.readAllLines(Path.of("/proc/self/mountinfo"), StandardCharsets.UTF_8))
        {
            // proc(5): mount ID, parent ID, major:minor, root, mount point, ...
            final String[] fields = line.split(" ");
            if (fields.length > 4)
            {
                final Path mount = Path.of(unescapeMountinfo(fields[4]));
                if (mount.startsWith(root))
                {
                    mounts.add(mount);
                }
            }
        }
        return mounts;
    }

    /** A mountinfo path with its octal escapes (space {@code \040}, tab, newline, backslash) decoded. */
    private static String unescapeMountinfo(final String field)
    {
        final StringBuilder path = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++)
        {
            final char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length() && field.substring(i + 1, i + 4).matches("[0-7]{3}"))
            {
                path.append((char)Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            }
            else
            {
                path.append(c);
            }
        }
        return path.toString();
    }

    /** Delete a test's work directory and everything in it (no-op for null or a missing directory). */
    public static void deleteTree(final Path dir) throws IOException
    {
        if (dir == null || !Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS))
        {
            return;
        }
        try (java.util.stream.Stream<Path> files = Files.walk(dir))
        {
            for (final Path p : (Iterable<Path>)files.sorted(java.util.Comparator.reverseOrder())::iterator)
            {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Delete the namespace (its processes get SIGKILL first); fails loudly if it is still there. */
    @Override
    public void close() throws IOException
    {
        if (!closed)
        {
            closed = true;
            delete(name);
        }
    }
}
