package io.nicstack.daemon;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.stack.tcp.TcpConnection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How the daemon ends: what its TCP peers learn, and its exit status ({@link DaemonStopMain} runs it). */
class DaemonStopTest
{
    @TempDir
    Path dir;

    private final StringBuilder output = new StringBuilder();

    private int run(final String mode) throws Exception
    {
        final Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m",
            "-cp", System.getProperty("java.class.path"), DaemonStopMain.class.getName(), mode, dir.resolve("shm").toString())
            .redirectErrorStream(true).start();
        if (!p.waitFor(60, TimeUnit.SECONDS))
        {
            p.destroyForcibly();
            throw new AssertionError("the daemon did not end: " + new String(p.getInputStream().readNBytes(4096), StandardCharsets.UTF_8));
        }
        output.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        return p.exitValue();
    }

    /**
     * A daemon stopped by SIGINT or SIGTERM resets its connections: a peer learns at once that nobody serves it any
     * more. Before, it kept them ESTABLISHED: an idle peer waited for ever, a sending one until R2.
     */
    @Test
    void aStoppedDaemonResetsItsPeers() throws Exception
    {
        assertEquals(0, run("peer"), output.toString());
        assertTrue(output.toString().contains("peer echoed 5"), output.toString());
        assertTrue(output.toString().contains("peer state CLOSED reason " + TcpConnection.CLOSE_RESET), output.toString());
    }

    /**
     * SIGTERM while the daemon waits for the reader of its {@code --pcap} named pipe (open(2) for writing waits for
     * one, fifo(7)) ends it as always: the link removed, exit 0. It said before that it waits. Before, it said nothing,
     * and the signal found no shutdown hook yet (it was added once the devices were made): exit 143, and the tap stayed.
     */
    @Test
    void sigtermWhileTheCaptureWaitsForItsReaderExits0AndRemovesTheLink() throws Exception
    {
        assertEquals(0, new ProcessBuilder("mkfifo", dir.resolve("live.pcap").toString()).start().waitFor());
        final Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m",
            "-cp", System.getProperty("java.class.path"), DaemonStopMain.class.getName(), "fifo", dir.resolve("shm").toString())
            .redirectErrorStream(true).start();
        try
        {
            final java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
            final Thread reader = new Thread(() ->
            {
                try (java.io.BufferedReader r = p.inputReader(StandardCharsets.UTF_8))
                {
                    for (String line; (line = r.readLine()) != null; )
                    {
                        lines.add(line);
                    }
                }
                catch (final java.io.IOException ignored)
                {
                    // The process is gone.
                }
                lines.add("(end)");
            }, "daemon-output");
            reader.setDaemon(true);
            reader.start();
            for (String line = ""; !line.contains("waiting for a reader"); )
            {
                line = lines.poll(30, TimeUnit.SECONDS);
                output.append(line).append('\n');
                assertTrue(line != null && !line.equals("(end)"), "no line saying the capture waits:\n" + output);
            }
            p.toHandle().destroy(); // SIGTERM (Process.destroy would also close the output this test still reads)
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the daemon did not end on SIGTERM:\n" + output);
            reader.join(10_000);
            lines.forEach(line -> output.append(line).append('\n'));
            assertEquals(0, p.exitValue(), output.toString());
            assertTrue(output.toString().contains("link removed"), output.toString());
            assertTrue(!output.toString().contains("nicstack ready"), output.toString());
        }
        finally
        {
            p.destroyForcibly();
        }
    }

    /** An Error on the event loop (a stack overflow, out of memory) is a crash: status 70, as for a RuntimeException. */
    @Test
    void anErrorOnTheEventLoopExits70() throws Exception
    {
        assertEquals(70, run("error"), output.toString());
        assertTrue(output.toString().contains("daemon: internal error"), output.toString());
    }

    @Test
    void aRuntimeExceptionOnTheEventLoopExits70() throws Exception
    {
        assertEquals(70, run("runtime"), output.toString());
    }

    /**
     * The frames the fault injector drops on purpose are counted in the counters file, as {@code stats} shows them (here
     * after the daemon stopped: what it wrote last). Before, FaultStats and the capture's frames not captured were kept
     * on the device decorators only: with --faults loss=1 no counter of stats showed a frame at all.
     */
    @Test
    void faultsInjectedAndTheCaptureAreCountedInStats() throws Exception
    {
        assertEquals(0, run("faults"), output.toString());
        assertTrue(output.toString().contains("daemon received " + DaemonStopMain.FAULTS_FRAMES + " frames"), output.toString());
        final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        final java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        assertEquals(0, Main.run(new String[] {"stats", "--shm", dir.resolve("shm").toString(), "--all"},
            new java.io.PrintStream(out, true), new java.io.PrintStream(err, true)), err.toString(StandardCharsets.UTF_8));
        final String stats = out.toString(StandardCharsets.UTF_8);
        assertTrue(stats.contains(String.format("%14d  %s%n", DaemonStopMain.FAULTS_FRAMES, "faults in: frames lost (loss)")), stats);
        assertTrue(stats.contains(String.format("%14d  %s%n", 0, "faults in: frames duplicated (dup)")), stats);
        assertTrue(stats.contains("  faults out: frames lost (loss)\n"), stats);
        assertTrue(stats.contains(String.format("%14d  %s%n", 0, "pcap: frames not captured")), stats);
        assertTrue(stats.contains(String.format("%14d  %s%n", 0, "frames in")) || !stats.contains("  frames in\n"),
            "every frame was lost before the stack: " + stats);
    }
}
