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
 * for the daemon's frames; swapping the addresses leaves the pseudo-header sum unchanged. Runs inside the benchmark's
 * namespace for a bounded time and prints {@code reflector frames_in N frames_out M flood_frames F flood_seconds S}:
 * the capacity is F / S frames a second.
 *
 * <p>usage: TapReflector TAP SECONDS [--no-offload]
 */
public final class TapReflector
{
    /** A pause this long ends the flood, once it has brought at least {@link #MIN_FLOOD_FRAMES}. */
    private static final long FLOOD_GAP_NANOS = 100_000_000L;
    private static final long MIN_FLOOD_FRAMES = 10_000;

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
            final FrameHandler reflector = new FrameHandler()
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
            };
            // The rate is over the flood alone: from its first burst to its last, before a gap of 100 ms. The whole
            // window would count the idle tail (a third of it), and a stray frame after the flood (an ARP or IPv6
            // probe a second later) would stretch the flood's time.
            long first = 0;
            long last = 0;
            long floodFrames = 0;
            boolean floodOver = false;
            while (System.nanoTime() < end)
            {
                final int n = tap.receive(reflector, NetDevice.BURST);
                if (n > 0 && !floodOver)
                {
                    final long now = System.nanoTime();
                    if (first != 0 && now - last > FLOOD_GAP_NANOS)
                    {
                        // A gap: the flood is over, or what came before it was stray frames (the link's own IPv6
                        // announcements when it comes up) and the flood starts now.
                        if (floodFrames >= MIN_FLOOD_FRAMES)
                        {
                            floodOver = true;
                        }
                        else
                        {
                            first = 0;
                            floodFrames = 0;
                        }
                    }
                    if (!floodOver)
                    {
                        if (first == 0)
                        {
                            first = now;
                        }
                        last = now;
                        floodFrames += n;
                    }
                }
                tap.flush();
                if (n == 0)
                {
                    tap.awaitReadable(1_000_000L);
                }
            }
            System.out.printf("reflector frames_in %d frames_out %d flood_frames %d flood_seconds %.3f%n",
                counts[0], counts[1], floodFrames, (last - first) / 1e9);
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
