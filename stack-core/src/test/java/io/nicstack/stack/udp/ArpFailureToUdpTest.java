package io.nicstack.stack.udp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;

/**
 * A datagram that waited for ARP and was discarded when ARP gave up on its first hop reaches its socket as a host
 * unreachable (type 3, code 1) quoting it, as ICMP errors do (RFC 1122 §4.1.3.3), and as Linux's arp_error_report
 * delivers one to the sending host: the application learns that its datagram never left.
 */
class ArpFailureToUdpTest
{
    private static final long MS = 1_000_000L;
    private static final int LOCAL_PORT = 6000;
    private static final int REMOTE_PORT = 53;
    /** 198.18.0.77: on the /24, held by no one. */
    private static final int SILENT = 0xC612_004D;

    private final TestDevice device = new TestDevice(1500);
    private final StackCounters counters = StackCounters.inMemory();
    private long now = 1_000_000 * MS;
    private final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24"), counters, now);
    private final List<String> events = new ArrayList<>();
    /** The time of each event, from {@link #start}. */
    private final List<Long> times = new ArrayList<>();
    private final long start = now;

    private final UdpHandler recorder = new UdpHandler()
    {
        @Override
        public void onDatagram(
            final UdpSocket socket, final int sourceAddress, final int sourcePort, final DirectBuffer buffer, final int offset,
            final int length, final long t)
        {
            events.add("datagram from " + sourcePort);
        }

        @Override
        public void onIcmpError(
            final UdpSocket socket, final int type, final int code, final int destinationAddress, final int destinationPort,
            final int nextHopMtu, final long t)
        {
            events.add(type + "/" + code + " to " + Integer.toHexString(destinationAddress) + ":" + destinationPort
                + " mtu " + nextHopMtu + " on " + socket.port());
            times.add(t - start);
        }
    };

    private long arpGiveUpNanos()
    {
        return stack.config().arpRetryNanos() * stack.config().arpMaxRetries();
    }

    /** Poll every 100 ms for {@code nanos}. */
    private void advance(final long nanos)
    {
        final long until = now + nanos;
        while (now < until)
        {
            now += 100 * MS;
            stack.poll(now);
        }
    }

    @Test
    void aDatagramToASilentHostIsReportedAsHostUnreachableWhenArpGivesUp()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, recorder);
        assertTrue(socket.send(SILENT, REMOTE_PORT, new UnsafeBuffer(new byte[100]), 0, 100, now), "queued for ARP");
        stack.poll(now);
        advance(arpGiveUpNanos() + 10_000 * MS);
        assertEquals(List.of("3/1 to c612004d:53 mtu 0 on 6000"), events);
        assertEquals(List.of(arpGiveUpNanos()), times, "when ARP gave up");
        assertEquals(1, counters.get(StackCounter.ARP_RESOLUTION_FAILED), "the datagram was dropped, and counted");
        assertEquals(1, counters.get(StackCounter.UDP_ICMP_ERRORS), "counted as the ICMP errors passed on are");
        assertEquals(0, stack.arp().queuedFrames());
    }

    @Test
    void aQueuedSocketReceivesTheHostUnreachableFromItsQueue()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, 1 << 16);
        socket.send(SILENT, REMOTE_PORT, new UnsafeBuffer(new byte[10]), 0, 10, now);
        stack.poll(now);
        advance(arpGiveUpNanos());
        assertEquals(1, socket.receive(recorder, 10, now));
        assertEquals(List.of("3/1 to c612004d:53 mtu 0 on 6000"), events);
    }

    /** Only the first fragment holds the UDP header: one datagram, one error, however many fragments waited. */
    @Test
    void aFragmentedDatagramIsReportedOnce()
    {
        final UdpSocket socket = stack.udp().bind(LOCAL_PORT, recorder);
        final int length = 3 * stack.ipv4().mtu();
        assertTrue(socket.send(SILENT, REMOTE_PORT, new UnsafeBuffer(new byte[length]), 0, length, now));
        stack.poll(now);
        final long fragments = counters.get(StackCounter.IPV4_OUT_FRAGMENTS);
        assertTrue(fragments > 1);
        advance(arpGiveUpNanos());
        assertEquals(List.of("3/1 to c612004d:53 mtu 0 on 6000"), events);
        assertEquals(fragments, counters.get(StackCounter.ARP_RESOLUTION_FAILED), "every fragment dropped and counted");
    }
}
