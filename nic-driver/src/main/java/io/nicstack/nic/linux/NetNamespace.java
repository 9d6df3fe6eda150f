package io.nicstack.nic.linux;

import io.nicstack.nic.NicException;

import java.nio.file.Files;
import java.nio.file.Path;

import static io.nicstack.nic.linux.Linux.CLONE_NEWNET;
import static io.nicstack.nic.linux.Linux.LIBC;
import static io.nicstack.nic.linux.Linux.O_CLOEXEC;
import static io.nicstack.nic.linux.Linux.O_RDONLY;

/**
 * Moves the calling thread, and only it, between network namespaces with setns(2).
 *
 * <p>A tap opened while a thread is inside a namespace ({@code ip netns add NAME}) is created there and stays there;
 * its fd can then be used from any thread. Typical use on a dedicated thread:
 * <pre>{@code
 * NetNamespace.enter("nst-1");
 * try { device = TapDevice.open("nsttap0"); } finally { NetNamespace.restore(); }
 * }</pre>
 * Sockets and taps follow the thread's namespace; /sys and /proc/net follow the mount and do not.
 */
public final class NetNamespace
{
    /** Where {@code ip netns add} bind-mounts named namespaces, see ip-netns(8). */
    public static final Path NETNS_RUN_DIR = Path.of("/var/run/netns");

    private static final ThreadLocal<int[]> ORIGINAL_FD = ThreadLocal.withInitial(() -> new int[]{ -1 });

    private NetNamespace()
    {
    }

    /** Move the current thread into the named namespace, remembering the one it was in for {@link #restore()}. */
    public static void enter(final String nsName)
    {
        if (nsName.isEmpty() || nsName.contains("/") || nsName.equals(".") || nsName.equals(".."))
        {
            throw new IllegalArgumentException("bad network namespace name '" + nsName + "'");
        }

        final Path path = NETNS_RUN_DIR.resolve(nsName);
        if (!Files.exists(path))
        {
            throw new NicException(
                "network namespace " + nsName + " does not exist (no " + path + "; ip netns add it)");
        }

        final int[] original = ORIGINAL_FD.get();
        final boolean first = original[0] < 0;
        if (first)
        {
            // The thread's own namespace, not the process's: /proc/self is the thread group leader.
            original[0] = open("/proc/thread-self/ns/net");
        }

        try
        {
            final int fd = open(path.toString());
            try
            {
                setns(fd, "network namespace " + nsName);
            }
            finally
            {
                LIBC.close(fd);
            }
        }
        catch (final RuntimeException | Error ex)
        {
            // The thread has not moved, and restore() is not called after an enter that threw: a descriptor opened
            // here would stay open for the thread's life. One an earlier enter opened is still needed to go back.
            if (first)
            {
                LIBC.close(original[0]);
                original[0] = -1;
            }
            throw ex;
        }
    }

    /** Move the current thread back to where it was before its first {@link #enter(String)}; no-op if none. */
    public static void restore()
    {
        final int[] original = ORIGINAL_FD.get();
        if (original[0] >= 0)
        {
            final int fd = original[0];
            original[0] = -1;
            try
            {
                setns(fd, "original network namespace");
            }
            finally
            {
                LIBC.close(fd);
            }
        }
    }

    private static int open(final String path)
    {
        final int fd = LIBC.open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
        {
            throw Linux.failure("open " + path, Linux.errno());
        }
        return fd;
    }

    private static void setns(final int fd, final String what)
    {
        if (LIBC.setns(fd, CLONE_NEWNET) != 0)
        {
            final int errno = Linux.errno();
            if (errno == Linux.EPERM)
            {
                throw new NicException("not permitted to enter " + what + ": need root or CAP_SYS_ADMIN");
            }
            throw Linux.failure("setns(2) into " + what, errno);
        }
    }
}
