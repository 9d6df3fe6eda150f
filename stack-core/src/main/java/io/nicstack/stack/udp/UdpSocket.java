package io.nicstack.stack.udp;

import java.nio.ByteBuffer;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import io.nicstack.stack.wire.Ipv4Header;

/**
 * A bound UDP port. Datagrams, and ICMP errors about datagrams it sent ({@link UdpHandler#onIcmpError}), either go to
 * a {@link UdpHandler} inline, or, without one, into a bounded receive queue drained with
 * {@link #receive(UdpHandler, int, long)}. Used from the event loop thread.
 */
public final class UdpSocket
{
    private static final int MSG_TYPE = 1;
    /**
     * A queued datagram: source address, source port, destination address, IP options length and whether the
     * destination is a broadcast (1 or 0), an int each at these offsets, then its IP options, then its bytes.
     */
    private static final int SOURCE_AT = 0;
    private static final int SOURCE_PORT_AT = 4;
    private static final int DESTINATION_AT = 8;
    private static final int OPTIONS_LENGTH_AT = 12;
    private static final int BROADCAST_AT = 16;
    private static final int META_LENGTH = 20;
    /** A queued ICMP error: destination address and port, type, code, next-hop MTU, an int each at these offsets. */
    private static final int MSG_TYPE_ICMP_ERROR = 2;
    private static final int ERROR_DESTINATION_AT = 0;
    private static final int ERROR_PORT_AT = 4;
    private static final int ERROR_TYPE_AT = 8;
    private static final int ERROR_CODE_AT = 12;
    private static final int ERROR_MTU_AT = 16;
    private static final int ICMP_ERROR_LENGTH = 20;

    private final Udp udp;
    private final int port;
    private final UdpHandler handler;
    private final OneToOneRingBuffer queue;
    private final MessageHandler queueReader = this::onQueued;
    private UdpHandler drainHandler;
    private boolean open = true;
    private long now;
    private int destination;
    private boolean broadcast;
    /** The TOS octet and TTL of the datagrams this socket sends; a TTL of 0 means the stack's default. */
    private int typeOfService;
    private int timeToLive;
    private DirectBuffer options = new UnsafeBuffer(new byte[0]);
    private int optionsOffset;
    private int optionsLength;

    /**
     * The least queue: eight times the largest queued datagram (its addresses, port, options length and broadcast
     * flag, then up to 65,507 bytes of IP options and payload: a datagram's options take room from its payload).
     */
    /** Largest receive queue: a ring's capacity is a power of two that fits an int. */
    public static final int MAX_QUEUE_BYTES = 1 << 30;
    static final int MIN_QUEUE_BYTES = BitUtil.findNextPositivePowerOfTwo(8 * (META_LENGTH + Udp.MAX_PAYLOAD));

    UdpSocket(final Udp udp, final int port, final UdpHandler handler, final int queueBytes)
    {
        this.udp = udp;
        this.port = port;
        this.handler = handler;
        // An Agrona ring takes messages of up to an eighth of its capacity: at least room for the largest datagram.
        this.queue = handler != null ? null : new OneToOneRingBuffer(new UnsafeBuffer(ByteBuffer.allocateDirect(
            BitUtil.findNextPositivePowerOfTwo(Math.max(queueBytes, MIN_QUEUE_BYTES)) + RingBufferDescriptor.TRAILER_LENGTH)));
    }

    public int port()
    {
        return port;
    }

    /**
     * Send a datagram from this port; false (counted) when it cannot be sent now.
     *
     * @throws IllegalArgumentException for a payload too long, a destination port outside 1..65535, or an address no
     *                                  datagram of ours may go to: 0/8, 127/8, multicast, class E, our own (the
     *                                  broadcast addresses are allowed).
     * @throws IndexOutOfBoundsException when {@code [offset, offset + length)} is not inside {@code buffer}.
     */
    public boolean send(final int address, final int destinationPort, final DirectBuffer buffer, final int offset, final int length, final long nowNanos)
    {
        if (!open)
        {
            throw new IllegalStateException("socket closed: udp port " + port);
        }
        return udp.send(port, address, destinationPort, buffer, offset, length, typeOfService,
            timeToLive != 0 ? timeToLive : udp.defaultTtl(), nowNanos);
    }

    /**
     * Set the TOS octet (the DS field and ECN bits, RFC 2474, RFC 3168) of every datagram this socket sends from now
     * on, as IP_TOS does; 0, the default class, unless set. RFC 1122 §4.1.4: an application MUST be able to choose
     * the TOS of the datagrams it sends (§3.2.1.6).
     *
     * @throws IllegalArgumentException outside 0..255.
     */
    public UdpSocket typeOfService(final int tos)
    {
        if (tos < 0 || tos > 255)
        {
            throw new IllegalArgumentException("udp TOS must be 0..255: " + tos);
        }
        typeOfService = tos;
        return this;
    }

    /** The TOS octet of the datagrams this socket sends. */
    public int typeOfService()
    {
        return typeOfService;
    }

    /**
     * Set the TTL of every datagram this socket sends from now on, 1..255 (a host MUST NOT send TTL 0, RFC 1122
     * §3.2.1.7), or -1 for the stack's default again, as IP_TTL does. RFC 1122 §4.1.4: an application MUST be able to
     * choose the TTL of the datagrams it sends (e.g. a traceroute).
     *
     * @throws IllegalArgumentException for any other value.
     */
    public UdpSocket timeToLive(final int ttl)
    {
        if (ttl != -1 && (ttl < 1 || ttl > 255))
        {
            throw new IllegalArgumentException("udp TTL must be 1..255, or -1 for the default: " + ttl);
        }
        timeToLive = ttl == -1 ? 0 : ttl;
        return this;
    }

    /** The TTL of the datagrams this socket sends: its own, or the stack's default. */
    public int timeToLive()
    {
        return timeToLive != 0 ? timeToLive : udp.defaultTtl();
    }

    /**
     * The destination address of the datagram being handed to {@link UdpHandler#onDatagram}, valid during that call:
     * our address, or a broadcast address ({@link #destinationIsBroadcast}): 255.255.255.255, the subnet's broadcast
     * address, or its old form, the subnet's network address {subnet, 0}, which IPv4 accepts on input (RFC 1122
     * §3.3.6). RFC 1122 §4.1.3.5: the specific destination MUST be passed up, so that an application can tell a
     * broadcast from a datagram to it, as IP_PKTINFO does.
     */
    public int destinationAddress()
    {
        return destination;
    }

    /**
     * True when the datagram being handed to {@link UdpHandler#onDatagram} was sent to a broadcast address, valid
     * during that call: whatever IPv4 took as one on input (255.255.255.255, the subnet's broadcast address, or the
     * subnet's network address, RFC 1122 §3.3.6), so that the two never disagree. A service that answers
     * automatically should not answer it (its source may be forged, and every host on the link would answer together).
     */
    public boolean destinationIsBroadcast()
    {
        return broadcast;
    }

    /**
     * Copy the IP options of the datagram being handed to {@link UdpHandler#onDatagram} into {@code into} at
     * {@code index}, as received (up to {@link Ipv4Header#MAX_HEADER_LENGTH} - 20 bytes), and
     * return their length, 0 without options; valid during that call. RFC 1122 §4.1.3.2: UDP MUST pass any IP option
     * it receives transparently to the application, as IP_RECVOPTS does. A reassembled datagram's are its first
     * fragment's.
     */
    public int options(final MutableDirectBuffer into, final int index)
    {
        into.putBytes(index, options, optionsOffset, optionsLength);
        return optionsLength;
    }

    /**
     * Deliver up to {@code limit} queued datagrams and ICMP errors to {@code receiver}, in arrival order, at
     * {@code nowNanos} (the {@code now} they are handed with); returns how many.
     */
    public int receive(final UdpHandler receiver, final int limit, final long nowNanos)
    {
        if (queue == null)
        {
            return 0;
        }
        drainHandler = receiver;
        now = nowNanos;
        return queue.read(queueReader, limit);
    }

    private void onQueued(final int msgType, final MutableDirectBuffer buffer, final int index, final int length)
    {
        if (msgType == MSG_TYPE_ICMP_ERROR)
        {
            drainHandler.onIcmpError(this, buffer.getInt(index + ERROR_TYPE_AT), buffer.getInt(index + ERROR_CODE_AT),
                buffer.getInt(index + ERROR_DESTINATION_AT), buffer.getInt(index + ERROR_PORT_AT),
                buffer.getInt(index + ERROR_MTU_AT), now);
            return;
        }
        destination = buffer.getInt(index + DESTINATION_AT);
        broadcast = buffer.getInt(index + BROADCAST_AT) != 0;
        options = buffer;
        optionsOffset = index + META_LENGTH;
        optionsLength = buffer.getInt(index + OPTIONS_LENGTH_AT);
        final int payloadAt = optionsOffset + optionsLength;
        drainHandler.onDatagram(this, buffer.getInt(index + SOURCE_AT), buffer.getInt(index + SOURCE_PORT_AT), buffer, payloadAt,
            index + length - payloadAt, now);
    }

    public void close()
    {
        if (open)
        {
            open = false;
            udp.unbind(port);
        }
    }

    /**
     * Called by {@link Udp} for a datagram with the IP header {@code ip}, {@code toBroadcast} when IPv4 took its
     * destination as a broadcast; false when the receive queue is full.
     */
    boolean deliver(final Ipv4Header ip, final boolean toBroadcast, final int sourcePort, final DirectBuffer buffer,
        final int offset, final int length, final long nowNanos)
    {
        final int ipOptionsLength = ip.headerLength() - Ipv4Header.MIN_HEADER_LENGTH;
        final int ipOptionsOffset = ip.offset() + Ipv4Header.MIN_HEADER_LENGTH;
        if (handler != null)
        {
            destination = ip.destination();
            broadcast = toBroadcast;
            options = ip.buffer();
            optionsOffset = ipOptionsOffset;
            optionsLength = ipOptionsLength;
            handler.onDatagram(this, ip.source(), sourcePort, buffer, offset, length, nowNanos);
            return true;
        }
        final int index = queue.tryClaim(MSG_TYPE, META_LENGTH + ipOptionsLength + length);
        if (index < 0)
        {
            return false;
        }
        final var b = queue.buffer();
        b.putInt(index + SOURCE_AT, ip.source());
        b.putInt(index + SOURCE_PORT_AT, sourcePort);
        b.putInt(index + DESTINATION_AT, ip.destination());
        b.putInt(index + OPTIONS_LENGTH_AT, ipOptionsLength);
        b.putInt(index + BROADCAST_AT, toBroadcast ? 1 : 0);
        b.putBytes(index + META_LENGTH, ip.buffer(), ipOptionsOffset, ipOptionsLength);
        b.putBytes(index + META_LENGTH + ipOptionsLength, buffer, offset, length);
        queue.commit(index);
        return true;
    }

    /** Called by {@link Udp} for an ICMP error quoting a datagram from this port; false when the receive queue is full. */
    boolean deliverIcmpError(
        final int type, final int code, final int destination, final int destinationPort, final int nextHopMtu, final long nowNanos)
    {
        if (handler != null)
        {
            handler.onIcmpError(this, type, code, destination, destinationPort, nextHopMtu, nowNanos);
            return true;
        }
        final int index = queue.tryClaim(MSG_TYPE_ICMP_ERROR, ICMP_ERROR_LENGTH);
        if (index < 0)
        {
            return false;
        }
        final var b = queue.buffer();
        b.putInt(index + ERROR_DESTINATION_AT, destination);
        b.putInt(index + ERROR_PORT_AT, destinationPort);
        b.putInt(index + ERROR_TYPE_AT, type);
        b.putInt(index + ERROR_CODE_AT, code);
        b.putInt(index + ERROR_MTU_AT, nextHopMtu);
        queue.commit(index);
        return true;
    }
}
