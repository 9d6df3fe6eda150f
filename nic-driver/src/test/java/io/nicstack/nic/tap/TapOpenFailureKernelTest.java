package io.nicstack.nic.tap;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link TapDevice#open} that fails after it opened the tap closes it, whatever failed: an Error as well as an
 * exception. Before, only a RuntimeException closed it: an OutOfMemoryError from the device's direct buffers (a JVM
 * short of direct memory) left the tap's descriptor open, and the tap it had created in place, for the process's life.
 * The open runs in a child JVM whose direct memory is too small for the buffers; it reports the descriptors left.
 */
@Tag("kernel")
class TapOpenFailureKernelTest
{
    @Test
    void anOutOfMemoryErrorInOpenClosesTheTap() throws Exception
    {
        final String ns = KernelSupport.addNamespace();
        try
        {
            final KernelSupport.Bounded child = KernelSupport.bounded(60, "ip", "netns", "exec", ns,
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx64m",
                "-XX:MaxDirectMemorySize=32k", // the receive buffer alone is 64 KiB
                "-cp", System.getProperty("java.class.path"), TapOpenOutOfMemoryMain.class.getName(), "nsttap0");
            assertEquals(0, child.exitCode(), child.output());
            assertTrue(child.output().contains("out of memory: "), child.output());
            assertTrue(child.output().contains("tun descriptors 0"), child.output());
        }
        finally
        {
            KernelSupport.runQuietly("ip", "netns", "del", ns);
        }
    }
}
