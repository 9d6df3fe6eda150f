package io.nicstack.jmh.tools;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.tap.TapDevice;

/**
 * The raw capacity of a tap for benchmarks: every IPv4 frame read is written straight back with
 * Ethernet and IP addresses swapped (checksums stay valid), in bursts, through the same
 * {@link TapDevice} the stack uses. Runs inside the benchmark's namespace for a bounded time and
 * prints {@code reflector frames_in N frames_out M seconds S}.
 *
 * <p>usage: TapReflector TAP SECONDS
 */
public final class TapReflector
{
    private TapReflector()
    {
    }

    public static void main(final String[] args)
    {
        final String name = args[0];
        final long seconds = Long.parseLong(args[1]);
        try (TapDevice tap = TapDevice.open(name))
        {
            System.out.println("reflector ready " + tap.name());
            final long[] counts = new long[2];
            final long start = System.nanoTime();
            final long end = start + seconds * 1_000_000_000L;
            long first = 0;
            while (System.nanoTime() < end)
            {
                final int n = tap.receive((buffer, offset, length) -> reflect(tap, buffer, offset, length, counts), NetDevice.BURST);
                if (n > 0 && first == 0)
                {
                    first = System.nanoTime();
                }
                tap.flush();
                if (n == 0)
                {
                    tap.awaitReadable(1_000_000L);
                }
            }
            final double active = (System.nanoTime() - (first == 0 ? start : first)) / 1e9;
            System.out.printf("reflector frames_in %d frames_out %d seconds %.3f%n", counts[0], counts[1], active);
        }
    }

    private static void reflect(final TapDevice tap, final DirectBuffer in, final int offset, final int length, final long[] counts)
    {
        counts[0]++;
        // Only IPv4 (ethertype 0x0800) is reflected; ARP and IPv6 chatter is counted and dropped.
        if (length < 34 || (in.getByte(offset + 12) & 0xFF) != 0x08 || in.getByte(offset + 13) != 0x00)
        {
            return;
        }
        final MutableDirectBuffer out = tap.claim();
        out.putBytes(0, in, offset + 6, 6);
        out.putBytes(6, in, offset, 6);
        out.putBytes(12, in, offset + 12, length - 12);
        out.putInt(14 + 12, in.getInt(offset + 14 + 16));
        out.putInt(14 + 16, in.getInt(offset + 14 + 12));
        tap.commit(length);
        counts[1]++;
    }
}
