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

    ETH_DROP_TRUNCATED("eth drop: truncated frame", Kind.DROP),
    ETH_DROP_NOT_FOR_US("eth drop: destination MAC not ours", Kind.DROP),
    ETH_DROP_UNKNOWN_ETHERTYPE("eth drop: unknown ethertype", Kind.DROP),

    ARP_IN_REQUESTS("arp requests in", Kind.ACCEPT),
    ARP_IN_REPLIES("arp replies in", Kind.ACCEPT),
    ARP_DROP_MALFORMED("arp drop: malformed", Kind.DROP),
    ARP_DROP_NOT_FOR_US("arp drop: target address not ours", Kind.DROP),
    ARP_OUT_REQUESTS("arp requests out", Kind.INFO),
    ARP_OUT_REPLIES("arp replies out", Kind.INFO),
    ARP_QUEUE_OVERFLOW("arp drop: waiting queue full (outbound)", Kind.INFO),
    ARP_RESOLUTION_FAILED("arp drop: no reply, frame discarded (outbound)", Kind.INFO),
    ARP_CACHE_FULL("arp: cache full, entry evicted", Kind.INFO),

    IPV4_DROP_TRUNCATED("ipv4 drop: truncated", Kind.DROP),
    IPV4_DROP_BAD_VERSION("ipv4 drop: bad version", Kind.DROP),
    IPV4_DROP_BAD_HEADER_LENGTH("ipv4 drop: bad header length", Kind.DROP),
    IPV4_DROP_BAD_TOTAL_LENGTH("ipv4 drop: total length beyond frame", Kind.DROP),
    IPV4_DROP_BAD_CHECKSUM("ipv4 drop: bad header checksum", Kind.DROP),
    IPV4_DROP_BAD_OPTIONS("ipv4 drop: bad option length", Kind.DROP),
    IPV4_DROP_TTL("ipv4 drop: ttl zero", Kind.DROP),
    IPV4_DROP_BAD_SOURCE("ipv4 drop: bad source address", Kind.DROP),
    IPV4_DROP_NOT_FOR_US("ipv4 drop: destination not ours", Kind.DROP),
    IPV4_DROP_UNKNOWN_PROTOCOL("ipv4 drop: unknown protocol", Kind.DROP),
    IPV4_DROP_BAD_FRAGMENT("ipv4 drop: malformed fragment", Kind.DROP),
    IPV4_FRAGMENTS_QUEUED("ipv4 fragments queued for reassembly", Kind.ACCEPT),
    IPV4_DROP_FRAGMENT_OVERLAP("ipv4 drop: overlapping fragment (datagram discarded)", Kind.DROP),
    IPV4_DROP_FRAGMENT_DUPLICATE("ipv4 drop: duplicate fragment", Kind.DROP),
    IPV4_DROP_REASSEMBLY_OVERFLOW("ipv4 drop: reassembly memory or fragment limit", Kind.DROP),
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
    ICMP_OUT_ECHO_REPLIES("icmp echo replies out", Kind.INFO),
    ICMP_OUT_UNREACHABLE("icmp destination unreachable out", Kind.INFO),
    ICMP_OUT_TIME_EXCEEDED("icmp time exceeded out", Kind.INFO),
    ICMP_OUT_RATE_LIMITED("icmp errors suppressed by rate limit", Kind.INFO),

    UDP_IN_DATAGRAMS("udp datagrams delivered", Kind.ACCEPT),
    UDP_DROP_TRUNCATED("udp drop: bad length", Kind.DROP),
    UDP_DROP_BAD_CHECKSUM("udp drop: bad checksum", Kind.DROP),
    UDP_DROP_NO_PORT("udp drop: no socket on port", Kind.DROP),
    UDP_DROP_RECEIVE_QUEUE_FULL("udp drop: receive queue full", Kind.DROP),
    UDP_OUT_DATAGRAMS("udp datagrams out", Kind.INFO),

    TCP_DROP_NOT_IMPLEMENTED("tcp drop: no tcp layer attached", Kind.DROP);

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
