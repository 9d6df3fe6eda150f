package io.nicstack.examples;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.*;

class MainTest
{
    private static String[] run(final int expectedStatus, final String... args)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
        final String o = out.toString(StandardCharsets.UTF_8);
        final String e = err.toString(StandardCharsets.UTF_8);
        assertEquals(expectedStatus, status, () -> "out: " + o + " err: " + e);
        return new String[] {o, e};
    }

    @Test
    void badOptionsExit2WithOneLine(@TempDir final Path dir)
    {
        for (final String[] args : new String[][] {
            {"app"}, {"app", "ftp", "--port", "1"}, {"app", "echo"}, {"app", "echo", "--port", "x"},
            {"app", "echo", "--port", "70000"}, {"app", "echo", "--port", "7", "--bogus", "1"},
            {"app", "http", "--port", "80"}, {"app", "http", "--port", "80", "--root", dir.resolve("nope").toString()},
            {"app", "bulk", "--port", "5001"}, {"app", "bulk", "--port", "5001", "--mode", "both"},
            {"app", "echo", "--port", "7", "--root", dir.toString()}, {"app", "echo", "--port"},
            {"app", "bulk", "--port", "1", "--mode", "source", "--rate", "10"},
            {"app", "echo", "--port", "7", "--copy"}})
        {
            final String[] r = run(2, args);
            assertTrue(r[1].startsWith("nicstack app: "), r[1]);
            assertEquals(1, r[1].strip().lines().count(), r[1]);
        }
    }

    /**
     * A number option takes ASCII digits alone, as the daemon's (ab2a918): Long.parseLong also took a plus sign and
     * digits of any script, so {@code --port +7} and Arabic-Indic digits passed.
     */
    @Test
    void aNumberOptionIsAsciiDigitsAlone(@TempDir final Path dir)
    {
        for (final String value : new String[] {"+7", "\u0667", "\uFF17", "-0", " 7", "7 "})
        {
            final String[] r = run(2, "app", "echo", "--shm", dir.toString(), "--port", value);
            assertEquals("nicstack app: --port needs a number, not '" + value + "'\n", r[1]);
        }
        final String[] r = run(2, "app", "echo", "--shm", dir.toString(), "--port", "7", "--max-connections", "+3");
        assertEquals("nicstack app: --max-connections needs a number, not '+3'\n", r[1]);
    }

    /** Sizes the app or a default daemon cannot use: exit 2 naming the option, before any attach (no daemon here). */
    @Test
    void layoutThatCannotWorkIsExit2NamingTheOption(@TempDir final Path dir) throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        for (final String[] args : new String[][] {
            {"app", "echo", "--shm", shm.toString(), "--port", "7", "--pipe-kb", "5"},
            {"app", "http", "--shm", shm.toString(), "--port", "80", "--root", dir.toString(), "--pipe-kb", "1024"},
            {"app", "echo", "--shm", shm.toString(), "--port", "7", "--max-connections", "65535", "--pipe-kb", "64"}})
        {
            final String[] r = run(2, args);
            assertTrue(r[1].startsWith("nicstack app: --pipe-kb"), r[1]);
            assertEquals(1, r[1].strip().lines().count(), r[1]);
        }
    }

    /**
     * Shared memory just over the daemon's limit reads as more than it: the need is rounded up. Before, --pipe-kb 8192
     * (64 connections) said "needs 1024 MiB of shared memory, more than the 1024 MiB a daemon allows an app".
     */
    @Test
    void aLayoutJustOverTheLimitSaysSo(@TempDir final Path dir)
    {
        final String[] r = run(2, "app", "echo", "--shm", dir.toString(), "--port", "7", "--pipe-kb", "8192");
        assertEquals("nicstack app: --pipe-kb 8192 with --max-connections 64 needs 1025 MiB of shared memory, more than"
            + " the 1024 MiB a daemon allows an app (use smaller pipes or fewer connections)\n", r[1]);
    }

    /** An unknown flag last on the line is called unknown; it was taken for a known option missing its value. */
    @Test
    void aTrailingUnknownFlagIsCalledUnknown(@TempDir final Path dir)
    {
        final String[] r = run(2, "app", "http", "--port", "80", "--root", dir.toString(), "--verbose");
        assertTrue(r[1].startsWith("nicstack app: unknown option '--verbose'"), r[1]);
        assertTrue(run(2, "app", "http", "--port", "80", "--root")[1].startsWith("nicstack app: --root needs a value"));
    }

    @Test
    void optionGivenTwiceIsExit2(@TempDir final Path dir)
    {
        final String[] r = run(2, "app", "echo", "--shm", dir.toString(), "--port", "7", "--port", "8");
        assertTrue(r[1].startsWith("nicstack app: option --port given twice"), r[1]);
    }

    /**
     * A directory no daemon serves is said to be one at once, and nothing is made in it. Before, the app made apps/
     * and its app file there and waited its whole attach timeout (5 s) for an answer that could not come.
     */
    /** A flag given twice is refused as a valued option given twice is; it was taken silently. */
    @Test
    void aFlagGivenTwiceIsExit2(@TempDir final Path dir)
    {
        assertEquals("nicstack app: option --digest given twice\n",
            run(2, "app", "bulk", "--shm", dir.toString(), "--port", "9", "--mode", "sink", "--digest", "--digest")[1]);
        assertEquals("nicstack app: option --copy given twice\n",
            run(2, "app", "http", "--shm", dir.toString(), "--port", "80", "--root", dir.toString(), "--copy", "--copy")[1]);
        assertEquals("nicstack app: option --copy given twice\n",
            run(2, "app", "nio-http", "--port", "80", "--root", dir.toString(), "--copy", "--copy")[1]);
    }

    @Test
    void noDaemonIsAClearError(@TempDir final Path dir) throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final String[] r = run(1, "app", "echo", "--shm", shm.toString(), "--port", "7");
        assertEquals("nicstack app: no nicstack daemon runs in " + shm + " (no daemon has used it: it has no daemon.lock)\n",
            r[1]);
        assertFalse(r[0].contains("ready"));
        try (var files = Files.list(shm))
        {
            assertEquals(0, files.count(), "nothing made in " + shm);
        }
    }

    /**
     * --bind takes an IPv4 address as digits only: no DNS lookup, and anything else is a bad option (exit 2, one line).
     * Before, 999.1.1.1 and host names went to the socket as they were: "cannot listen on ...:
     * java.nio.channels.UnresolvedAddressException", exit 1.
     */
    @Test
    void bindTakesALiteralIpv4AddressOnly(@TempDir final Path dir) throws Exception
    {
        for (final String bind : new String[] {"999.1.1.1", "not-a-host.invalid", "localhost", "1.2.3", "1.2.3.4.5",
            "01.2.3.4", "1.2.3.-4", "::1", " 1.2.3.4"})
        {
            final String[] r = run(2, "app", "nio-http", "--port", "8080", "--root", dir.toString(), "--bind", bind);
            assertEquals("nicstack app: --bind must be an IPv4 address A.B.C.D (digits, no host name), not '" + bind + "'\n",
                r[1]);
        }
        assertEquals(java.net.InetAddress.getByAddress(new byte[] {(byte)198, 18, 1, 2}),
            Main.parse(new String[] {"nio-http", "--port", "80", "--root", dir.toString(), "--bind", "198.18.1.2"}).bind());
        assertEquals(java.net.InetAddress.getByAddress(new byte[] {0, 0, 0, 0}),
            Main.parse(new String[] {"nio-http", "--port", "80", "--root", dir.toString()}).bind());
    }

    /** Echo and bulk close idle connections: 60 s unless --idle-timeout-s says otherwise (0: never); not for HTTP. */
    @Test
    void idleTimeoutIsAnOptionOfEchoAndBulk(@TempDir final Path dir) throws Exception
    {
        assertEquals(IdleTimeout.DEFAULT_NANOS, Main.parse(new String[] {"echo", "--port", "7"}).idleTimeoutNanos());
        assertEquals(60_000_000_000L, IdleTimeout.DEFAULT_NANOS, "as the HTTP apps' idle timeout");
        assertEquals(5_000_000_000L,
            Main.parse(new String[] {"echo", "--port", "7", "--idle-timeout-s", "5"}).idleTimeoutNanos());
        assertEquals(0, Main.parse(new String[] {"bulk", "--port", "7", "--mode", "sink", "--idle-timeout-s=0"})
            .idleTimeoutNanos());
        for (final String[] args : new String[][] {
            {"app", "echo", "--port", "7", "--idle-timeout-s", "-1"},
            {"app", "echo", "--port", "7", "--idle-timeout-s", "1m"},
            {"app", "echo", "--port", "7", "--idle-timeout-s", "1", "--idle-timeout-s", "2"},
            {"app", "http", "--port", "80", "--root", dir.toString(), "--idle-timeout-s", "5"},
            {"app", "nio-http", "--port", "80", "--root", dir.toString(), "--idle-timeout-s", "5"}})
        {
            final String[] r = run(2, args);
            assertTrue(r[1].startsWith("nicstack app: ") && r[1].contains("--idle-timeout-s"), r[1]);
            assertEquals(1, r[1].strip().lines().count(), r[1]);
        }
    }

    @Test
    void copyIsAnOptionOfBothHttpServers(@TempDir final Path dir) throws Exception
    {
        assertTrue(Main.parse(new String[] {"http", "--port", "80", "--root", dir.toString(), "--copy"}).copy());
        assertFalse(Main.parse(new String[] {"http", "--port", "80", "--root", dir.toString()}).copy());
        assertTrue(Main.parse(new String[] {"nio-http", "--port", "80", "--root", dir.toString(), "--copy"}).copy());
    }

    /**
     * A value that cannot be a path is a bad option: exit 2, one line naming the option. Before, Path.of's
     * InvalidPathException escaped run: a stack trace and exit 1 (a NUL is refused under any locale; a non-ASCII name
     * under a POSIX one, see {@link #aNonAsciiPathUnderAPosixLocaleIsExit2SayingWhy}).
     */
    @Test
    void aValueThatCannotBeAPathIsExit2NamingTheOption(@TempDir final Path dir)
    {
        assertEquals("nicstack app: --shm must not contain a NUL character\n",
            run(2, "app", "echo", "--shm", dir + "/a\0b", "--port", "7")[1]);
        assertEquals("nicstack app: --root must not contain a NUL character\n",
            run(2, "app", "http", "--shm", dir.toString(), "--port", "80", "--root", dir + "/a\0b")[1]);
        assertEquals("nicstack app: --root must not contain a NUL character\n",
            run(2, "app", "nio-http", "--port", "80", "--root=" + dir + "/a\0b")[1]);
    }

    /**
     * Under a POSIX locale (LANG unset) the JVM encodes file names as ASCII, so a non-ASCII --shm is no path at all: exit
     * 2, one line that says why. Before: "Exception in thread main java.nio.file.InvalidPathException", exit 1, after
     * the shutdown hook had waited 10 s for a cleanup that never came. A child JVM: the locale is read at start-up.
     */
    @Test
    void aNonAsciiPathUnderAPosixLocaleIsExit2SayingWhy(@TempDir final Path dir) throws Exception
    {
        final ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx64m",
            "-cp", System.getProperty("java.class.path"),
            "io.nicstack.examples.Main", "app", "echo", "--shm", dir + "/nonexist\u00e9", "--port", "8091");
        pb.environment().keySet().removeIf(k -> k.equals("LANG") || k.startsWith("LC_"));
        pb.environment().put("LC_ALL", "POSIX");
        final Path errFile = dir.resolve("err");
        final Process p = pb.redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(errFile.toFile()).start();
        if (!p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS))
        {
            p.destroyForcibly().waitFor(5, java.util.concurrent.TimeUnit.SECONDS);
            fail("the app did not exit: " + Files.readString(errFile, StandardCharsets.ISO_8859_1));
        }
        final String err = Files.readString(errFile, StandardCharsets.ISO_8859_1);
        assertEquals(2, p.exitValue(), err);
        assertEquals(1, err.strip().lines().count(), err);
        assertTrue(err.startsWith("nicstack app: --shm " + dir + "/nonexist"), err);
        assertTrue(err.contains("cannot be represented in the current locale's encoding"), err);
    }

    /**
     * An exception escaping the app still releases the shutdown hook, which then ends the JVM with status 1. Before,
     * main counted the latch down only after run returned: the hook (started by the uncaught exception's exit) waited
     * its whole 10 s for it.
     */
    @Test
    void anExceptionEscapingTheAppReleasesTheShutdownHook()
    {
        final CountDownLatch cleanedUp = new CountDownLatch(1);
        final IllegalStateException thrown = new IllegalStateException("escaped");
        assertSame(thrown, assertThrows(IllegalStateException.class, () -> Main.runThenRelease(() ->
        {
            throw thrown;
        }, cleanedUp)));
        assertEquals(0, cleanedUp.getCount(), "the hook would still be waiting");
        assertEquals(1, Main.exitStatus(), "the status the hook halts with");
        final CountDownLatch again = new CountDownLatch(1);
        assertEquals(2, Main.runThenRelease(() -> 2, again));
        assertEquals(0, again.getCount());
        assertEquals(2, Main.exitStatus());
    }

    @Test
    void help()
    {
        assertTrue(run(0, "app", "--help")[0].startsWith("usage: nicstack app"));
    }
}
