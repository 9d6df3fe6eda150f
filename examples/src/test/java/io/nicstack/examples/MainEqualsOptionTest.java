package io.nicstack.examples;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.*;

/** {@code --name=value} on the app's command line, as the daemon's commands take it ({@code daemon.Options}). */
class MainEqualsOptionTest
{
    @Test
    void aValueMayFollowItsNameAfterAnEqualsSign(@TempDir final Path dir) throws Exception
    {
        final Main.Options o = Main.parse(new String[] {"app", "bulk", "--port=7", "--shm=" + dir, "--mode=sink",
            "--rate=1000", "--backlog", "9"});
        assertEquals(7, o.port());
        assertEquals(dir, o.shm());
        assertEquals("sink", o.mode());
        assertEquals(1000, o.rate());
        assertEquals(9, o.backlog());
        final Path root = java.nio.file.Files.createDirectory(dir.resolve("a=b"));
        assertEquals(root, Main.parse(new String[] {"nio-http", "--port=80", "--root=" + root}).root(),
            "split at the first '=' only");
    }

    @Test
    void theEqualsFormIsCheckedAsTheSpacedOne(@TempDir final Path dir)
    {
        final String[][] bad = {
            {"echo", "--port="}, // empty: not "needs a value" taken from the next word
            {"echo", "--port=x"}, {"echo", "--port=7", "--port=8"}, {"echo", "--port=7", "--port", "8"},
            {"echo", "--port=7", "--bogus=1"}, {"http", "--port=80", "--root=" + dir, "--copy=yes"},
            {"bulk", "--port=1", "--mode=sink", "--digest=no"}};
        for (final String[] args : bad)
        {
            assertThrows(Main.UsageException.class, () -> Main.parse(args), String.join(" ", args));
        }
        final Main.UsageException e = assertThrows(Main.UsageException.class,
            () -> Main.parse(new String[] {"echo", "--port=7", "--port", "8"}));
        assertEquals("option --port given twice", e.getMessage());
    }
}
