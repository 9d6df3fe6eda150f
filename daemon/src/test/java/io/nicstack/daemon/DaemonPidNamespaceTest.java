package io.nicstack.daemon;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@code stats} and {@code conns} outside the daemon's pid namespace, as for a daemon in a container with its own
 * {@code /proc}: its pid there (1) names another process here, and /proc cannot tell whether it runs. They must
 * still tell a running daemon from a dead one. The daemon runs under {@code unshare --pid --mount-proc} inside a
 * network namespace this test creates (198.18.0.0/15 only, IPv6 off), and is killed with SIGKILL halfway. Its
 * {@code --pcap} capture must have records before that: it is flushed while the daemon runs.
 */
@Tag("kernel")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DaemonPidNamespaceTest
{
    private static String[] run(final String command, final Path shm)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(new String[] {command, "--shm", shm.toString()}, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void statsAndConnsTellARunningDaemonFromADeadOneAcrossPidNamespaces() throws Exception
    {
        final Path work = Netns.workDir("nicstack-pidns");
        try (Netns ns = new Netns();
             DaemonProcess daemon = new DaemonProcess(ns, work.resolve("shm"),
                 new String[] {"unshare", "--pid", "--mount-proc", "--kill-child=KILL"},
                 "--device", "tap:nspid0", "--ip", "198.18.0.2/24", "--host-ip", "198.18.0.1/24",
                 "--pcap", work.resolve("run.pcap").toString()))
        {
            daemon.awaitReady();
            final String[] stats = run("stats", daemon.shm);
            assertEquals("0", stats[0], stats[2]);
            assertTrue(stats[1].startsWith("nicstack counters ") && stats[1].contains("(daemon pid 1)"),
                "a running daemon, pid 1 in its namespace:\n" + stats[1]);
            // The first table comes with the first publication after start (twice a second): until then conns says
            // "no snapshot published yet", which a loaded machine showed here.
            String[] conns = run("conns", daemon.shm);
            final long publishedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (conns[1].startsWith("no snapshot published yet") && System.nanoTime() < publishedBy)
            {
                Thread.sleep(50);
                conns = run("conns", daemon.shm);
            }
            assertEquals("0", conns[0], conns[2]);
            assertTrue(conns[1].contains("connections"), conns[1]);

            // The capture is flushed twice a second with the connection table, not only at exit: the frames the daemon
            // sent at start (an ARP request) reach the file while it runs.
            final Path pcap = work.resolve("run.pcap");
            final long flushBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (java.nio.file.Files.size(pcap) <= 24 && System.nanoTime() < flushBy)
            {
                Thread.sleep(50);
            }
            assertTrue(java.nio.file.Files.size(pcap) > 24, "records in the capture of a running daemon: "
                + java.nio.file.Files.size(pcap) + " bytes");

            daemon.process.destroyForcibly(); // unshare, and with it (--kill-child) the daemon: no clean stop
            assertTrue(daemon.process.waitFor(10, TimeUnit.SECONDS));
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            String[] after = run("conns", daemon.shm);
            while (!"1".equals(after[0]) && System.nanoTime() < deadline)
            {
                Thread.sleep(50); // the kernel releases a killed process's locks as it exits
                after = run("conns", daemon.shm);
            }
            assertEquals("1", after[0], after[1]);
            assertTrue(after[2].contains("is not running"), after[2]);
            final String[] statsAfter = run("stats", daemon.shm);
            assertTrue(statsAfter[1].contains("(daemon pid 1, not running)"), statsAfter[1]);
        }
        finally
        {
            Netns.deleteTree(work);
        }
    }
}
