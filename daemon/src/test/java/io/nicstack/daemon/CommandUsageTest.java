package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code --help} of the Java subcommands: their usage on stdout, exit 0, as {@code nicstack app --help} answers. */
class CommandUsageTest
{
    private static String[] run(final String... args)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    /**
     * Anywhere among the options, before any value is checked (a daemon's --help opens no device). Before, daemon and
     * stats answered "unknown option '--help'" with exit 2.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "daemon --help",
        "daemon -h",
        "daemon --device tap:x --help",
        "stats --help",
        "stats --shm /nonexistent -h",
        "conns --help",
        "conns --shm /nonexistent --help",
    })
    void helpPrintsTheCommandsUsageAndExitsZero(final String command)
    {
        final String[] args = command.split(" ");
        final String[] r = run(args);
        assertEquals("0", r[0], r[2]);
        assertEquals("", r[2]);
        assertTrue(r[1].startsWith("usage: nicstack " + args[0] + " "), r[1]);
        assertTrue(r[1].contains("--shm DIR"), r[1]);
    }

    /** An unknown option points at the command's own usage. */
    @ParameterizedTest
    @CsvSource({"daemon", "stats", "conns"})
    void anUnknownOptionPointsAtTheCommandsHelp(final String command)
    {
        final String[] r = run(command, "--verbose");
        assertEquals("2", r[0]);
        assertEquals(command + ": unknown option '--verbose' (try nicstack " + command + " --help)\n", r[2]);
    }

    /**
     * No command is an error: the usage goes to stderr, exit 2, from the launcher as from Main. Before, both printed it
     * on stdout (where --help prints it, exit 0).
     */
    @Test
    void noCommandPrintsTheUsageOnStderrAndExits2() throws Exception
    {
        final String[] r = run();
        assertEquals("2", r[0]);
        assertEquals("", r[1]);
        assertTrue(r[2].startsWith("usage: nicstack "), r[2]);

        // The launcher at the top of the repository (this module's parent); no command: it builds nothing.
        final Path script = Path.of(System.getProperty("basedir", "."), "..", "nicstack").toAbsolutePath().normalize();
        final Process p = new ProcessBuilder("bash", script.toString()).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(2, p.exitValue(), err);
        assertEquals("", out);
        assertTrue(err.startsWith("usage: nicstack <command>"), err);
        final Process help = new ProcessBuilder("bash", script.toString(), "--help").start();
        assertTrue(new String(help.getInputStream().readAllBytes(), StandardCharsets.UTF_8).startsWith("usage: nicstack"));
        assertTrue(help.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, help.exitValue());
    }
}
