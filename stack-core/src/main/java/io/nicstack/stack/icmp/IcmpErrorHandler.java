package io.nicstack.stack.icmp;

import org.agrona.DirectBuffer;

/**
 * An upper layer that acts on ICMP error messages about datagrams it sent (RFC 1122 §3.2.2, RFC 9293 §3.9.2 MUST-54).
 * {@link Icmp} has already checked that the quoted IPv4 header is well formed, came from this host and quotes at least
 * the first 8 octets of the upper-layer header (all RFC 792 promises).
 *
 * <p>UDP's handler also hears, as a host unreachable (type 3, code 1), of a datagram of ours that ARP discarded unsent
 * because its first hop never answered: the error Linux's arp_error_report delivers to the sending host itself. TCP
 * hears of those apart ({@code Ipv4.LinkFailureHandler}), as it treats them unlike a received host unreachable.
 */
@FunctionalInterface
public interface IcmpErrorHandler
{
    /**
     * @param type             ICMP type: 3 destination unreachable, 4 source quench, 11 time exceeded, 12 parameter problem.
     * @param code             ICMP code.
     * @param restOfHeader     the ICMP header's last 4 octets (for fragmentation needed, RFC 1191: the next-hop MTU
     *                         in the low 16 bits, 0 from routers older than RFC 1191).
     * @param quotedDestination destination address of the quoted datagram (the remote end).
     * @param quoted           buffer holding the quoted upper-layer header.
     * @param offset           where it starts.
     * @param length           quoted bytes available, at least 8.
     */
    void onIcmpError(int type, int code, int restOfHeader, int quotedDestination, DirectBuffer quoted, int offset, int length,
        long now);
}
