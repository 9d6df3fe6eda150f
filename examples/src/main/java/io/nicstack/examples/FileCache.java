package io.nicstack.examples;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

import org.agrona.CloseHelper;
import org.agrona.MutableDirectBuffer;

import io.nicstack.pipes.client.SendableFile;

/**
 * Open files an {@link HttpApp} serves, keyed by request path as {@link StaticFiles#key} makes it, so that a file's
 * aliases share an entry (an open-file cache, as web servers keep):
 * a response body is read with positional reads straight into claimed TX pipe space, with no
 * {@code open}, {@code fstat} or {@code close} per request, and the precomputed header fields of the file.
 * One thread uses it.
 *
 * <p><b>Bounds.</b> At most {@code maxEntries} open files and {@code maxBytes} of file size, the least
 * recently used evicted first; a file larger than {@code maxFileBytes} is not cached (the server opens it
 * per request as before). An entry that is evicted, replaced or found broken while responses still read
 * from it ({@link #use}/{@link #release}) leaves the cache at once and is closed when the last of them
 * releases it.
 *
 * <p><b>Freshness.</b> {@link #get} trusts an entry for {@code revalidateNanos} after its last check;
 * then the caller looks the path up again ({@link StaticFiles#lookup}: traversal, symbolic links,
 * permissions) and {@link #refresh} compares the file's identity (device and inode), size and
 * modification time with the entry's, keeping the open file if they agree and opening it anew if not.
 * Bytes rewritten in place show at once; a file replaced (renamed over) or removed is noticed within
 * {@code revalidateNanos}.
 *
 * <p><b>Truncation.</b> A file that shrinks under an open entry makes {@link #copy} come up short (end of
 * file): it drops the entry and answers false, and the caller resets the connection (the promised
 * Content-Length cannot be kept). Reads never hand over bytes that are not the file's. (A memory mapping
 * was tried first: a copy from a mapping of a truncated file faults, and the JVM raises that
 * asynchronously, after the garbage bytes could already have been committed.)
 *
 * <p><b>Sending, and one descriptor per file.</b> A cache made to send files of at least {@code sendFrom} bytes
 * opens each of those as a {@link SendableFile}, which responses hand to the daemon
 * ({@link io.nicstack.pipes.client.PipeConnection#sendFile}) instead of copying it; smaller files, which are copied,
 * are opened as a channel only. One descriptor cannot serve both uses (see {@link BodyFile}), so each entry holds the
 * one its use needs: a file that is sent has a channel (opened through the sendable file, the same inode) only once
 * something copies from it or checks its size, which happens when the daemon would not send it. After the daemon
 * refused, {@link #stopSending()} reopens every file as a channel only: each cached file costs one descriptor.
 */
final class FileCache
{
    /** A cached file: where it is, its open channel, and the response header fields that depend on it. */
    static final class Entry
    {
        private final String key;
        private final Path file;
        private final Object fileKey;
        private final FileTime modified;
        private final long size;
        private final String contentType;
        private final byte[] headFields;
        private final long lastModifiedSeconds;
        private final byte[] lastModifiedDate;
        private final String lastModifiedField;
        private final BodyFile body;
        private long checkedAt;
        private int users;
        private boolean cached = true;

        private Entry(final String key, final Path file, final BasicFileAttributes attributes, final long size,
            final String contentType, final BodyFile body, final long nowNanos)
        {
            this.key = key;
            this.file = file;
            this.fileKey = attributes.fileKey();
            this.modified = attributes.lastModifiedTime();
            this.size = size;
            this.contentType = contentType;
            this.headFields = ("Content-Type: " + contentType + "\r\nContent-Length: " + size + "\r\n")
                .getBytes(StandardCharsets.ISO_8859_1);
            this.lastModifiedSeconds = body.modified().toInstant().getEpochSecond();
            this.lastModifiedField = HttpApp.lastModifiedField(lastModifiedSeconds);
            this.lastModifiedDate = HttpApp.httpDate(lastModifiedSeconds).getBytes(StandardCharsets.ISO_8859_1);
            this.body = body;
            this.checkedAt = nowNanos;
        }

        /** The real path of the file. */
        Path file()
        {
            return file;
        }

        /** The file's size when it was opened: the Content-Length of its responses. */
        long size()
        {
            return size;
        }

        String contentType()
        {
            return contentType;
        }

        /**
         * The open file, for positional reads and transfers only (its position is shared by every user); for a
         * server that reads it itself rather than through {@link #copy}. Opened now if the entry was made for sending.
         *
         * @throws IOException if it cannot be opened.
         */
        FileChannel channel() throws IOException
        {
            return body.channel();
        }

        /** Whether a channel is open on the file now (for tests: a file made for sending opens one when asked). */
        boolean channelOpen()
        {
            return body.channelOpen();
        }

        /** The file for {@link io.nicstack.pipes.client.PipeConnection#sendFile}, null unless made for sending. */
        SendableFile sendable()
        {
            return body.sendable();
        }

        /** {@code Content-Type} and {@code Content-Length} header lines, CRLF-terminated, ISO-8859-1. */
        byte[] headFields()
        {
            return headFields;
        }

        /** The file's modification time (of the file opened), in whole seconds since the epoch. */
        long lastModifiedSeconds()
        {
            return lastModifiedSeconds;
        }

        /** {@link #lastModifiedSeconds} as an HTTP-date (IMF-fixdate, RFC 9110 §5.6.7), ISO-8859-1. */
        byte[] lastModifiedDate()
        {
            return lastModifiedDate;
        }

        /** The Last-Modified header field line for {@link #lastModifiedSeconds}, CRLF-terminated. */
        String lastModifiedField()
        {
            return lastModifiedField;
        }

        /** Whether the entry is still in the cache (not evicted, replaced or dropped). */
        boolean cached()
        {
            return cached;
        }

        /** Whether the entry's file is open (in the cache, or out of it but still in use). */
        boolean open()
        {
            return cached || users > 0;
        }

        @Override
        public String toString()
        {
            return "FileCache.Entry{" + key + " -> " + file + ", " + size + " bytes, users=" + users +
                (cached ? "" : ", retired") + "}";
        }
    }

    private final int maxEntries;
    private final long maxBytes;
    private final long maxFileBytes;
    private final long revalidateNanos;
    private StaticFiles.Lookup missed;
    /** Files of at least this many bytes are opened for sending (Long.MAX_VALUE: none). */
    private long sendFrom;
    /** Access order: the eldest entry is the least recently used. */
    private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>(64, 0.75f, true);
    private long bytes;
    /** A view of the last destination's memory, and a scratch buffer for destinations without one. */
    private ByteBuffer view;
    private ByteBuffer viewOf;
    private final ByteBuffer scratch = ByteBuffer.allocateDirect(64 * 1024);

    /**
     * @param maxEntries      most files cached at once.
     * @param maxBytes        most bytes (file sizes) of cached entries at once.
     * @param maxFileBytes    largest file cached (at most {@code maxBytes} and {@link Integer#MAX_VALUE}).
     * @param revalidateNanos how long an entry is trusted after its last check.
     * @param sendFrom        the smallest file opened for sending (its entry holds a {@link SendableFile}, not a
     *                        channel); {@link Long#MAX_VALUE}: none, every entry holds a channel.
     */
    FileCache(final int maxEntries, final long maxBytes, final long maxFileBytes, final long revalidateNanos,
        final long sendFrom)
    {
        if (maxEntries < 1 || maxBytes < 0 || maxFileBytes < 0 || maxFileBytes > Math.min(maxBytes, Integer.MAX_VALUE) ||
            revalidateNanos < 0 || sendFrom < 0)
        {
            throw new IllegalArgumentException("FileCache(" + maxEntries + ", " + maxBytes + ", " + maxFileBytes + ", " +
                revalidateNanos + ", " + sendFrom + ")");
        }
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
        this.maxFileBytes = maxFileBytes;
        this.revalidateNanos = revalidateNanos;
        this.sendFrom = sendFrom;
    }

    /**
     * Open no file for sending any more (the daemon will not send this app's files): every entry is dropped (those in
     * use close with their last user), so each file is opened again, as a channel only, when next served.
     */
    void stopSending()
    {
        if (sendFrom != Long.MAX_VALUE)
        {
            sendFrom = Long.MAX_VALUE;
            clear();
        }
    }

    /**
     * The entry serving {@code path} through {@code files}: the cached one while fresh ({@link #get}), else the path
     * looked up again and the file checked or opened ({@link #refresh}), keyed by {@link StaticFiles#key} so that its
     * aliases share it. Null when there is none to serve from: then {@link #missed()} is the lookup to answer with,
     * by its status (not 200: 404, 403, 301, ...) or, a 200, by reading its file without the cache.
     */
    Entry serve(final StaticFiles files, final String path, final long nowNanos)
    {
        final String key = StaticFiles.key(path);
        final Entry cached = key == null ? null : get(key, nowNanos);
        if (cached != null)
        {
            return cached;
        }
        final StaticFiles.Lookup lookup = files.lookup(path);
        missed = lookup;
        if (lookup.status() != 200) // always so when the key is null
        {
            if (key != null)
            {
                remove(key);
            }
            return null;
        }
        return refresh(key, lookup.file(), lookup.contentType(), nowNanos);
    }

    /** The lookup of the last {@link #serve} that returned null. */
    StaticFiles.Lookup missed()
    {
        return missed;
    }

    /** The entry for {@code key} if it was checked less than the revalidation time ago, else null (look it up). */
    Entry get(final String key, final long nowNanos)
    {
        final Entry e = entries.get(key);
        return e != null && nowNanos - e.checkedAt < revalidateNanos ? e : null;
    }

    /**
     * After a successful lookup of {@code key}: the entry for {@code file}, the cached one if the file is
     * still the one it opened (same identity, size and modification time), else the file opened anew. Null if
     * the file cannot be cached (too large, not a regular file, not readable); any entry for {@code key}
     * is dropped then.
     */
    Entry refresh(final String key, final Path file, final String contentType, final long nowNanos)
    {
        final Entry old = entries.get(key);
        final BasicFileAttributes attributes;
        try
        {
            attributes = Files.readAttributes(file, BasicFileAttributes.class);
        }
        catch (final IOException | RuntimeException e)
        {
            drop(old);
            return null;
        }
        if (old != null && old.file.equals(file) && old.size == attributes.size() &&
            Objects.equals(old.fileKey, attributes.fileKey()) && old.modified.equals(attributes.lastModifiedTime()) &&
            old.contentType.equals(contentType))
        {
            old.checkedAt = nowNanos;
            return old;
        }
        drop(old);
        if (!attributes.isRegularFile() || attributes.size() > maxFileBytes)
        {
            return null;
        }
        final Entry e;
        BodyFile body = null;
        try
        {
            body = BodyFile.open(file, attributes.size() >= sendFrom);
            // Size it by the open file, which may differ from the stat if the file was just replaced: the
            // next revalidation notices.
            final long size = body.size();
            if (size > maxFileBytes)
            {
                body.close();
                return null;
            }
            e = new Entry(key, file, attributes, size, contentType, body, nowNanos);
        }
        catch (final IOException | RuntimeException ex)
        {
            CloseHelper.quietClose(body);
            return null; // unreadable: the caller answers as it would without the cache
        }
        entries.put(key, e);
        bytes += e.size;
        evictBeyondBounds(e);
        return e;
    }

    /** A response starts copying from {@code e}: it stays open until {@link #release}. */
    void use(final Entry e)
    {
        if (!e.open())
        {
            throw new IllegalStateException("closed " + e);
        }
        e.users++;
    }

    /** A response is done with {@code e}; a retired entry is closed with its last user. */
    void release(final Entry e)
    {
        if (e.users <= 0)
        {
            throw new IllegalStateException("release without use: " + e);
        }
        e.users--;
        if (!e.cached && e.users == 0)
        {
            close(e);
        }
    }

    /**
     * Read {@code length} bytes at {@code position} of the file of {@code e} (in use) into
     * {@code dst[dstIndex ..]} (straight into its memory when it has a {@link ByteBuffer} view, else through
     * a scratch buffer). False if the file ended first (it shrank) or could not be read: the entry is
     * dropped from the cache, and the caller must not publish the bytes.
     */
    boolean copy(final Entry e, final long position, final MutableDirectBuffer dst, final int dstIndex, final int length)
    {
        try
        {
            int done = 0;
            while (done < length)
            {
                final int n = read(e.body.channel(), position + done, dst, dstIndex + done, length - done);
                if (n <= 0)
                {
                    drop(e);
                    return false;
                }
                done += n;
            }
            return true;
        }
        catch (final IOException | RuntimeException ex)
        {
            drop(e);
            return false;
        }
    }

    /**
     * Whether the file of {@code e} (in use) now ends before {@code end}, by its size (fstat(2)) or because that
     * cannot be had: it shrank, as a short {@link #copy} finds, and is dropped from the cache the same way.
     */
    boolean endsBefore(final Entry e, final long end)
    {
        try
        {
            if (e.body.channel().size() >= end)
            {
                return false;
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            // As a short file: the bytes promised cannot be had.
        }
        drop(e);
        return true;
    }

    /**
     * One positional read of at most {@code length} bytes of {@code channel} at {@code position} into
     * {@code dst[index ..]}: straight into its memory when it has a {@link ByteBuffer} view, else through a
     * scratch buffer. Returns what {@link FileChannel#read(ByteBuffer, long)} returns.
     */
    int read(final FileChannel channel, final long position, final MutableDirectBuffer dst, final int index,
        final int length) throws IOException
    {
        final ByteBuffer backing = dst.byteBuffer();
        if (backing != null)
        {
            if (viewOf != backing)
            {
                view = backing.duplicate();
                viewOf = backing;
            }
            final int offset = dst.wrapAdjustment() + index;
            view.limit(offset + length).position(offset);
            return channel.read(view, position);
        }
        scratch.clear().limit(Math.min(length, scratch.capacity()));
        final int n = channel.read(scratch, position);
        if (n > 0)
        {
            dst.putBytes(index, scratch, 0, n);
        }
        return n;
    }

    /** Drop {@code e} from the cache (it is closed now, or with its last user). */
    void drop(final Entry e)
    {
        if (e == null || !e.cached)
        {
            return;
        }
        if (entries.get(e.key) == e)
        {
            entries.remove(e.key);
        }
        retire(e);
    }

    /** Drop whatever is cached for {@code key} (e.g. after a failed lookup). */
    void remove(final String key)
    {
        drop(entries.get(key));
    }

    /** Drop every entry; those in use are closed with their last user. */
    void clear()
    {
        for (final Entry e : entries.values())
        {
            retire(e);
        }
        entries.clear();
    }

    int entries()
    {
        return entries.size();
    }

    /** File bytes of the entries in the cache (not counting retired ones still in use). */
    long bytes()
    {
        return bytes;
    }

    private void evictBeyondBounds(final Entry keep)
    {
        final Iterator<Map.Entry<String, Entry>> eldest = entries.entrySet().iterator();
        while ((entries.size() > maxEntries || bytes > maxBytes) && eldest.hasNext())
        {
            final Entry e = eldest.next().getValue();
            if (e != keep)
            {
                eldest.remove();
                retire(e);
            }
        }
    }

    private void retire(final Entry e)
    {
        e.cached = false;
        bytes -= e.size;
        if (e.users == 0)
        {
            close(e);
        }
    }

    private static void close(final Entry e)
    {
        e.body.close();
    }
}
