package io.nicstack.examples;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The race a file server must lose safely, made deterministic: {@code /d/f.txt} ("public") under {@link #root} is
 * looked up, then its directory {@code d} is swapped for a symbolic link to a directory out of the root whose
 * {@code f.txt} is "SECRET". The lookup checked the real path; whatever opens {@link #lookup}'s file now goes through
 * the link.
 */
final class SwappedDirectory
{
    final Path root;
    final StaticFiles files;
    /** {@code /d/f.txt}, looked up before the swap. */
    final StaticFiles.Lookup lookup;
    private final Path dir;

    /** The root, the directory out of it and the swap, all in {@code dir}. */
    SwappedDirectory(final Path dir) throws IOException
    {
        this.dir = dir;
        root = Files.createDirectory(dir.resolve("root"));
        final Path outside = Files.createDirectory(dir.resolve("outside"));
        Files.writeString(outside.resolve("f.txt"), "SECRET");
        Files.createDirectory(root.resolve("d"));
        Files.writeString(root.resolve("d").resolve("f.txt"), "public");
        files = new StaticFiles(root);
        lookup = files.lookup("/d/f.txt");
        Files.move(root.resolve("d"), dir.resolve("d-old"));
        Files.createSymbolicLink(root.resolve("d"), outside);
    }

    /** The link taken away and {@code d} put back: the path names the file looked up again. */
    void putBack() throws IOException
    {
        Files.delete(root.resolve("d"));
        Files.move(dir.resolve("d-old"), root.resolve("d"));
    }
}
