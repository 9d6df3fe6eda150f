package io.nicstack.daemon;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * A signal during the daemon's start ends it as one after it (README: exit 0, the tap removed). The daemon runs in a
 * network namespace this test creates (198.18.0.0/15 only, IPv6 off) on a tap it creates there.
 */
@Tag("kernel")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DaemonSignalKernelTest
{
    /**
     * With a {@code --pcap} named pipe nobody reads, the daemon opens its tap, then waits in open(2) for the pipe's
     * reader, and says so. SIGTERM then: exit 0, the tap gone. Before, it said nothing, and SIGTERM found no shutdown
     * hook (it was added once the devices were made): exit 143, and the tap it had created stayed.
     */
    @Test
    void sigtermWhileThePcapPipeHasNoReaderExits0AndRemovesTheTap() throws Exception
    {
        final Path work = Netns.workDir("nicstack-signal");
        try (Netns ns = new Netns())
        {
            final Path fifo = work.resolve("live.pcap");
            Netns.run(10, "mkfifo", fifo.toString()).assertOk("mkfifo");
            try (DaemonProcess daemon = new DaemonProcess(ns, work.resolve("shm"),
                "--device", "tap:nsfifo0", "--ip", "198.18.0.2/24", "--pcap", fifo.toString()))
            {
                daemon.awaitLine("waiting for a reader of the named pipe " + fifo);
                ns.exec(10, "ip", "link", "show", "dev", "nsfifo0").assertOk("the tap exists while the daemon waits");
                assertEquals(0, daemon.stop(), String.join("\n", daemon.output));
                assertFalse(daemon.output.stream().anyMatch(line -> line.startsWith("nicstack ready")),
                    String.join("\n", daemon.output));
            }
            assertNotEquals(0, ns.exec(10, "ip", "link", "show", "dev", "nsfifo0").exitCode(), "the tap was removed");
        }
        finally
        {
            Netns.deleteTree(work);
        }
    }
}
