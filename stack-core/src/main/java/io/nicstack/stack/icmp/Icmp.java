package io.nicstack.stack.icmp;

import java.nio.ByteBuffer;

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
 * rate-limited error messages (destination unreachable, time exceeded), and received error messages
 * passed to the protocol whose datagram they quote ({@link #onErrors}; "fragmentation needed" without a next-hop MTU
 * gets RFC 1191's estimate, {@link #plateauBelow}), and Redirects for datagrams we sent
 * ({@link Ipv4#redirect}). It answers datagrams of a protocol
 * nothing handles with Protocol Unreachable ({@link Ipv4#onUnknownProtocol}).
 */
public final class Icmp implements IpProtocolHandler
{
    /** RFC 1812 4.3.2.3: an error quotes as much of the offending datagram as fits in 576 bytes. */
    private static final int MAX_ERROR_DATAGRAM = 576;

    private final Ipv4 ip;
    private final StackCounters counters;
    private final IcmpHeader icmp = new IcmpHeader();
    private final IcmpHeader reply = new IcmpHeader();
    private final UnsafeBuffer scratch = new UnsafeBuffer(ByteBuffer.allocateDirect(65536));
    private final long nanosPerToken;
    private final long burstNanos;
    private long bucketTime = Long.MIN_VALUE;
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
        if (!takeToken(now))
        {
            counters.increment(StackCounter.ICMP_OUT_RATE_LIMITED);
            return;
        }
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

    /** Token bucket kept as a single timestamp: the bucket is full when bucketTime <= now - burst. */
    private boolean takeToken(final long now)
    {
        if (bucketTime == Long.MIN_VALUE || now - bucketTime > burstNanos)
        {
            bucketTime = now - burstNanos;
        }
        if (now - bucketTime < nanosPerToken)
        {
            return false;
        }
        bucketTime += nanosPerToken;
        return true;
    }
}
