package io.nicstack.examples;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;
import java.util.Random;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.*;

class FileCacheTest
{
    private static final long REVALIDATE = 100;
    private static final String TYPE = "application/octet-stream";
    /** A cache that opens no file for sending. */
    private static final long NO_SENDING = Long.MAX_VALUE;

    @TempDir
    Path dir;

    private final UnsafeBuffer dst = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));

    private Path write(final String name, final byte[] content) throws Exception
    {
        final Path p = dir.resolve(name);
        Files.write(p, content);
        return p.toRealPath();
    }

    private static byte[] random(final int size, final long seed)
    {
        final byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** The bytes of {@code e}'s file, copied out through {@link FileCache#copy}. */
    private byte[] read(final FileCache cache, final FileCache.Entry e)
    {
        final int n = (int)e.size();
        assertTrue(cache.copy(e, 0, dst, 0, n));
        final byte[] b = new byte[n];
        dst.getBytes(0, b);
        return b;
    }

    @Test
    void mapsAFileOnceAndTrustsItUntilTheRevalidationTime() throws Exception
    {
        final byte[] content = random(100_000, 1);
        final Path f = write("a.bin", content);
        final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, NO_SENDING);
        assertNull(cache.get("/a.bin", 0), "nothing cached yet");
        final FileCache.Entry e = cache.refresh("/a.bin", f, TYPE, 0);
        assertNotNull(e);
        assertEquals(content.length, e.size());
        assertArrayEquals(content, read(cache, e));
        assertEquals("Content-Type: " + TYPE + "\r\nContent-Length: 100000\r\n",
            new String(e.headFields(), StandardCharsets.ISO_8859_1));
        assertSame(e, cache.get("/a.bin", REVALIDATE - 1));
        assertNull(cache.get("/a.bin", REVALIDATE), "due for a check");
        assertSame(e, cache.refresh("/a.bin", f, TYPE, REVALIDATE), "unchanged file: the same entry");
        assertSame(e, cache.get("/a.bin", 2 * REVALIDATE - 1), "trusted again after the check");
        assertEquals(1, cache.entries());
        assertEquals(content.length, cache.bytes());
    }

    @Test
    void aReplacedFileIsOpenedAnewAndTheOldOneClosesWithItsLastUser() throws Exception
    {
        final Path f = write("a.bin", random(50_000, 1));
        final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, NO_SENDING);
        final FileCache.Entry old = cache.refresh("/a.bin", f, TYPE, 0);
        cache.use(old); // a response is copying from it

        final byte[] next = random(60_000, 2);
        final Path tmp = dir.resolve("a.bin.tmp");
        Files.write(tmp, next);
        Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);

        final FileCache.Entry fresh = cache.refresh("/a.bin", f, TYPE, REVALIDATE);
        assertNotSame(old, fresh);
        assertArrayEquals(next, read(cache, fresh));
        assertFalse(old.cached());
        assertTrue(old.open(), "still open for the response that uses it");
        assertArrayEquals(random(50_000, 1), read(cache, old), "which still sees the file it started with");
        cache.release(old);
        assertFalse(old.open(), "closed with its last user");
        assertEquals(1, cache.entries());
        assertEquals(next.length, cache.bytes());
    }

    @Test
    void sizeOrModificationTimeChangesAreNoticed() throws Exception
    {
        final Path f = write("a.bin", random(10_000, 1));
        final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, NO_SENDING);
        final FileCache.Entry e1 = cache.refresh("/a.bin", f, TYPE, 0);
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw"))
        {
            raf.setLength(12_000); // grown in place: same inode
        }
        final FileCache.Entry e2 = cache.refresh("/a.bin", f, TYPE, REVALIDATE);
        assertNotSame(e1, e2);
        assertEquals(12_000, e2.size());
        assertFalse(e1.open());

        Files.setLastModifiedTime(f, FileTime.fromMillis(Files.getLastModifiedTime(f).toMillis() - 60_000));
        final FileCache.Entry e3 = cache.refresh("/a.bin", f, TYPE, 2 * REVALIDATE);
        assertNotSame(e2, e3, "same size, other modification time");
        assertEquals(1, cache.entries());
    }

    @Test
    void boundedInEntriesAndBytesLeastRecentlyUsedFirst() throws Exception
    {
        final FileCache cache = new FileCache(2, 10_000, 5_000, REVALIDATE, NO_SENDING);
        final FileCache.Entry a = cache.refresh("/a", write("a", new byte[1_000]), TYPE, 0);
        final FileCache.Entry b = cache.refresh("/b", write("b", new byte[1_000]), TYPE, 0);
        assertSame(a, cache.get("/a", 1)); // a is now more recently used than b
        final FileCache.Entry c = cache.refresh("/c", write("c", new byte[1_000]), TYPE, 0);
        assertEquals(2, cache.entries());
        assertTrue(a.cached());
        assertFalse(b.cached(), "the least recently used goes");
        assertFalse(b.open());
        assertTrue(c.cached());

        final FileCache bytes = new FileCache(8, 10_000, 5_000, REVALIDATE, NO_SENDING);
        final FileCache.Entry d = bytes.refresh("/d", write("d", new byte[4_500]), TYPE, 0);
        final FileCache.Entry e = bytes.refresh("/e", write("e", new byte[4_500]), TYPE, 0);
        final FileCache.Entry f = bytes.refresh("/f", write("f", new byte[4_500]), TYPE, 0);
        assertFalse(d.cached(), "over the byte bound: the oldest goes");
        assertTrue(e.cached() && f.cached());
        assertEquals(9_000, bytes.bytes());
        assertEquals(2, bytes.entries());

        assertNull(bytes.refresh("/big", write("big", new byte[5_001]), TYPE, 0), "larger than a cached file may be");
        assertEquals(2, bytes.entries());

        bytes.use(e);
        bytes.clear();
        assertEquals(0, bytes.entries());
        assertEquals(0, bytes.bytes());
        assertTrue(e.open(), "in use: closed only when released");
        assertFalse(f.open());
        bytes.release(e);
        assertFalse(e.open());
    }

    @Test
    void anEmptyFileAndAFailedLookup() throws Exception
    {
        final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, NO_SENDING);
        final FileCache.Entry empty = cache.refresh("/empty", write("empty", new byte[0]), TYPE, 0);
        assertNotNull(empty);
        assertEquals(0, empty.size());
        assertTrue(cache.copy(empty, 0, dst, 0, 0));

        final FileCache.Entry gone = cache.refresh("/gone", write("gone", new byte[10]), TYPE, 0);
        Files.delete(dir.resolve("gone"));
        assertNull(cache.refresh("/gone", dir.resolve("gone"), TYPE, REVALIDATE), "deleted: nothing to map");
        assertFalse(gone.cached());
        cache.remove("/empty");
        assertEquals(0, cache.entries());
    }

    /**
     * A file truncated under its open entry: {@link FileCache#copy} comes up short, answers false and drops the
     * entry; once with a cold copy path and once after enough copies for the JIT to compile it.
     */
    @Test
    void aFileTruncatedUnderItsEntryFailsTheCopyAndLeavesTheCache() throws Exception
    {
        for (final int warmCopies : new int[] {0, 50_000})
        {
            final byte[] content = random(1 << 20, 3);
            final Path f = write("t.bin", content);
            final FileCache cache = new FileCache(8, 4 << 20, 4 << 20, REVALIDATE, NO_SENDING);
            final FileCache.Entry e = cache.refresh("/t.bin", f, TYPE, 0);
            cache.use(e);
            for (int i = 0; i < warmCopies; i++)
            {
                assertTrue(cache.copy(e, (i * 4096L) % (1 << 20), dst, 0, 4096));
            }
            try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw"))
            {
                raf.setLength(0);
            }
            assertFalse(cache.copy(e, 65_536, dst, 0, 65_536), "the copy must report the short read (warm " + warmCopies + ")");
            assertFalse(e.cached(), "a shrunk file leaves the cache");
            assertTrue(e.open());
            assertEquals(0, Files.size(f));
            Thread.sleep(1);
            cache.release(e);
            assertFalse(e.open());
            assertEquals(0, cache.entries());
            final byte[] after = Arrays.copyOf(content, 4096);
            Files.write(f, after);
            final FileCache.Entry again = cache.refresh("/t.bin", f, TYPE, REVALIDATE);
            assertArrayEquals(after, read(cache, again), "the file opened anew");
        }
    }

    /** A file that shrank under its entry ends before its old size, as a SEND_FILE found, and leaves the cache. */
    @Test
    void aFileThatShrankEndsBeforeItsEntrysSizeAndLeavesTheCache() throws Exception
    {
        final Path f = write("s.bin", random(64 * 1024, 4));
        final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, 0);
        final FileCache.Entry e = cache.refresh("/s.bin", f, TYPE, 0);
        cache.use(e);
        assertFalse(cache.endsBefore(e, e.size()));
        assertTrue(e.cached());
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw"))
        {
            raf.setLength(1000);
        }
        assertFalse(cache.endsBefore(e, 1000), "what is left is still there");
        assertTrue(cache.endsBefore(e, e.size()));
        assertFalse(e.cached(), "a shrunk file leaves the cache");
        cache.release(e);
        assertFalse(e.open());
    }

    /**
     * A sendable cache opens each file once as a {@link io.nicstack.pipes.client.SendableFile} and reads through a
     * channel on the same open file, so both keep naming the file that was opened when its path is replaced; the
     * sendable file is closed with the entry's last user.
     */
    @Test
    void aSendableEntryNamesOneFileForCopyingAndSendingAndClosesWithItsLastUser() throws Exception
    {
        final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, 0);
        final byte[] original = random(10_000, 4);
        final Path f = write("s.bin", original);
        final FileCache.Entry e = cache.refresh("/s.bin", f, TYPE, 0);
        final io.nicstack.pipes.client.SendableFile sendable = e.sendable();
        assertNotNull(sendable);
        assertTrue(sendable.isOpen());
        Files.move(write("other.bin", random(10_000, 5)), f, StandardCopyOption.REPLACE_EXISTING);
        assertArrayEquals(original, read(cache, e), "the channel reads the file that was opened");
        try (var channel = sendable.openChannel())
        {
            final ByteBuffer first = ByteBuffer.allocate(100);
            channel.read(first, 0);
            assertArrayEquals(Arrays.copyOf(original, 100), first.array(), "the sendable file is that file too");
        }
        cache.use(e);
        cache.remove("/s.bin");
        assertTrue(sendable.isOpen(), "in use");
        cache.release(e);
        assertFalse(sendable.isOpen(), "closed with the last user");
        assertNull(new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, NO_SENDING).refresh("/s.bin", f, TYPE, 0).sendable());
    }

    /** The descriptors of this process that name {@code file} (as the kernel names it: its real path). */
    private static int descriptorsOf(final Path file) throws Exception
    {
        int n = 0;
        try (var fds = Files.list(Path.of("/proc/self/fd")))
        {
            for (final Path fd : (Iterable<Path>)fds::iterator)
            {
                try
                {
                    final String target = Files.readSymbolicLink(fd).toString();
                    n += target.equals(file.toString()) || target.equals(file + " (deleted)") ? 1 : 0;
                }
                catch (final java.io.IOException gone)
                {
                    // Closed since the listing (the listing's own descriptor, or another thread's).
                }
            }
        }
        return n;
    }

    /**
     * One descriptor per cached file, in a sendable cache too: a file the daemon sends (SEND_FILE, from
     * {@link HttpApp#SEND_FILE_MIN} bytes) needs only the sendable file, a file the app copies only the channel. Before,
     * every entry of a sendable cache held both, two descriptors per file.
     */
    @Test
    void aSendableCacheHoldsOneDescriptorPerFile() throws Exception
    {
        final FileCache cache = new FileCache(64, 16 << 20, 16 << 20, REVALIDATE, HttpApp.SEND_FILE_MIN);
        final Path[] files = new Path[8];
        final FileCache.Entry[] entries = new FileCache.Entry[files.length];
        for (int i = 0; i < files.length; i++)
        {
            final int size = i % 2 == 0 ? 1000 : HttpApp.SEND_FILE_MIN + 1000;
            files[i] = write("f" + i + ".bin", random(size, i));
            entries[i] = cache.refresh("/f" + i + ".bin", files[i], TYPE, 0);
            assertEquals(size >= HttpApp.SEND_FILE_MIN, entries[i].sendable() != null, files[i] + " sendable");
            assertEquals(size < HttpApp.SEND_FILE_MIN, entries[i].channelOpen(), files[i] + " has a channel");
        }
        for (final Path f : files)
        {
            assertEquals(1, descriptorsOf(f), f + " held by one descriptor");
        }

        // A file made for sending that is copied after all (the daemon refused) opens its channel then, on that file.
        assertArrayEquals(random(HttpApp.SEND_FILE_MIN + 1000, 1), read(cache, entries[1]));
        assertTrue(entries[1].channelOpen());
        // Refused for good: every file is opened again as a channel only.
        cache.stopSending();
        for (int i = 0; i < files.length; i++)
        {
            assertFalse(entries[i].open(), files[i] + " closed with its entry");
            assertEquals(0, descriptorsOf(files[i]), files[i] + " closed with its entry");
            final FileCache.Entry again = cache.refresh("/f" + i + ".bin", files[i], TYPE, 0);
            assertNull(again.sendable());
            assertEquals(1, descriptorsOf(files[i]), files[i] + " held by one descriptor");
        }
        cache.clear();
        for (final Path f : files)
        {
            assertEquals(0, descriptorsOf(f), f + " closed with its entry");
        }
    }

    @Test
    void useAndReleaseAreChecked() throws Exception
    {
        final FileCache cache = new FileCache(1, 1 << 20, 1 << 20, REVALIDATE, NO_SENDING);
        final FileCache.Entry a = cache.refresh("/a", write("a", new byte[10]), TYPE, 0);
        assertThrows(IllegalStateException.class, () -> cache.release(a));
        cache.refresh("/b", write("b", new byte[10]), TYPE, 0); // evicts and closes a
        assertThrows(IllegalStateException.class, () -> cache.use(a));
        assertThrows(IllegalArgumentException.class, () -> new FileCache(1, 100, 101, REVALIDATE, NO_SENDING));
    }

    /**
     * A directory on the path of a looked-up file swapped for a symbolic link out of the root before the cache opens
     * the file: nothing is cached and nothing can be served from it (the caller answers as without the cache). Before,
     * the entry held the file outside the root, and its bytes were served.
     */
    @Test
    void aLinkSwappedOntoThePathAfterTheLookupCachesNothing() throws Exception
    {
        final StaticFiles.Lookup lookup = new SwappedDirectory(dir).lookup;
        assertEquals(200, lookup.status());
        for (final boolean sendable : new boolean[] {false, true})
        {
            final FileCache cache = new FileCache(8, 1 << 20, 1 << 20, REVALIDATE, sendable ? 0 : NO_SENDING);
            assertNull(cache.refresh("/d/f.txt", lookup.file(), lookup.contentType(), 0), "sendable " + sendable);
            assertEquals(0, cache.entries());
        }
    }
}
