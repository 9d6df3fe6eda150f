package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link StaticFiles#key}: what a cache of lookups is keyed by. */
class StaticFilesTest
{
    @TempDir
    Path dir;

    @Test
    void aliasesShareAKeyAndPathsAnsweredDifferentlyDoNot()
    {
        for (final String alias : new String[] {"//x", "/./x", "/a/../x", "///./a/b/../../x", "/x/../x"})
        {
            assertEquals("/x", StaticFiles.key(alias), alias);
        }
        // The lookup tells these apart by how they end: a directory's index (or 404), a redirect, or no file.
        assertEquals("/sub/", StaticFiles.key("/sub/"));
        assertEquals("/sub/", StaticFiles.key("/sub/./"));
        assertEquals("/sub", StaticFiles.key("/sub"));
        assertEquals("/sub/.", StaticFiles.key("/sub/."));
        assertEquals("/", StaticFiles.key("/"));
        for (final String canonical : new String[] {"/", "/x", "/sub/", "/a/b.c", "/a/.b/...", "/a/..b"})
        {
            assertSame(canonical, StaticFiles.key(canonical), "a canonical path is its own key, nothing built");
        }
        assertEquals("", StaticFiles.key("/sub/.."));
        for (final String refused : new String[] {"/..", "/a/../..", "x", "", "/a\0b"})
        {
            assertNull(StaticFiles.key(refused), refused);
        }
    }

    /**
     * Paths that get one key get one answer: random paths over a small tree (files, a directory with and without its
     * index, a link out of the root), fixed seeds.
     */
    @Test
    void pathsWithOneKeyGetOneLookup() throws Exception
    {
        final Path root = Files.createDirectory(dir.resolve("root"));
        Files.writeString(root.resolve("a.txt"), "a");
        Files.createDirectories(root.resolve("sub").resolve("deeper"));
        Files.writeString(root.resolve("sub").resolve("index.html"), "<p>");
        Files.writeString(root.resolve("sub").resolve("b.txt"), "b");
        Files.createDirectory(dir.resolve("outside"));
        Files.writeString(dir.resolve("outside").resolve("s.txt"), "s");
        Files.createSymbolicLink(root.resolve("out"), dir.resolve("outside"));
        final StaticFiles files = new StaticFiles(root);
        final String[] parts = {"", ".", "..", "a.txt", "sub", "b.txt", "deeper", "index.html", "out", "s.txt", "none"};
        for (long seed = 1; seed <= 5; seed++)
        {
            final Random rnd = new Random(seed);
            final Map<String, StaticFiles.Lookup> byKey = new HashMap<>();
            final Map<String, String> firstPath = new HashMap<>();
            for (int i = 0; i < 2_000; i++)
            {
                final StringBuilder p = new StringBuilder();
                for (int n = 1 + rnd.nextInt(5); n > 0; n--)
                {
                    p.append('/').append(parts[rnd.nextInt(parts.length)]);
                }
                final String path = p.toString();
                final String key = StaticFiles.key(path);
                final StaticFiles.Lookup lookup = files.lookup(path);
                if (key == null)
                {
                    assertNotEquals(200, lookup.status(), path);
                    assertNotEquals(301, lookup.status(), path);
                    continue;
                }
                final StaticFiles.Lookup before = byKey.putIfAbsent(key, lookup);
                firstPath.putIfAbsent(key, path);
                if (before != null)
                {
                    assertEquals(before, lookup, "seed " + seed + ": " + path + " and " + firstPath.get(key) + " (key " +
                        key + ")");
                }
            }
        }
    }
}
