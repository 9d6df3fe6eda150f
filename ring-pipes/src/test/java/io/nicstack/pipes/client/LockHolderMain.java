package io.nicstack.pipes.client;

import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Run in a JVM of its own by {@link AttachWithoutDaemonTest}: holds a write lock on the whole of {@code args[0]} (made
 * if missing), as a running daemon holds its {@code daemon.lock}, prints {@code locked}, and keeps it until its
 * standard input ends.
 */
public final class LockHolderMain
{
    private LockHolderMain()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        try (FileChannel channel = FileChannel.open(Path.of(args[0]), StandardOpenOption.CREATE, StandardOpenOption.READ,
            StandardOpenOption.WRITE);
            FileLock lock = channel.lock())
        {
            System.out.println("locked");
            System.out.flush();
            while (System.in.read() >= 0)
            {
                // Until the test closes our input (or is gone).
            }
        }
    }
}
