package io.nicstack.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.agrona.CloseHelper;
import org.agrona.MutableDirectBuffer;

import io.nicstack.pipes.Protocol;
import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

/**
 * HTTP/1.1 static file server on the pipes: GET and HEAD, persistent connections (the default in
 * 1.1; {@code Connection: close} honoured; 1.0 only with {@code Connection: keep-alive}; closed after
 * a request with a chunked body, which is not read), Content-Length on every response but a 304, Last-Modified on
 * a file's (RFC 9110 §8.8.2) and 304 (Not Modified) to a GET or HEAD whose If-Modified-Since is not earlier
 * (§13.1.3, unless it has an If-None-Match), 301 to a directory's name with its slash,
 * 404/403/400/413/414/431/501/503/505. Requests are parsed by
 * {@link HttpRequestParser} from at most 8 KiB of copied head bytes; pipelined requests wait in the
 * RX pipe until the response before them is fully queued.
 *
 * <p>File bodies are read from a {@link FileCache} open file straight into claimed TX pipe space
 * (one positional read per refill, no open/stat/close per request once a file is cached); files too large for the cache
 * are read with a {@link FileChannel} into the pipe instead. A streaming body is refilled only once
 * a useful amount of the pipe is free ({@link #LOW_WATER}), so the loop makes a few large copies
 * rather than one per acknowledgement, and a pipe found more than half drained asks the server to
 * park for shorter ({@link ConnectionHandler#hurry()}). The 200 response head is assembled from
 * cached pieces (date once a second, per-file header fields) in a per-connection buffer: serving a
 * cached file allocates nothing beyond what the parser does. Per connection the memory is the 8 KiB
 * parser buffer and the response head, never the file.
 *
 * <p>Unless made with {@code sendFiles} false ({@code --copy}), a cached file of at least
 * {@link #SEND_FILE_MIN} bytes is not copied at all: after its head, the body goes to the daemon as a
 * SEND_FILE ({@link PipeConnection#sendFile}) and the daemon reads it into the TX pipe itself, as a NIC
 * would DMA it from the page cache; the connection waits for the daemon's answer before its next
 * response. If the daemon refuses (it may not read this app's files), the body is copied as above and
 * the app stops asking. A file that shrank before the daemon read a byte of it gets the same answer
 * (FILE_UNREADABLE, 0 bytes); the app tells it apart by the file's size and resets that response alone,
 * as when a copy comes up short.
 */
final class HttpApp
{
    static final String SERVER = "nicstack-examples";
    static final long IDLE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** Files cached (open) at most, their bytes at most, largest file cached, how long an entry is trusted. */
    static final int CACHE_ENTRIES = 1024;
    static final long CACHE_BYTES = 512L << 20;
    static final long CACHE_FILE_BYTES = 64L << 20;
    static final long CACHE_REVALIDATE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /**
     * A streaming body is refilled once this much TX pipe space is free (at most a quarter of the pipe,
     * or the rest of the body if that is less): large copies, and no wake-up per acknowledgement.
     */
    static final int LOW_WATER = 64 * 1024;
    /** Smallest body handed to the daemon (SEND_FILE); smaller ones are copied with their head in one span. */
    static final int SEND_FILE_MIN = 32 * 1024;
    /** IMF-fixdate (RFC 9110 §5.6.7): always two digits for the day, always GMT. */
    static final DateTimeFormatter DATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);
    private static final byte[] OK_UP_TO_DATE =
        ("HTTP/1.1 200 OK\r\nServer: " + SERVER + "\r\nDate: ").getBytes(StandardCharsets.ISO_8859_1);
    private static final byte[] CONNECTION_CLOSE = "Connection: close\r\n".getBytes(StandardCharsets.ISO_8859_1);
    private static final byte[] CONNECTION_KEEP_ALIVE = "Connection: keep-alive\r\n".getBytes(StandardCharsets.ISO_8859_1);
    private static final byte[] LAST_MODIFIED = "Last-Modified: ".getBytes(StandardCharsets.ISO_8859_1);
    private static final String MONTHS = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)";
    private static final String TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
    /** RFC 9110 §5.6.7: IMF-fixdate, the obsolete RFC 850 date (two-digit year) and the obsolete asctime date. */
    private static final Pattern IMF_FIXDATE =
        Pattern.compile("(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) " + MONTHS + " (\\d{4}) " + TIME + " GMT");
    private static final Pattern RFC850_DATE = Pattern.compile(
        "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-" + MONTHS + "-(\\d{2}) " + TIME + " GMT");
    private static final Pattern ASCTIME_DATE =
        Pattern.compile("(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + MONTHS + " ( \\d|\\d{2}) " + TIME + " (\\d{4})");
    /** What {@link #parseHttpDate} answers for a value that is no HTTP-date. */
    static final long NOT_A_DATE = Long.MIN_VALUE;

    private final StaticFiles files;
    private final FileCache cache;
    private boolean sendFiles;
    private long dateSecond = Long.MIN_VALUE;
    private byte[] date;

    /** @param sendFiles whether large bodies go by SEND_FILE (the daemon reads them) rather than by copy. */
    HttpApp(final StaticFiles files, final boolean sendFiles)
    {
        this.files = files;
        this.cache = new FileCache(CACHE_ENTRIES, CACHE_BYTES, CACHE_FILE_BYTES, CACHE_REVALIDATE_NANOS,
            sendFiles ? SEND_FILE_MIN : Long.MAX_VALUE);
        this.sendFiles = sendFiles;
    }

    ConnectionHandler handler(final PipeConnection conn)
    {
        return new Handler(conn);
    }

    /** Files in the open-file cache now. */
    int cachedFiles()
    {
        return cache.entries();
    }

    /** Bytes of a response head; no Content-Length if {@code contentLength} is negative (a 304). */
    static byte[] responseHead(final int status, final String reason, final long contentLength, final String contentType,
        final boolean keepAlive, final int minorVersion, final String extraHeaders)
    {
        final StringBuilder sb = new StringBuilder(256);
        sb.append("HTTP/1.1 ").append(status).append(' ').append(reason).append("\r\n");
        sb.append("Server: ").append(SERVER).append("\r\n");
        sb.append("Date: ").append(DATE.format(Instant.now())).append("\r\n");
        if (contentType != null)
        {
            sb.append("Content-Type: ").append(contentType).append("\r\n");
        }
        if (contentLength >= 0)
        {
            sb.append("Content-Length: ").append(contentLength).append("\r\n");
        }
        if (!keepAlive)
        {
            sb.append("Connection: close\r\n");
        }
        else if (minorVersion == 0)
        {
            sb.append("Connection: keep-alive\r\n");
        }
        if (extraHeaders != null)
        {
            sb.append(extraHeaders);
        }
        sb.append("\r\n");
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * The head of a 200 response for a cached file, byte for byte what {@link #responseHead} makes with
     * {@link #lastModifiedField} as its extra header fields, into {@code dst}: returns its length, or minus the length
     * needed if {@code dst} is too small (then nothing is written). Allocates nothing but the date, once a second.
     */
    int okHead(final FileCache.Entry e, final boolean keepAlive, final int minorVersion, final long nowMillis,
        final byte[] dst)
    {
        final byte[] d = date(nowMillis);
        final byte[] fields = e.headFields();
        final byte[] connection = !keepAlive ? CONNECTION_CLOSE : minorVersion == 0 ? CONNECTION_KEEP_ALIVE : null;
        // RFC 9110 §8.8.2.1 (lastModified): never later than the Date, so a file modified in the future says the Date.
        final byte[] modified = lastModified(e.lastModifiedSeconds(), nowMillis) == e.lastModifiedSeconds()
            ? e.lastModifiedDate() : d;
        final int length = OK_UP_TO_DATE.length + d.length + 2 + fields.length +
            (connection == null ? 0 : connection.length) + LAST_MODIFIED.length + modified.length + 2 + 2;
        if (dst.length < length)
        {
            return -length;
        }
        int i = put(dst, 0, OK_UP_TO_DATE);
        i = put(dst, i, d);
        dst[i++] = '\r';
        dst[i++] = '\n';
        i = put(dst, i, fields);
        if (connection != null)
        {
            i = put(dst, i, connection);
        }
        i = put(dst, i, LAST_MODIFIED);
        i = put(dst, i, modified);
        dst[i++] = '\r';
        dst[i++] = '\n';
        dst[i++] = '\r';
        dst[i++] = '\n';
        return i;
    }

    /** {@code seconds} since the epoch as an IMF-fixdate (RFC 9110 §5.6.7). */
    static String httpDate(final long seconds)
    {
        return DATE.format(Instant.ofEpochSecond(seconds));
    }

    /**
     * The Last-Modified a response sends for a file modified at {@code modifiedSeconds}: never later than the
     * response's Date (RFC 9110 §8.8.2.1), so a file modified in the future is said to be modified now.
     */
    static long lastModified(final long modifiedSeconds, final long nowMillis)
    {
        return Math.min(modifiedSeconds, Math.floorDiv(nowMillis, 1000));
    }

    /** The Last-Modified header field line (RFC 9110 §8.8.2) for {@code seconds}, CRLF-terminated. */
    static String lastModifiedField(final long seconds)
    {
        return "Last-Modified: " + httpDate(seconds) + "\r\n";
    }

    /**
     * Seconds since the epoch of an HTTP-date (RFC 9110 §5.6.7: an IMF-fixdate, or one of the obsolete RFC 850 and
     * asctime forms, which a recipient must accept too), or {@link #NOT_A_DATE}. A two-digit RFC 850 year more than 50
     * years ahead of {@code nowMillis} is the latest past year with those digits, as §5.6.7 says.
     */
    static long parseHttpDate(final String value, final long nowMillis)
    {
        Matcher m = IMF_FIXDATE.matcher(value);
        final int day;
        final String month;
        int year;
        final int timeGroup;
        if (m.matches())
        {
            day = Integer.parseInt(m.group(1));
            month = m.group(2);
            year = Integer.parseInt(m.group(3));
            timeGroup = 4;
        }
        else if ((m = RFC850_DATE.matcher(value)).matches())
        {
            day = Integer.parseInt(m.group(1));
            month = m.group(2);
            final int thisYear = Instant.ofEpochMilli(nowMillis).atZone(ZoneOffset.UTC).getYear();
            year = thisYear - Math.floorMod(thisYear, 100) + Integer.parseInt(m.group(3));
            if (year > thisYear + 50)
            {
                year -= 100;
            }
            timeGroup = 4;
        }
        else if ((m = ASCTIME_DATE.matcher(value)).matches())
        {
            month = m.group(1);
            day = Integer.parseInt(m.group(2).trim());
            year = Integer.parseInt(m.group(6));
            timeGroup = 3;
        }
        else
        {
            return NOT_A_DATE;
        }
        final int hour = Integer.parseInt(m.group(timeGroup));
        final int minute = Integer.parseInt(m.group(timeGroup + 1));
        final int second = Integer.parseInt(m.group(timeGroup + 2));
        if (second > 60)
        {
            return NOT_A_DATE;
        }
        try
        {
            // time-of-day allows a leap second (RFC 9110 §5.6.7: second 60); java.time has none, so it is 59.
            return LocalDateTime.of(year, "JanFebMarAprMayJunJulAugSepOctNovDec".indexOf(month) / 3 + 1, day, hour, minute,
                Math.min(second, 59)).toEpochSecond(ZoneOffset.UTC);
        }
        catch (final DateTimeException e)
        {
            return NOT_A_DATE; // no such day (31 Feb) or time (25:00)
        }
    }

    /**
     * Whether a GET or HEAD (the only methods the parser lets through) for a representation last modified at
     * {@code lastModifiedSeconds} (as its Last-Modified says) is answered 304 (Not Modified) rather than 200: RFC 9110
     * §13.1.3, it has an If-Modified-Since that is a valid HTTP-date not earlier than that, and (§13.2.2) no
     * If-None-Match, which would take precedence. An invalid or repeated If-Modified-Since is ignored.
     */
    static boolean notModified(final HttpRequestParser.Request request, final long lastModifiedSeconds,
        final long nowMillis)
    {
        if (request.ifNoneMatch() || request.ifModifiedSince() == null)
        {
            return false;
        }
        final long since = parseHttpDate(request.ifModifiedSince(), nowMillis);
        return since != NOT_A_DATE && lastModifiedSeconds <= since;
    }

    /**
     * The head of a 304 (Not Modified, RFC 9110 §15.4.5): the fields a 200 would have that guide a cache (Date,
     * Last-Modified), no content and so no Content-Length or Content-Type; the connection kept as the 200's would be.
     */
    static byte[] notModifiedHead(final long lastModifiedSeconds, final boolean keepAlive, final int minorVersion)
    {
        return responseHead(304, reason(304), -1, null, keepAlive, minorVersion, lastModifiedField(lastModifiedSeconds));
    }

    /** The Date value for {@code nowMillis}, formatted once per second. */
    private byte[] date(final long nowMillis)
    {
        final long second = Math.floorDiv(nowMillis, 1000);
        if (second != dateSecond)
        {
            dateSecond = second;
            date = DATE.format(Instant.ofEpochSecond(second)).getBytes(StandardCharsets.ISO_8859_1);
        }
        return date;
    }

    private static int put(final byte[] dst, final int at, final byte[] src)
    {
        System.arraycopy(src, 0, dst, at, src.length);
        return at + src.length;
    }

    /** The response to a request the parser refused: a head and a short text body, or null for HEAD. */
    record ErrorResponse(byte[] head, byte[] body)
    {
    }

    /** RFC 9110 9.3.2: a HEAD gets the header fields a GET would get (Content-Length included), and no content. */
    static ErrorResponse errorResponse(final int status, final String message, final boolean head)
    {
        final byte[] text = (status + " " + reason(status) + ": " + message + "\n").getBytes(StandardCharsets.US_ASCII);
        final byte[] h = responseHead(status, reason(status), text.length, "text/plain; charset=utf-8", false, 1,
            status == 501 ? "Allow: GET, HEAD\r\n" : null);
        return new ErrorResponse(h, head ? null : text);
    }

    /**
     * The status of a response whose file, found by its lookup, could not be opened: 404 if it is gone (removed or
     * renamed since the lookup, RFC 9110 §15.5.5), 403 if it is there but is no readable regular file (RFC 9110
     * §15.5.4), and 503 if it is one (RFC 9110 §15.6.4): then the open failed for want of something on our side, most
     * often a descriptor (EMFILE, ENFILE), which the next try may well find, and the client is not told it is forbidden.
     */
    static int unopenedFileStatus(final Path file)
    {
        return unopenedFileStatus(file, null);
    }

    /**
     * As {@link #unopenedFileStatus(Path)}, given why the open failed: a 403 if {@link BodyFile#open} refused what it
     * opened as not the file looked up (a symbolic link swapped onto its path, which the lookup would now answer 403),
     * or if the open was denied.
     */
    static int unopenedFileStatus(final Path file, final Exception why)
    {
        if (why instanceof AccessDeniedException)
        {
            return 403;
        }
        if (Files.notExists(file))
        {
            return 404;
        }
        return Files.isRegularFile(file) && Files.isReadable(file) ? 503 : 403;
    }

    static String reason(final int status)
    {
        switch (status)
        {
            case 200: return "OK";
            case 301: return "Moved Permanently";
            case 304: return "Not Modified";
            case 400: return "Bad Request";
            case 403: return "Forbidden";
            case 404: return "Not Found";
            case 413: return "Content Too Large";
            case 414: return "URI Too Long";
            case 431: return "Request Header Fields Too Large";
            case 501: return "Not Implemented";
            case 503: return "Service Unavailable";
            case 505: return "HTTP Version Not Supported";
            default: return "Error";
        }
    }

    /**
     * Header fields of the response to a lookup that did not find a file, or null: a redirect's Location, the query of
     * the request kept (as nginx keeps it), which only follows the path and cannot move it to another host.
     */
    static String statusHeaders(final StaticFiles.Lookup lookup, final HttpRequestParser.Request request)
    {
        if (lookup.status() != 301)
        {
            return null;
        }
        final String target = request.target();
        final int q = target.indexOf('?');
        final int h = target.indexOf('#', q < 0 ? 0 : q);
        final String query = q < 0 ? "" : h < 0 ? target.substring(q) : target.substring(q, h);
        return "Location: " + lookup.location() + query + "\r\n";
    }

    final class Handler extends ConnectionHandler
    {
        private final HttpRequestParser parser = new HttpRequestParser();
        private byte[] headBuffer = new byte[256]; // reused for the 200 heads of cached files
        private byte[] head;
        private int headLength;
        private int headPos;
        private byte[] body; // small error bodies only
        private int bodyPos;
        private FileCache.Entry entry; // the body's open file, in use while responding
        private BodyFile file;         // or the body's file, when it is not cached
        private long filePos;
        private long fileEnd;
        private boolean streaming;     // the body did not fit at the first try: later visits refill the pipe
        private boolean fileByDaemon;  // the body goes by SEND_FILE
        private boolean fileAwaited;   // ... which was sent and is not answered yet
        private boolean noDelaySet;
        private boolean responding;
        private boolean closeAfterResponse;
        private long discardBody;
        private boolean started;
        private long lastActivity;
        private final HttpDeadlines deadlines = new HttpDeadlines();

        Handler(final PipeConnection conn)
        {
            super(conn);
        }

        @Override
        protected int serviceOpen(final long now) throws NicstackException
        {
            int work = 0;
            if (!started)
            {
                started = true;
                lastActivity = now; // the server's clock, not ours
            }
            if (responding)
            {
                // The peer's acknowledgements are progress, seen before the deadline: all of it while the daemon writes
                // the body (SEND_FILE), and while the app waits for room to copy more (it refills only in chunks).
                deadlines.released(conn.txReleased(), now);
            }
            if (deadlines.expired(now) != null)
            {
                // A request head or body that takes too long, or a peer that reads nothing: free the slot and the file.
                reset();
                return 1;
            }
            if (!noDelaySet)
            {
                // As NioHttpApp's TCP_NODELAY: the last, short segment of a response goes out at once instead of
                // waiting (Nagle) for the acknowledgement of the data before it, which a delayed ACK can hold
                // back for 40 ms.
                noDelaySet = true;
                conn.setOption(Protocol.OPTION_NO_DELAY, 1);
            }
            if (responding)
            {
                work += pump(now);
            }
            while (!responding && !outputShut())
            {
                final int readable = conn.peek();
                if (readable == 0)
                {
                    if (work == 0 && now - lastActivity > IDLE_TIMEOUT_NANOS)
                    {
                        shutdownAndLinger(now); // idle keep-alive connection
                        work++;
                    }
                    break;
                }
                work++;
                if (readable < 0)
                {
                    // Peer's FIN. A half-sent request gets no answer; every complete one was answered.
                    shutdownAndLinger(now);
                    break;
                }
                if (discardBody > 0)
                {
                    lastActivity = now;
                    final int n = (int)Math.min(readable, discardBody);
                    conn.release(n);
                    discardBody -= n;
                    if (discardBody == 0)
                    {
                        deadlines.bodyDone();
                    }
                    continue;
                }
                final int consumed = parser.feed(conn.rxBuffer(), conn.rxIndex(), readable);
                conn.release(consumed);
                if (!parser.beforeRequest())
                {
                    // RFC 9112 §2.2 lets empty lines before a request be skipped, not keep a connection: a drip of
                    // CRLFs is no activity, and the idle timeout closes it (nginx times any first byte).
                    lastActivity = now;
                }
                switch (parser.state())
                {
                    case COMPLETE:
                        deadlines.requestDone();
                        respond(parser.request(), now);
                        parser.reset();
                        work += pump(now);
                        break;
                    case ERROR:
                        deadlines.requestDone();
                        deadlines.responseStarted(now);
                        respondError(parser.errorStatus(), parser.errorMessage(), parser.errorOnHead());
                        work += pump(now);
                        break;
                    default:
                        if (parser.hasPartialRequest())
                        {
                            // Only a head begun: blank lines between requests (RFC 9112 §2.2) start no deadline.
                            deadlines.requestBytes(now);
                        }
                        break;
                }
            }
            return work;
        }

        private void respond(final HttpRequestParser.Request request, final long now)
        {
            deadlines.responseStarted(now);
            discardBody = request.contentLength();
            closeAfterResponse = !request.keepAlive();
            // Keyed by what the lookup makes of the path: aliases ("//x", "/./x", "/a/../x") share one entry and file.
            final FileCache.Entry e = cache.serve(files, request.path(), now);
            if (e == null)
            {
                final StaticFiles.Lookup lookup = cache.missed();
                if (lookup.status() != 200)
                {
                    respondStatus(lookup.status(), request, statusHeaders(lookup, request));
                }
                else
                {
                    respondFromChannel(lookup, request);
                }
                return;
            }
            final long nowMillis = System.currentTimeMillis();
            final long lastModified = lastModified(e.lastModifiedSeconds(), nowMillis);
            if (notModified(request, lastModified, nowMillis))
            {
                final byte[] h = notModifiedHead(lastModified, request.keepAlive(), request.minorVersion());
                start(h, h.length, null);
                return;
            }
            int length = okHead(e, request.keepAlive(), request.minorVersion(), nowMillis, headBuffer);
            if (length < 0)
            {
                headBuffer = new byte[-length];
                length = okHead(e, request.keepAlive(), request.minorVersion(), nowMillis, headBuffer);
            }
            start(headBuffer, length, null);
            if (!request.head())
            {
                cache.use(e);
                entry = e;
                fileEnd = e.size();
                fileByDaemon = sendFiles && e.sendable() != null && fileEnd >= SEND_FILE_MIN;
            }
        }

        /** A file the cache does not hold (too large, or not readable): opened for this response alone. */
        private void respondFromChannel(final StaticFiles.Lookup lookup, final HttpRequestParser.Request request)
        {
            BodyFile body = null;
            final long size;
            try
            {
                body = BodyFile.open(lookup.file(), sendFiles && !request.head());
                size = body.size();
            }
            catch (final IOException | RuntimeException e)
            {
                CloseHelper.quietClose(body);
                respondStatus(unopenedFileStatus(lookup.file(), e), request, null);
                return;
            }
            final long nowMillis = System.currentTimeMillis();
            final long lastModified = lastModified(body.modified().toInstant().getEpochSecond(), nowMillis);
            if (notModified(request, lastModified, nowMillis))
            {
                body.close();
                final byte[] h = notModifiedHead(lastModified, request.keepAlive(), request.minorVersion());
                start(h, h.length, null);
                return;
            }
            final byte[] h = responseHead(200, "OK", size, lookup.contentType(), request.keepAlive(),
                request.minorVersion(), lastModifiedField(lastModified));
            start(h, h.length, null);
            if (request.head())
            {
                body.close();
            }
            else
            {
                file = body;
                fileEnd = size;
                fileByDaemon = body.sendable() != null && size >= SEND_FILE_MIN;
            }
        }

        private void respondStatus(final int status, final HttpRequestParser.Request request, final String extraHeaders)
        {
            final byte[] text = (status + " " + reason(status) + "\n").getBytes(StandardCharsets.US_ASCII);
            final byte[] h = responseHead(status, reason(status), text.length, "text/plain; charset=utf-8",
                request.keepAlive(), request.minorVersion(), extraHeaders);
            start(h, h.length, request.head() ? null : text);
        }

        private void respondError(final int status, final String message, final boolean head)
        {
            closeAfterResponse = true; // after a malformed request the byte stream cannot be trusted
            final ErrorResponse r = errorResponse(status, message, head);
            start(r.head(), r.head().length, r.body());
        }

        /** A new response: its head, an optional small body; a file body is set up by the caller. */
        private void start(final byte[] h, final int length, final byte[] b)
        {
            head = h;
            headLength = length;
            headPos = 0;
            body = b;
            bodyPos = 0;
            filePos = 0;
            fileEnd = 0;
            streaming = false;
            fileByDaemon = false;
            fileAwaited = false;
            responding = true;
        }

        /**
         * Move as much of the current response into the TX pipe as fits now: head, small body and file
         * bytes back to back in each claimed span, one commit (doorbell) per span.
         */
        private int pump(final long now) throws NicstackException
        {
            int work = 0;
            if (fileAwaited)
            {
                if (conn.isSendingFile())
                {
                    return 0; // the daemon is appending the body
                }
                fileAwaited = false;
                work++;
                deadlines.responseStarted(now); // what is left, if anything, is ours to write again
                if (conn.fileReason() == Protocol.Reason.NONE)
                {
                    filePos = fileEnd;
                }
                else if (conn.fileBytes() == 0 && (conn.fileReason() == Protocol.Reason.FILE_UNREADABLE ||
                    conn.fileReason() == Protocol.Reason.BAD_ARGUMENT || conn.fileReason() == Protocol.Reason.BAD_MESSAGE)
                    && !fileEndsEarly())
                {
                    refused(conn.fileReason()); // the daemon will not read it: copy this body, and every later one
                    fileByDaemon = false;
                }
                else
                {
                    // The connection is gone, or the file could not be read to its end: by the daemon, or by anyone
                    // (it shrank before the daemon read a byte, which the daemon answers as it answers a refusal).
                    reset();
                    return work;
                }
            }
            long fileWritten = 0;
            while (true)
            {
                final int headLeft = headLength - headPos;
                final int bodyLeft = body == null ? 0 : body.length - bodyPos;
                final long fileLeft = fileByDaemon ? 0 : fileEnd - filePos;
                if (headLeft + bodyLeft + fileLeft == 0)
                {
                    break;
                }
                if (work == 0 && headLeft + bodyLeft == 0 && tooLittle(fileLeft))
                {
                    break; // continue when acknowledgements have freed enough space; once started, fill the pipe
                }
                final int writable = conn.claim((int)Math.min(headLeft + bodyLeft + fileLeft, Integer.MAX_VALUE));
                if (writable <= 0)
                {
                    break; // continue when acknowledgements have freed (enough) space
                }
                final MutableDirectBuffer tx = conn.txBuffer();
                final int index = conn.txIndex();
                int n = Math.min(headLeft, writable);
                tx.putBytes(index, head, headPos, n);
                headPos += n;
                final int b = Math.min(bodyLeft, writable - n);
                if (b > 0)
                {
                    tx.putBytes(index + n, body, bodyPos, b);
                    bodyPos += b;
                    n += b;
                }
                final int f = (int)Math.min(fileLeft, writable - n);
                if (f > 0)
                {
                    final int copied = entry != null ? (cache.copy(entry, filePos, tx, index + n, f) ? f : -1) :
                        readFile(tx, index + n, f);
                    if (copied <= 0)
                    {
                        reset(); // the file shrank under us: the promised Content-Length cannot be kept
                        return work + 1;
                    }
                    filePos += copied;
                    fileWritten += copied;
                    n += copied;
                }
                conn.commit(n);
                work++;
            }
            if (work > 0)
            {
                deadlines.progress(now);
            }
            if (streaming && fileWritten >= conn.txCapacity() / 2)
            {
                hurry(); // more than half the pipe drained since the last refill: the daemon is about to starve
            }
            if (fileByDaemon && headPos == headLength && filePos < fileEnd)
            {
                conn.sendFile(entry != null ? entry.sendable() : file.sendable(), filePos, fileEnd - filePos);
                fileAwaited = true;
                // The daemon writes the body now: until FILE_SENT the send deadline runs on what the peer acknowledges
                // (the TX pipe's head, which moves while the file is in flight), from where it stands now.
                deadlines.released(conn.txReleased(), now);
                return work + 1;
            }
            if (headPos < headLength || body != null && bodyPos < body.length || filePos < fileEnd)
            {
                streaming = true;
                return work;
            }
            // Response fully queued.
            responding = false;
            deadlines.responseDone();
            releaseResources();
            head = null;
            body = null;
            lastActivity = now;
            if (discardBody > 0)
            {
                deadlines.bodyStarted(now); // read from now on: each byte is activity, so only this bounds a drip
            }
            if (closeAfterResponse)
            {
                shutdownAndLinger(now);
            }
            return work + 1;
        }

        /**
         * Whether the body's file now ends before the end of the body: then a FILE_UNREADABLE with no byte sent is the
         * file's doing, not a refusal, and copying could not keep the Content-Length either. The daemon read through a
         * duplicate of our descriptor, so our fstat(2) sees the size it saw.
         */
        private boolean fileEndsEarly()
        {
            try
            {
                return entry != null ? cache.endsBefore(entry, fileEnd) : file.channel().size() < fileEnd;
            }
            catch (final IOException e)
            {
                return true;
            }
        }

        /** The daemon would not read our file: say so once, and copy bodies from now on. */
        private void refused(final int reason)
        {
            if (sendFiles)
            {
                sendFiles = false;
                cache.stopSending(); // its files are opened again for copying only: one descriptor each
                System.err.println("nicstack app: the daemon refused SEND_FILE (" + Protocol.Reason.describe(reason) +
                    "); file bodies are copied from now on");
            }
        }

        /**
         * Whether the TX pipe's free space (across its wrap) is too little to bother refilling: less than the
         * low-water mark (at most a quarter of the pipe) and less than the rest of the body.
         */
        private boolean tooLittle(final long rest)
        {
            final int lowWater = Math.min(LOW_WATER, conn.txCapacity() / 4);
            return conn.txFree() < Math.min(lowWater, rest);
        }

        /** The uncached file → TX pipe (as the cache reads its files); -1 when it cannot be read. */
        private int readFile(final MutableDirectBuffer tx, final int index, final int max)
        {
            try
            {
                return cache.read(file.channel(), filePos, tx, index, max);
            }
            catch (final IOException e)
            {
                return -1;
            }
        }

        @Override
        protected void releaseResources()
        {
            if (entry != null)
            {
                cache.release(entry);
                entry = null;
            }
            CloseHelper.quietClose(file);
            file = null;
        }
    }
}
