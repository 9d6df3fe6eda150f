package io.nicstack.jmh.tools;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteOrder;
import java.nio.channels.DatagramChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.tap.TapDevice;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.UdpHeader;

/**
 * The raw capacity of a tap for {@code scripts/bench-tcp.sh}, through the same {@link TapDevice} the stack uses, with
 * the same checksum offload (on unless {@code --no-offload}). It runs inside the benchmark's namespace for a bounded
 * time, in one of three modes:
 *
 * <ul>
 *   <li>{@code reflect} (issue 3's reference): every IPv4 frame read is written straight back with the Ethernet and IP
 *   addresses swapped (checksums stay valid; a frame that came with a partial checksum goes back partial, as the
 *   pseudo-header sum does not change). The kernel handles every full-sized frame both ways, where TCP's return path
 *   carries only ACKs, so this limit is lower than either direction's own.</li>
 *   <li>{@code sink}: frames are read and counted, nothing is written: the capacity from the kernel to the device
 *   at one frame per read(2), the limit of kernel → nicstack with {@code --no-offload}. With offload the kernel hands
 *   TCP over in TSO superframes (up to 45 segments per read), which UDP cannot match here (UFO/USO are not offered),
 *   so TCP can pass this figure.</li>
 *   <li>{@code source}: full-sized UDP datagrams (1448-byte payloads) from {@link #SOURCE} to {@link #SINK} port 9
 *   are written as fast as the tap takes them, in bursts. This tool binds a kernel socket to that port and never
 *   reads it, so the kernel takes each datagram through IPv4 and UDP and drops it at the full socket, about the
 *   least work it can do for a frame it accepts. The count of datagrams that reached UDP's socket lookup
 *   ({@code /proc/net/snmp}, this namespace's) over the sending time is the capacity from the device to the kernel,
 *   the limit of nicstack → kernel at one frame per write(2) (with {@code --no-offload}; with offload the tap joins
 *   a burst's TCP segments into TSO superframes, up to 32 segments per writev(2), so TCP can pass this figure too).
 *   Frames the kernel dropped earlier (a full backlog) do not count.</li>
 * </ul>
 *
 * <p>{@code reflect} and {@code sink} time the flood alone (from its first burst to its last before a 100 ms gap) and
 * print {@code capacity MODE frames_in N frames_out M flood_frames F flood_seconds S R MB/s}, where R is F / S frames
 * a second times {@link #PAYLOAD} bytes. {@code source} prints
 * {@code capacity source frames_out N kernel_accepted K seconds S R MB/s}, where R is K / S frames a second times
 * {@link #PAYLOAD} bytes.
 *
 * <p>usage: TapCapacity reflect|sink|source TAP SECONDS [--no-offload]
 */
public final class TapCapacity
{
    /** The benchmark's addresses (198.18.0.0/15 only): the kernel's side of the tap, and the device's. */
    private static final int SINK = Ipv4Address.parse("198.18.0.1");
    private static final int SOURCE = Ipv4Address.parse("198.18.0.2");
    private static final long SOURCE_MAC = MacAddress.parse("02:00:c6:12:00:02");
    /** The payload of a full-sized segment with timestamps, as the blast and the capacity figure use. */
    private static final int PAYLOAD = 1448;

    /** A pause this long ends the flood, once it has brought at least {@link #MIN_FLOOD_FRAMES}. */
    private static final long FLOOD_GAP_NANOS = 100_000_000L;
    private static final long MIN_FLOOD_FRAMES = 10_000;

    private TapCapacity()
    {
    }

    public static void main(final String[] args) throws IOException, InterruptedException
    {
        if (args.length < 3 || !List.of("reflect", "sink", "source").contains(args[0]))
        {
            System.err.println("usage: TapCapacity reflect|sink|source TAP SECONDS [--no-offload]");
            System.exit(2);
        }
        final String mode = args[0];
        final long seconds = Long.parseLong(args[2]);
        final boolean offload = !(args.length > 3 && "--no-offload".equals(args[3]));
        try (TapDevice tap = TapDevice.open(args[1], offload))
        {
            System.out.println("capacity ready " + tap.name());
            if ("source".equals(mode))
            {
                source(tap, seconds, offload);
            }
            else
            {
                flood(tap, seconds, "reflect".equals(mode), mode);
            }
        }
    }

    /** Read (and reflect, if asked) for {@code seconds}; time the flood and print its rate. */
    private static void flood(final TapDevice tap, final long seconds, final boolean reflect, final String mode)
    {
        final long[] counts = new long[2];
        final FrameHandler handler = new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                onFrame(buffer, offset, length, 0);
            }

            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
            {
                counts[0]++;
                if (reflect && reflect(tap, buffer, offset, length, flags))
                {
                    counts[1]++;
                }
            }
        };
        // The rate is over the flood alone: from its first burst to its last, before a gap of 100 ms. The whole
        // window would count the idle tail (a third of it), and a stray frame after the flood (an ARP or IPv6
        // probe a second later) would stretch the flood's time.
        final long end = System.nanoTime() + seconds * 1_000_000_000L;
        long first = 0;
        long last = 0;
        long floodFrames = 0;
        boolean floodOver = false;
        while (System.nanoTime() < end)
        {
            final int n = tap.receive(handler, NetDevice.BURST);
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
        final double floodSeconds = (last - first) / 1e9;
        System.out.printf("capacity %s frames_in %d frames_out %d flood_frames %d flood_seconds %.3f %.1f MB/s%n",
            mode, counts[0], counts[1], floodFrames, floodSeconds, megabytesPerSecond(floodFrames, floodSeconds));
    }

    /** Write {@code in}'s IPv4 frame back with the addresses swapped; ARP and IPv6 chatter is dropped (false). */
    private static boolean reflect(
        final TapDevice tap, final DirectBuffer in, final int offset, final int length, final int flags)
    {
        if (length < 34 || (in.getByte(offset + 12) & 0xFF) != 0x08 || in.getByte(offset + 13) != 0x00)
        {
            return false;
        }
        final MutableDirectBuffer out = tap.claim();
        out.putBytes(0, in, offset + 6, 6);
        out.putBytes(6, in, offset, 6);
        out.putBytes(12, in, offset + 12, length - 12);
        out.putInt(14 + 12, in.getInt(offset + 14 + 16));
        out.putInt(14 + 16, in.getInt(offset + 14 + 12));
        final int protocol = in.getByte(offset + 14 + 9) & 0xFF;
        final boolean partial = (flags & FrameHandler.RX_L4_CHECKSUM_TRUSTED) != 0 && (protocol == 6 || protocol == 17)
            && (in.getShort(offset + 14 + 6, ByteOrder.BIG_ENDIAN) & 0x3FFF) == 0; // not a fragment
        tap.commit(length, partial ? NetDevice.TX_L4_CHECKSUM_PARTIAL : 0);
        return true;
    }

    /**
     * Wait for the kernel's side of the tap to come up, then write full-sized datagrams for {@code seconds} and print
     * how many the kernel took through IPv4 and UDP. Whatever the kernel sends back (its IPv6 chatter) is read and
     * dropped.
     */
    private static void source(final TapDevice tap, final long seconds, final boolean offload)
        throws IOException, InterruptedException
    {
        final Path sys = Path.of("/sys/class/net", tap.ifName());
        final long upBy = System.nanoTime() + 10_000_000_000L;
        // A tap's operstate stays "unknown"; IFF_UP (0x1) in its flags says the kernel's side was set up.
        while ((Integer.decode(Files.readString(sys.resolve("flags")).trim()) & 0x1) == 0)
        {
            if (System.nanoTime() > upBy)
            {
                throw new IllegalStateException(tap.ifName() + " did not come up within 10 s");
            }
            Thread.sleep(10);
        }
        final UnsafeBuffer frame = datagram(MacAddress.parse(Files.readString(sys.resolve("address")).trim()), offload);
        final FrameHandler drop = (buffer, offset, length) -> { };
        // A kernel socket that is never read: its receive buffer fills at once, and every later datagram is found
        // and dropped as RcvbufErrors. With no socket the kernel also starts an ICMP error for each datagram (and
        // sends only its rate limit of them); the rate measured that way was a third lower.
        try (DatagramChannel socket = DatagramChannel.open())
        {
            socket.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
            socket.bind(new InetSocketAddress(Ipv4Address.format(SINK), 9));
            final long before = udpArrivals();
            final long start = System.nanoTime();
            final long end = start + seconds * 1_000_000_000L;
            long written = 0;
            long now;
            while ((now = System.nanoTime()) < end)
            {
                for (int i = 0; i < NetDevice.BURST; i++)
                {
                    tap.claim().putBytes(0, frame, 0, frame.capacity());
                    tap.commit(frame.capacity(), offload ? NetDevice.TX_L4_CHECKSUM_PARTIAL : 0);
                }
                written += tap.flush();
                tap.receive(drop, NetDevice.BURST);
            }
            Thread.sleep(200); // frames still in the kernel's backlog reach UDP
            final long accepted = udpArrivals() - before;
            final double sent = (now - start) / 1e9;
            System.out.printf("capacity source frames_out %d kernel_accepted %d seconds %.3f %.1f MB/s%n",
                written, accepted, sent, megabytesPerSecond(accepted, sent));
        }
    }

    /** The capacity figure: {@code frames} full-sized payloads in {@code seconds}, in MB/s (0 for no time). */
    private static double megabytesPerSecond(final long frames, final double seconds)
    {
        return seconds > 0 ? frames / seconds * PAYLOAD / 1e6 : 0;
    }

    /** One UDP datagram from {@link #SOURCE} to {@link #SINK} port 9 with a {@link #PAYLOAD}-byte payload. */
    private static UnsafeBuffer datagram(final long sinkMac, final boolean partialChecksum)
    {
        final int udpLength = UdpHeader.HEADER_LENGTH + PAYLOAD;
        final int ipLength = Ipv4Header.MIN_HEADER_LENGTH + udpLength;
        final UnsafeBuffer frame = new UnsafeBuffer(new byte[EthernetFrame.HEADER_LENGTH + ipLength]);
        new EthernetFrame().wrap(frame, 0, frame.capacity())
            .destination(sinkMac).source(SOURCE_MAC).etherType(EthernetFrame.ETHERTYPE_IPV4);
        new Ipv4Header().wrap(frame, EthernetFrame.HEADER_LENGTH, ipLength)
            .versionAndIhl(5).totalLength(ipLength).flagsAndFragmentOffset(true, false, 0).ttl(64)
            .protocol(Ipv4Header.PROTOCOL_UDP).source(SOURCE).destination(SINK).updateChecksum();
        final int udp = EthernetFrame.HEADER_LENGTH + Ipv4Header.MIN_HEADER_LENGTH;
        frame.setMemory(udp + UdpHeader.HEADER_LENGTH, PAYLOAD, (byte)0x5a);
        final UdpHeader header = new UdpHeader().wrap(frame, udp, udpLength).sourcePort(5201).destinationPort(9)
            .datagramLength(udpLength);
        if (partialChecksum)
        {
            header.partialChecksum(SOURCE, SINK);
        }
        else
        {
            header.updateChecksum(SOURCE, SINK);
        }
        return frame;
    }

    /**
     * This namespace's count of UDP datagrams that reached the socket lookup ({@code /proc/net/snmp}): delivered
     * ({@code InDatagrams}), dropped at a full socket ({@code RcvbufErrors}) or for no socket ({@code NoPorts}).
     */
    private static long udpArrivals() throws IOException
    {
        final List<String> lines = Files.readAllLines(Path.of("/proc/net/snmp"));
        for (int i = 0; i + 1 < lines.size(); i++)
        {
            if (lines.get(i).startsWith("Udp:") && lines.get(i + 1).startsWith("Udp:"))
            {
                final List<String> names = List.of(lines.get(i).split("\\s+"));
                final String[] values = lines.get(i + 1).split("\\s+");
                long sum = 0;
                for (final String name : List.of("InDatagrams", "RcvbufErrors", "NoPorts"))
                {
                    sum += Long.parseLong(values[names.indexOf(name)]);
                }
                return sum;
            }
        }
        throw new IllegalStateException("no Udp counters in /proc/net/snmp");
    }
}
