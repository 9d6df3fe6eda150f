package io.nicstack.stack.stats;

/**
 * Every counter the stack keeps, with the label shown by {@code nicstack stats}.
 *
 * <p>Each received frame ends in exactly one <em>terminal</em> counter: a drop reason
 * ({@link Kind#DROP}) or an accepted outcome ({@link Kind#ACCEPT}). A datagram rebuilt by reassembly
 * reaches a terminal counter too, although it is not a frame; so
 * {@code FRAMES_IN == sum(DROP) + sum(ACCEPT) - IPV4_REASSEMBLED} (see
 * {@link StackCounters#unaccountedFrames()}).
 */
public enum StackCounter
{
    FRAMES_IN("frames in", Kind.INFO),
    BYTES_IN("bytes in", Kind.INFO),
    FRAMES_OUT("frames out", Kind.INFO),
    BYTES_OUT("bytes out", Kind.INFO),
    DEVICE_DROPS("frames dropped by the device", Kind.INFO),
    RX_CHECKSUMS_TRUSTED("tcp/udp checksums vouched for by the device (offload, not verified again)", Kind.INFO),
    TX_CHECKSUMS_OFFLOADED("tcp/udp checksums left to the device to complete (offload)", Kind.INFO),
    RX_SUPERFRAMES("tcp superframes from the device (segmentation offload), cut into frames", Kind.INFO),
    RX_SUPERFRAME_SEGMENTS("frames cut from tcp superframes from the device (counted in frames in)", Kind.INFO),
    TX_SUPERFRAMES("tcp superframes to the device (segmentation offload), joined from frames", Kind.INFO),
    TX_SUPERFRAME_SEGMENTS("frames joined into tcp superframes to the device (counted in frames out)", Kind.INFO),
    TX_SUPERFRAMES_REFUSED("tcp superframes the device refused, then sent frame by frame (no more joined)", Kind.INFO),
    INTERNAL_ERRORS("drop: internal error while processing (a bug; first ones logged)", Kind.DROP),

    ETH_DROP_TRUNCATED("eth drop: truncated frame", Kind.DROP),
    ETH_DROP_NOT_FOR_US("eth drop: destination MAC not ours", Kind.DROP),
    ETH_DROP_UNKNOWN_ETHERTYPE("eth drop: unknown ethertype", Kind.DROP),

    ARP_IN_REQUESTS("arp requests in", Kind.ACCEPT),
    ARP_IN_REPLIES("arp replies in", Kind.ACCEPT),
    ARP_DROP_MALFORMED("arp drop: malformed", Kind.DROP),
    ARP_DROP_NOT_FOR_US("arp drop: target address not ours", Kind.DROP),
    ARP_DROP_OWN_MAC("arp drop: sender MAC is ours (our own frame looped back, or a spoof)", Kind.DROP),
    ARP_DROP_ADDRESS_CONFLICT("arp drop: another host claims our address (defended at most every 10 s)", Kind.DROP),
    ARP_OUT_REQUESTS("arp requests out", Kind.INFO),
    ARP_OUT_REPLIES("arp replies out", Kind.INFO),
    ARP_QUEUE_OVERFLOW("arp drop: waiting queue full (outbound)", Kind.INFO),
    ARP_RESOLUTION_FAILED("arp drop: no reply, frame discarded (outbound)", Kind.INFO),
    ARP_CACHE_FULL("arp: cache full, entry evicted", Kind.INFO),
    ARP_LOCKTIME_IGNORED("arp: another MAC for an address whose entry changed under 1 s ago, not taken (locktime)", Kind.INFO),
    ARP_RESOLUTION_REFUSED("arp drop: cache full of entries awaiting replies, no request sent, frame discarded (outbound)", Kind.INFO),

    IPV4_DROP_TRUNCATED("ipv4 drop: truncated", Kind.DROP),
    IPV4_DROP_BAD_VERSION("ipv4 drop: bad version", Kind.DROP),
    IPV4_DROP_BAD_HEADER_LENGTH("ipv4 drop: bad header length", Kind.DROP),
    IPV4_DROP_BAD_TOTAL_LENGTH("ipv4 drop: total length beyond frame", Kind.DROP),
    IPV4_DROP_BAD_CHECKSUM("ipv4 drop: bad header checksum", Kind.DROP),
    IPV4_DROP_BAD_OPTIONS("ipv4 drop: bad option length", Kind.DROP),
    IPV4_DROP_SOURCE_ROUTE("ipv4 drop: source route option (RFC 7126)", Kind.DROP),
    IPV4_DROP_BAD_SOURCE("ipv4 drop: bad source address", Kind.DROP),
    IPV4_DROP_NOT_FOR_US("ipv4 drop: destination not ours", Kind.DROP),
    IPV4_DROP_UNICAST_IN_LINK_BROADCAST("ipv4 drop: unicast destination in a link-layer broadcast", Kind.DROP),
    IPV4_DROP_UNKNOWN_PROTOCOL("ipv4 drop: unknown protocol", Kind.DROP),
    IPV4_DROP_BAD_FRAGMENT("ipv4 drop: malformed fragment", Kind.DROP),
    IPV4_FRAGMENTS_QUEUED("ipv4 fragments queued for reassembly", Kind.ACCEPT),
    IPV4_DROP_FRAGMENT_OVERLAP("ipv4 drop: overlapping fragment (datagram discarded)", Kind.DROP),
    IPV4_DROP_FRAGMENT_DUPLICATE("ipv4 drop: duplicate fragment", Kind.DROP),
    IPV4_DROP_REASSEMBLY_OVERFLOW("ipv4 drop: reassembly fragment limit (datagram discarded)", Kind.DROP),
    IPV4_REASSEMBLED("ipv4 datagrams reassembled", Kind.INFO),
    IPV4_REASSEMBLY_TIMEOUTS("ipv4 reassembly timeouts (datagrams)", Kind.INFO),
    IPV4_REASSEMBLY_DISCARDED("ipv4 reassembly: datagrams discarded", Kind.INFO),
    IPV4_OUT_DATAGRAMS("ipv4 datagrams out", Kind.INFO),
    IPV4_OUT_FRAGMENTS("ipv4 fragments created", Kind.INFO),
    IPV4_OUT_NO_ROUTE("ipv4 out drop: no route", Kind.INFO),
    IPV4_OUT_TOO_BIG("ipv4 out drop: datagram too big", Kind.INFO),

    ICMP_IN_ECHO_REQUESTS("icmp echo requests in", Kind.ACCEPT),
    ICMP_IN_OTHER("icmp other messages in", Kind.ACCEPT),
    ICMP_DROP_TRUNCATED("icmp drop: truncated", Kind.DROP),
    ICMP_DROP_BAD_CHECKSUM("icmp drop: bad checksum", Kind.DROP),
    ICMP_DROP_BROADCAST_ECHO("icmp drop: echo to broadcast", Kind.DROP),
    ICMP_IN_ERRORS_IGNORED("icmp errors ignored (to a broadcast, or quoting no datagram of ours: another source, a later fragment, under 8 octets, a protocol we do not run)", Kind.INFO),
    ICMP_IN_REDIRECTS_APPLIED("icmp redirects applied (a host route to a better first hop)", Kind.INFO),
    ICMP_IN_REDIRECTS_IGNORED("icmp redirects ignored (not from the first hop, not to a host on our subnet, not about our datagram, new first hop not resolved)", Kind.INFO),
    ICMP_IN_REDIRECTS_UNRESOLVED("icmp redirects not applied: the new first hop is not resolved yet, its address asked (counted ignored too)", Kind.INFO),
    IPV4_REDIRECTS_DROPPED_UNRESOLVED("ipv4 redirected routes dropped: their first hop stopped answering ARP", Kind.INFO),
    ICMP_OUT_ECHO_REPLIES("icmp echo replies out", Kind.INFO),
    ICMP_OUT_UNREACHABLE("icmp destination unreachable out", Kind.INFO),
    ICMP_OUT_TIME_EXCEEDED("icmp time exceeded out", Kind.INFO),
    ICMP_OUT_PARAMETER_PROBLEM("icmp parameter problem out", Kind.INFO),
    ICMP_OUT_RATE_LIMITED("icmp errors suppressed by the global rate limit", Kind.INFO),

    UDP_IN_DATAGRAMS("udp datagrams delivered", Kind.ACCEPT),
    UDP_DROP_TRUNCATED("udp drop: bad length", Kind.DROP),
    UDP_DROP_BAD_CHECKSUM("udp drop: bad checksum", Kind.DROP),
    UDP_DROP_NO_PORT("udp drop: no socket on port", Kind.DROP),
    UDP_DROP_RECEIVE_QUEUE_FULL("udp drop: receive queue full", Kind.DROP),
    UDP_OUT_DATAGRAMS("udp datagrams out", Kind.INFO),
    UDP_ICMP_ERRORS("udp icmp errors passed to the socket that sent the quoted datagram (rfc 1122 s4.1.3.3)", Kind.INFO),
    UDP_ICMP_IGNORED("udp icmp errors ignored: no socket on the quoted port", Kind.INFO),

    TCP_SEGMENTS_IN("tcp segments in", Kind.ACCEPT),
    TCP_DROP_TRUNCATED("tcp drop: truncated or bad data offset", Kind.DROP),
    TCP_DROP_BAD_CHECKSUM("tcp drop: bad checksum", Kind.DROP),
    TCP_DROP_BROADCAST("tcp drop: to a broadcast address", Kind.DROP),
    TCP_BAD_OPTIONS("tcp segments with an illegal option length (rest ignored)", Kind.INFO),
    TCP_SEGMENTS_OUT("tcp segments out", Kind.INFO),
    TCP_PREDICTED("tcp segments taken by header prediction (the established fast path)", Kind.INFO),
    TCP_EARLY_DEMUX("tcp segments handed to their connection past the ethernet and ipv4 layers (early demux)", Kind.INFO),
    TCP_ACTIVE_OPENS("tcp active opens", Kind.INFO),
    TCP_PASSIVE_OPENS("tcp passive opens", Kind.INFO),
    TCP_ESTABLISHED("tcp connections established", Kind.INFO),
    TCP_ATTEMPT_FAILS("tcp failed connection attempts", Kind.INFO),
    TCP_ESTABLISHED_RESETS("tcp established connections reset (RFC 4022 tcpEstabResets)", Kind.INFO),
    TCP_RESETS_SENT("tcp resets sent", Kind.INFO),
    TCP_RESETS_RECEIVED("tcp resets received (accepted)", Kind.INFO),
    TCP_NO_CONNECTION("tcp segments for no connection (answered by reset)", Kind.INFO),
    TCP_ICMP_ERRORS("tcp icmp errors acted on (soft errors recorded, connection attempts refused)", Kind.INFO),
    TCP_ICMP_IGNORED("tcp icmp errors ignored (no connection, sequence not in flight, source quench)", Kind.INFO),
    TCP_PATH_MTU_REDUCTIONS("tcp send mss lowered by icmp fragmentation needed (path mtu discovery)", Kind.INFO),
    TCP_PATH_MTU_RAISES("tcp send mss raised again after 10 minutes (rfc 1191 s6.3)", Kind.INFO),
    TCP_RETRANSMITTED_SEGMENTS("tcp segments retransmitted", Kind.INFO),
    TCP_FAST_RETRANSMITS("tcp fast retransmits", Kind.INFO),
    TCP_SACK_RECOVERIES("tcp sack recoveries", Kind.INFO),
    TCP_RESCUE_RETRANSMITS("tcp sack rescue retransmissions of a recovery's tail (rfc 6675 nextseg rule 4)", Kind.INFO),
    TCP_LOST_RETRANSMISSIONS("tcp retransmissions found lost in recovery and sent again", Kind.INFO),
    TCP_SPURIOUS_RECOVERIES_UNDONE("tcp fast recoveries undone: every retransmission d-sacked as spurious (rfc 2883, rfc 3708)", Kind.INFO),
    TCP_LOSS_PROBES("tcp tail loss probes sent (rfc 8985 s7)", Kind.INFO),
    TCP_LOSS_PROBE_RECOVERIES("tcp single losses repaired by a tail loss probe (rfc 8985 s7.4.2)", Kind.INFO),
    TCP_RTO_EXPIRIES("tcp retransmission timeouts", Kind.INFO),
    TCP_R1_REACHED("tcp connections past R1 retransmissions", Kind.INFO),
    TCP_CHALLENGE_ACKS("tcp challenge acks sent", Kind.INFO),
    TCP_CHALLENGE_ACKS_LIMITED("tcp challenge acks suppressed by rate limit (per connection or host-wide)", Kind.INFO),
    TCP_ACK_INVALID("tcp drop: ack outside the acceptable range (rfc 5961)", Kind.INFO),
    TCP_PAWS_DROPS("tcp drop: paws (old timestamp)", Kind.INFO),
    TCP_OUT_OF_WINDOW("tcp drop: segment outside the receive window", Kind.INFO),
    TCP_DROP_SYN_FIN("tcp drop: syn with fin to a listener", Kind.INFO),
    TCP_OUT_OF_ORDER_REJECTED("tcp drop: out-of-order data over the range limit", Kind.INFO),
    TCP_SYN_COOKIES_SENT("tcp syn cookies sent", Kind.INFO),
    TCP_SYN_COOKIES_ACCEPTED("tcp syn cookies accepted", Kind.INFO),
    TCP_SYN_COOKIES_FAILED("tcp syn cookies rejected", Kind.INFO),
    TCP_LISTEN_OVERFLOWS("tcp listener full: connection refused (syn answered with a reset at the connection limit)", Kind.INFO),
    TCP_HALF_OPEN_EVICTED("tcp half-open connections reset to admit a completed syn cookie handshake (listener limit or buffers)", Kind.INFO),
    TCP_BUFFER_BUDGET_EXHAUSTED("tcp buffer memory budget exhausted (cookie or refusal instead)", Kind.INFO),
    TCP_TIMEOUTS("tcp connections timed out", Kind.INFO),
    TCP_TIME_WAIT_REUSED("tcp time-wait connections reopened by a new syn (rfc 6191)", Kind.INFO),
    TCP_TIME_WAIT_OVERFLOW("tcp time-wait bound full: connection closed without time-wait", Kind.INFO),
    ICMP_OUT_RATE_LIMITED_PEER("icmp errors suppressed by the per-peer rate limit", Kind.INFO),
    TCP_LINK_FAILURES("tcp segments arp discarded (first hop unanswered), told to their connection: attempts ended as unreachable, else a soft error", Kind.INFO),
    UDP_ICMP_QUEUE_FULL("udp icmp errors lost: the receive queue of the socket on the quoted port was full", Kind.INFO),
    TCP_LISTEN_SYN_DROPPED("tcp listener: syn dropped unanswered, accept queue full (no cookie either)", Kind.INFO),
    TCP_LISTEN_COOKIE_ACK_DROPPED("tcp listener: valid syn cookie ack dropped, accept queue full or connection limit held by synchronized connections (the cookie stays valid)", Kind.INFO),
    TCP_LISTEN_ACK_DROPPED("tcp listener: handshake's final ack dropped, accept queue full (the connection stays half-open)", Kind.INFO),
    TCP_LISTEN_ESTABLISHED_RESET("tcp listener: established connection reset, its listener could not queue it for accept", Kind.INFO),
    IPV4_REASSEMBLY_EVICTED_OWN_SOURCE("ipv4 reassembly: datagrams given up for a newer one from their own source (in discarded)", Kind.INFO),
    IPV4_REASSEMBLY_EVICTED_OTHER_SOURCE("ipv4 reassembly: datagrams given up for a new one from another source, every context taken (in discarded)", Kind.INFO);

    /** How a counter takes part in the frame accounting. */
    public enum Kind
    {
        /** Terminal: the frame (or reassembled datagram) was discarded for this reason. */
        DROP,
        /** Terminal: the frame (or reassembled datagram) was consumed. */
        ACCEPT,
        /** Not terminal: volume, outbound events, datagram-level reassembly events. */
        INFO
    }

    private final String label;
    private final Kind kind;

    StackCounter(final String label, final Kind kind)
    {
        this.label = label;
        this.kind = kind;
    }

    public String label()
    {
        return label;
    }

    public Kind kind()
    {
        return kind;
    }
}
