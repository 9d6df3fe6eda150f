package io.nicstack.stack.iface;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.storage.Reassembler;
import io.nicstack.stack.time.Timers;
import io.nicstack.stack.wire.Checksum;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.Ipv4Fixed;
import io.nicstack.stack.wire.Ipv4Header;

/**
 * IPv4 for a host (RFC 791, RFC 1122 §3.2): input validation with a counted reason for every drop,
 * reassembly, demultiplexing to upper layers, and output with next-hop resolution and fragmentation.
 */
public final class Ipv4
{
    private static final int MAX_PAYLOAD = 65535 - Ipv4Header.MIN_HEADER_LENGTH;
    private static final int OPTION_EOL = 0;
    private static final int OPTION_NOP = 1;
    private static final int OPTION_LSRR = 131;
    private static final int OPTION_SSRR = 137;
    private static final int OPTIONS_OK = 0;
    private static final int OPTIONS_MALFORMED = 1;
    private static final int OPTIONS_SOURCE_ROUTE = 2;

    private final StackConfig config;
    private final Link link;
    private final Arp arp;
    private final StackCounters counters;
    private final Reassembler reassembler;
    private final IpProtocolHandler[] handlers = new IpProtocolHandler[256];
    /** Told of their datagrams that ARP could not deliver, by protocol ({@link #onLinkFailure}). */
    private final LinkFailureHandler[] linkFailureHandlers = new LinkFailureHandler[256];
    /** Over a frame ARP discarded ({@link #onFrameDiscarded}). */
    private final Ipv4Header discardedHeader = new Ipv4Header();
    /** Told of datagrams for a protocol no handler takes, already counted as dropped (ICMP answers them). */
    private IpProtocolHandler unknownProtocol;
    /** Told of datagrams to us with a malformed option, already counted as dropped (ICMP answers them). */
    private BadOptionsHandler badOptions;
    /** Where {@link #checkOptions} found a malformed option: its first octet, from the start of the IP header. */
    private int malformedOptionAt;
    private final Ipv4Header in = new Ipv4Header();
    private final Ipv4Fixed fixed = new Ipv4Fixed();
    private final Ipv4Header out = new Ipv4Header();
    private final Ipv4Header reassembled = new Ipv4Header();
    private final int mtu;
    /** Our subnet's network address ({@link #isMartian}), from the sealed config. */
    private final int subnetNetwork;
    private boolean l4ChecksumTrusted;
    /** Source address of the datagram an upper layer is handling (see {@link #datagramSource()}). */
    private int datagramSource;
    private final Identifications identifications;
    private final Redirects redirects = new Redirects();
    /** The Reassembler's eviction counts already added to the stack's counters. */

    public Ipv4(
        final StackConfig config,
        final Link link,
        final Arp arp,
        final StackCounters counters,
        final Timers timers,
        final Identifications identifications,
        final Reassembler.TimeoutListener reassemblyTimeout)
    {
        this.identifications = identifications;
        this.config = config;
        this.link = link;
        this.arp = arp;
        this.counters = counters;
        this.mtu = Math.min(config.mtu(), link.device().mtu());
        this.subnetNetwork = config.address() & config.netmask();
        this.reassembler = new Reassembler(
            config.reassemblyMaxDatagrams(),
            config.reassemblyMaxFragments(),
            config.reassemblyTimeoutNanos(),
            timers,
            (buffer, offset, length, now) ->
            {
                counters.increment(StackCounter.IPV4_REASSEMBLY_TIMEOUTS);
                counters.increment(StackCounter.IPV4_REASSEMBLY_DISCARDED);
                reassemblyTimeout.onTimeout(buffer, offset, length, now);
            },
            // Every datagram given up, whatever the result code of the fragment that gave it up (timeouts above).
            this::onReassemblyDiscarded);
        arp.onResolutionFailed(this::onResolutionFailed);
        arp.onFrameDiscarded(this::onFrameDiscarded);
    }

    /**
     * The Reassembler gave up a datagram in progress (other than by a timeout): counted once, and, when it made room
     * for a new datagram, by which source's.
     */
    private void onReassemblyDiscarded(final int why)
    {
        counters.increment(StackCounter.IPV4_REASSEMBLY_DISCARDED);
        if (why == Reassembler.DiscardListener.EVICTED_OWN_SOURCE)
        {
            counters.increment(StackCounter.IPV4_REASSEMBLY_EVICTED_OWN_SOURCE);
        }
        else if (why == Reassembler.DiscardListener.EVICTED_OTHER_SOURCE)
        {
            counters.increment(StackCounter.IPV4_REASSEMBLY_EVICTED_OTHER_SOURCE);
        }
    }

    /**
     * An upper layer told that a datagram it sent was discarded unsent: ARP gave up on its first hop (Linux's
     * arp_error_report, which turns it into a host unreachable delivered locally; RFC 1122 3.3.1.4's link-layer
     * information that reliably detects a host failure).
     */
    @FunctionalInterface
    public interface LinkFailureHandler
    {
        /**
         * @param destination the datagram's destination (the remote end; its first hop may be a gateway).
         * @param buffer      holds the datagram's upper-layer header and payload, readable during the call only.
         * @param offset      where the upper-layer header starts.
         * @param length      the upper-layer header and payload, at least 8 octets (what an ICMP error would quote).
         */
        void onLinkFailure(int destination, DirectBuffer buffer, int offset, int length, long now);
    }

    /** Told of a datagram for us dropped for a malformed header option (see {@link #onBadOptions}). */
    @FunctionalInterface
    public interface BadOptionsHandler
    {
        /** {@code ip} is wrapped over the dropped datagram; {@code pointer} is the offending option's octet in its header. */
        void onBadOptions(Ipv4Header ip, int pointer, long now);
    }

    /** Register the handler for an IP protocol number, once: a second handler for the same number is refused. */
    public void register(final int protocol, final IpProtocolHandler handler)
    {
        if (handlers[protocol] != null)
        {
            // A protocol's handler is fixed: NetStack hands TCP segments to its Tcp past this layer (Tcp.onFrame).
            throw new IllegalStateException("IP protocol " + protocol + " already has a handler");
        }
        handlers[protocol] = handler;
    }

    /**
     * Tell {@code handler} of each datagram of {@code protocol} discarded because ARP gave up on its first hop (one
     * handler per protocol; TCP and UDP register themselves).
     */
    public void onLinkFailure(final int protocol, final LinkFailureHandler handler)
    {
        linkFailureHandlers[protocol & 0xFF] = handler;
    }

    /**
     * Pass datagrams of a protocol with no handler to {@code handler} once counted as dropped, so it can answer them
     * (RFC 1122 3.2.2.1: ICMP's Protocol Unreachable).
     */
    public void onUnknownProtocol(final IpProtocolHandler handler)
    {
        unknownProtocol = handler;
    }

    /**
     * Pass datagrams addressed to us (not a broadcast, from a valid source) that were dropped for a malformed option to
     * {@code handler} once counted, so it can answer them (RFC 1122 3.2.2.5: a host SHOULD send Parameter Problem).
     */
    public void onBadOptions(final BadOptionsHandler handler)
    {
        badOptions = handler;
    }

    public int mtu()
    {
        return mtu;
    }

    public StackConfig config()
    {
        return config;
    }

    public Reassembler reassembler()
    {
        return reassembler;
    }

    /** Process the Ethernet payload of an IPv4 frame. */
    public void input(final DirectBuffer buffer, final int offset, final int length, final long now)
    {
        input(buffer, offset, length, now, 0);
    }

    /**
     * A receive flag of the stack's own, next to the device's ({@link FrameHandler}): the frame came to the Ethernet
     * broadcast address.
     */
    public static final int LINK_BROADCAST = 1 << 30;

    /** Process the Ethernet payload of an IPv4 frame with the device's receive flags ({@link FrameHandler}). */
    public void input(final DirectBuffer buffer, final int offset, final int length, final long now, final int deviceFlags)
    {
        l4ChecksumTrusted = (deviceFlags & FrameHandler.RX_L4_CHECKSUM_TRUSTED) != 0;
        try
        {
            validateAndDeliver(buffer, offset, length, (deviceFlags & LINK_BROADCAST) != 0, now);
        }
        finally
        {
            l4ChecksumTrusted = false;
        }
    }

    private void validateAndDeliver(
        final DirectBuffer buffer, final int offset, final int length, final boolean linkBroadcast, final long now)
    {
        // RFC 1122 3.2.1: validate before anything else reads the header; each failure has its own counter.
        final Ipv4Fixed h = fixed;
        if (!h.decode(buffer, offset, length))
        {
            counters.increment(StackCounter.IPV4_DROP_TRUNCATED);
            return;
        }
        if (h.version != 4)
        {
            counters.increment(StackCounter.IPV4_DROP_BAD_VERSION);
            return;
        }
        final int headerLength = h.headerLength;
        if (headerLength < Ipv4Header.MIN_HEADER_LENGTH || headerLength > length)
        {
            counters.increment(StackCounter.IPV4_DROP_BAD_HEADER_LENGTH);
            return;
        }
        final int totalLength = h.totalLength;
        if (totalLength < headerLength || totalLength > length)
        {
            counters.increment(StackCounter.IPV4_DROP_BAD_TOTAL_LENGTH);
            return;
        }
        final Ipv4Header ip = in.wrap(buffer, offset, length);
        final boolean options = headerLength > Ipv4Header.MIN_HEADER_LENGTH;
        if (!(options ? ip.checksumValid() : h.checksumValidWithoutOptions()))
        {
            counters.increment(StackCounter.IPV4_DROP_BAD_CHECKSUM);
            return;
        }
        if (options)
        {
            final int verdict = checkOptions(buffer, offset + 20, headerLength - 20);
            if (verdict == OPTIONS_MALFORMED)
            {
                counters.increment(StackCounter.IPV4_DROP_BAD_OPTIONS);
                // RFC 1122 3.2.2: no error about a datagram from an invalid source or to a broadcast (sendError checks
                // the rest); the header checks above hold, so the addresses can be believed that far.
                if (badOptions != null && !isMartian(h.source) && h.destination == config.address() && !linkBroadcast)
                {
                    badOptions.onBadOptions(ip, malformedOptionAt, now);
                }
                return;
            }
            if (verdict == OPTIONS_SOURCE_ROUTE)
            {
                // RFC 7126 4.3/4.4: drop LSRR/SSRR by default (Linux: accept_source_route=0). An unfinished route is not
                // ours to consume (RFC 1122 3.3.5: a host does not forward); a finished one would have us answer along
                // a path any host on it chose, past filters. This goes against RFC 1122 3.2.1.8's "MUST be able to
                // act as the final destination of a source route", as current practice does.
                counters.increment(StackCounter.IPV4_DROP_SOURCE_ROUTE);
                return;
            }
        }
        // No TTL check: RFC 1122 3.2.1.7, a host MUST NOT discard a datagram just because it was received with a TTL
        // below 2 (0 included, which no sender may emit; Linux delivers it too).
        if (isMartian(h.source))
        {
            // RFC 1122 3.2.1.3: silently discard a datagram from an invalid source, before any layer can answer it.
            counters.increment(StackCounter.IPV4_DROP_BAD_SOURCE);
            return;
        }
        final int destination = h.destination;
        final boolean broadcast = isBroadcastDestination(destination);
        if (destination != config.address() && !broadcast)
        {
            counters.increment(StackCounter.IPV4_DROP_NOT_FOR_US);
            return;
        }
        if (linkBroadcast && !broadcast)
        {
            // RFC 1122 3.3.6: SHOULD silently discard a datagram received via a link-layer broadcast that is not
            // addressed to an IP broadcast (or multicast) address; nothing may answer it (3.2.2).
            counters.increment(StackCounter.IPV4_DROP_UNICAST_IN_LINK_BROADCAST);
            return;
        }
        // The reserved flag (RFC 791: "must be zero") is not checked: a sender must clear it, but nothing tells a
        // receiver to drop a datagram that has it set (RFC 1122 §1.2.2), and Linux's ip_rcv does not.
        final IpProtocolHandler handler = handlers[h.protocol];
        if (handler == null)
        {
            counters.increment(StackCounter.IPV4_DROP_UNKNOWN_PROTOCOL);
            if (unknownProtocol != null)
            {
                datagramSource = h.source;
                unknownProtocol.onDatagram(ip, buffer, offset + headerLength, totalLength - headerLength, broadcast, now);
            }
            return;
        }

        if (h.isFragment())
        {
            reassemble(ip, offset + headerLength, totalLength - headerLength, broadcast, now);
            return;
        }
        datagramSource = h.source;
        handler.onDatagram(ip, buffer, offset + headerLength, totalLength - headerLength, broadcast, now);
    }

    private void reassemble(final Ipv4Header ip, final int payloadOffset, final int payloadLength, final boolean broadcast, final long now)
    {
        // A whole datagram's checksum was never vouched for by the device that delivered one fragment of it.
        l4ChecksumTrusted = false;
        final int result = reassembler.accept(ip, payloadOffset, payloadLength, now);
        switch (result)
        {
            case Reassembler.QUEUED:
                counters.increment(StackCounter.IPV4_FRAGMENTS_QUEUED);
                break;
            case Reassembler.COMPLETE:
                counters.increment(StackCounter.IPV4_FRAGMENTS_QUEUED);
                counters.increment(StackCounter.IPV4_REASSEMBLED);
                final DirectBuffer datagram = reassembler.datagramBuffer();
                final int length = reassembler.datagramLength();
                final Ipv4Header whole = reassembled.wrap(datagram, 0, length);
                final int headerLength = whole.headerLength();
                datagramSource = whole.source();
                try
                {
                    handlers[whole.protocol()].onDatagram(whole, datagram, headerLength, length - headerLength, broadcast, now);
                }
                finally
                {
                    reassembler.releaseCompleted();
                }
                break;
            case Reassembler.DROP_DUPLICATE:
                counters.increment(StackCounter.IPV4_DROP_FRAGMENT_DUPLICATE);
                break;
            case Reassembler.DROP_OVERLAP:
                counters.increment(StackCounter.IPV4_DROP_FRAGMENT_OVERLAP);
                break;
            case Reassembler.DROP_OVERFLOW:
                counters.increment(StackCounter.IPV4_DROP_REASSEMBLY_OVERFLOW);
                break;
            default:
                counters.increment(StackCounter.IPV4_DROP_BAD_FRAGMENT);
                break;
        }
    }

    /**
     * RFC 791 options: single-byte EOL and NOP, every other option has a length of at least 2 inside the header.
     * OPTIONS_MALFORMED when one does not (its octet in the header is then {@link #malformedOptionAt}), else
     * OPTIONS_SOURCE_ROUTE when one is a loose or strict source route.
     */
    private int checkOptions(final DirectBuffer buffer, final int offset, final int length)
    {
        boolean sourceRoute = false;
        int i = 0;
        while (i < length)
        {
            final int kind = buffer.getByte(offset + i) & 0xFF;
            if (kind == OPTION_EOL)
            {
                break;
            }
            if (kind == OPTION_NOP)
            {
                i++;
                continue;
            }
            final int optionLength = i + 1 < length ? buffer.getByte(offset + i + 1) & 0xFF : 0;
            if (optionLength < 2 || i + optionLength > length)
            {
                // As Linux's ip_options_compile, the pointer names the option, not its length octet.
                malformedOptionAt = Ipv4Header.MIN_HEADER_LENGTH + i;
                return OPTIONS_MALFORMED;
            }
            sourceRoute |= kind == OPTION_LSRR || kind == OPTION_SSRR;
            i += optionLength;
        }
        return sourceRoute ? OPTIONS_SOURCE_ROUTE : OPTIONS_OK;
    }

    /**
     * True when no single peer of ours can hold {@code address}: we drop datagrams from it (RFC 1122 3.2.1.3; the
     * martian sources of RFC 1812 5.3.7) and refuse to open connections to it.
     *
     * <p>0/8 is a source only while a host learns its address (BOOTP/DHCP clients, talking to a server: this stack runs
     * neither). 127/8 must never appear outside a host, and this stack has no loopback. 224/4 (multicast), 240/4
     * (reserved, class E) and 255.255.255.255 are not one host, nor are our subnet's broadcast address and its network
     * address {subnet, 0}, the broadcast's old form (RFC 1122 3.2.1.3, 3.3.6; StackConfig allows prefixes up to /30, so
     * there always are both: only /31 and /32 have neither, RFC 3021). ARP learns neither ({@link StackConfig#isNeighbour}).
     * Our own address from the wire is spoofed (LAND), and to it a SYN would leave on the wire and never come back.
     */
    public boolean isMartian(final int address)
    {
        final int firstOctet = address >>> 24;
        return firstOctet == 0 || firstOctet == 127 || firstOctet >= 224 || address == config.address()
            || address == config.subnetBroadcast() || address == subnetNetwork;
    }

    /** True when {@code address} is the limited broadcast address or our subnet's broadcast address. */
    public boolean isBroadcast(final int address)
    {
        return config.isBroadcast(address);
    }

    /**
     * True when a received datagram's destination {@code address} is a broadcast: {@link #isBroadcast} or the old form
     * {subnet, 0}, which RFC 1122 3.3.6 says SHOULD be accepted as one on input (we send only the standard form). No
     * ICMP error may be sent about a datagram to any of them (3.2.2).
     */
    public boolean isBroadcastDestination(final int address)
    {
        return isBroadcast(address) || address == subnetNetwork;
    }

    /**
     * Send {@code payload[offset, offset + length)} as the payload of one IPv4 datagram from our
     * address, fragmenting above the MTU. Returns false (counted) when it cannot be sent.
     */
    public boolean send(
        final int destination,
        final int protocol,
        final DirectBuffer payload,
        final int offset,
        final int length,
        final long now)
    {
        return send(destination, protocol, null, 0, payload, offset, length, false, 0, now);
    }

    /**
     * As {@link #send(int, int, DirectBuffer, int, int, long)}, the header carrying {@code options[0, optionsLength)}
     * (a multiple of 4, at most 40): an echo reply with the request's Record Route and Timestamp options (RFC 1122
     * 3.2.2.6). A datagram that does not fit one frame with them goes without them rather than in fragments: only a
     * first fragment could carry these options (RFC 791 does not copy them), and they are a courtesy.
     *
     * @param dontFragment the DF flag for a datagram that fits one frame, as {@link #claimDatagram} takes it (TCP's
     *     segments that wait for ARP come here); a larger one is fragmented, without it.
     * @param tos          the header's DS field and ECN bits (RFC 2474, RFC 3168; 0 for the default class).
     */
    public boolean send(
        final int destination,
        final int protocol,
        final DirectBuffer options,
        final int optionsLength,
        final DirectBuffer payload,
        final int offset,
        final int length,
        final boolean dontFragment,
        final int tos,
        final long now)
    {
        return send(destination, protocol, options, optionsLength, payload, offset, length, dontFragment, tos,
            config.defaultTtl(), now);
    }

    /**
     * As {@link #send(int, int, DirectBuffer, int, DirectBuffer, int, int, boolean, int, long)}, every fragment
     * carrying {@code ttl} (1..255) rather than the configured default: RFC 1122 §4.1.4, an application MUST be able
     * to set the TTL of the UDP datagrams it sends.
     */
    public boolean send(
        final int destination,
        final int protocol,
        final DirectBuffer options,
        final int optionsLength,
        final DirectBuffer payload,
        final int offset,
        final int length,
        final boolean dontFragment,
        final int tos,
        final int ttl,
        final long now)
    {
        if (length > MAX_PAYLOAD)
        {
            counters.increment(StackCounter.IPV4_OUT_TOO_BIG);
            return false;
        }
        final int nextHop = nextHop(destination, now);
        if (nextHop == 0)
        {
            counters.increment(StackCounter.IPV4_OUT_NO_ROUTE);
            return false;
        }
        final long mac = arp.resolve(nextHop, now);
        final int maxPayload = mtu - Ipv4Header.MIN_HEADER_LENGTH;
        if (length <= maxPayload)
        {
            final int keptOptions = length <= maxPayload - optionsLength ? optionsLength : 0;
            // A frame that waits for ARP may be refused (Arp.enqueue): then the datagram was not sent.
            if (!emit(mac, nextHop, destination, protocol, identifications.next(destination, protocol), dontFragment,
                false, 0, tos, ttl, options, keptOptions, payload, offset, length))
            {
                return false;
            }
            counters.increment(StackCounter.IPV4_OUT_DATAGRAMS);
            return true;
        }
        // RFC 791 fragmentation: every fragment but the last carries a multiple of 8 bytes.
        final int chunk = maxPayload & ~7;
        // Waiting for ARP, all fragments or none: some of them alone can never be reassembled.
        if (mac < 0 && !arp.admitFragments((length + chunk - 1) / chunk))
        {
            return false;
        }
        final int id = identifications.next(destination, protocol);
        boolean all = true;
        for (int sent = 0; sent < length; sent += chunk)
        {
            final int n = Math.min(chunk, length - sent);
            all &= emit(mac, nextHop, destination, protocol, id, false, sent + n < length, sent, tos, ttl, null, 0, payload,
                offset + sent, n);
            counters.increment(StackCounter.IPV4_OUT_FRAGMENTS);
        }
        if (all)
        {
            counters.increment(StackCounter.IPV4_OUT_DATAGRAMS);
        }
        return all;
    }

    /**
     * The first hop for {@code destination}: itself on our link (or a broadcast), else the gateway an ICMP Redirect
     * named for it, else the default gateway; 0 when there is no route.
     */
    public int nextHop(final int destination, final long now)
    {
        if (config.onLink(destination) || isBroadcast(destination))
        {
            return destination;
        }
        final int redirected = redirects.gatewayFor(destination, now);
        return redirected != 0 ? redirected : config.gateway();
    }

    /**
     * An ICMP Redirect from {@code source}: send datagrams for {@code destination} to {@code newGateway} from now on
     * (RFC 1122 §3.2.2.2, a host MUST update its routing; net and TOS redirects are taken as host redirects,
     * §3.3.1.2). Refused, as §3.2.2.2 says, unless it comes from the current first hop for {@code destination} (only
     * that router can know a better one) and names a host on our subnet other than us; a destination on our link is
     * reached directly and not redirected. A redirect to the default gateway ends an earlier one.
     *
     * <p>A new first hop whose link address we do not hold (reachable, or aged but still usable) is not taken: its
     * address is asked (ARP's own pacing applies, one request per second at most), and the router's next redirect,
     * once it has answered, applies. As Linux's __ip_do_redirect, which applies a redirect only over a valid neighbour
     * entry: taken at once, a host that never answers ARP would take every datagram to {@code destination} until the
     * route aged, and only TCP's negative advice ends it sooner. Should the first hop stop answering later, its routes
     * are dropped ({@link #onResolutionFailed}).
     *
     * @return whether the route changed or was confirmed.
     */
    public boolean redirect(final int source, final int destination, final int newGateway, final long now)
    {
        final boolean routedByGateway = !config.onLink(destination) && !isBroadcast(destination)
            && !Ipv4Address.isMulticast(destination);
        final int firstHop = nextHop(destination, now);
        if (!routedByGateway || firstHop == 0 || source != firstHop || newGateway == source || !config.isNeighbour(newGateway))
        {
            return false;
        }
        if (arp.lookup(newGateway) < 0)
        {
            counters.increment(StackCounter.ICMP_IN_REDIRECTS_UNRESOLVED);
            arp.resolve(newGateway, now);
            return false;
        }
        if (newGateway == config.gateway())
        {
            redirects.forget(destination);
        }
        else
        {
            redirects.learn(destination, newGateway, now);
        }
        return true;
    }

    /**
     * ARP gave up on {@code ip}: routes that redirects sent through it go back to the default gateway (counted), rather
     * than leaving their destinations waiting for a first hop that does not answer until the routes age.
     */
    private void onResolutionFailed(final int ip, final long now)
    {
        counters.add(StackCounter.IPV4_REDIRECTS_DROPPED_UNRESOLVED, redirects.forgetGateway(ip));
    }

    /**
     * ARP discarded one of our frames, unsent, as its first hop stopped resolving: tell the protocol that sent it, as
     * Linux's ipv4_link_failure sends the sender a host unreachable. Only a datagram's first fragment holds the
     * upper-layer header (Linux's icmp_send answers fragment 0 only); ARP's queue holds only frames {@link #emit} wrote.
     */
    private void onFrameDiscarded(final DirectBuffer frame, final int offset, final int length, final long now)
    {
        final int ipOffset = offset + EthernetFrame.HEADER_LENGTH;
        final Ipv4Header h = discardedHeader;
        if (!h.wrapChecked(frame, ipOffset, length - EthernetFrame.HEADER_LENGTH) || h.fragmentOffset() != 0)
        {
            return;
        }
        final LinkFailureHandler handler = linkFailureHandlers[h.protocol()];
        final int headerLength = h.headerLength();
        final int l4Length = Math.min(h.totalLength(), length - EthernetFrame.HEADER_LENGTH) - headerLength;
        if (handler != null && l4Length >= 8)
        {
            handler.onLinkFailure(h.destination(), frame, ipOffset + headerLength, l4Length, now);
        }
    }

    /**
     * Negative advice from a transport (RFC 1122 §3.3.1.4; RFC 9293 §3.8.3, MUST-20 at R1): datagrams to
     * {@code destination} go unanswered. A redirected route to it is dropped (back to the default gateway, as Linux's
     * ipv4_negative_advice), and the first hop's link address is polled again before it is trusted further.
     */
    public void adviseUnreachable(final int destination, final long now)
    {
        final int firstHop = nextHop(destination, now);
        redirects.forget(destination);
        if (firstHop != 0)
        {
            arp.adviseUnreachable(firstHop, now);
        }
    }

    /** Where the upper-layer header starts in a frame from {@link #claimDatagram}. */
    public static final int L4_OFFSET = EthernetFrame.HEADER_LENGTH + Ipv4Header.MIN_HEADER_LENGTH;

    private MutableDirectBuffer claimedFrame;
    private int claimedLength;

    /**
     * Zero-copy output: the device's frame buffer for a datagram of {@code l4Length} bytes with the
     * Ethernet and IPv4 headers already written; the caller writes the upper layer at
     * {@link #L4_OFFSET} and calls {@link #commitDatagram()}, or {@link #abortDatagram()} when writing it failed.
     * Returns null (nothing claimed) when the datagram would need fragmenting or the next hop is not resolved yet:
     * use {@link #send} then.
     *
     * @param dontFragment the DF flag: set only by a sender that acts on "fragmentation needed" (TCP's path MTU
     *                     discovery); without it a router on a smaller link fragments the datagram.
     */
    public MutableDirectBuffer claimDatagram(
        final int destination, final int protocol, final int l4Length, final boolean dontFragment, final long now)
    {
        return claimDatagram(destination, protocol, l4Length, dontFragment, identifications.key(destination, protocol), 0,
            now);
    }

    /** The identification key ({@link Identifications#key}) of {@code destination} and {@code protocol}, to keep. */
    public long identificationKey(final int destination, final int protocol)
    {
        return identifications.key(destination, protocol);
    }

    /**
     * As {@link #claimDatagram(int, int, int, boolean, long)}, with the pair's identification key kept by the caller,
     * and {@code tos} in the header's DS field and ECN bits (RFC 2474, RFC 3168; 0 for the default class).
     */
    public MutableDirectBuffer claimDatagram(
        final int destination, final int protocol, final int l4Length, final boolean dontFragment,
        final long identificationKey, final int tos, final long now)
    {
        return claimDatagram(destination, protocol, l4Length, dontFragment, identificationKey, tos, config.defaultTtl(),
            now);
    }

    /**
     * As {@link #claimDatagram(int, int, int, boolean, long, int, long)}, the header carrying {@code ttl} (1..255)
     * rather than the configured default (RFC 1122 §4.1.4).
     */
    public MutableDirectBuffer claimDatagram(
        final int destination, final int protocol, final int l4Length, final boolean dontFragment,
        final long identificationKey, final int tos, final int ttl, final long now)
    {
        final int nextHop = nextHop(destination, now);
        if (l4Length > mtu - Ipv4Header.MIN_HEADER_LENGTH || nextHop == 0)
        {
            return null;
        }
        final long mac = arp.resolve(nextHop, now);
        if (mac < 0)
        {
            return null;
        }
        final MutableDirectBuffer frame = link.claim(mac, EthernetFrame.ETHERTYPE_IPV4);
        final int totalLength = Ipv4Header.MIN_HEADER_LENGTH + l4Length;
        writeHeader(frame, totalLength, destination, protocol, identifications.next(identificationKey),
            dontFragment, false, 0, tos, ttl);
        claimedFrame = frame;
        claimedLength = EthernetFrame.HEADER_LENGTH + totalLength;
        return frame;
    }

    /** The 20-byte IPv4 header of our datagrams (no options), checksum included, after the Ethernet header. */
    private void writeHeader(
        final MutableDirectBuffer frame,
        final int totalLength,
        final int destination,
        final int protocol,
        final int id,
        final boolean dontFragment,
        final boolean moreFragments,
        final int fragmentOffset,
        final int tos,
        final int ttl)
    {
        final int source = config.address();
        final int flagsAndFragment = Ipv4Header.flagsAndFragmentOffsetField(dontFragment, moreFragments, fragmentOffset);
        // RFC 1071 over the ten 16-bit words of this header, summed from the values instead of read back.
        final long sum = (0x4500 | tos & 0xFF) + totalLength + (id & 0xFFFF) + flagsAndFragment + ((ttl & 0xFF) << 8 | protocol & 0xFF)
            + (source >>> 16) + (source & 0xFFFF) + (destination >>> 16) + (destination & 0xFFFF);
        out.wrap(frame, EthernetFrame.HEADER_LENGTH, totalLength)
            .versionAndIhl(5)
            .tos(tos)
            .totalLength(totalLength)
            .identification(id)
            .flagsAndFragmentOffset(dontFragment, moreFragments, fragmentOffset)
            .ttl(ttl)
            .protocol(protocol)
            .source(source)
            .destination(destination)
            .headerChecksum(Checksum.finish(sum));
    }

    /** Send the datagram claimed by {@link #claimDatagram}, its upper-layer checksum complete. */
    public void commitDatagram()
    {
        commitDatagram(0);
    }

    /**
     * True when datagrams from {@link #claimDatagram} may leave their TCP/UDP checksum to the device: store the
     * folded pseudo-header sum and commit with {@link NetDevice#TX_L4_CHECKSUM_PARTIAL}.
     */
    public boolean transmitChecksumOffload()
    {
        return link.transmitChecksumOffload();
    }

    /**
     * True while the upper layer handles a datagram whose TCP/UDP checksum the device vouched for
     * ({@link FrameHandler#RX_L4_CHECKSUM_TRUSTED}); never for a reassembled datagram.
     */
    public boolean l4ChecksumTrusted()
    {
        return l4ChecksumTrusted;
    }

    /**
     * The source address of the datagram an upper layer is handling, as {@code ip.source()} of
     * {@link IpProtocolHandler#onDatagram} but without reading the header again (decoded once on input).
     */
    public int datagramSource()
    {
        return datagramSource;
    }

    /** Send the datagram claimed by {@link #claimDatagram} with the device's transmit flags. */
    public void commitDatagram(final int deviceFlags)
    {
        int frameLength = claimedLength;
        if (frameLength < 60)
        {
            claimedFrame.setMemory(frameLength, 60 - frameLength, (byte)0);
            frameLength = 60;
        }
        link.commit(frameLength, deviceFlags);
        // Only once the device took it (a device that refuses a commit keeps the frame claimed, for abortDatagram).
        claimedFrame = null;
        counters.increment(StackCounter.IPV4_OUT_DATAGRAMS);
    }

    /**
     * Give back the frame claimed by {@link #claimDatagram}, unsent: writing the datagram into it failed (a send buffer
     * or payload that threw part way). Without it the device's claim stays open, and its next claim finds it so (the
     * frame is valid only until commit or abort, NetDevice). Does nothing when no frame is claimed.
     */
    public void abortDatagram()
    {
        if (claimedFrame != null)
        {
            claimedFrame = null;
            link.abort();
        }
    }

    /**
     * One frame to {@code mac}, or to ARP's queue when it is -1; false when the queue refused it. The header carries
     * {@code options[0, optionsLength)} ({@code optionsLength} a multiple of 4, 0 for none).
     */
    private boolean emit(
        final long mac,
        final int nextHop,
        final int destination,
        final int protocol,
        final int id,
        final boolean dontFragment,
        final boolean moreFragments,
        final int fragmentOffset,
        final int tos,
        final int ttl,
        final DirectBuffer options,
        final int optionsLength,
        final DirectBuffer payload,
        final int offset,
        final int length)
    {
        final MutableDirectBuffer frame = link.claim(mac < 0 ? 0 : mac, EthernetFrame.ETHERTYPE_IPV4);
        final int ipOffset = EthernetFrame.HEADER_LENGTH;
        final int headerLength = Ipv4Header.MIN_HEADER_LENGTH + optionsLength;
        final int totalLength = headerLength + length;
        writeHeader(frame, totalLength, destination, protocol, id, dontFragment, moreFragments, fragmentOffset, tos, ttl);
        if (optionsLength > 0)
        {
            frame.putBytes(ipOffset + Ipv4Header.MIN_HEADER_LENGTH, options, 0, optionsLength);
            out.versionAndIhl(headerLength / 4).updateChecksum();
        }
        frame.putBytes(ipOffset + headerLength, payload, offset, length);
        int frameLength = ipOffset + totalLength;
        if (frameLength < 60)
        {
            frame.setMemory(frameLength, 60 - frameLength, (byte)0);
            frameLength = 60;
        }
        if (mac < 0)
        {
            final boolean queued = arp.enqueue(nextHop, frame, frameLength);
            link.abort();
            return queued;
        }
        link.commit(frameLength);
        return true;
    }
}
