package io.nicstack.pipes.client;

import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import io.nicstack.pipes.Libc;

/**
 * Run in a JVM of its own by {@link AttachWithoutDaemonTest} and {@link DaemonLockProbeTest}: holds a write lock on the
 * whole of {@code args[0]} (made if missing), as a running daemon holds its {@code daemon.lock}, prints {@code locked},
 * and keeps it until its standard input ends. A classic POSIX lock (a {@link FileLock}), or with {@code ofd} as
 * {@code args[1]} an open-file-description lock, as the daemon's DaemonLock takes it.
 */
public final class LockHolderMain
{
    private LockHolderMain()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        try (FileChannel channel = FileChannel.open(Path.of(args[0]), StandardOpenOption.CREATE, StandardOpenOption.READ,
            StandardOpenOption.WRITE))
        {
            if (args.length > 1 && "ofd".equals(args[1]))
            {
                final int fd = Libc.calls().open(args[0], Libc.O_RDWR | Libc.O_CLOEXEC);
                if (fd < 0 || DaemonLockProbeTest.lock(fd, DaemonLockProbeTest.F_OFD_SETLK, Libc.F_WRLCK) != 0)
                {
                    throw new IllegalStateException("F_OFD_SETLK: " + Libc.lastError());
                }
                holdUntilInputEnds();
                return;
            }
            try (FileLock lock = channel.lock())
            {
                holdUntilInputEnds();
            }
        }
    }

    private static void holdUntilInputEnds() throws Exception
    {
        System.out.println("locked");
        System.out.flush();
        while (System.in.read() >= 0)
        {
            // Until the test closes our input (or is gone).
        }
    }
}
