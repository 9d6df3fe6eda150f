package io.nicstack.examples;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Response bodies are opened so that a path swapped for a FIFO between the server's stat and its open cannot block
 * the server (HttpApp's and NioHttpApp's one thread serves every connection): refused at once, for copying and for
 * SEND_FILE alike. Before, the copy path opened with FileChannel.open, which waits in open(2) for a writer.
 */
class BodyFileTest
{
    @TempDir
    Path dir;

    @Test
    void aFifoIsRefusedAtOnceAndARegularFileIsRead() throws Exception
    {
        final Path fifo = dir.resolve("index.html");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        for (final boolean sendable : new boolean[] {false, true})
        {
            assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(IOException.class, () -> BodyFile.open(fifo, sendable)), "sendable " + sendable);
        }
        final Path plain = Files.writeString(dir.resolve("plain.html"), "<p>plain</p>");
        for (final boolean sendable : new boolean[] {false, true})
        {
            try (BodyFile body = BodyFile.open(plain, sendable))
            {
                final ByteBuffer bytes = ByteBuffer.allocate(64);
                assertEquals(12, body.channel().read(bytes, 0));
                assertEquals(sendable, body.sendable() != null);
            }
        }
    }

    /**
     * A directory on a looked-up file's path swapped for a symbolic link out of the root between the lookup (which
     * checked the real path) and the open: the descriptor is not the file looked up, and is refused, for copying and
     * for SEND_FILE alike. Before, open(2) followed the new link and the body was the file outside the root.
     */
    @Test
    void aLinkSwappedOntoThePathAfterTheLookupIsRefused() throws Exception
    {
        final SwappedDirectory swapped = new SwappedDirectory(dir);
        final StaticFiles.Lookup lookup = swapped.lookup;
        assertEquals(200, lookup.status());
        for (final boolean sendable : new boolean[] {false, true})
        {
            assertThrows(AccessDeniedException.class, () -> BodyFile.open(lookup.file(), sendable).close(),
                "sendable " + sendable);
        }
        swapped.putBack();
        try (BodyFile body = BodyFile.open(lookup.file(), true))
        {
            assertEquals(6, body.channel().size());
        }
    }
}
