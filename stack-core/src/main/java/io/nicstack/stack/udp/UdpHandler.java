package io.nicstack.stack.udp;

import org.agrona.DirectBuffer;

/** Receives a datagram on a bound socket, inline on the event loop; the buffer is only valid during the call. */
@FunctionalInterface
public interface UdpHandler
{
    void onDatagram(UdpSocket socket, int sourceAddress, int sourcePort, DirectBuffer buffer, int offset, int length, long now);
}
