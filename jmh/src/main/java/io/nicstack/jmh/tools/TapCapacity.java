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
 *   <li>{@code reflect} (issue 3's reference): every IPv4 frame read whose addresses are both in 198.18.0.0/15 is
 *   written straight back with the Ethernet and IP addresses swapped, the ports left as they are (checksums stay
 *   valid; a frame that came with a partial checksum goes back partial, as the pseudo-header sum does not change).
 *   The flood's datagrams go to {@link #SOURCE} port {@value #FLOOD_PORT}, so the reflected ones arrive at
 *   {@link #SINK} port {@value #FLOOD_PORT}, where this tool binds a kernel socket it never reads, as {@code source}
 *   does: the kernel drops each at the full socket instead of finding no socket and starting an ICMP port
 *   unreachable for it. The figure is the frames this tool wrote back (write(2) succeeded) over the flood's time,
 *   at one frame per read(2) and one per write(2). The kernel handles every full-sized frame both ways, where TCP's
 *   return path carries only ACKs, so this limit is lower than either direction's own; and it is not a bound for TCP
 *   with offload, which crosses the tap in TSO superframes of many segments per system call.</li>
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
 * <p>{@code reflect} and {@code sink} time the flood alone (from its first burst to its last before a 100 ms gap).
 * Every mode prints one line that names what its MB/s counts, R being that count a second times {@link #PAYLOAD}
 * bytes:
 * <pre>
 * capacity reflect frames_in N reflected W write_failed X kernel_accepted K flood_frames_in FI flood_reflected FW
 *     flood_seconds S R MB/s (flood_reflected / flood_seconds x 1448)
 * capacity sink frames_in N flood_frames_in FI flood_seconds S R MB/s (flood_frames_in / flood_seconds x 1448)
 * capacity source frames_out W write_failed X kernel_accepted K seconds S R MB/s (kernel_accepted / seconds x 1448)
 * </pre>
 * ({@code kernel_accepted} in {@code reflect} is the reflected datagrams that reached UDP's socket lookup, for the
 * record; the figure does not use it.)
 *
 * <p>Network safety: the addresses are 198.18.0.0/15 only, and the tool refuses to run in the initial network
 * namespace (the one pid 1 is in): the script that starts it makes a namespace of its own for it.
 *
 * <p>usage: TapCapacity reflect|sink|source TAP SECONDS [--no-offload]
 */
public final class TapCapacity
{
    /** The benchmark's addresses (198.18.0.0/15 only): the kernel's side of the tap, and the device's. */
    private static final int SINK = Ipv4Address.parse("198.18.0.1");
    private static final int SOURCE = Ipv4Address.parse("198.18.0.2");
    private static final long SOURCE_MAC = MacAddress.parse("02:00:c6:12:00:02");
    /** 198.18.0.0/15, the range reserved for benchmarking network devices (RFC 2544): the only one this tool uses. */
    private static final int BENCH_NET = Ipv4Address.parse("198.18.0.0");
    private static final int BENCH_MASK = 0xFFFE_0000;
    /** The port the flood ({@code bulk_peer.py blast}) is sent to, and so the one its reflections arrive at. */
    private static final int FLOOD_PORT = 5201;
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
        refuseInitialNetworkNamespace();
        try (TapDevice tap = TapDevice.open(args[1], offload))
        {
            System.out.println("capacity ready " + tap.name());
            switch (mode)
            {
                case "source" -> source(tap, seconds, offload);
                case "reflect" -> reflect(tap, seconds);
                default -> flood(tap, seconds, false);
            }
        }
    }

    /** Whether {@code address} is in 198.18.0.0/15, the only range this tool writes to or from. */
    private static boolean benchmarkAddress(final int address)
    {
        return (address & BENCH_MASK) == BENCH_NET;
    }

    /**
     * Refuse to run in the initial network namespace (pid 1's), where the tap and its frames would meet the host's
     * own interfaces: the benchmark scripts start this tool with {@code ip netns exec} in a namespace they made. Where
     * pid 1's namespace cannot be read (a container may deny it even to root), this one must be a namespace that
     * {@code ip netns} named (one of {@code /run/netns}).
     */
    private static void refuseInitialNetworkNamespace() throws IOException
    {
        final String own = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
        String reason;
        try
        {
            final String init = Files.readSymbolicLink(Path.of("/proc/1/ns/net")).toString();
            if (!own.equals(init))
            {
                return;
            }
            reason = "this is pid 1's network namespace, " + own;
        }
        catch (final IOException e)
        {
            if (namedByIpNetns(own))
            {
                return;
            }
            reason = "pid 1's network namespace cannot be read (" + e + ") and this one, " + own
                + ", is not one of /run/netns";
        }
        System.err.println("TapCapacity: refusing to run: " + reason + ". Run it inside a namespace of its own, "
            + "as scripts/bench-tcp.sh does: ip netns exec NS java ... TapCapacity ...");
        System.exit(2);
    }

    /** Whether {@code ns} ("net:[inode]") is a namespace {@code ip netns} named, bound at {@code /run/netns/NAME}. */
    private static boolean namedByIpNetns(final String ns) throws IOException
    {
        final Path named = Path.of("/run/netns");
        if (!Files.isDirectory(named))
        {
            return false;
        }
        try (var entries = Files.list(named))
        {
            return entries.anyMatch(p ->
            {
                try
                {
                    return ns.equals("net:[" + Files.getAttribute(p, "unix:ino") + "]");
                }
                catch (final IOException | UnsupportedOperationException e)
                {
                    return false;
                }
            });
        }
    }

    /**
     * {@code reflect}: bind the never-read socket the reflections land on, once the kernel's side of the tap is up
     * (its address is set before that), then reflect for {@code seconds}.
     */
    private static void reflect(final TapDevice tap, final long seconds) throws IOException, InterruptedException
    {
        awaitUp(tap);
        try (DatagramChannel socket = neverRead(FLOOD_PORT))
        {
            System.out.println("capacity bound " + Ipv4Address.format(SINK) + ":" + FLOOD_PORT);
            flood(tap, seconds, true);
        }
    }

    /**
     * Read for {@code seconds}, and reflect each frame if asked; time the flood and print its rate: of the frames
     * written back when reflecting, of the frames read otherwise.
     */
    private static void flood(final TapDevice tap, final long seconds, final boolean reflect) throws IOException
    {
        final long udpBefore = reflect ? udpArrivals() : 0;
        final long[] committed = new long[1];
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
                if (reflect && reflectFrame(tap, buffer, offset, length, flags))
                {
                    committed[0]++;
                }
            }
        };
        // The rate is over the flood alone: from its first burst to its last, before a gap of 100 ms. The whole
        // window would count the idle tail (a third of it), and a stray frame after the flood (an ARP or IPv6
        // probe a second later) would stretch the flood's time.
        final long end = System.nanoTime() + seconds * 1_000_000_000L;
        long framesIn = 0;
        long reflected = 0;
        long first = 0;
        long last = 0;
        long floodIn = 0;
        long floodReflected = 0;
        boolean floodOver = false;
        while (System.nanoTime() < end)
        {
            // At most a burst is read, so at most a burst is committed: claim() never flushes on its own, and every
            // frame written is counted here, from flush()'s return.
            final int n = tap.receive(handler, NetDevice.BURST);
            final int written = tap.flush();
            framesIn += n;
            reflected += written;
            if (n > 0 && !floodOver)
            {
                final long now = System.nanoTime();
                if (first != 0 && now - last > FLOOD_GAP_NANOS)
                {
                    // A gap: the flood is over, or what came before it was stray frames (the link's own IPv6
                    // announcements when it comes up) and the flood starts now.
                    if (floodIn >= MIN_FLOOD_FRAMES)
                    {
                        floodOver = true;
                    }
                    else
                    {
                        first = 0;
                        floodIn = 0;
                        floodReflected = 0;
                    }
                }
                if (!floodOver)
                {
                    if (first == 0)
                    {
                        first = now;
                    }
                    last = now;
                    floodIn += n;
                    floodReflected += written;
                }
            }
            if (n == 0)
            {
                tap.awaitReadable(1_000_000L);
            }
        }
        final double floodSeconds = (last - first) / 1e9;
        if (reflect)
        {
            final long failed = committed[0] - reflected;
            System.out.printf("capacity reflect frames_in %d reflected %d write_failed %d kernel_accepted %d "
                + "flood_frames_in %d flood_reflected %d flood_seconds %.3f %.1f MB/s "
                + "(flood_reflected / flood_seconds x %d)%n", framesIn, reflected, failed, udpArrivals() - udpBefore,
                floodIn, floodReflected, floodSeconds, megabytesPerSecond(floodReflected, floodSeconds), PAYLOAD);
            if (failed > 0)
            {
                System.err.println("TapCapacity: " + failed + " reflected frames were not written (the tap refused "
                    + "them); the figure counts only those written");
            }
        }
        else
        {
            System.out.printf("capacity sink frames_in %d flood_frames_in %d flood_seconds %.3f %.1f MB/s "
                + "(flood_frames_in / flood_seconds x %d)%n",
                framesIn, floodIn, floodSeconds, megabytesPerSecond(floodIn, floodSeconds), PAYLOAD);
        }
    }

    /**
     * Queue {@code in}'s IPv4 frame back with the addresses swapped; ARP, IPv6 chatter and any address outside
     * 198.18.0.0/15 are dropped (false).
     */
    private static boolean reflectFrame(
        final TapDevice tap, final DirectBuffer in, final int offset, final int length, final int flags)
    {
        if (length < 34 || (in.getByte(offset + 12) & 0xFF) != 0x08 || in.getByte(offset + 13) != 0x00 ||
            !benchmarkAddress(in.getInt(offset + 14 + 12, ByteOrder.BIG_ENDIAN)) ||
            !benchmarkAddress(in.getInt(offset + 14 + 16, ByteOrder.BIG_ENDIAN)))
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

    /** Wait up to 10 s for the kernel's side of the tap to be set up (the script sets its address first). */
    private static void awaitUp(final TapDevice tap) throws IOException, InterruptedException
    {
        final Path flags = Path.of("/sys/class/net", tap.ifName(), "flags");
        final long upBy = System.nanoTime() + 10_000_000_000L;
        // A tap's operstate stays "unknown"; IFF_UP (0x1) in its flags says the kernel's side was set up.
        while ((Integer.decode(Files.readString(flags).trim()) & 0x1) == 0)
        {
            if (System.nanoTime() > upBy)
            {
                throw new IllegalStateException(tap.ifName() + " did not come up within 10 s");
            }
            Thread.sleep(10);
        }
    }

    /**
     * A kernel socket on {@link #SINK} {@code port} that is never read: its receive buffer fills at once, and every
     * later datagram is found and dropped as RcvbufErrors. With no socket the kernel also starts an ICMP error for
     * each datagram (and sends only its rate limit of them); the source's rate measured that way was a third lower.
     */
    private static DatagramChannel neverRead(final int port) throws IOException
    {
        final DatagramChannel socket = DatagramChannel.open();
        try
        {
            socket.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
            socket.bind(new InetSocketAddress(Ipv4Address.format(SINK), port));
            return socket;
        }
        catch (final IOException e)
        {
            socket.close();
            throw e;
        }
    }

    /**
     * Wait for the kernel's side of the tap to come up, then write full-sized datagrams for {@code seconds} and print
     * how many the kernel took through IPv4 and UDP. Whatever the kernel sends back (its IPv6 chatter) is read and
     * dropped.
     */
    private static void source(final TapDevice tap, final long seconds, final boolean offload)
        throws IOException, InterruptedException
    {
        awaitUp(tap);
        final Path sys = Path.of("/sys/class/net", tap.ifName());
        final UnsafeBuffer frame = datagram(MacAddress.parse(Files.readString(sys.resolve("address")).trim()), offload);
        final FrameHandler drop = (buffer, offset, length) -> { };
        try (DatagramChannel socket = neverRead(9))
        {
            final long before = udpArrivals();
            final long start = System.nanoTime();
            final long end = start + seconds * 1_000_000_000L;
            long written = 0;
            long committed = 0;
            long now;
            while ((now = System.nanoTime()) < end)
            {
                for (int i = 0; i < NetDevice.BURST; i++)
                {
                    tap.claim().putBytes(0, frame, 0, frame.capacity());
                    tap.commit(frame.capacity(), offload ? NetDevice.TX_L4_CHECKSUM_PARTIAL : 0);
                }
                committed += NetDevice.BURST;
                written += tap.flush();
                tap.receive(drop, NetDevice.BURST);
            }
            Thread.sleep(200); // frames still in the kernel's backlog reach UDP
            final long accepted = udpArrivals() - before;
            final double sent = (now - start) / 1e9;
            System.out.printf("capacity source frames_out %d write_failed %d kernel_accepted %d seconds %.3f %.1f MB/s "
                + "(kernel_accepted / seconds x %d)%n",
                written, committed - written, accepted, sent, megabytesPerSecond(accepted, sent), PAYLOAD);
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
