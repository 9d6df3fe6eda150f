package io.nicstack.daemon;

import org.agrona.DirectBuffer;

import io.nicstack.stack.udp.UdpHandler;
import io.nicstack.stack.udp.UdpSocket;

/**
 * RFC 862 echo over UDP: every datagram on port 7 goes back to its sender unchanged, unless it comes from a
 * privileged port (below 1024) or was sent to a broadcast address.
 *
 * <p>Two services that answer every datagram automatically (echo 7, daytime 13, chargen 19, time 37, DNS 53, another
 * echo...) bounce a datagram whose source is one of them between each other forever, one spoofed packet being enough
 * (CVE-1999-0103, the "UDP echo/chargen loop"). Their ports are all below 1024, and a client sends from an ephemeral
 * port, so datagrams from ports below 1024 are dropped and counted, as xinetd's built-in UDP services do
 * ({@code bad_port_check}); FreeBSD's inetd drops only the ports of its own built-in UDP services, which misses a
 * loop through another host's DNS or NTP server.
 *
 * <p>A datagram sent to a broadcast address is not answered either ({@link UdpSocket#destinationIsBroadcast}): every
 * echo service on the link would answer it, to a source that may be forged ("fraggle", the UDP form of smurf).
 */
public final class UdpEchoService implements UdpHandler
{
    public static final int PORT = 7;
    /** Source ports below this are dropped (IPPORT_RESERVED). */
    static final int FIRST_CLIENT_PORT = 1024;
    /** The counter of dropped datagrams, in the counters file. */
    static final String DROPPED_LABEL = "UDP echo: datagrams from a port below 1024 dropped (loop guard)";
    /** The counter of datagrams to a broadcast address left unanswered, in the counters file. */
    static final String BROADCAST_DROPPED_LABEL = "UDP echo: datagrams to a broadcast address dropped (fraggle guard)";

    private final Runnable onDropped;
    private final Runnable onBroadcastDropped;

    public UdpEchoService()
    {
        this(() -> { }, () -> { });
    }

    /**
     * @param onDropped          counts a datagram dropped for its source port (event loop thread).
     * @param onBroadcastDropped counts a datagram dropped for its broadcast destination (event loop thread).
     */
    public UdpEchoService(final Runnable onDropped, final Runnable onBroadcastDropped)
    {
        this.onDropped = onDropped;
        this.onBroadcastDropped = onBroadcastDropped;
    }

    @Override
    public void onDatagram(
        final UdpSocket socket,
        final int sourceAddress,
        final int sourcePort,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final long now)
    {
        if (sourcePort < FIRST_CLIENT_PORT)
        {
            onDropped.run();
            return;
        }
        if (socket.destinationIsBroadcast())
        {
            // The "fraggle" reflector: a datagram to a broadcast address reaches every echo service on the link, and
            // their answers would all go to its source, which may be forged. Dropped, as ICMP drops an echo request to a
            // broadcast (RFC 1122 3.2.2.6; Linux's icmp_echo_ignore_broadcasts).
            onBroadcastDropped.run();
            return;
        }
        socket.send(sourceAddress, sourcePort, buffer, offset, length, now);
    }
}
