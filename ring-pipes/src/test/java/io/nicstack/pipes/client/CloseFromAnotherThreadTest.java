package io.nicstack.pipes.client;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A close from another thread while a thread is blocked in a call of the client, the socket idiom to wake a blocked
 * reader: the blocked call must end with an IOException saying what was closed, and nothing may be unmapped under it.
 * Each mode runs many trials in a child JVM ({@link CloseFromAnotherThreadMain}), so that a read of unmapped memory,
 * which kills the JVM with SIGSEGV, fails the test instead of the test run.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CloseFromAnotherThreadTest
{
    private static final int TRIALS = 150;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"read", "read-busy", "write", "accept", "await-readable", "connection-close", "abort",
        "listener-close"})
    void aCloseFromAnotherThreadEndsTheBlockedCallWithAnIOException(final String mode) throws Exception
    {
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        final Path output = dir.resolve("child.out");
        final Path trials = Files.createDirectory(dir.resolve("trials"));
        final Process child = new ProcessBuilder(List.of(java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"), "-cp", classpath,
            CloseFromAnotherThreadMain.class.getName(), trials.toString(), mode, Integer.toString(TRIALS)))
            .redirectErrorStream(true).redirectOutput(output.toFile()).start();
        // Output to a file, not a pipe: a bounded wait, then a kill, fails in time if the child hangs.
        if (!child.waitFor(100, TimeUnit.SECONDS))
        {
            child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            fail("the child JVM did not exit within 100 s (killed):\n" + Files.readString(output, StandardCharsets.UTF_8));
        }
        final String out = Files.readString(output, StandardCharsets.UTF_8);
        assertEquals(0, child.exitValue(), "mode " + mode + " (134: the JVM died of SIGSEGV, 2: a call stayed blocked, "
            + "1: a call ended otherwise):\n" + out);
    }
}
