package io.nicstack.jmh;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.Ipv4Header;

import static io.nicstack.jmh.BenchFrames.*;

/**
 * One ICMP echo request (56 bytes of data, as ping sends: a 98-byte frame) through the whole stack
 * per operation, and its echo reply emitted into the device.
 *
 * <p>An operation is one {@link NetStack#poll(long)} with a {@link LoopbackSinkDevice} that delivers
 * exactly one frame per receive: Ethernet demux, IPv4 validation (header checksum), ICMP validation
 * (checksum over 64 bytes), the reply built in ICMP's scratch buffer, IPv4 output with ARP lookup,
 * header and checksum into the claimed frame, commit, the (idle) timer wheel and the flush. Measuring
 * poll rather than {@link NetStack#onFrame} alone keeps the per-round fixed costs in, as the event
 * loop pays them; with one frame per poll they are not amortised over a burst, so this is the worst
 * case per frame.
 *
 * <p>{@code baselineCopy} copies the same 98 bytes from the receive buffer into another direct
 * buffer: the least any echo could cost.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class IcmpEchoBenchmark
{
    /** Data bytes of a default ping (ping -s 56). */
    static final int PING_DATA_LENGTH = 56;
    private static final int IDENTIFIER = 0x4E53;
    private static final int SEQUENCE = 1;

    private LoopbackSinkDevice device;
    private NetStack stack;
    private UnsafeBuffer copyTarget;
    private int frameLength;

    @Setup(Level.Trial)
    public void setUp()
    {
        device = new LoopbackSinkDevice(MTU);
        stack = new NetStack(device, StackConfig.of(STACK_CIDR), StackCounters.inMemory(), NOW);
        learnPeer(stack, device);

        final byte[] data = pattern(PING_DATA_LENGTH);
        final byte[] request = icmpEchoRequestFrame(stack.config().mac(), IDENTIFIER, SEQUENCE, data);
        frameLength = request.length;
        device.load(new UnsafeBuffer(request), 0, frameLength);
        copyTarget = new UnsafeBuffer(ByteBuffer.allocateDirect(frameLength));

        device.resetLastTx();
        stack.poll(NOW);
        checkEchoReply(data);
    }

    private void checkEchoReply(final byte[] data)
    {
        final int length = device.lastTxLength();
        check(length == frameLength, "expected a " + frameLength + "-byte echo reply, the stack sent " + length +
            " bytes; counters:\n" + stack.counters());
        final UnsafeBuffer reply = device.txBuffer();
        final EthernetFrame eth = new EthernetFrame().wrap(reply, 0, length);
        check(eth.destination() == PEER_MAC && eth.source() == stack.config().mac(), "reply MAC addresses");
        check(eth.etherType() == EthernetFrame.ETHERTYPE_IPV4, "reply EtherType");
        final Ipv4Header ip = new Ipv4Header();
        check(ip.wrapChecked(reply, EthernetFrame.HEADER_LENGTH, length - EthernetFrame.HEADER_LENGTH), "reply IPv4 header");
        check(ip.checksumValid(), "reply IPv4 header checksum");
        check(ip.source() == STACK_IP && ip.destination() == PEER_IP, "reply IPv4 addresses");
        check(ip.protocol() == Ipv4Header.PROTOCOL_ICMP, "reply protocol");
        final IcmpHeader icmp = new IcmpHeader().wrap(reply, ip.payloadOffset(), ip.totalLength() - ip.headerLength());
        check(icmp.type() == IcmpHeader.TYPE_ECHO_REPLY && icmp.code() == 0, "reply ICMP type");
        check(icmp.checksumValid(), "reply ICMP checksum");
        check(icmp.identifier() == IDENTIFIER && icmp.sequenceNumber() == SEQUENCE, "reply identifier and sequence");
        final byte[] echoed = new byte[data.length];
        reply.getBytes(icmp.dataOffset(), echoed);
        check(Arrays.equals(data, echoed), "reply data differs from the request's");
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        final StackCounters counters = stack.counters();
        check(counters.totalDrops() == 0, "the stack dropped frames during the run:\n" + counters);
        check(counters.get(StackCounter.ICMP_IN_ECHO_REQUESTS) == counters.get(StackCounter.ICMP_OUT_ECHO_REPLIES),
            "not every echo request was answered:\n" + counters);
        check(device.received() == device.transmitted(), "frames in " + device.received() + " != frames out " + device.transmitted());
    }

    /** Echo request in, echo reply out, through a whole poll round. */
    @Benchmark
    public int echo()
    {
        return stack.poll(NOW);
    }

    /** The same frame's bytes copied into another direct buffer. */
    @Benchmark
    public void baselineCopy()
    {
        copyTarget.putBytes(0, device.rxBuffer(), 0, frameLength);
    }
}
