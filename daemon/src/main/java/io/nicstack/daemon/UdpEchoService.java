package io.nicstack.daemon;

import org.agrona.DirectBuffer;

import io.nicstack.stack.udp.UdpHandler;
import io.nicstack.stack.udp.UdpSocket;

/** RFC 862 echo over UDP: every datagram on port 7 goes back to its sender unchanged. */
public final class UdpEchoService implements UdpHandler
{
    public static final int PORT = 7;

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
        socket.send(sourceAddress, sourcePort, buffer, offset, length, now);
    }
}
