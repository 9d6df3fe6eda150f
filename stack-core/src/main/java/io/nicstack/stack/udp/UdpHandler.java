package io.nicstack.stack.udp;

import org.agrona.DirectBuffer;

/** Receives a datagram on a bound socket, inline on the event loop; the buffer is only valid during the call. */
@FunctionalInterface
public interface UdpHandler
{
    void onDatagram(UdpSocket socket, int sourceAddress, int sourcePort, DirectBuffer buffer, int offset, int length, long now);

    /**
     * An ICMP error about a datagram this socket sent (RFC 1122 §4.1.3.3: UDP MUST pass every one to the application
     * layer); it comes as a datagram does, inline or through the socket's queue. Ignored unless overridden: UDP keeps no
     * state an error could change, so what it means (a refused request, a smaller datagram to send) is the
     * application's to decide.
     *
     * @param type               ICMP type: 3 destination unreachable, 4 source quench, 11 time exceeded, 12 parameter
     *                           problem.
     * @param code               ICMP code (for destination unreachable, 3 is port unreachable).
     * @param destinationAddress where the quoted datagram was going.
     * @param destinationPort    the port it was going to.
     * @param nextHopMtu         for fragmentation needed (type 3, code 4), the next-hop MTU the router reported (RFC
     *                           1191), or for a router older than it RFC 1191 §7's estimate (the plateau below the
     *                           refused datagram's length, see {@code Icmp}); 0 for every other error.
     */
    default void onIcmpError(UdpSocket socket, int type, int code, int destinationAddress, int destinationPort, int nextHopMtu,
        long now)
    {
    }
}
