package io.nicstack.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Map;

/**
 * Maps a decoded request path to a regular file under a root directory. {@code ..} may never
 * climb above the root (403), and the real path of the file (symbolic links resolved) must stay
 * under the real root too (403); missing files are 404. A directory serves its {@code index.html}
 * when named with a trailing slash; without one it is a 301 to the name with the slash, as nginx
 * answers, so that relative links in the page resolve inside the directory.
 *
 * <p>A lookup vets a path, not a file: what it found is opened with {@link BodyFile#open}, which refuses a descriptor
 * that is not the file at the real path found here (a directory on it swapped for a symbolic link out of the root
 * between the two).
 */
public final class StaticFiles
{
    /**
     * Outcome of a lookup: {@code status} 200 with the file, its size and type, 301 with the {@code location} to
     * redirect to (a path, percent-encoded, without the query), or 403/404.
     */
    public record Lookup(int status, Path file, long size, String contentType, String location)
    {
        public Lookup(final int status, final Path file, final long size, final String contentType)
        {
            this(status, file, size, contentType, null);
        }
    }

    private static final Map<String, String> TYPES = Map.ofEntries(
        Map.entry("html", "text/html; charset=utf-8"),
        Map.entry("htm", "text/html; charset=utf-8"),
        Map.entry("txt", "text/plain; charset=utf-8"),
        Map.entry("css", "text/css; charset=utf-8"),
        Map.entry("js", "text/javascript; charset=utf-8"),
        Map.entry("json", "application/json"),
        Map.entry("xml", "application/xml"),
        Map.entry("png", "image/png"),
        Map.entry("jpg", "image/jpeg"),
        Map.entry("jpeg", "image/jpeg"),
        Map.entry("gif", "image/gif"),
        Map.entry("svg", "image/svg+xml"),
        Map.entry("ico", "image/x-icon"),
        Map.entry("pdf", "application/pdf"),
        Map.entry("gz", "application/gzip"));

    private final Path root;

    public StaticFiles(final Path root) throws IOException
    {
        this.root = root.toRealPath();
        if (!Files.isDirectory(this.root))
        {
            throw new IOException("not a directory: " + root);
        }
    }

    public Path root()
    {
        return root;
    }

    /**
     * A key for what {@link #lookup} finds for {@code decodedPath}, for a cache of its answers: the same for paths that
     * differ only in empty, {@code .} and {@code ..} segments ({@code /a}, {@code //a}, {@code /./a}, {@code /b/../a}),
     * which the lookup treats alike, and different for any two it may answer differently. Null for a path the lookup
     * refuses without looking at the files (403 or 404).
     */
    public static String key(final String decodedPath)
    {
        if (isCanonical(decodedPath))
        {
            return decodedPath; // the usual request: its own key, nothing built (a cache hit allocates nothing)
        }
        final Deque<String> segments = segments(decodedPath);
        if (segments == null)
        {
            return null;
        }
        final StringBuilder key = new StringBuilder(decodedPath.length());
        for (final String s : segments)
        {
            key.append('/').append(s);
        }
        // The lookup also tells paths apart by how they end (a trailing slash names a directory, "/." no file). No
        // segment is empty or ".", so these suffixes cannot be read as segments: the key is unambiguous.
        if (decodedPath.endsWith("/"))
        {
            key.append('/');
        }
        else if (decodedPath.endsWith("/."))
        {
            key.append("/.");
        }
        return key.toString();
    }

    /**
     * Whether {@code path} is its own {@link #key}: absolute, no NUL, and no empty, {@code .} or {@code ..} segment
     * (a trailing slash aside).
     */
    private static boolean isCanonical(final String path)
    {
        if (path.isEmpty() || path.charAt(0) != '/' || path.indexOf('\0') >= 0)
        {
            return false;
        }
        for (int i = 0, n = path.length(); i < n; i++)
        {
            if (path.charAt(i) != '/' || i + 1 == n)
            {
                continue;
            }
            final int end = path.indexOf('/', i + 1);
            final int length = (end < 0 ? n : end) - (i + 1);
            if (length == 0 && end >= 0 || length == 1 && path.charAt(i + 1) == '.'
                || length == 2 && path.charAt(i + 1) == '.' && path.charAt(i + 2) == '.')
            {
                return false;
            }
        }
        return true;
    }

    /**
     * The segments of {@code decodedPath} with empty and {@code .} ones left out and {@code ..} applied; null if it is
     * no absolute path or holds a NUL, or if a {@code ..} would climb above the root.
     */
    private static Deque<String> segments(final String decodedPath)
    {
        if (decodedPath.indexOf('\0') >= 0 || !decodedPath.startsWith("/"))
        {
            return null;
        }
        final Deque<String> segments = new ArrayDeque<>();
        for (final String s : decodedPath.split("/"))
        {
            if (s.isEmpty() || s.equals("."))
            {
                continue;
            }
            if (s.equals(".."))
            {
                if (segments.isEmpty())
                {
                    return null;
                }
                segments.removeLast();
                continue;
            }
            segments.addLast(s);
        }
        return segments;
    }

    public Lookup lookup(final String decodedPath)
    {
        if (decodedPath.indexOf('\0') >= 0 || !decodedPath.startsWith("/"))
        {
            return new Lookup(404, null, 0, null);
        }
        final Deque<String> segments = segments(decodedPath);
        if (segments == null)
        {
            return new Lookup(403, null, 0, null); // would climb above the root
        }
        Path file = root;
        try
        {
            for (final String s : segments)
            {
                file = file.resolve(s);
            }
        }
        catch (final RuntimeException e)
        {
            return new Lookup(404, null, 0, null); // InvalidPathException and the like
        }
        file = file.normalize();
        if (!file.startsWith(root))
        {
            return new Lookup(403, null, 0, null);
        }
        if (Files.isDirectory(file))
        {
            if (!decodedPath.endsWith("/"))
            {
                return redirectToDirectory(file, segments);
            }
            file = file.resolve("index.html");
        }
        else if (decodedPath.endsWith("/") || decodedPath.endsWith("/."))
        {
            return new Lookup(404, null, 0, null); // "/a.txt/" names a directory; a file is not one (ENOTDIR)
        }
        try
        {
            if (!Files.isRegularFile(file))
            {
                return new Lookup(404, null, 0, null);
            }
            final Path real = file.toRealPath();
            if (!real.startsWith(root))
            {
                return new Lookup(403, null, 0, null); // a symbolic link pointing out of the root
            }
            if (!Files.isReadable(real))
            {
                return new Lookup(403, null, 0, null);
            }
            return new Lookup(200, real, Files.size(real),
                contentType(real.getFileName().toString()));
        }
        catch (final IOException | RuntimeException e)
        {
            return new Lookup(404, null, 0, null);
        }
    }

    /** A 301 to the directory's name with a trailing slash, if it lies under the root (else 403, as its files). */
    private Lookup redirectToDirectory(final Path dir, final Deque<String> segments)
    {
        try
        {
            if (!dir.toRealPath().startsWith(root))
            {
                return new Lookup(403, null, 0, null);
            }
        }
        catch (final IOException | RuntimeException e)
        {
            return new Lookup(404, null, 0, null);
        }
        final StringBuilder location = new StringBuilder("/");
        for (final String s : segments)
        {
            encodeSegment(s, location);
            location.append('/');
        }
        return new Lookup(301, null, 0, null, location.toString());
    }

    /**
     * {@code segment} percent-encoded as a path segment (RFC 3986 §3.3: pchar kept, every other byte of its UTF-8
     * %XX). Built from the decoded segments, none empty, a location is never "//host" nor "/\host", which a browser
     * would take for another host.
     */
    private static void encodeSegment(final String segment, final StringBuilder out)
    {
        for (final byte b : segment.getBytes(StandardCharsets.UTF_8))
        {
            final int c = b & 0xFF;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                "-._~!$&'()*+,;=:@".indexOf(c) >= 0)
            {
                out.append((char)c);
            }
            else
            {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >>> 4, 16)))
                    .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
            }
        }
    }

    public static String contentType(final String fileName)
    {
        final int dot = fileName.lastIndexOf('.');
        if (dot < 0)
        {
            return "application/octet-stream";
        }
        return TYPES.getOrDefault(fileName.substring(dot + 1).toLowerCase(Locale.ROOT), "application/octet-stream");
    }
}
