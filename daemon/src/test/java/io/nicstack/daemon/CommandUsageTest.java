package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
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
     * A --shm that cannot be a path is a bad option: exit 2, one line naming it. Before, Path.of's InvalidPathException
     * escaped Main.run: a stack trace and exit 1. A NUL is in no file name; an unpaired surrogate has no bytes in any
     * encoding. (The daemon's --shm and --pcap: DaemonOptionsTest, which opens no device.)
     */
    @ParameterizedTest
    @CsvSource({"stats", "conns"})
    void aShmThatCannotBeAPathIsExit2NamingIt(final String command)
    {
        String[] r = run(command, "--shm", "/tmp/a\0b");
        assertEquals("2", r[0], r[2]);
        assertEquals("", r[1]);
        assertEquals(command + ": --shm must not contain a NUL character\n", r[2]);
        r = run(command, "--shm=/tmp/a\ud800");
        assertEquals("2", r[0], r[2]);
        assertTrue(r[2].startsWith(command + ": --shm /tmp/a?: the path cannot be represented in the current locale's encoding"),
            r[2]);
        assertEquals(1, r[2].lines().count(), r[2]);
    }

    /**
     * Under a POSIX locale (LANG unset) the JVM encodes file names as ASCII, so a non-ASCII --shm is no path at all: exit
     * 2, one line that says why and what to do. Before: "Exception in thread main java.nio.file.InvalidPathException",
     * exit 1. A child JVM: the locale is read at start-up. (The daemon's: DaemonPathLocaleKernelTest, in a namespace.)
     */
    @Test
    void aNonAsciiShmUnderAPosixLocaleIsExit2SayingWhy(@TempDir final Path dir) throws Exception
    {
        final ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx64m",
            "-cp", System.getProperty("java.class.path"),
            "io.nicstack.daemon.Main", "stats", "--shm", dir + "/nonexist\u00e9");
        pb.environment().keySet().removeIf(k -> k.equals("LANG") || k.startsWith("LC_"));
        pb.environment().put("LC_ALL", "POSIX");
        final Path errFile = dir.resolve("err");
        final Process p = pb.redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(errFile.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS))
        {
            p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            throw new AssertionError("stats did not exit: " + Files.readString(errFile, StandardCharsets.ISO_8859_1));
        }
        final String err = Files.readString(errFile, StandardCharsets.ISO_8859_1);
        assertEquals(2, p.exitValue(), err);
        assertEquals(1, err.strip().lines().count(), err);
        assertTrue(err.startsWith("stats: --shm " + dir + "/nonexist"), err);
        assertTrue(err.contains("cannot be represented in the current locale's encoding")
            && err.contains("run under a UTF-8 locale, e.g. LC_ALL=C.UTF-8"), err);
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
