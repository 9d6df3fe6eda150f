package io.nicstack.stack.tcp;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.Frames;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.storage.BufferProvider;
import io.nicstack.stack.storage.ReceiveBuffer;
import io.nicstack.stack.storage.RingReceiveBuffer;
import io.nicstack.stack.storage.RingSendBuffer;
import io.nicstack.stack.storage.SendBuffer;
import io.nicstack.stack.tcp.isn.IsnGenerator;
import io.nicstack.stack.tcp.isn.SynCookies;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.TcpHeader;
import io.nicstack.stack.wire.TcpRepr;

import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.SYN;
import static org.junit.jupiter.api.Assertions.*;

/**
 * Segment-level test context (smoltcp's TCP test module, gVisor's {@code testing/context}): one
 * {@link NetStack} on a {@link TestDevice} with a manual clock, and a scripted peer at 198.18.0.1.
 *
 * <p>Tests build peer segments from the {@link #in()} template and stack segments from the
 * {@link #out()} template, override what the rule is about, then {@link #send(Seg)} and
 * {@link #recv(Seg...)} (exactly those segments, in that order) or {@link #recvNothing()}. Sequence
 * numbers are written relative to {@link #iss} (the stack's ISN, learnt from its SYN or SYN-ACK) and
 * {@link #irs} (the peer's ISN), e.g. {@code in().seq(irs + 1).ack(iss + 1)}. The peer's ISN sits
 * just below 2^32 so every test also crosses the sequence-number wrap.
 */
final class TcpTestHarness
{
    static final long MS = 1_000_000L;
    static final long SECOND = 1_000_000_000L;
    static final int PEER_IP = Frames.PEER_IP;
    static final int STACK_IP = Frames.STACK_IP;
    /** 198.18.0.255: the subnet broadcast of 198.18.0.0/24. */
    static final int SUBNET_BROADCAST = 0xC612_00FF;
    static final int PEER_PORT = 40_000;
    static final int LISTEN_PORT = 80;
    /** The peer's ISN: 4 KiB below the wrap, so transfers cross it. */
    static final int REMOTE_ISS = 0xFFFF_F000;
    static final int PEER_MSS = 1460;

    final TestDevice device;
    final StackCounters counters;
    final NetStack stack;
    final long mac;
    final int mtu;
    long now = 1_000 * SECOND;

    /** The stack's ISN (from its SYN / SYN-ACK). */
    int iss;
    /** The peer's ISN. */
    int irs = REMOTE_ISS;
    int localPort = LISTEN_PORT;
    int peerPort = PEER_PORT;

    // Options the scripted peer offers in its SYN / SYN-ACK.
    int peerMss = PEER_MSS;
    int peerWindowScale = -1;
    boolean peerSackPermitted;
    boolean peerTimestamps;
    /** The peer's current TSval; {@link #in()} puts it in every segment when timestamps are on. */
    int peerTsVal = 1000;
    /** TSval of the last segment the stack sent (the peer echoes it). */
    int lastStackTsVal;
    /** True once the handshake negotiated timestamps (both offered). */
    boolean tsOn;

    TcpListener listener;
    TcpConnection conn;
    final Events events = new Events();
    private int ipId = 1;
    /** False: the peer went silent on ARP, and {@link #advance} no longer refreshes the stack's entry for it. */
    boolean peerAnswersArp = true;

    TcpTestHarness()
    {
        this(1500);
    }

    TcpTestHarness(final int mtu)
    {
        this(mtu, false);
    }

    /** With {@code checksumOffload} the device offers transmit checksum offload (see {@link TestDevice}). */
    TcpTestHarness(final int mtu, final boolean checksumOffload)
    {
        this(mtu, checksumOffload, null);
    }

    /**
     * With {@code secrets} (null: random) as the stack's ISN and SYN-cookie keys ({@code IsnGenerator},
     * {@code SynCookies}): two harnesses with the same secrets, fed the same frames at the same times, send the same.
     */
    TcpTestHarness(final int mtu, final boolean checksumOffload, final long[] secrets)
    {
        this(StackConfig.of("198.18.0.2/24").mtu(mtu), checksumOffload, secrets);
    }

    /** On a stack with {@code config} (198.18.0.2/24, as the others; its other settings the test's). */
    TcpTestHarness(final StackConfig config)
    {
        this(config, false, null);
    }

    /**
     * On a stack with {@code config}; with {@code peerKnown} false the stack has not resolved the peer, which does not
     * answer ARP ({@link #peerAnswersArp}) until the test says so.
     */
    TcpTestHarness(final StackConfig config, final boolean peerKnown)
    {
        this(config, false, null, peerKnown);
    }

    private TcpTestHarness(final StackConfig config, final boolean checksumOffload, final long[] secrets)
    {
        this(config, checksumOffload, secrets, true);
    }

    private TcpTestHarness(final StackConfig config, final boolean checksumOffload, final long[] secrets,
        final boolean peerKnown)
    {
        this.mtu = config.mtu();
        device = new TestDevice(mtu).transmitChecksumOffload(checksumOffload);
        counters = StackCounters.inMemory();
        stack = secrets == null ? new NetStack(device, config, counters, now) : new NetStack(device, config, counters, now,
            new IsnGenerator(secrets[0], secrets[1]), new SynCookies(secrets[2], secrets[3]));
        mac = stack.config().mac();
        peerAnswersArp = peerKnown;
        if (peerKnown)
        {
            learnPeer();
        }
    }

    /** Teach the stack the peer's MAC (an ARP request for us), so TCP never waits on ARP. */
    private void learnPeer()
    {
        device.inject(Frames.ethernet(MacAddress.BROADCAST, Frames.PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
            Frames.arp(ArpPacket.OP_REQUEST, Frames.PEER_MAC, PEER_IP, 0, STACK_IP)));
        stack.poll(now);
        device.takeSent();
    }

    /** Defaults copied into listeners and active opens created after this call. */
    TcpSettings settings()
    {
        return stack.tcp().defaults();
    }

    // ------------------------------------------------------------------------------------------
    // Templates
    // ------------------------------------------------------------------------------------------

    /** A peer segment: {@code <SEQ=irs+1><ACK=iss+1><CTL=ACK>}, window 65535, the peer's timestamps if negotiated. */
    Seg in()
    {
        final Seg s = new Seg();
        s.r.sourcePort = peerPort;
        s.r.destinationPort = localPort;
        s.r.seq = irs + 1;
        s.r.ack = iss + 1;
        s.r.flags = ACK;
        s.r.window = 65535;
        if (tsOn)
        {
            s.r.timestampsPresent = true;
            s.r.tsVal = peerTsVal;
            s.r.tsEcr = lastStackTsVal;
        }
        return s;
    }

    /** A segment the stack is expected to send: {@code <SEQ=iss+1><ACK=irs+1><CTL=ACK>}, echoing the peer's TSval. */
    Seg out()
    {
        final Seg s = new Seg();
        s.r.sourcePort = localPort;
        s.r.destinationPort = peerPort;
        s.r.seq = iss + 1;
        s.r.ack = irs + 1;
        s.r.flags = ACK;
        if (tsOn)
        {
            s.r.timestampsPresent = true;
            s.r.tsEcr = peerTsVal;
            s.checkTsEcr = true;
        }
        return s;
    }

    /** The peer's SYN with the options this harness is configured to offer. */
    Seg peerSyn()
    {
        final Seg s = in().flags(SYN).seq(irs).ack(0).noTimestamps();
        s.r.mss = peerMss;
        s.r.windowScale = peerWindowScale;
        s.r.sackPermitted = peerSackPermitted;
        if (peerTimestamps)
        {
            s.r.timestampsPresent = true;
            s.r.tsVal = peerTsVal;
            s.r.tsEcr = 0;
        }
        return s;
    }

    /** Offer window scale (shift 7), SACK-permitted and timestamps, as Linux does. */
    TcpTestHarness peerOffersAll()
    {
        peerWindowScale = 7;
        peerSackPermitted = true;
        peerTimestamps = true;
        return this;
    }

    // ------------------------------------------------------------------------------------------
    // Driving the stack
    // ------------------------------------------------------------------------------------------

    /** Inject one peer segment and run one poll of the stack at {@link #now}. */
    void send(final Seg seg)
    {
        device.inject(frame(seg));
        stack.poll(now);
    }

    /** Inject several segments that arrive in one receive burst, then poll once. */
    void sendBurst(final Seg... segs)
    {
        for (final Seg s : segs)
        {
            device.inject(frame(s));
        }
        stack.poll(now);
    }

    /** Move the clock forward and poll (timers fire). */
    void advance(final long nanos)
    {
        now += nanos;
        if (peerAnswersArp)
        {
            // The peer keeps answering ARP: refresh the stack's cache entry so long idle periods never wait on ARP.
            device.inject(Frames.ethernet(MacAddress.BROADCAST, Frames.PEER_MAC, EthernetFrame.ETHERTYPE_ARP,
                Frames.arp(ArpPacket.OP_REQUEST, Frames.PEER_MAC, PEER_IP, 0, STACK_IP)));
        }
        stack.poll(now);
    }

    void advanceMs(final long millis)
    {
        advance(millis * MS);
    }

    /** Poll without moving time (e.g. after an application call). */
    void poll()
    {
        stack.poll(now);
    }

    /** The segments the stack sent since the last call (checksums and option encoding verified). */
    List<Seg> recv()
    {
        final List<Seg> out = new ArrayList<>();
        for (final byte[] frame : device.takeSent())
        {
            if ((((frame[12] & 0xFF) << 8) | (frame[13] & 0xFF)) == EthernetFrame.ETHERTYPE_ARP)
            {
                continue; // ARP replies to the refreshes in advance()
            }
            out.add(parseSent(frame));
        }
        return out;
    }

    /** Assert the stack sent exactly {@code expected}, in order; returns what it sent. */
    List<Seg> recv(final Seg... expected)
    {
        final List<Seg> actual = recv();
        final StringBuilder sb = new StringBuilder();
        sb.append("expected:\n");
        for (final Seg e : expected)
        {
            sb.append("  ").append(describe(e)).append('\n');
        }
        sb.append("actual:\n");
        for (final Seg a : actual)
        {
            sb.append("  ").append(describe(a)).append('\n');
        }
        if (conn != null)
        {
            sb.append("connection: ").append(conn.describe()).append('\n');
        }
        assertEquals(expected.length, actual.size(), "number of segments sent\n" + sb);
        for (int i = 0; i < expected.length; i++)
        {
            final String mismatch = mismatch(expected[i], actual.get(i));
            if (mismatch != null)
            {
                fail("segment " + i + ": " + mismatch + "\n" + sb);
            }
        }
        return actual;
    }

    /** Assert the stack sent exactly one segment matching {@code expected}; returns it. */
    Seg recvOne(final Seg expected)
    {
        return recv(expected).get(0);
    }

    /** Assert the stack sent nothing. */
    void recvNothing()
    {
        final List<Seg> actual = recv();
        if (!actual.isEmpty())
        {
            final StringBuilder sb = new StringBuilder("expected nothing, the stack sent:\n");
            for (final Seg a : actual)
            {
                sb.append("  ").append(describe(a)).append('\n');
            }
            fail(sb.toString());
        }
    }

    // ------------------------------------------------------------------------------------------
    // Handshakes
    // ------------------------------------------------------------------------------------------

    /** Listen on {@link #LISTEN_PORT} with a backlog of 8. */
    TcpListener listen()
    {
        return listen(8);
    }

    TcpListener listen(final int backlog)
    {
        listener = stack.tcp().listen(LISTEN_PORT, backlog, null);
        localPort = LISTEN_PORT;
        return listener;
    }

    /** From ESTABLISHED with nothing outstanding: close, our FIN, the peer's FIN with its ACK, our ACK: TIME-WAIT. */
    void closeIntoTimeWait()
    {
        conn.close();
        poll();
        recv(out().flags(TcpHeader.ACK | TcpHeader.FIN));
        send(in().ack(iss + 2).flags(TcpHeader.ACK | TcpHeader.FIN));
        recv(out().seq(iss + 2).ack(irs + 2));
        assertEquals(TcpState.TIME_WAIT, conn.state());
    }

    /**
     * Passive open: the peer's SYN (with the configured options), the stack's SYN-ACK (its ISN is
     * recorded in {@link #iss}), the peer's ACK; the accepted connection gets {@link #events}.
     */
    TcpConnection passiveOpen()
    {
        if (listener == null)
        {
            listen();
        }
        send(peerSyn());
        final Seg synAck = recvOne(expectedSynAck());
        iss = synAck.r.seq;
        tsOn = peerTimestamps && settings().timestamps;
        noteTs(synAck);
        send(in());
        recvNothing();
        conn = listener.accept();
        assertNotNull(conn, "the handshake completed and the connection was queued for accept");
        assertEquals(TcpState.ESTABLISHED, conn.state());
        conn.handler(events);
        poll();
        return conn;
    }

    /** The SYN-ACK the stack answers {@link #peerSyn()} with: MSS always, other options only if offered. */
    Seg expectedSynAck()
    {
        final TcpSettings s = settings();
        final Seg e = out().flags(SYN | ACK).seq(iss).ack(irs + 1).noTimestamps().anySeq();
        e.r.mss = mtu - 40;
        final boolean wscale = peerWindowScale >= 0 && s.windowScaling;
        e.r.windowScale = wscale ? TcpConnection.windowScaleFor(s.receiveBufferBytes) : -1;
        e.r.sackPermitted = peerSackPermitted && s.sack;
        if (peerTimestamps && s.timestamps)
        {
            e.r.timestampsPresent = true;
            e.r.tsEcr = peerTsVal;
            e.checkTsEcr = true;
        }
        return e;
    }

    /**
     * A passive open; 100 octets sent and acknowledged with the window closed, then close() ({@code orphan}) or
     * shutdownOutput(): the FIN goes out into the zero window.
     */
    void closeBehindAZeroWindow(final boolean orphan)
    {
        passiveOpen();
        write(bytes(100, 1));
        recv(out().flags(ACK | TcpHeader.PSH).payloadLength(100));
        send(in().ack(iss + 101).window(0));
        if (orphan)
        {
            conn.close();
        }
        else
        {
            conn.shutdownOutput();
        }
        poll();
        recv(out().seq(iss + 101).flags(ACK | TcpHeader.FIN));
    }

    /** {@code connect} to the peer, and the stack's SYN taken from the wire with its ISN and ephemeral port recorded. */
    Seg connect()
    {
        conn = stack.tcp().connect(PEER_IP, PEER_PORT, events, null);
        final Seg syn = recv().get(0);
        assertTrue(syn.r.hasFlags(SYN) && !syn.r.hasFlags(ACK), "a SYN: " + describe(syn));
        iss = syn.r.seq;
        localPort = syn.r.sourcePort;
        return syn;
    }

    /**
     * Active open: {@code connect}, the stack's SYN (ISN and ephemeral port recorded), the peer's
     * SYN-ACK with the configured options, the stack's ACK.
     */
    TcpConnection activeOpen()
    {
        noteTs(connect());
        final Seg synAck = peerSyn().flags(SYN | ACK).ack(iss + 1);
        if (peerTimestamps)
        {
            synAck.r.tsEcr = lastStackTsVal;
        }
        send(synAck);
        tsOn = peerTimestamps && settings().timestamps;
        recv(out());
        assertEquals(TcpState.ESTABLISHED, conn.state());
        assertTrue(events.connected);
        return conn;
    }

    // ------------------------------------------------------------------------------------------
    // Application side
    // ------------------------------------------------------------------------------------------

    /** Write {@code data} through the application API and poll. */
    int write(final byte[] data)
    {
        final UnsafeBuffer b = new UnsafeBuffer(data);
        final int n = conn.write(b, 0, data.length);
        poll();
        return n;
    }

    /** Read everything readable through the application API. */
    byte[] read()
    {
        return read(conn);
    }

    /** Read everything readable on {@code c} through the application API. */
    static byte[] read(final TcpConnection c)
    {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final UnsafeBuffer b = new UnsafeBuffer(new byte[65536]);
        int n;
        while ((n = c.read(b, 0, b.capacity())) > 0)
        {
            final byte[] chunk = new byte[n];
            b.getBytes(0, chunk);
            bytes.write(chunk, 0, n);
        }
        return bytes.toByteArray();
    }

    static byte[] bytes(final int length, final int salt)
    {
        final byte[] b = new byte[length];
        for (int i = 0; i < length; i++)
        {
            b[i] = (byte)(i * 31 + salt);
        }
        return b;
    }

    long counter(final StackCounter c)
    {
        return counters.get(c);
    }

    /** Records connection events. */
    static final class Events implements TcpHandler
    {
        boolean connected;
        int readableEvents;
        boolean peerClosed;
        int deliveryProblems;
        int closedReason = -1;

        @Override
        public void onConnected(final TcpConnection c)
        {
            connected = true;
        }

        @Override
        public void onReadable(final TcpConnection c)
        {
            readableEvents++;
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            peerClosed = true;
        }

        @Override
        public void onDeliveryProblem(final TcpConnection c)
        {
            deliveryProblems++;
        }

        @Override
        public void onClosed(final TcpConnection c, final int reason)
        {
            closedReason = reason;
        }
    }

    // ------------------------------------------------------------------------------------------
    // Segments
    // ------------------------------------------------------------------------------------------

    /** A TCP segment (header, options, payload) with fluent overrides; also carries what an expectation checks. */
    static final class Seg
    {
        final TcpRepr r = new TcpRepr();
        byte[] payload = new byte[0];
        /** Peer side: the whole option area as raw bytes (a multiple of 4), replacing the repr's options. */
        byte[] rawOptions;
        boolean badChecksum;
        int srcIp = PEER_IP;
        int dstIp = STACK_IP;
        /** Raw IPv4 options for the datagram carrying this segment (a multiple of 4). */
        byte[] ipOptions;
        int ttl = 64;
        boolean checkWindow;
        boolean checkTsVal;
        boolean checkTsEcr;
        boolean checkPayload;
        boolean anySeq;
        boolean anyAck;
        /** Parsed from the stack's output: the checksum fields as sent. */
        int ipTtl;
        int ipTos;
        int ipSource;
        boolean ipDontFragment;
        /** Parsed from the stack's output: the whole frame, e.g. for an ICMP error to quote. */
        byte[] frame;

        Seg seq(final int seq)
        {
            r.seq = seq;
            return this;
        }

        Seg ack(final int ack)
        {
            r.ack = ack;
            return this;
        }

        Seg flags(final int flags)
        {
            r.flags = flags;
            return this;
        }

        Seg window(final int window)
        {
            r.window = window;
            checkWindow = true;
            return this;
        }

        Seg mss(final int mss)
        {
            r.mss = mss;
            return this;
        }

        Seg windowScale(final int shift)
        {
            r.windowScale = shift;
            return this;
        }

        Seg sackPermitted(final boolean on)
        {
            r.sackPermitted = on;
            return this;
        }

        Seg ts(final int tsVal, final int tsEcr)
        {
            r.timestampsPresent = true;
            r.tsVal = tsVal;
            r.tsEcr = tsEcr;
            checkTsVal = true;
            checkTsEcr = true;
            return this;
        }

        Seg tsEcr(final int tsEcr)
        {
            r.timestampsPresent = true;
            r.tsEcr = tsEcr;
            checkTsEcr = true;
            return this;
        }

        Seg noTimestamps()
        {
            r.timestampsPresent = false;
            r.tsVal = 0;
            r.tsEcr = 0;
            checkTsVal = false;
            checkTsEcr = false;
            return this;
        }

        /** Add a SACK block {@code [left, right)}. */
        Seg sack(final int left, final int right)
        {
            r.addSackBlock(left, right);
            return this;
        }

        Seg payload(final byte[] data)
        {
            payload = data.clone();
            r.payloadLength = data.length;
            checkPayload = true;
            return this;
        }

        /** Expect a payload of this length without checking its bytes. */
        Seg payloadLength(final int length)
        {
            payload = new byte[length];
            r.payloadLength = length;
            checkPayload = false;
            return this;
        }

        Seg rawOptions(final int... bytes)
        {
            assertEquals(0, bytes.length % 4, "raw options are a multiple of 4 bytes");
            rawOptions = new byte[bytes.length];
            for (int i = 0; i < bytes.length; i++)
            {
                rawOptions[i] = (byte)bytes[i];
            }
            return this;
        }

        Seg urgent(final int pointer)
        {
            r.urgentPointer = pointer;
            return this;
        }

        Seg badChecksum()
        {
            badChecksum = true;
            return this;
        }

        Seg to(final int destinationIp)
        {
            dstIp = destinationIp;
            return this;
        }

        Seg from(final int sourceIp)
        {
            srcIp = sourceIp;
            return this;
        }

        Seg ports(final int source, final int destination)
        {
            r.sourcePort = source;
            r.destinationPort = destination;
            return this;
        }

        Seg ipOptions(final int... bytes)
        {
            ipOptions = new byte[bytes.length];
            for (int i = 0; i < bytes.length; i++)
            {
                ipOptions[i] = (byte)bytes[i];
            }
            return this;
        }

        /** Expectation: do not compare the sequence number (e.g. the SYN-ACK's unknown ISN). */
        Seg anySeq()
        {
            anySeq = true;
            return this;
        }

        Seg anyAck()
        {
            anyAck = true;
            return this;
        }

        int seqEnd()
        {
            return r.seq + r.payloadLength + (r.hasFlags(TcpHeader.SYN) ? 1 : 0) + (r.hasFlags(TcpHeader.FIN) ? 1 : 0);
        }
    }

    /** A frame as the stack would send it on this connection: our ports, our address to the peer, {@code seq}. */
    byte[] ourSegment(final int seq)
    {
        return frame(in().ports(localPort, peerPort).from(STACK_IP).to(PEER_IP).seq(seq).ack(0));
    }

    /** An ICMP error from the peer quoting the IP header and first 8 octets of {@code quotedFrame} (RFC 792). */
    byte[] icmpError(final int type, final int code, final byte[] quotedFrame)
    {
        return icmpError(type, code, 0, quotedFrame);
    }

    /** As {@link #icmpError(int, int, byte[])} with the ICMP header's last 4 octets (e.g. the next-hop MTU, RFC 1191). */
    byte[] icmpError(final int type, final int code, final int restOfHeader, final byte[] quotedFrame)
    {
        final int quotedLength = 20 + 8;
        final byte[] icmp = new byte[8 + quotedLength];
        System.arraycopy(quotedFrame, 14, icmp, 8, quotedLength);
        final UnsafeBuffer b = new UnsafeBuffer(icmp);
        b.putByte(0, (byte)type);
        b.putByte(1, (byte)code);
        b.putInt(4, restOfHeader, java.nio.ByteOrder.BIG_ENDIAN);
        new io.nicstack.stack.wire.IcmpHeader().wrap(b, 0, icmp.length).updateChecksum();
        return Frames.fromPeer(mac, Frames.ipv4(PEER_IP, STACK_IP, Ipv4Header.PROTOCOL_ICMP, ipId++, false, 0, icmp));
    }

    /** The whole Ethernet frame for a peer segment, checksums correct unless asked otherwise. */
    byte[] frame(final Seg s)
    {
        final byte[] tcp = tcpBytes(s);
        final byte[] ipOptions = s.ipOptions == null ? new byte[0] : s.ipOptions;
        final int headerLength = 20 + ipOptions.length;
        final UnsafeBuffer ip = new UnsafeBuffer(new byte[headerLength + tcp.length]);
        ip.putBytes(20, ipOptions);
        new Ipv4Header().wrap(ip, 0, ip.capacity()).versionAndIhl(headerLength / 4).tos(0).totalLength(ip.capacity())
            .identification(ipId++).flagsAndFragmentOffset(true, false, 0).ttl(s.ttl).protocol(Ipv4Header.PROTOCOL_TCP)
            .source(s.srcIp).destination(s.dstIp).updateChecksum();
        ip.putBytes(headerLength, tcp);
        final long dstMac = s.dstIp == SUBNET_BROADCAST ? MacAddress.BROADCAST : mac;
        return Frames.ethernet(dstMac, Frames.PEER_MAC, EthernetFrame.ETHERTYPE_IPV4, ip.byteArray());
    }

    private static byte[] tcpBytes(final Seg s)
    {
        final TcpRepr r = s.r;
        r.payloadLength = s.payload.length;
        final byte[] bytes;
        if (s.rawOptions != null)
        {
            final TcpRepr bare = new TcpRepr();
            bare.sourcePort = r.sourcePort;
            bare.destinationPort = r.destinationPort;
            bare.seq = r.seq;
            bare.ack = r.ack;
            bare.flags = r.flags;
            bare.window = r.window;
            bare.urgentPointer = r.urgentPointer;
            final int headerLength = 20 + s.rawOptions.length;
            bytes = new byte[headerLength + s.payload.length];
            final UnsafeBuffer b = new UnsafeBuffer(bytes);
            bare.emit(b, 0);
            b.putByte(TcpHeader.DATA_OFFSET_OFFSET, (byte)((headerLength / 4) << 4));
            b.putBytes(20, s.rawOptions);
            b.putBytes(headerLength, s.payload);
        }
        else
        {
            final int headerLength = r.headerLength();
            bytes = new byte[headerLength + s.payload.length];
            final UnsafeBuffer b = new UnsafeBuffer(bytes);
            r.emit(b, 0);
            b.putBytes(headerLength, s.payload);
        }
        final UnsafeBuffer b = new UnsafeBuffer(bytes);
        new TcpHeader().wrap(b, 0, bytes.length).updateChecksum(s.srcIp, s.dstIp);
        if (s.badChecksum)
        {
            b.putByte(TcpHeader.CHECKSUM_OFFSET, (byte)(b.getByte(TcpHeader.CHECKSUM_OFFSET) ^ 0x5A));
        }
        return bytes;
    }

    /** Parse a frame the stack sent: IPv4 to the peer carrying TCP, both checksums valid, options well formed. */
    private Seg parseSent(final byte[] frame)
    {
        final UnsafeBuffer b = new UnsafeBuffer(ByteBuffer.wrap(frame));
        final EthernetFrame eth = new EthernetFrame();
        assertTrue(eth.wrapChecked(b, 0, frame.length), "an Ethernet frame");
        assertEquals(EthernetFrame.ETHERTYPE_IPV4, eth.etherType(), "the stack sent only IPv4");
        assertEquals(Frames.PEER_MAC, eth.destination());
        final Ipv4Header ip = new Ipv4Header();
        assertTrue(ip.wrapChecked(b, eth.payloadOffset(), eth.payloadLength()), "an IPv4 header");
        assertTrue(ip.checksumValid(), "IPv4 header checksum");
        assertEquals(Ipv4Header.PROTOCOL_TCP, ip.protocol(), "the stack sent only TCP");
        assertEquals(PEER_IP, ip.destination());
        final int tcpOffset = ip.payloadOffset();
        final int tcpLength = ip.totalLength() - ip.headerLength();
        // RFC 9293 §3.1 (MUST-2): the sender computes the checksum over pseudo-header, header and data.
        assertTrue(new TcpHeader().wrap(b, tcpOffset, tcpLength).checksumValid(ip.source(), ip.destination()),
            "TCP checksum of a segment the stack sent");
        final Seg s = new Seg();
        s.frame = frame;
        final int status = s.r.parse(b, tcpOffset, tcpLength);
        assertEquals(TcpRepr.OK, status, "the stack's options parse cleanly: " + TcpRepr.statusName(status));
        checkOptionEncoding(b, tcpOffset, s.r.payloadOffset);
        s.payload = new byte[s.r.payloadLength];
        b.getBytes(s.r.payloadOffset, s.payload);
        s.ipTtl = ip.ttl();
        s.ipTos = ip.tos();
        s.ipSource = ip.source();
        s.ipDontFragment = ip.dontFragment();
        if (s.r.timestampsPresent)
        {
            lastStackTsVal = s.r.tsVal;
        }
        // RFC 9293 §3.7.1 (MUST-65): the MSS option is never sent outside SYN segments.
        if (!s.r.hasFlags(SYN))
        {
            assertEquals(-1, s.r.mss, "MSS option on a non-SYN segment: " + describe(s));
        }
        return s;
    }

    /**
     * RFC 9293 §3.1: every option but EOL and NOP carries a length (MUST-68); the header is padded
     * with zeros after an EOL (MUST-69); the option area is a whole number of 32-bit words.
     */
    private static void checkOptionEncoding(final UnsafeBuffer b, final int tcpOffset, final int payloadOffset)
    {
        final int start = tcpOffset + 20;
        assertEquals(0, (payloadOffset - tcpOffset) % 4, "header length is a multiple of 4");
        int i = start;
        while (i < payloadOffset)
        {
            final int kind = b.getByte(i) & 0xFF;
            if (kind == TcpRepr.OPTION_EOL)
            {
                for (int j = i + 1; j < payloadOffset; j++)
                {
                    assertEquals(0, b.getByte(j), "padding after EOL is zero (MUST-69)");
                }
                return;
            }
            if (kind == TcpRepr.OPTION_NOP)
            {
                i++;
                continue;
            }
            assertTrue(i + 1 < payloadOffset, "option " + kind + " has a length octet (MUST-68)");
            final int length = b.getByte(i + 1) & 0xFF;
            assertTrue(length >= 2 && i + length <= payloadOffset, "option " + kind + " length " + length + " (MUST-68)");
            i += length;
        }
    }

    /** Why {@code actual} does not match {@code expected}, or null. */
    private String mismatch(final Seg expected, final Seg actual)
    {
        final TcpRepr e = expected.r;
        final TcpRepr a = actual.r;
        if (e.sourcePort != a.sourcePort || e.destinationPort != a.destinationPort)
        {
            return "ports";
        }
        if (e.flags != a.flags)
        {
            return "flags";
        }
        if (!expected.anySeq && e.seq != a.seq)
        {
            return "seq";
        }
        if (!expected.anyAck && (e.flags & ACK) != 0 && e.ack != a.ack)
        {
            return "ack";
        }
        if (e.payloadLength != a.payloadLength)
        {
            return "payload length";
        }
        if (expected.checkPayload && !Arrays.equals(expected.payload, actual.payload))
        {
            return "payload bytes";
        }
        if (expected.checkWindow && e.window != a.window)
        {
            return "window";
        }
        if (e.mss != a.mss)
        {
            return "MSS option";
        }
        if (e.windowScale != a.windowScale)
        {
            return "window scale option";
        }
        if (e.sackPermitted != a.sackPermitted)
        {
            return "SACK-permitted option";
        }
        if (e.timestampsPresent != a.timestampsPresent)
        {
            return "timestamps option presence";
        }
        if (expected.checkTsVal && e.tsVal != a.tsVal)
        {
            return "TSval";
        }
        if (expected.checkTsEcr && e.tsEcr != a.tsEcr)
        {
            return "TSecr";
        }
        if (e.sackBlockCount != a.sackBlockCount)
        {
            return "number of SACK blocks";
        }
        for (int i = 0; i < e.sackBlockCount; i++)
        {
            if (e.sackLeft[i] != a.sackLeft[i] || e.sackRight[i] != a.sackRight[i])
            {
                return "SACK block " + i;
            }
        }
        return null;
    }

    /** A segment with sequence numbers relative to the ISNs (stack's as "s+", peer's as "p+"). */
    String describe(final Seg s)
    {
        final TcpRepr r = s.r;
        final boolean fromStack = r.sourcePort == localPort && r.destinationPort == peerPort;
        final StringBuilder sb = new StringBuilder();
        sb.append(fromStack ? "stack> " : "peer>  ");
        sb.append(flagNames(r.flags));
        sb.append(" seq=").append(fromStack ? "s+" + (r.seq - iss) : "p+" + (r.seq - irs));
        sb.append(" ack=").append(fromStack ? "p+" + (r.ack - irs) : "s+" + (r.ack - iss));
        sb.append(" win=").append(r.window).append(" len=").append(r.payloadLength);
        if (r.mss >= 0)
        {
            sb.append(" mss=").append(r.mss);
        }
        if (r.windowScale >= 0)
        {
            sb.append(" ws=").append(r.windowScale);
        }
        if (r.sackPermitted)
        {
            sb.append(" sackOK");
        }
        if (r.timestampsPresent)
        {
            sb.append(" ts=").append(r.tsVal).append('/').append(r.tsEcr);
        }
        for (int i = 0; i < r.sackBlockCount; i++)
        {
            final int base = fromStack ? irs : iss;
            sb.append(" sack[").append(r.sackLeft[i] - base).append(',').append(r.sackRight[i] - base).append(')');
        }
        return sb.toString();
    }

    private static String flagNames(final int flags)
    {
        final String names = "FSRPAUEC";
        final StringBuilder sb = new StringBuilder();
        for (int bit = 0; bit < 8; bit++)
        {
            if ((flags & (1 << bit)) != 0)
            {
                sb.append(names.charAt(bit));
            }
        }
        return sb.length() == 0 ? "-" : sb.toString();
    }

    private void noteTs(final Seg s)
    {
        if (s.r.timestampsPresent)
        {
            lastStackTsVal = s.r.tsVal;
        }
    }

    /** A connection's own send and receive rings of {@code capacity} bytes, as a {@link BufferProvider} hands them out. */
    static BufferProvider.ConnectionBuffers ringBuffers(final int capacity)
    {
        return buffers(new RingSendBuffer(capacity), new RingReceiveBuffer(capacity, 16));
    }

    /** {@code send} and {@code receive} as one connection's buffers. */
    static BufferProvider.ConnectionBuffers buffers(final SendBuffer send, final ReceiveBuffer receive)
    {
        return new BufferProvider.ConnectionBuffers()
        {
            @Override
            public SendBuffer sendBuffer()
            {
                return send;
            }

            @Override
            public ReceiveBuffer receiveBuffer()
            {
                return receive;
            }
        };
    }
}
