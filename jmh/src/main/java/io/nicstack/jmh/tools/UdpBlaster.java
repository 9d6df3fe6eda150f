package io.nicstack.jmh.tools;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;

/**
 * Sends UDP datagrams of one size as fast as one thread can for a bounded time, from a kernel
 * socket inside the benchmark's namespace. Prints {@code blaster sent N seconds S}.
 *
 * <p>usage: UdpBlaster ADDRESS PORT PAYLOAD_BYTES SECONDS (the address must be in 198.18.0.0/15)
 */
public final class UdpBlaster
{
    private UdpBlaster()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final String address = args[0];
        if (!address.startsWith("198.18.") && !address.startsWith("198.19."))
        {
            throw new IllegalArgumentException("benchmarks send only to 198.18.0.0/15, not " + address);
        }
        final InetSocketAddress target = new InetSocketAddress(address, Integer.parseInt(args[1]));
        final ByteBuffer payload = ByteBuffer.allocateDirect(Integer.parseInt(args[2]));
        final long seconds = Long.parseLong(args[3]);
        long sent = 0;
        try (DatagramChannel channel = DatagramChannel.open())
        {
            channel.connect(target);
            final long start = System.nanoTime();
            final long end = start + seconds * 1_000_000_000L;
            while (System.nanoTime() < end)
            {
                for (int i = 0; i < 64; i++)
                {
                    payload.clear();
                    try
                    {
                        channel.write(payload);
                        sent++;
                    }
                    catch (final java.io.IOException e)
                    {
                        // ICMP errors reported on the connected socket (port unreachable): keep going.
                    }
                }
            }
            System.out.printf("blaster sent %d seconds %.3f%n", sent, (System.nanoTime() - start) / 1e9);
        }
    }
}
