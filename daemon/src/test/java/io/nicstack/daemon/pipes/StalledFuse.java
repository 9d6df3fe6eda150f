package io.nicstack.daemon.pipes;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.nicstack.daemon.Netns;

/**
 * A FUSE filesystem whose server stops answering: one regular file {@code f} that can be looked up and opened, after
 * which no request about it is ever answered (GETATTR, STATFS, READ, FLUSH...). Anything that stats, statfs's, reads
 * or closes such a file blocks until the server goes, as on a FUSE mount whose server hung. The server runs in a mount
 * namespace of its own ({@code unshare --mount --propagation private}), so nothing is mounted where the test runs, and
 * the mount goes with the server's namespace; {@link #close()} kills the server, which fails every request still
 * waiting (ENOTCONN). The server gets SIGKILL when the test JVM dies ({@link Netns#dieWithParent()}; {@code unshare}
 * execs python, which keeps the death signal): it would otherwise read {@code /dev/fuse} for ever, and whatever holds
 * its file would wait on it for ever to close it. Needs root and {@code /dev/fuse}.
 */
final class StalledFuse implements AutoCloseable
{
    private static final String SERVER = String.join("\n",
        "import ctypes, os, struct, sys",
        "mountpoint = sys.argv[1]",
        "dev = os.open('/dev/fuse', os.O_RDWR)",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "options = ('fd=%d,rootmode=40000,user_id=0,group_id=0' % dev).encode()",
        "if libc.mount(b'nicstack-test', mountpoint.encode(), b'fuse.nicstack-test', 6, options) != 0:",
        "    print('mount:', os.strerror(ctypes.get_errno()), flush=True); sys.exit(1)",
        "def attr(ino, mode, size):",
        "    return struct.pack('<QQQQQQIIIIIIIIII', ino, size, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)",
        "def reply(unique, body=b'', error=0):",
        "    os.write(dev, struct.pack('<IiQ', 16 + len(body), error, unique) + body)",
        "print('mounted', flush=True)",
        "while True:",
        "    request = os.read(dev, 1 << 20)",
        "    length, opcode, unique, node = struct.unpack_from('<IIQQ', request)",
        "    if opcode == 26:",   // INIT: protocol 7.22
        "        reply(unique, struct.pack('<IIIIHHI', 7, 22, 0, 0, 0, 0, 4096))",
        "    elif opcode == 1 and request[40:].rstrip(b'\\0') == b'f':", // LOOKUP of f, attributes never cached
        "        reply(unique, struct.pack('<QQQQII', 2, 0, 0, 0, 0, 0) + attr(2, 0o100444, 4096))",
        "    elif opcode == 1:",
        "        reply(unique, error=-2)",
        "    elif opcode == 3 and node == 1:", // GETATTR of the root directory
        "        reply(unique, struct.pack('<QII', 0, 0, 0) + attr(1, 0o40755, 0))",
        "    elif opcode == 14:", // OPEN
        "        reply(unique, struct.pack('<QIi', 1, 0, 0))",
        "    elif opcode == 18:", // RELEASE (sent in the background)
        "        reply(unique)",
        "    # anything else about f (GETATTR, STATFS, READ, FLUSH...): never answered");

    private final Process server;
    final Path mountpoint;

    /** Mount at {@code mountpoint} (an existing empty directory) in the server's own mount namespace. */
    StalledFuse(final Path mountpoint) throws IOException
    {
        this.mountpoint = mountpoint;
        final List<String> command = new ArrayList<>(Netns.dieWithParent());
        command.addAll(List.of("unshare", "--mount", "--propagation", "private", "/usr/bin/python3", "-c", SERVER,
            mountpoint.toString()));
        server = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String first = new BufferedReader(new InputStreamReader(server.getInputStream())).readLine();
        if (!"mounted".equals(first))
        {
            close();
            throw new IOException("the FUSE server did not mount: " + first);
        }
    }

    /** The prefix that runs a command in the server's mount namespace, where {@link #mountpoint} is the FUSE mount. */
    String[] enter()
    {
        return new String[] {"nsenter", "--mount=/proc/" + server.pid() + "/ns/mnt"};
    }

    /** The file {@code f}, reached from the test's own mount namespace through the server's root. */
    Path fromOutside()
    {
        return Path.of("/proc/" + server.pid() + "/root").resolve(mountpoint.toString().substring(1)).resolve("f");
    }

    /** Kill the server: the requests waiting on it fail, and the mount goes with its namespace. */
    @Override
    public void close()
    {
        server.destroyForcibly();
        try
        {
            server.waitFor(10, TimeUnit.SECONDS);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }
}
