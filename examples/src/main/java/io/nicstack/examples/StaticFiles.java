package io.nicstack.examples;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Map;

/**
 * Maps a decoded request path to a regular file under a root directory. {@code ..} may never
 * climb above the root (403), and the real path of the file (symbolic links resolved) must stay
 * under the real root too (403); missing files are 404. A directory serves its {@code index.html}.
 */
public final class StaticFiles
{
    /** Outcome of a lookup: {@code status} 200 with the file, its size and type, or 403/404. */
    public record Lookup(int status, Path file, long size, String contentType)
    {
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

    public Lookup lookup(final String decodedPath)
    {
        if (decodedPath.indexOf('\0') >= 0 || !decodedPath.startsWith("/"))
        {
            return new Lookup(404, null, 0, null);
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
                    return new Lookup(403, null, 0, null); // would climb above the root
                }
                segments.removeLast();
                continue;
            }
            segments.addLast(s);
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
