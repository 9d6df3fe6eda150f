package io.nicstack.stack.iface;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.udp.UdpHandler;
import io.nicstack.stack.udp.UdpSocket;

/**
 * ARP reports each frame it discards when an address stops resolving, and the layer told may send again at once, to
 * the same address even (Linux's neigh_invalidate: the report "can hit the same neighbour entry"): the queue stays
 * consistent, what is sent again waits for a new resolution, and a full queue takes it too.
 */
class ArpFailureReportTest
{
    private static final long MS = 1_000_000L;
    /** 198.18.0.77: on the /24, held by no one. */
    private static final int SILENT = 0xC612_004D;

    @Test
    void aSocketThatSendsAgainFromTheReportGetsANewResolutionWithTheQueueConsistent()
    {
        final int queueFrames = 2;
        final TestDevice device = new TestDevice(1500);
        final StackCounters counters = StackCounters.inMemory();
        final long start = 1_000_000 * MS;
        final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24").arpQueueFrames(queueFrames), counters,
            start);
        final UnsafeBuffer payload = new UnsafeBuffer(new byte[20]);
        final int[] errors = new int[1];
        final UdpSocket socket = stack.udp().bind(6000, new UdpHandler()
        {
            @Override
            public void onDatagram(final UdpSocket s, final int sourceAddress, final int sourcePort, final DirectBuffer buffer,
                final int offset, final int length, final long t)
            {
            }

            @Override
            public void onIcmpError(final UdpSocket s, final int type, final int code, final int destinationAddress,
                final int destinationPort, final int nextHopMtu, final long t)
            {
                errors[0]++;
                // Inside ARP's report: the queue is being emptied of the frames that failed.
                stack.arp().checkConsistency();
                s.send(destinationAddress, destinationPort, payload, 0, payload.capacity(), t);
            }
        });
        for (int i = 0; i < queueFrames; i++)
        {
            socket.send(SILENT, 53, payload, 0, payload.capacity(), start);
        }
        stack.poll(start);
        final long giveUp = stack.config().arpRetryNanos() * stack.config().arpMaxRetries();
        long now = start;
        while (now - start < giveUp)
        {
            now += 100 * MS;
            stack.poll(now);
        }
        assertEquals(queueFrames, errors[0], "each datagram reported");
        assertEquals(queueFrames, stack.arp().queuedFrames(), "each sent again, waiting for the new resolution");
        assertEquals(0, counters.get(StackCounter.ARP_QUEUE_OVERFLOW), "a full queue took them: each slot freed first");
        stack.arp().checkConsistency();

        while (now - start < 2 * giveUp)
        {
            now += 100 * MS;
            stack.poll(now);
        }
        assertEquals(2 * queueFrames, errors[0], "the new resolution failed too, and reported them");
        assertEquals(2 * queueFrames, counters.get(StackCounter.ARP_RESOLUTION_FAILED), "each failure dropped and counted");
        assertEquals(queueFrames, stack.arp().queuedFrames(), "sent again once more");
        stack.arp().checkConsistency();
        assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS));
    }
}
