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
import org.openjdk.jmh.annotations.Param;
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
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.UdpHeader;

import static io.nicstack.jmh.BenchFrames.*;

/**
 * One UDP datagram through the whole stack per operation, to a port bound with an inline echo
 * handler (RFC 862 style) that sends the payload straight back; the reply is emitted into the device.
 *
 * <p>As in {@link IcmpEchoBenchmark}, an operation is one {@link NetStack#poll(long)} delivering one
 * frame: Ethernet, IPv4 (header checksum), UDP (checksum over the datagram and pseudo header), port
 * lookup, the handler, then UDP output (payload copied into UDP's scratch buffer, checksum), IPv4
 * output (copied again into the claimed frame), commit, timers and flush. 1472 bytes is the largest
 * payload that fits a 1500-byte MTU unfragmented (a 1514-byte frame).
 *
 * <p>{@code baselineCopy} copies the same whole frame into another direct buffer.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class UdpEchoBenchmark
{
    private static final int ECHO_PORT = 7;
    private static final int PEER_PORT = 40000;

    @Param({"64", "1472"})
    public int payloadLength;

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
        stack.udp().bind(ECHO_PORT, (socket, source, sourcePort, buffer, offset, length, now) ->
            socket.send(source, sourcePort, buffer, offset, length, now));

        final byte[] data = pattern(payloadLength);
        final byte[] request = udpFrame(stack.config().mac(), PEER_PORT, ECHO_PORT, data);
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
        check(length == frameLength, "expected a " + frameLength + "-byte UDP echo, the stack sent " + length +
            " bytes; counters:\n" + stack.counters());
        final UnsafeBuffer reply = device.txBuffer();
        final EthernetFrame eth = new EthernetFrame().wrap(reply, 0, length);
        check(eth.destination() == PEER_MAC && eth.source() == stack.config().mac(), "reply MAC addresses");
        final Ipv4Header ip = new Ipv4Header();
        check(ip.wrapChecked(reply, EthernetFrame.HEADER_LENGTH, length - EthernetFrame.HEADER_LENGTH), "reply IPv4 header");
        check(ip.checksumValid(), "reply IPv4 header checksum");
        check(ip.source() == STACK_IP && ip.destination() == PEER_IP, "reply IPv4 addresses");
        check(ip.protocol() == Ipv4Header.PROTOCOL_UDP, "reply protocol");
        final UdpHeader udp = new UdpHeader().wrap(reply, ip.payloadOffset(), ip.totalLength() - ip.headerLength());
        check(udp.sourcePort() == ECHO_PORT && udp.destinationPort() == PEER_PORT, "reply ports");
        check(udp.datagramLength() == UdpHeader.HEADER_LENGTH + data.length, "reply UDP length");
        check(udp.checksum() != 0 && udp.checksumValid(STACK_IP, PEER_IP), "reply UDP checksum");
        final byte[] echoed = new byte[data.length];
        reply.getBytes(udp.payloadOffset(), echoed);
        check(Arrays.equals(data, echoed), "reply payload differs from the request's");
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        final StackCounters counters = stack.counters();
        check(counters.totalDrops() == 0, "the stack dropped frames during the run:\n" + counters);
        check(counters.get(StackCounter.UDP_IN_DATAGRAMS) == counters.get(StackCounter.UDP_OUT_DATAGRAMS),
            "not every datagram was echoed:\n" + counters);
        check(device.received() == device.transmitted(), "frames in " + device.received() + " != frames out " + device.transmitted());
    }

    /** Datagram in, handler, datagram out, through a whole poll round. */
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
