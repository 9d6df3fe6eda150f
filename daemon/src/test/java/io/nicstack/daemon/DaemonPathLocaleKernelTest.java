package io.nicstack.daemon;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The daemon's path options under a POSIX locale, where the JVM encodes file names as ASCII and a non-ASCII name is no
 * path at all: exit 2 with one line, as for any bad option, and nothing made. A child JVM (the locale is read at
 * start-up) in a network namespace this test creates, so that a daemon that did start would put its tap there (IPv6
 * off, 198.18.0.0/15 only), never on the host.
 */
@Tag("kernel")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DaemonPathLocaleKernelTest
{
    /**
     * Before: "Exception in thread main java.nio.file.InvalidPathException: Malformed input or input contains
     * unmappable characters", exit 1.
     */
    @Test
    void aNonAsciiShmOrPcapUnderAPosixLocaleIsExit2AndMakesNothing() throws Exception
    {
        final Path work = Netns.workDir("nicstack-path-locale");
        try (Netns ns = new Netns())
        {
            for (final String option : new String[] {"--shm", "--pcap"})
            {
                final String value = work + "/caf\u00e9";
                final List<String> paths = option.equals("--shm") ? List.of("--shm", value)
                    : List.of("--shm", work + "/shm", "--pcap", value);
                final Netns.Result r = ns.exec(60, Stream.concat(Stream.of("env", "-i", "LC_ALL=POSIX",
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx64m",
                    "-cp", System.getProperty("java.class.path"), "io.nicstack.daemon.Main", "daemon",
                    "--device", "tap:nspath0", "--ip", "198.18.0.2/24"), paths.stream()).toArray(String[]::new));
                assertEquals(2, r.exitCode(), r.output());
                assertEquals(1, r.output().strip().lines().count(), r.output());
                assertTrue(r.output().startsWith("daemon: " + option + " " + work + "/caf")
                    && r.output().contains("the path cannot be represented in the current locale's encoding")
                    && r.output().contains("run under a UTF-8 locale, e.g. LC_ALL=C.UTF-8"), r.output());
                assertNotEquals(0, ns.exec(10, "ip", "link", "show", "dev", "nspath0").exitCode(), "no tap was made");
                try (Stream<Path> made = Files.list(work))
                {
                    assertEquals(List.of(), made.toList(), "no shm directory or capture was made");
                }
            }
        }
        finally
        {
            Netns.deleteTree(work);
        }
    }
}
