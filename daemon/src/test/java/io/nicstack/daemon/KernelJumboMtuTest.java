package io.nicstack.daemon;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import io.nicstack.nic.linux.NetNamespace;
import io.nicstack.stack.stats.StackCounter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The daemon with {@code --mtu 9000} against the Linux stack over a tap in a namespace this test creates: the kernel
 * side of the link, the tap device and the stack all take 9000, so datagrams up to 9000 bytes cross unfragmented both
 * ways and TCP uses jumbo frames. Addresses from 198.18.0.0/15 only; the work directory is deleted at the end.
 */
@Tag("kernel")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class KernelJumboMtuTest
{
    private static final String DAEMON_IP = "198.18.0.2";
    private static final String TAP = "nstap0";
    private static final String PYTHON = "/usr/bin/python3";
    /** Ethernet header plus the standard 1500-byte MTU: no frame is longer on a link that stayed at 1500. */
    private static final long STANDARD_MAX_FRAME = 1514;

    private Netns ns;
    private Path work;
    private DaemonProcess daemon;

    @BeforeAll
    void start() throws Exception
    {
        ns = new Netns();
        work = Netns.workDir("nicstack-jumbo");
        KernelTcpTest.copyResource(work, "udp_echo.py");
        KernelTcpTest.copyResource(work, "tcp_peer.py");
        daemon = new DaemonProcess(ns, work.resolve("shm"), "--device", "tap:" + TAP, "--ip", DAEMON_IP + "/24",
            "--host-ip", "198.18.0.1/24", "--mtu", "9000", "--services", "echo");
        daemon.awaitReady();
    }

    @AfterAll
    void stop() throws Exception
    {
        DaemonProcess.stopAndCleanUp(daemon, ns, work);
    }

    @Test
    void theKernelSideOfTheLinkHasTheMtu() throws IOException
    {
        final Netns.Result r = ns.exec(5, "ip", "link", "show", "dev", TAP).assertOk("ip link show");
        assertTrue(r.output().contains(" mtu 9000 "), r.output());
    }

    /** 3000 and 8972 bytes of ICMP data: one frame each way, nothing fragmented, nothing dropped by the device. */
    @Test
    void pingsUpToTheMtuCrossUnfragmented() throws IOException
    {
        final Map<StackCounter, Long> before = DaemonCounters.read(daemon.shm);
        for (final String size : new String[] { "3000", "8972" })
        {
            final Netns.Result r = ns.exec(20, "ping", "-n", "-M", "do", "-c", "3", "-i", "0.1", "-W", "2", "-s", size,
                DAEMON_IP).assertOk("ping -s " + size);
            assertTrue(r.output().contains("3 packets transmitted, 3 received"), r.output());
        }
        assertNothingFragmentedOrDropped(before, DaemonCounters.read(daemon.shm));
    }

    @Test
    void udpEchoesUpToTheMtuCrossUnfragmented() throws IOException
    {
        final Map<StackCounter, Long> before = DaemonCounters.read(daemon.shm);
        for (final String[] sizes : new String[][] { { "1470", "3010" }, { "8960", "8972" } })
        {
            final Netns.Result r = ns.exec(60, PYTHON, work.resolve("udp_echo.py").toString(), DAEMON_IP, sizes[0],
                sizes[1]).assertOk("udp echo " + sizes[0] + ".." + sizes[1]);
            assertTrue(r.output().contains("datagrams exactly"), r.output());
        }
        assertNothingFragmentedOrDropped(before, DaemonCounters.read(daemon.shm));
    }

    /** A TCP echo: frames longer than a 1500-byte MTU allows come in and go out (the MSS follows the MTU). */
    @Test
    void tcpUsesJumboFramesBothWays() throws IOException
    {
        final Map<StackCounter, Long> before = DaemonCounters.read(daemon.shm);
        final Netns.Result r = ns.exec(60, PYTHON, work.resolve("tcp_peer.py").toString(), "echo", DAEMON_IP, "4000000")
            .assertOk("tcp echo");
        assertTrue(r.output().contains("exact=True"), r.output());
        final Map<StackCounter, Long> after = DaemonCounters.read(daemon.shm);
        final long framesIn = delta(before, after, StackCounter.FRAMES_IN);
        final long bytesIn = delta(before, after, StackCounter.BYTES_IN);
        final long framesOut = delta(before, after, StackCounter.FRAMES_OUT);
        final long bytesOut = delta(before, after, StackCounter.BYTES_OUT);
        assertTrue(bytesIn > framesIn * STANDARD_MAX_FRAME,
            "frames in average above 1514 bytes: " + bytesIn + " bytes in " + framesIn + " frames");
        assertTrue(bytesOut > framesOut * STANDARD_MAX_FRAME,
            "frames out average above 1514 bytes: " + bytesOut + " bytes in " + framesOut + " frames");
        assertEquals(0, delta(before, after, StackCounter.DEVICE_DROPS), "device drops");
    }

    /**
     * {@code --mtu} stops at 9000, which every tap takes, so the link opener is given an MTU no tap can have: a usage
     * error (exit 2), and the tap made for the attempt is gone.
     */
    @Test
    void anMtuTheTapRefusesIsAUsageError() throws Exception
    {
        final FutureTask<DaemonCommand.Link> open = new FutureTask<>(() ->
        {
            NetNamespace.enter(ns.name);
            try
            {
                return DaemonCommand.openTap("nstap1", true, 65_536, null);
            }
            finally
            {
                NetNamespace.restore();
            }
        });
        new Thread(open, "open-in-" + ns.name).start();
        final ExecutionException e = assertThrows(ExecutionException.class, () -> open.get(10, TimeUnit.SECONDS));
        final UsageException usage = assertInstanceOf(UsageException.class, e.getCause());
        assertEquals("daemon: --mtu 65536: tap nstap1 refuses MTU 65536 (a tap takes 68..65535)", usage.getMessage());
        assertTrue(ns.exec(5, "ip", "link", "show", "dev", "nstap1").exitCode() != 0, "the tap is gone");
    }

    private static void assertNothingFragmentedOrDropped(
        final Map<StackCounter, Long> before, final Map<StackCounter, Long> after)
    {
        assertEquals(0, delta(before, after, StackCounter.IPV4_FRAGMENTS_QUEUED), "fragments in");
        assertEquals(0, delta(before, after, StackCounter.IPV4_OUT_FRAGMENTS), "fragments out");
        assertEquals(0, delta(before, after, StackCounter.DEVICE_DROPS), "device drops");
    }

    private static long delta(final Map<StackCounter, Long> before, final Map<StackCounter, Long> after,
        final StackCounter counter)
    {
        return after.get(counter) - before.get(counter);
    }
}
