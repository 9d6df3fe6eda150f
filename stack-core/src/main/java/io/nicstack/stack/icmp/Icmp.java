package io.nicstack.stack.icmp;

import java.nio.ByteBuffer;
import java.util.Arrays;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.iface.IpProtocolHandler;
import io.nicstack.stack.iface.Ipv4;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;

/**
 * ICMPv4 for a host (RFC 792, RFC 1122 §3.2.2): echo replies (also to reassembled requests; with the request's
 * Record Route and Timestamp options updated, {@link EchoOptions}),
 * error messages (destination unreachable, time exceeded, parameter problem) rate-limited per peer and in all
 * ({@link #takePeerToken}), and received error messages
 * passed to the protocol whose datagram they quote ({@link #onErrors}; "fragmentation needed" without a next-hop MTU
 * gets RFC 1191's estimate, {@link #plateauBelow}), and Redirects for datagrams we sent
 * ({@link Ipv4#redirect}). It answers datagrams of a protocol
 * nothing handles with Protocol Unreachable ({@link Ipv4#onUnknownProtocol}).
 */
public final class Icmp implements IpProtocolHandler
{
    /** RFC 1812 4.3.2.3: an error quotes as much of the offending datagram as fits in 576 bytes. */
    private static final int MAX_ERROR_DATAGRAM = 576;
    /**
     * The per-peer limit, Linux's defaults (icmp_ratelimit of 1000 ms, a burst of XRLIM_BURST_FACTOR 6, per
     * destination in the inet_peer cache): one error a second to each peer, six at once after a quiet spell.
     */
    public static final long PEER_NANOS_PER_TOKEN = 1_000_000_000L;
    public static final int PEER_BURST = 6;
    /**
     * The peers whose buckets are kept: 256 sets of 4 (1,024 peers, 12 KiB), a peer's set chosen by a keyed hash of its
     * address ({@link #peerSet}). A peer not in its set takes the place, and the bucket, of the one there with the most
     * tokens.
     */
    static final int PEER_SET_BITS = 8;
    static final int PEER_SETS = 1 << PEER_SET_BITS;
    static final int PEER_WAYS = 4;
    private static final int PEER_SET_SHIFT = 16;
    private static final long EMPTY_PEER = Long.MIN_VALUE;

    private final Ipv4 ip;
    private final StackCounters counters;
    private final IcmpHeader icmp = new IcmpHeader();
    private final IcmpHeader reply = new IcmpHeader();
    private final UnsafeBuffer scratch = new UnsafeBuffer(ByteBuffer.allocateDirect(65536));
    private final long nanosPerToken;
    private final long burstNanos;
    private long bucketTime = Long.MIN_VALUE;
    /** The per-peer token buckets, {@link #takePeerToken}: a peer's address and its bucket's time, or EMPTY_PEER. */
    private final int[] peerAddresses = new int[PEER_SETS * PEER_WAYS];
    private final long[] peerBucketTimes = new long[PEER_SETS * PEER_WAYS];
    private final IcmpErrorHandler[] errorHandlers = new IcmpErrorHandler[256];
    private final Ipv4Header quotedIp = new Ipv4Header();
    /** The options of an echo reply (RFC 1122 3.2.2.6, {@link EchoOptions}). */
    private final UnsafeBuffer replyOptions = new UnsafeBuffer(new byte[EchoOptions.MAX_LENGTH]);

    /** Pass received ICMP errors that quote a datagram of {@code protocol} to {@code handler} (RFC 1122 §3.2.2). */
    public void onErrors(final int protocol, final IcmpErrorHandler handler)
    {
        errorHandlers[protocol & 0xFF] = handler;
    }

    private static boolean isError(final int type)
    {
        return type == IcmpHeader.TYPE_DESTINATION_UNREACHABLE || type == IcmpHeader.TYPE_SOURCE_QUENCH
            || type == IcmpHeader.TYPE_TIME_EXCEEDED || type == IcmpHeader.TYPE_PARAMETER_PROBLEM;
    }

    /**
     * The quoted datagram must be well formed, ours (source is this host: errors about datagrams we did not send are
     * forged or misdirected), unfragmented at offset 0 and quote at least 8 octets of its upper-layer header
     * (RFC 792); anything else is not delivered, and the caller counts it as ignored.
     *
     * @return whether the error reached the handler of the quoted protocol.
     */
    private boolean deliverError(final DirectBuffer buffer, final int quoteOffset, final int quoteLength, final long now)
    {
        if (!quotedIp.wrapChecked(buffer, quoteOffset, quoteLength))
        {
            return false;
        }
        final int headerLength = quotedIp.headerLength();
        final IcmpErrorHandler handler = errorHandlers[quotedIp.protocol()];
        if (handler == null || quotedIp.version() != 4 || quoteLength - headerLength < 8
            || quotedIp.source() != ip.config().address() || quotedIp.fragmentOffset() != 0)
        {
            return false;
        }
        int restOfHeader = icmp.restOfHeader();
        if (icmp.type() == IcmpHeader.TYPE_DESTINATION_UNREACHABLE && icmp.code() == IcmpHeader.CODE_FRAGMENTATION_NEEDED
            && (restOfHeader & 0xFFFF) == 0)
        {
            restOfHeader |= plateauBelow(quotedIp.totalLength());
        }
        handler.onIcmpError(icmp.type(), icmp.code(), restOfHeader, quotedIp.destination(), buffer,
            quoteOffset + headerLength, quoteLength - headerLength, now);
        return true;
    }

    /** RFC 1191 §7 table 7-1: the plateaus of the MTUs in use, descending. */
    private static final int[] MTU_PLATEAUS = {32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68};

    /**
     * RFC 1191 §5 and §7: a router from before RFC 1191 says "fragmentation needed" without the next-hop MTU; the
     * estimate is the largest plateau below the length of the datagram it refused. A stale report, about a datagram
     * sent before an earlier reduction, so estimates no smaller than that reduction, and a repeated one about the
     * new size steps down a plateau, down to 68, which a sender below its floor answers by no longer setting DF.
     */
    static int plateauBelow(final int refusedLength)
    {
        for (final int plateau : MTU_PLATEAUS)
        {
            if (plateau < refusedLength)
            {
                return plateau;
            }
        }
        return MTU_PLATEAUS[MTU_PLATEAUS.length - 1];
    }

    /**
     * A Redirect (RFC 792) names a better first hop, in its rest of header, for the destination of the datagram it
     * quotes: one of ours (its source is this host), quoted as an error is (header and 8 octets), sent to us alone.
     * {@link Ipv4#redirect} checks that it comes from the current first hop and names a host on our subnet.
     */
    private boolean redirect(
        final int source, final DirectBuffer buffer, final int quoteOffset, final int quoteLength, final boolean broadcast,
        final long now)
    {
        return !broadcast && icmp.code() <= IcmpHeader.MAX_REDIRECT_CODE
            && quotedIp.wrapChecked(buffer, quoteOffset, quoteLength) && quotedIp.version() == 4
            && quoteLength - quotedIp.headerLength() >= 8 && quotedIp.source() == ip.config().address()
            && ip.redirect(source, quotedIp.destination(), icmp.restOfHeader(), now);
    }

    public Icmp(final Ipv4 ip, final StackCounters counters)
    {
        this.ip = ip;
        this.counters = counters;
        final int perSecond = ip.config().icmpErrorsPerSecond();
        this.nanosPerToken = 1_000_000_000L / perSecond;
        this.burstNanos = nanosPerToken * ip.config().icmpErrorBurst();
        Arrays.fill(peerBucketTimes, EMPTY_PEER);
        // RFC 1122 3.2.2.1: a host SHOULD send Protocol Unreachable for a protocol it does not support (Linux does);
        // sendError applies 3.2.2's exclusions (broadcast, non-initial fragment, ICMP error) and the rate limit.
        ip.onUnknownProtocol((header, buffer, offset, length, broadcast, now) -> sendError(
            IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.CODE_PROTOCOL_UNREACHABLE, header, broadcast, now));
        // RFC 1122 3.2.2.5: a host SHOULD send Parameter Problem (code 0, the pointer in the first octet of the rest of
        // the header, RFC 792) for a datagram it drops for a bad parameter (Linux does, for a malformed option).
        ip.onBadOptions((header, pointer, now) -> sendError(
            IcmpHeader.TYPE_PARAMETER_PROBLEM, 0, pointer << 24, header, false, now));
    }

    @Override
    public void onDatagram(
        final Ipv4Header header,
        final DirectBuffer buffer,
        final int offset,
        final int length,
        final boolean broadcast,
        final long now)
    {
        if (!icmp.wrapChecked(buffer, offset, length))
        {
            counters.increment(StackCounter.ICMP_DROP_TRUNCATED);
            return;
        }
        if (!icmp.checksumValid())
        {
            counters.increment(StackCounter.ICMP_DROP_BAD_CHECKSUM);
            return;
        }
        if (icmp.type() != IcmpHeader.TYPE_ECHO_REQUEST)
        {
            counters.increment(StackCounter.ICMP_IN_OTHER);
            if (isError(icmp.type()))
            {
                // RFC 5927: a forged error quotes no datagram of ours; counted apart from those TCP and UDP weigh.
                if (broadcast
                    || !deliverError(buffer, offset + IcmpHeader.HEADER_LENGTH, length - IcmpHeader.HEADER_LENGTH, now))
                {
                    counters.increment(StackCounter.ICMP_IN_ERRORS_IGNORED);
                }
            }
            else if (icmp.type() == IcmpHeader.TYPE_REDIRECT)
            {
                counters.increment(redirect(header.source(), buffer, offset + IcmpHeader.HEADER_LENGTH,
                    length - IcmpHeader.HEADER_LENGTH, broadcast, now)
                    ? StackCounter.ICMP_IN_REDIRECTS_APPLIED : StackCounter.ICMP_IN_REDIRECTS_IGNORED);
            }
            return;
        }
        if (broadcast)
        {
            // RFC 1122 3.2.2.6 allows silently discarding echo requests to broadcast (smurf defence).
            counters.increment(StackCounter.ICMP_DROP_BROADCAST_ECHO);
            return;
        }
        counters.increment(StackCounter.ICMP_IN_ECHO_REQUESTS);
        final int optionsLength = header.headerLength() > Ipv4Header.MIN_HEADER_LENGTH
            ? EchoOptions.reflect(header.buffer(), header.offset() + Ipv4Header.MIN_HEADER_LENGTH,
                header.headerLength() - Ipv4Header.MIN_HEADER_LENGTH, ip.config().address(), now, replyOptions)
            : 0;
        // RFC 792: the reply carries the request's identifier, sequence number and data unchanged.
        // Zero-copy claims leave no room for header options: a reply with options goes through send.
        final MutableDirectBuffer frame = optionsLength > 0 ? null
            : ip.claimDatagram(header.source(), Ipv4Header.PROTOCOL_ICMP, length, false, now);
        if (frame != null)
        {
            // One copy: request straight into the reply frame.
            frame.putBytes(Ipv4.L4_OFFSET, buffer, offset, length);
            reply.wrap(frame, Ipv4.L4_OFFSET, length).type(IcmpHeader.TYPE_ECHO_REPLY).code(0).updateChecksum();
            ip.commitDatagram();
            counters.increment(StackCounter.ICMP_OUT_ECHO_REPLIES);
            return;
        }
        scratch.putBytes(0, buffer, offset, length);
        reply.wrap(scratch, 0, length).type(IcmpHeader.TYPE_ECHO_REPLY).code(0).updateChecksum();
        if (ip.send(header.source(), Ipv4Header.PROTOCOL_ICMP, replyOptions, optionsLength, scratch, 0, length, false, 0, now))
        {
            counters.increment(StackCounter.ICMP_OUT_ECHO_REPLIES);
        }
    }

    /**
     * Send an ICMP error about {@code original} (its IP header at {@code original.offset()}), unless
     * RFC 1122 3.2.2 forbids it or the rate limit says no.
     */
    public void sendError(final int type, final int code, final Ipv4Header original, final boolean broadcast, final long now)
    {
        sendError(type, code, 0, original, broadcast, now);
    }

    private void sendError(
        final int type, final int code, final int restOfHeader, final Ipv4Header original, final boolean broadcast, final long now)
    {
        // RFC 1122 3.2.2: never about a broadcast, a non-initial fragment, or another ICMP error.
        if (broadcast || original.fragmentOffset() != 0 || isIcmpError(original))
        {
            return;
        }
        final int quoted = Math.min(original.totalLength(), MAX_ERROR_DATAGRAM - Ipv4Header.MIN_HEADER_LENGTH - IcmpHeader.HEADER_LENGTH);
        sendError(type, code, restOfHeader, original.source(), original.buffer(), original.offset(), quoted, now);
    }

    /** Send an ICMP error to {@code destination} quoting {@code quoted} bytes of the offending datagram. */
    public void sendError(
        final int type,
        final int code,
        final int destination,
        final DirectBuffer buffer,
        final int offset,
        final int quoted,
        final long now)
    {
        sendError(type, code, 0, destination, buffer, offset, quoted, now);
    }

    private void sendError(
        final int type,
        final int code,
        final int restOfHeader,
        final int destination,
        final DirectBuffer buffer,
        final int offset,
        final int quoted,
        final long now)
    {
        // Linux's order (icmpv4_global_allow, icmpv4_xrlim_allow, icmp_global_consume): the global budget is looked at
        // first and spent last, so an error the peer's bucket refuses costs other peers nothing; a noisy peer spends
        // its own burst and rate, and the global budget stays for the others.
        if (!globalTokenAvailable(now))
        {
            counters.increment(StackCounter.ICMP_OUT_RATE_LIMITED);
            return;
        }
        if (!exemptFromPeerLimit(type, code) && !takePeerToken(destination, now))
        {
            counters.increment(StackCounter.ICMP_OUT_RATE_LIMITED_PEER);
            return;
        }
        bucketTime += nanosPerToken;
        final int length = IcmpHeader.HEADER_LENGTH + quoted;
        scratch.putBytes(IcmpHeader.HEADER_LENGTH, buffer, offset, quoted);
        reply.wrap(scratch, 0, length).type(type).code(code).checksum(0).restOfHeader(restOfHeader).updateChecksum();
        if (ip.send(destination, Ipv4Header.PROTOCOL_ICMP, scratch, 0, length, now))
        {
            counters.increment(switch (type)
            {
                case IcmpHeader.TYPE_TIME_EXCEEDED -> StackCounter.ICMP_OUT_TIME_EXCEEDED;
                case IcmpHeader.TYPE_PARAMETER_PROBLEM -> StackCounter.ICMP_OUT_PARAMETER_PROBLEM;
                default -> StackCounter.ICMP_OUT_UNREACHABLE;
            });
        }
    }

    /** Whether {@code original} (a header and at least the first byte of its payload) carries an ICMP error. */
    public static boolean isIcmpError(final Ipv4Header original)
    {
        if (original.protocol() != Ipv4Header.PROTOCOL_ICMP)
        {
            return false;
        }
        final int at = original.offset() + original.headerLength();
        if (original.totalLength() <= original.headerLength())
        {
            return true;
        }
        final int type = original.buffer().getByte(at) & 0xFF;
        return type != IcmpHeader.TYPE_ECHO_REQUEST && type != IcmpHeader.TYPE_ECHO_REPLY;
    }

    /**
     * The global token bucket, kept as a single timestamp (full when bucketTime <= now - burst): whether it holds a
     * token. The caller spends it by moving bucketTime on by one token.
     */
    private boolean globalTokenAvailable(final long now)
    {
        if (bucketTime == Long.MIN_VALUE || now - bucketTime > burstNanos)
        {
            bucketTime = now - burstNanos;
        }
        return now - bucketTime >= nanosPerToken;
    }

    /**
     * RFC 1191 and RFC 1812 4.3.2.8: rate limiting must not break path MTU discovery, and a "fragmentation needed"
     * refused to a peer is a black hole to it. Linux's icmpv4_mask_allow exempts it from the per-peer limit (its
     * icmp_ratemask covers the other errors: unreachable, source quench, time exceeded, parameter problem). This host
     * forwards nothing and so sends none today; the global limit still bounds it.
     */
    private static boolean exemptFromPeerLimit(final int type, final int code)
    {
        return type == IcmpHeader.TYPE_DESTINATION_UNREACHABLE && code == IcmpHeader.CODE_FRAGMENTATION_NEEDED;
    }

    /**
     * Take a token from {@code peer}'s bucket (a timestamp, as the global one), {@link #PEER_BURST} tokens deep, one
     * each {@link #PEER_NANOS_PER_TOKEN}. The buckets live in a fixed table of {@link #PEER_SETS} sets of
     * {@link #PEER_WAYS}; a peer absent from its set takes an empty entry, which starts full, else the entry with the
     * most tokens, whose bucket it takes over as it is. An eviction changes a bucket's owner, never its tokens, so the
     * peers that share a set, however many take turns in it, get together no more than its four buckets give: 4 x 6 at
     * once and 4 a second after. A peer being limited, near empty, is the last of its set to go. Which peers share a set is a
     * keyed hash, so no one can pick addresses that do; a flood from addresses enough to cover every set spends the
     * global limit first, which bounds what all peers get together. (Linux keeps a bucket per address, in the
     * inet_peer cache, and evicts by age.)
     */
    private boolean takePeerToken(final int peer, final long now)
    {
        final int base = peerSet(peer) * PEER_WAYS;
        // Credit is negative when the clock is behind a bucket (an embedder's clock stepping back): the search starts
        // from the set's first entry and below any credit, so it always names an entry, whatever the clock says.
        int entry = base;
        long mostCredit = Long.MIN_VALUE;
        for (int i = base; i < base + PEER_WAYS; i++)
        {
            final long time = peerBucketTimes[i];
            if (time != EMPTY_PEER && peerAddresses[i] == peer)
            {
                entry = i;
                break;
            }
            final long credit = time == EMPTY_PEER ? Long.MAX_VALUE : now - time;
            if (credit > mostCredit)
            {
                mostCredit = credit;
                entry = i;
            }
        }
        final long burst = PEER_NANOS_PER_TOKEN * PEER_BURST;
        peerAddresses[entry] = peer;
        if (peerBucketTimes[entry] == EMPTY_PEER || now - peerBucketTimes[entry] > burst)
        {
            peerBucketTimes[entry] = now - burst;
        }
        if (now - peerBucketTimes[entry] < PEER_NANOS_PER_TOKEN)
        {
            return false;
        }
        peerBucketTimes[entry] += PEER_NANOS_PER_TOKEN;
        return true;
    }

    /**
     * The set of {@code peer}'s bucket: bits 16 to 23 of the keyed hash (SipHash under the stack's per-boot secret)
     * that IPv4 identifications take for the peer and ICMP ({@link Ipv4#identificationKey}), which no identification
     * shows (they use bits 0 to 9 and 48 to 63); the error sent next finds the same hash in their cache.
     */
    int peerSet(final int peer)
    {
        return (int)(ip.identificationKey(peer, Ipv4Header.PROTOCOL_ICMP) >>> PEER_SET_SHIFT) & (PEER_SETS - 1);
    }

    /** How many peers have a bucket in the table (for tests). */
    int trackedPeers()
    {
        int n = 0;
        for (final long time : peerBucketTimes)
        {
            n += time == EMPTY_PEER ? 0 : 1;
        }
        return n;
    }
}
