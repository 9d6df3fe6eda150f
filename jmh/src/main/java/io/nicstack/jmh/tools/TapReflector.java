package io.nicstack.jmh.tools;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.tap.TapDevice;

/**
 * The raw capacity of a tap for benchmarks: every IPv4 frame read is written straight back with
 * Ethernet and IP addresses swapped (checksums stay valid), in bursts, through the same
 * {@link TapDevice} the stack uses, with the same checksum offload (on unless {@code --no-offload}): a frame the
 * kernel handed over with a partial checksum (trusted) goes back partial, for the kernel to complete as it would
 * for the daemon's frames; swapping the addresses leaves the pseudo-header sum unchanged. Runs inside the benchmark's namespace for a bounded time and
 * prints {@code reflector frames_in N frames_out M seconds S}.
 *
 * <p>usage: TapReflector TAP SECONDS [--no-offload]
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
        final boolean offload = !(args.length > 2 && "--no-offload".equals(args[2]));
        try (TapDevice tap = TapDevice.open(name, offload))
        {
            System.out.println("reflector ready " + tap.name());
            final long[] counts = new long[2];
            final long start = System.nanoTime();
            final long end = start + seconds * 1_000_000_000L;
            long first = 0;
            while (System.nanoTime() < end)
            {
                final int n = tap.receive(new FrameHandler()
                {
                    @Override
                    public void onFrame(final DirectBuffer buffer, final int offset, final int length)
                    {
                        onFrame(buffer, offset, length, 0);
                    }

                    @Override
                    public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
                    {
                        reflect(tap, buffer, offset, length, flags, counts);
                    }
                }, NetDevice.BURST);
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

    private static void reflect(
        final TapDevice tap, final DirectBuffer in, final int offset, final int length, final int flags, final long[] counts)
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
        final int protocol = in.getByte(offset + 14 + 9) & 0xFF;
        final boolean partial = (flags & FrameHandler.RX_L4_CHECKSUM_TRUSTED) != 0 && (protocol == 6 || protocol == 17)
            && (in.getShort(offset + 14 + 6, java.nio.ByteOrder.BIG_ENDIAN) & 0x3FFF) == 0; // not a fragment
        tap.commit(length, partial ? NetDevice.TX_L4_CHECKSUM_PARTIAL : 0);
        counts[1]++;
    }
}
