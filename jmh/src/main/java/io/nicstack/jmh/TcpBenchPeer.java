package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.NetDevice;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpListener;
import io.nicstack.stack.tcp.TcpState;
import io.nicstack.stack.wire.Checksum;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.TcpRepr;

import static io.nicstack.jmh.BenchFrames.*;

/**
 * A fake TCP peer on 198.18.0.1 for the TCP benchmarks: it opens a connection to a port the stack
 * listens on, with the SYN options Linux sends (MSS 1460, SACK-permitted, timestamps, window scale 7,
 * in Linux's layout), and builds the segments it later injects. Everything here runs in setup and
 * may allocate; only {@link Cursor#next()} runs in the measured loop, and it does not.
 */
final class TcpBenchPeer
{
    static final int PEER_PORT = 40_000;
    static final int STACK_PORT = 5_001;
    static final int PEER_MSS = 1460;
    static final int PEER_WINDOW_SCALE = 7;
    /** Payload of a full-sized segment with timestamps at MTU 1500: 1500 - 20 - 20 - 12. */
    static final int SEGMENT_PAYLOAD = 1448;
    /** What Linux advertises in its SYN (unscaled). */
    static final int PEER_SYN_WINDOW = 64_240;

    /** Where the TCP header starts in a frame (Ethernet + IPv4 without options). */
    static final int TCP_AT = EthernetFrame.HEADER_LENGTH + Ipv4Header.MIN_HEADER_LENGTH;
    /** Data segments and ACKs carry NOP, NOP, timestamps (12 bytes), as Linux sends them. */
    static final int TCP_HEADER_WITH_TS = TcpHeader.HEADER_LENGTH + 12;
    static final int SEQ_AT = TCP_AT + TcpHeader.SEQUENCE_NUMBER_OFFSET;
    static final int ACK_AT = TCP_AT + TcpHeader.ACKNOWLEDGMENT_NUMBER_OFFSET;
    static final int CHECKSUM_AT = TCP_AT + TcpHeader.CHECKSUM_OFFSET;
    /** TSval of the NOP, NOP, kind 8, length 10 layout. */
    static final int TSVAL_AT = TCP_AT + TcpHeader.HEADER_LENGTH + 4;
    static final int PAYLOAD_AT = TCP_AT + TCP_HEADER_WITH_TS;

    /** The peer's initial sequence number and first timestamp (arbitrary, away from 0). */
    static final int PEER_ISS = 0x5EED_0000;
    static final int PEER_TS0 = 0x0100_0000;

    final NetStack stack;
    final LoopbackSinkDevice device;
    final TcpConnection connection;
    /** This peer's port: {@link #PEER_PORT}, or another for the further flows of {@link #another}. */
    final int peerPort;
    private final TcpListener listener;
    private final TcpConnection[] accepted;
    /** Stack's ISS, learnt from its SYN-ACK. */
    final int stackIss;
    /** Stack's timestamp (constant: the clock is fixed), learnt from its SYN-ACK. */
    final int stackTsVal;
    /** Next sequence number of the peer (SYN consumed) and next timestamp value it sends. */
    final int peerNextSeq;
    final int peerNextTs;

    private TcpBenchPeer(
        final NetStack stack,
        final LoopbackSinkDevice device,
        final TcpConnection connection,
        final int peerPort,
        final TcpListener listener,
        final TcpConnection[] accepted,
        final int stackIss,
        final int stackTsVal,
        final int peerNextSeq,
        final int peerNextTs)
    {
        this.stack = stack;
        this.device = device;
        this.connection = connection;
        this.peerPort = peerPort;
        this.listener = listener;
        this.accepted = accepted;
        this.stackIss = stackIss;
        this.stackTsVal = stackTsVal;
        this.peerNextSeq = peerNextSeq;
        this.peerNextTs = peerNextTs;
    }

    /**
     * A stack ({@link BenchFrames#STACK_CIDR}) on a new {@link LoopbackSinkDevice} that knows the peer's MAC, and this
     * peer connected to it: the setup every TCP benchmark starts from ({@link #stack}, {@link #device}).
     *
     * @param buffers the connection's buffers, null for the stack's own.
     */
    static TcpBenchPeer onNewStack(final boolean checksumOffload, final int peerWindow,
        final io.nicstack.stack.storage.BufferProvider buffers)
    {
        final LoopbackSinkDevice device = new LoopbackSinkDevice(MTU, checksumOffload);
        final NetStack stack = new NetStack(device, StackConfig.of(STACK_CIDR), StackCounters.inMemory(), NOW);
        learnPeer(stack, device);
        final TcpConnection[] accepted = new TcpConnection[1];
        final TcpListener listener = stack.tcp().listen(STACK_PORT, 16, l -> accepted[0] = l.accept());
        check(listener != null, "listen");
        if (buffers != null)
        {
            listener.bufferProvider(buffers);
        }
        return connect(stack, device, listener, accepted, PEER_PORT, peerWindow);
    }

    /**
     * A further peer on the same address, from port {@code peerPort}, connected to the same listener (and so given
     * buffers by the same provider): for benchmarks of several flows on one stack.
     */
    TcpBenchPeer another(final int peerPort, final int peerWindow)
    {
        check(stack.tcp().connectionCount() > 0 && peerPort != this.peerPort, "another peer port than " + this.peerPort);
        return connect(stack, device, listener, accepted, peerPort, peerWindow);
    }

    /**
     * Inject the peer's SYN to {@link #STACK_PORT}, check the SYN-ACK, inject the ACK and check that an ESTABLISHED
     * connection with every option negotiated was accepted.
     *
     * @param peerWindow the (scaled by 2^7) window field of the peer's ACK.
     */
    private static TcpBenchPeer connect(final NetStack stack, final LoopbackSinkDevice device,
        final TcpListener listener, final TcpConnection[] accepted, final int peerPort, final int peerWindow)
    {
        accepted[0] = null;
        final long mac = stack.config().mac();

        // SYN with Linux's options.
        final TcpRepr syn = new TcpRepr();
        syn.sourcePort = peerPort;
        syn.destinationPort = STACK_PORT;
        syn.seq = PEER_ISS;
        syn.flags = TcpHeader.SYN;
        syn.window = PEER_SYN_WINDOW;
        syn.mss = PEER_MSS;
        syn.sackPermitted = true;
        syn.timestampsPresent = true;
        syn.tsVal = PEER_TS0;
        syn.tsEcr = 0;
        syn.windowScale = PEER_WINDOW_SCALE;
        final byte[] synFrame = tcpFrame(mac, syn, new byte[0]);
        check(synFrame.length == TCP_AT + 40, "SYN with 20 option bytes, as Linux sends");
        inject(stack, device, synFrame);

        final TcpRepr synAck = lastSegment(device, "SYN-ACK");
        check(synAck.flags == (TcpHeader.SYN | TcpHeader.ACK), "SYN-ACK flags: " + synAck);
        check(synAck.ack == PEER_ISS + 1, "SYN-ACK acknowledges the SYN: " + synAck);
        check(synAck.sourcePort == STACK_PORT && synAck.destinationPort == peerPort, "SYN-ACK ports: " + synAck);
        check(synAck.mss == PEER_MSS, "SYN-ACK MSS 1460: " + synAck);
        check(synAck.sackPermitted, "SYN-ACK SACK-permitted: " + synAck);
        check(synAck.timestampsPresent && synAck.tsEcr == PEER_TS0, "SYN-ACK timestamps echo the SYN's: " + synAck);
        check(synAck.windowScale >= 0, "SYN-ACK window scale: " + synAck);

        // The handshake's ACK.
        final TcpRepr ack = new TcpRepr();
        ack.sourcePort = peerPort;
        ack.destinationPort = STACK_PORT;
        ack.seq = PEER_ISS + 1;
        ack.ack = synAck.seq + 1;
        ack.flags = TcpHeader.ACK;
        ack.window = peerWindow;
        ack.timestampsPresent = true;
        ack.tsVal = PEER_TS0 + 1;
        ack.tsEcr = synAck.tsVal;
        final long segmentsOut = stack.counters().get(StackCounter.TCP_SEGMENTS_OUT);
        inject(stack, device, tcpFrame(mac, ack, new byte[0]));
        check(stack.counters().get(StackCounter.TCP_SEGMENTS_OUT) == segmentsOut, "the stack answered the handshake's ACK");

        final TcpConnection c = accepted[0];
        check(c != null, "the listener did not hand over a connection; counters:\n" + stack.counters());
        check(c.state() == TcpState.ESTABLISHED, "connection state " + c.state());
        check(c.timestampsEnabled(), "timestamps not negotiated");
        check(c.sackEnabled(), "SACK not negotiated");
        check(c.sendWindowScale() == PEER_WINDOW_SCALE, "send window scale " + c.sendWindowScale());
        check(c.receiveWindowScale() == synAck.windowScale, "receive window scale " + c.receiveWindowScale());
        check(c.sendMss() == SEGMENT_PAYLOAD, "send MSS " + c.sendMss() + ", expected 1460 - 12");
        return new TcpBenchPeer(stack, device, c, peerPort, listener, accepted, synAck.seq, synAck.tsVal, PEER_ISS + 1,
            PEER_TS0 + 2);
    }

    /** The peer's next segment on this connection: ACK of everything the stack sent, timestamps, {@code window}. */
    TcpRepr nextSegment(final int window)
    {
        final TcpRepr r = new TcpRepr();
        r.sourcePort = peerPort;
        r.destinationPort = STACK_PORT;
        r.seq = peerNextSeq;
        r.ack = stackIss + 1;
        r.flags = TcpHeader.ACK;
        r.window = window;
        r.timestampsPresent = true;
        r.tsVal = peerNextTs;
        r.tsEcr = stackTsVal;
        return r;
    }

    /** The peer's pure ACK ({@link #nextSegment}) as a 66-byte frame: headers and timestamps, no payload. */
    byte[] ackFrame(final int window)
    {
        final byte[] frame = tcpFrame(stack.config().mac(), nextSegment(window), new byte[0]);
        check(frame.length == TCP_AT + TCP_HEADER_WITH_TS, "a 66-byte ACK frame, not " + frame.length);
        return frame;
    }

    /** A cursor over the peer's data segments in {@code frame}: each next one carries the next 1448 bytes. */
    Cursor dataCursor(final UnsafeBuffer frame)
    {
        return new Cursor(frame, SEQ_AT, peerNextSeq, SEGMENT_PAYLOAD, peerNextTs);
    }

    /** A cursor over the peer's ACKs in {@code frame}: each next one acknowledges the next 1448 bytes the stack sent. */
    Cursor ackCursor(final UnsafeBuffer frame)
    {
        return new Cursor(frame, ACK_AT, stackIss + 1 + SEGMENT_PAYLOAD, SEGMENT_PAYLOAD, peerNextTs);
    }

    /** {@code frame} in a direct buffer of its own, for a cursor that patches it apart from the device's copy. */
    static UnsafeBuffer directCopy(final byte[] frame)
    {
        final UnsafeBuffer copy = new UnsafeBuffer(ByteBuffer.allocateDirect(frame.length));
        copy.putBytes(0, frame);
        return copy;
    }

    /** A segment from the peer to the stack as a whole Ethernet frame, TCP checksum set. */
    static byte[] tcpFrame(final long stackMac, final TcpRepr r, final byte[] payload)
    {
        r.payloadLength = payload.length;
        final int headerLength = r.headerLength();
        final UnsafeBuffer b = new UnsafeBuffer(new byte[headerLength + payload.length]);
        r.emit(b, 0);
        b.putBytes(headerLength, payload);
        new TcpHeader().wrap(b, 0, b.capacity()).updateChecksum(PEER_IP, STACK_IP);
        return ethernet(stackMac, PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ipv4FromPeer(Ipv4Header.PROTOCOL_TCP, 1, b.byteArray()));
    }

    /** Load {@code frame} and run one poll with it (it stays loaded: the next poll would deliver it again). */
    static void inject(final NetStack stack, final LoopbackSinkDevice device, final byte[] frame)
    {
        device.load(new UnsafeBuffer(frame), 0, frame.length);
        device.resetLastTx();
        stack.poll(NOW);
    }

    /** Parse and check (addresses, IPv4 and TCP checksums) the last frame the stack transmitted. */
    static TcpRepr lastSegment(final LoopbackSinkDevice device, final String what)
    {
        final int length = device.lastTxLength();
        check(length > 0, "the stack sent no " + what);
        final UnsafeBuffer tx = device.txBuffer();
        final EthernetFrame eth = new EthernetFrame().wrap(tx, 0, length);
        check(eth.destination() == PEER_MAC && eth.etherType() == EthernetFrame.ETHERTYPE_IPV4, what + ": Ethernet header");
        final Ipv4Header ip = new Ipv4Header();
        check(ip.wrapChecked(tx, EthernetFrame.HEADER_LENGTH, length - EthernetFrame.HEADER_LENGTH), what + ": IPv4 header");
        check(ip.checksumValid(), what + ": IPv4 checksum");
        check(ip.source() == STACK_IP && ip.destination() == PEER_IP && ip.protocol() == Ipv4Header.PROTOCOL_TCP,
            what + ": IPv4 addresses/protocol");
        final int tcpLength = ip.totalLength() - ip.headerLength();
        final TcpHeader tcp = new TcpHeader().wrap(tx, ip.payloadOffset(), tcpLength);
        if (device.lastTxFlags() == NetDevice.TX_L4_CHECKSUM_PARTIAL)
        {
            // Offloaded: the field holds the pseudo-header sum; complete it as the NIC would, then check as usual.
            check(tcp.checksum() == Checksum.fold(Checksum.pseudoHeaderIpv4(STACK_IP, PEER_IP, Ipv4Header.PROTOCOL_TCP, tcpLength)),
                what + ": partial checksum is not the pseudo-header sum");
            tcp.checksum(Checksum.compute(tx, ip.payloadOffset(), tcpLength));
        }
        check(tcp.checksumValid(STACK_IP, PEER_IP), what + ": TCP checksum");
        final TcpRepr r = new TcpRepr();
        check(r.parse(tx, ip.payloadOffset(), tcpLength) == TcpRepr.OK, what + ": TCP header does not parse");
        return r;
    }

    /**
     * The burst benchmarks' {@code nic} parameter: true for {@code ring} (frames placed in the device's RX ring before
     * each invocation, {@link LoopbackSinkDevice#fillRing}), false for {@code patchInLoop} (one frame patched before
     * each delivery inside the timed poll).
     */
    static boolean ringMode(final String nic)
    {
        check(nic.equals("ring") || nic.equals("patchInLoop"), "nic is ring or patchInLoop, not " + nic);
        return nic.equals("ring");
    }

    /** Every counter that would mean a segment was not taken as the benchmark intends. */
    static void checkNoTcpTrouble(final StackCounters counters)
    {
        check(counters.totalDrops() == 0, "the stack dropped frames:\n" + counters);
        final StackCounter[] trouble = {
            StackCounter.TCP_BAD_OPTIONS, StackCounter.TCP_PAWS_DROPS, StackCounter.TCP_OUT_OF_WINDOW,
            StackCounter.TCP_ACK_INVALID, StackCounter.TCP_OUT_OF_ORDER_REJECTED, StackCounter.TCP_CHALLENGE_ACKS,
            StackCounter.TCP_CHALLENGE_ACKS_LIMITED, StackCounter.TCP_RETRANSMITTED_SEGMENTS, StackCounter.TCP_FAST_RETRANSMITS,
            StackCounter.TCP_RTO_EXPIRIES, StackCounter.TCP_RESETS_SENT, StackCounter.TCP_RESETS_RECEIVED,
            StackCounter.TCP_NO_CONNECTION, StackCounter.TCP_ESTABLISHED_RESETS, StackCounter.TCP_TIMEOUTS,
            StackCounter.DEVICE_DROPS, StackCounter.IPV4_OUT_NO_ROUTE, StackCounter.IPV4_OUT_TOO_BIG,
            StackCounter.ARP_QUEUE_OVERFLOW, StackCounter.ARP_RESOLUTION_FAILED,
        };
        for (final StackCounter c : trouble)
        {
            check(counters.get(c) == 0, c.label() + " = " + counters.get(c) + "; counters:\n" + counters);
        }
        check(counters.unaccountedFrames() == 0, "unaccounted frames:\n" + counters);
    }

    /**
     * The fast-path counters when measurement starts: at the end, every segment measured must have taken header
     * prediction and early demultiplexing ({@link #checkEverySegmentTookTheFastPath}).
     */
    record FastPathStart(long predicted, long early)
    {
        static FastPathStart of(final StackCounters counters)
        {
            return new FastPathStart(counters.get(StackCounter.TCP_PREDICTED), counters.get(StackCounter.TCP_EARLY_DEMUX));
        }

        /** {@code segments} segments ({@code what}: "segment", "ACK") since this start each took both fast paths. */
        void checkEverySegmentTookTheFastPath(final StackCounters counters, final long segments, final String what)
        {
            check(counters.get(StackCounter.TCP_PREDICTED) - predicted == segments,
                "every " + what + " took header prediction: " + counters);
            check(counters.get(StackCounter.TCP_EARLY_DEMUX) - early == segments,
                "every " + what + " went to its connection by early demultiplexing: " + counters);
        }
    }

    /**
     * The per-operation change to a preloaded segment: one 32-bit field advancing by {@code step}
     * (the sequence number of a data segment, or the acknowledgment number of an ACK) and TSval
     * advancing by one, with the TCP checksum updated incrementally (RFC 1624 eqn. 3) for both.
     * Allocation free; the benchmarks measure it on its own so it can be subtracted.
     */
    static final class Cursor
    {
        private final UnsafeBuffer frame;
        private final int fieldAt;
        private final int step;
        /** Value the field gets at the next {@link #next()}. */
        int value;
        /** TSval at the next {@link #next()}. */
        int tsVal;
        /** Calls of {@link #next()} so far. */
        long count;

        /** What the frame holds now: the cursor is its only writer, so {@link #next()} never reads it back. */
        private int lastValue;
        private int lastTsVal;
        private int lastChecksum;

        Cursor(final UnsafeBuffer frame, final int fieldAt, final int first, final int step, final int firstTsVal)
        {
            this.frame = frame;
            this.fieldAt = fieldAt;
            this.step = step;
            this.value = first;
            this.tsVal = firstTsVal;
            this.lastValue = frame.getInt(fieldAt, ByteOrder.BIG_ENDIAN);
            this.lastTsVal = frame.getInt(TSVAL_AT, ByteOrder.BIG_ENDIAN);
            this.lastChecksum = frame.getShort(CHECKSUM_AT, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        }

        /** Patch the frame for the next segment: two fields and the checksum, updated incrementally (RFC 1624). */
        void next()
        {
            final UnsafeBuffer b = frame;
            final int v = value;
            final int ts = tsVal;
            final int oldV = lastValue;
            final int oldTs = lastTsVal;
            b.putInt(fieldAt, v, ByteOrder.BIG_ENDIAN);
            b.putInt(TSVAL_AT, ts, ByteOrder.BIG_ENDIAN);
            final long sum = (~lastChecksum & 0xFFFF)
                + ((~oldV >>> 16) & 0xFFFF) + (~oldV & 0xFFFF) + (v >>> 16) + (v & 0xFFFF)
                + ((~oldTs >>> 16) & 0xFFFF) + (~oldTs & 0xFFFF) + (ts >>> 16) + (ts & 0xFFFF);
            final int checksum = Checksum.finish(sum);
            b.putShort(CHECKSUM_AT, (short)checksum, ByteOrder.BIG_ENDIAN);
            lastValue = v;
            lastTsVal = ts;
            lastChecksum = checksum;
            value = v + step;
            tsVal = ts + 1;
            count++;
        }

        /** The TCP checksum of the frame as it stands is valid (setup only). */
        boolean checksumValid(final int length)
        {
            return new TcpHeader().wrap((DirectBuffer)frame, TCP_AT, length - TCP_AT).checksumValid(PEER_IP, STACK_IP);
        }
    }
}
