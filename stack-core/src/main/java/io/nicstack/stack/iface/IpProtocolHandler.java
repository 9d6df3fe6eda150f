package io.nicstack.stack.iface;

import org.agrona.DirectBuffer;

import io.nicstack.stack.wire.Ipv4Header;

/** An upper layer (ICMP, UDP, TCP) that receives validated, reassembled IPv4 datagrams addressed to us. */
@FunctionalInterface
public interface IpProtocolHandler
{
    /**
     * Handle one datagram. {@code ip} is wrapped over its header; the payload is
     * {@code buffer[payloadOffset, payloadOffset + payloadLength)}. Nothing may be kept after return.
     *
     * @param broadcast true when the destination was a broadcast address.
     */
    void onDatagram(Ipv4Header ip, DirectBuffer buffer, int payloadOffset, int payloadLength, boolean broadcast, long now);
}
