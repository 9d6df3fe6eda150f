package io.nicstack.nic.tap;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Run by {@link TapOpenFailureKernelTest} in a namespace of its own, with too little direct memory for a tap's
 * buffers: opens the tap {@code args[0]}, expects an OutOfMemoryError, then prints how many descriptors of
 * {@code /dev/net/tun} the process still holds ({@code tun descriptors N}).
 */
public final class TapOpenOutOfMemoryMain
{
    private TapOpenOutOfMemoryMain()
    {
    }

    public static void main(final String[] args) throws IOException
    {
        try
        {
            TapDevice.open(args[0]).close();
            System.out.println("opened: the buffers fit, no OutOfMemoryError");
            System.exit(1);
        }
        catch (final OutOfMemoryError expected)
        {
            System.out.println("out of memory: " + expected.getMessage());
        }
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd")))
        {
            final long tun = fds.filter(fd ->
            {
                try
                {
                    return Files.readSymbolicLink(fd).toString().equals(TapDevice.TUN_PATH);
                }
                catch (final IOException ex)
                {
                    return false; // closed while listed
                }
            }).count();
            System.out.println("tun descriptors " + tun);
        }
    }
}
