package io.nicstack.daemon;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import io.nicstack.nic.linux.NetNamespace;
import io.nicstack.nic.tap.TapDevice;
import io.nicstack.pipes.Protocol;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.wire.Ipv4Address;

import static org.junit.jupiter.api.Assertions.*;

/**
 * ARP's give-up reaches TCP against a real link: the stack, on a tap in a namespace this test creates (the kernel at
 * 198.18.0.1 on the other end), connects to 198.18.0.99, on the tap's subnet but held by nothing, so no one answers its
 * ARP requests. The attempt fails as unreachable when ARP gives up (about 3 s), as Linux's connect fails with
 * EHOSTUNREACH, instead of timing out after 367 s of SYN retries. Addresses from 198.18.0.0/15 only; the namespace, and
 * the tap in it, are deleted on every path.
 */
@Tag("kernel")
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArpFailureKernelTest
{
    private static final String TAP = "nstarp0";
    /** The bound of the attempt: a few times ARP's give-up, far below the SYN retries' 367 s. */
    private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(15);

    @Test
    void aConnectToAnAddressNobodyHoldsOnTheTapsSubnetFailsAsUnreachable() throws Exception
    {
        final String name;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final AtomicBoolean tapReady = new AtomicBoolean();
        final AtomicBoolean go = new AtomicBoolean();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger closedReason = new AtomicInteger(-1);
        final AtomicInteger softError = new AtomicInteger(-1);
        final AtomicLong closedAfterNanos = new AtomicLong(-1);
        final AtomicLong arpRequests = new AtomicLong();
        final AtomicLong framesDropped = new AtomicLong();
        final AtomicLong linkFailures = new AtomicLong();
        try (Netns ns = new Netns())
        {
            name = ns.name;
            final Thread stackThread = new Thread(() ->
            {
                try
                {
                    NetNamespace.enter(ns.name);
                    try (TapDevice tap = TapDevice.open(TAP))
                    {
                        final NetStack stack = new NetStack(tap, StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(),
                            System.nanoTime());
                        stack.start(System.nanoTime());
                        tapReady.set(true);
                        final long goDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        while (!go.get() && !stop.get() && System.nanoTime() < goDeadline)
                        {
                            stack.poll(System.nanoTime());
                            Thread.sleep(1);
                        }
                        if (!go.get())
                        {
                            return;
                        }
                        final long before = stack.counters().get(StackCounter.ARP_OUT_REQUESTS);
                        final long start = System.nanoTime();
                        stack.tcp().connect(Ipv4Address.parse("198.18.0.99"), 5555, new TcpHandler()
                        {
                            @Override
                            public void onClosed(final TcpConnection c, final int reason)
                            {
                                closedAfterNanos.set(System.nanoTime() - start);
                                softError.set(c.softError());
                                closedReason.set(reason);
                            }
                        }, null);
                        while (closedReason.get() < 0 && !stop.get() && System.nanoTime() - start < BOUND_NANOS)
                        {
                            if (stack.poll(System.nanoTime()) == 0)
                            {
                                tap.awaitReadable(1_000_000L);
                            }
                        }
                        arpRequests.set(stack.counters().get(StackCounter.ARP_OUT_REQUESTS) - before);
                        framesDropped.set(stack.counters().get(StackCounter.ARP_RESOLUTION_FAILED));
                        linkFailures.set(stack.counters().get(StackCounter.TCP_LINK_FAILURES));
                    }
                    finally
                    {
                        NetNamespace.restore();
                    }
                }
                catch (final Throwable t)
                {
                    failure.set(t);
                }
            }, "stack-arp-failure");
            stackThread.start();
            try
            {
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!tapReady.get() && failure.get() == null && System.nanoTime() < deadline)
                {
                    Thread.sleep(10);
                }
                assertNull(failure.get());
                assertTrue(tapReady.get(), "the stack's tap did not open within 10 s");
                ns.exec(5, "ip", "addr", "add", "198.18.0.1/24", "dev", TAP).assertOk("addr");
                ns.exec(5, "ip", "link", "set", TAP, "up").assertOk("link up");
                go.set(true);
                stackThread.join(TimeUnit.NANOSECONDS.toMillis(BOUND_NANOS) + 5_000);
                assertFalse(stackThread.isAlive(), "stack thread finished");
                assertNull(failure.get(), () -> "stack thread failed: " + failure.get());
            }
            finally
            {
                stop.set(true);
                stackThread.join(10_000);
            }
            final long ms = closedAfterNanos.get() / 1_000_000;
            System.out.println("[kernel arp] connect to 198.18.0.99 ended after " + ms + " ms, reason " + closedReason.get()
                + ", soft error 0x" + Integer.toHexString(softError.get()) + ", " + arpRequests.get() + " ARP requests, "
                + framesDropped.get() + " frames dropped");
            assertEquals(TcpConnection.CLOSE_TIMED_OUT, closedReason.get(),
                "the attempt ended within " + BOUND_NANOS / 1_000_000_000 + " s (ARP requests: " + arpRequests.get() + ")");
            assertEquals(Protocol.Reason.UNREACHABLE, Protocol.Reason.ofTimeout(softError.get()),
                "soft error " + Integer.toHexString(softError.get()) + ": " + Protocol.Reason.describe(
                    Protocol.Reason.ofTimeout(softError.get())));
            assertTrue(closedAfterNanos.get() < TimeUnit.SECONDS.toNanos(10),
                "failed when ARP gave up (about 3 s), not after the SYN retries: " + ms + " ms");
            assertTrue(arpRequests.get() >= StackConfig.of("198.18.0.2/24").arpMaxRetries(),
                "ARP asked, and asked again, before giving up: " + arpRequests.get() + " requests in " + ms + " ms");
            assertTrue(framesDropped.get() >= 1 && linkFailures.get() >= 1,
                "the SYNs that waited were dropped (" + framesDropped.get() + ") and reported (" + linkFailures.get() + ")");
        }
        assertFalse(Netns.run(5, "ip", "netns", "list").output().contains(name), "no namespace left behind");
    }
}
