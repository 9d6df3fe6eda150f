package io.nicstack.examples;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.StandardOpenOption;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.TimeUnit;

import org.agrona.MutableDirectBuffer;

import io.nicstack.pipes.client.NicstackException;
import io.nicstack.pipes.client.PipeConnection;

/**
 * HTTP/1.1 static file server on the pipes: GET and HEAD, persistent connections (the default in
 * 1.1; {@code Connection: close} honoured; 1.0 only with {@code Connection: keep-alive}),
 * Content-Length on every response, 404/403/400/501/505. Requests are parsed by
 * {@link HttpRequestParser} from at most 8 KiB of copied head bytes; pipelined requests wait in the
 * RX pipe until the response before them is fully queued. File bodies go from a {@link FileChannel}
 * straight into claimed TX pipe space, chunk by chunk as acknowledgements free it: per connection
 * the memory is the 8 KiB parser buffer and the response head, never the file.
 */
final class HttpApp
{
    static final String SERVER = "nicstack-examples";
    static final long IDLE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final int SCRATCH = 64 * 1024;
    private static final DateTimeFormatter DATE = DateTimeFormatter.RFC_1123_DATE_TIME;

    private final StaticFiles files;
    /** Shared by all connections of the (single-threaded) server when the TX buffer has no ByteBuffer view. */
    private final ByteBuffer scratch = ByteBuffer.allocateDirect(SCRATCH);

    HttpApp(final StaticFiles files)
    {
        this.files = files;
    }

    ConnectionHandler handler(final PipeConnection conn)
    {
        return new Handler(conn);
    }

    /** Bytes of a response head. */
    static byte[] responseHead(final int status, final String reason, final long contentLength, final String contentType,
        final boolean keepAlive, final int minorVersion, final String extraHeaders)
    {
        final StringBuilder sb = new StringBuilder(256);
        sb.append("HTTP/1.1 ").append(status).append(' ').append(reason).append("\r\n");
        sb.append("Server: ").append(SERVER).append("\r\n");
        sb.append("Date: ").append(DATE.format(ZonedDateTime.now(ZoneOffset.UTC))).append("\r\n");
        if (contentType != null)
        {
            sb.append("Content-Type: ").append(contentType).append("\r\n");
        }
        sb.append("Content-Length: ").append(contentLength).append("\r\n");
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

    static String reason(final int status)
    {
        switch (status)
        {
            case 200: return "OK";
            case 400: return "Bad Request";
            case 403: return "Forbidden";
            case 404: return "Not Found";
            case 501: return "Not Implemented";
            case 505: return "HTTP Version Not Supported";
            default: return "Error";
        }
    }

    final class Handler extends ConnectionHandler
    {
        private final HttpRequestParser parser = new HttpRequestParser();
        private byte[] head;
        private int headPos;
        private byte[] body; // small error bodies only
        private int bodyPos;
        private FileChannel file;
        private long filePos;
        private long fileEnd;
        private boolean responding;
        private boolean closeAfterResponse;
        private long discardBody;
        private long lastActivity = System.nanoTime();
        private ByteBuffer txView;
        private ByteBuffer txViewOf;

        Handler(final PipeConnection conn)
        {
            super(conn);
        }

        @Override
        protected int serviceOpen(final long now) throws NicstackException
        {
            int work = 0;
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
                lastActivity = now;
                work++;
                if (readable < 0)
                {
                    // Peer's FIN. A half-sent request gets no answer; every complete one was answered.
                    shutdownAndLinger(now);
                    break;
                }
                if (discardBody > 0)
                {
                    final int n = (int)Math.min(readable, discardBody);
                    conn.release(n);
                    discardBody -= n;
                    continue;
                }
                final int consumed = parser.feed(conn.rxBuffer(), conn.rxIndex(), readable);
                conn.release(consumed);
                switch (parser.state())
                {
                    case COMPLETE:
                        respond(parser.request());
                        parser.reset();
                        work += pump(now);
                        break;
                    case ERROR:
                        respondError(parser.errorStatus(), parser.errorMessage());
                        work += pump(now);
                        break;
                    default:
                        break;
                }
            }
            return work;
        }

        private void respond(final HttpRequestParser.Request request)
        {
            discardBody = request.contentLength();
            closeAfterResponse = !request.keepAlive();
            final StaticFiles.Lookup lookup = files.lookup(request.path());
            if (lookup.status() != 200)
            {
                final byte[] text = (lookup.status() + " " + reason(lookup.status()) + "\n").getBytes(StandardCharsets.US_ASCII);
                start(responseHead(lookup.status(), reason(lookup.status()), text.length, "text/plain; charset=utf-8",
                    request.keepAlive(), request.minorVersion(), null), request.head() ? null : text, null, 0);
                return;
            }
            FileChannel channel = null;
            long size = lookup.size();
            try
            {
                channel = FileChannel.open(lookup.file(), StandardOpenOption.READ);
                size = channel.size();
            }
            catch (final IOException e)
            {
                final byte[] text = "403 Forbidden\n".getBytes(StandardCharsets.US_ASCII);
                start(responseHead(403, reason(403), text.length, "text/plain; charset=utf-8", request.keepAlive(),
                    request.minorVersion(), null), request.head() ? null : text, null, 0);
                return;
            }
            final byte[] h = responseHead(200, "OK", size, lookup.contentType(), request.keepAlive(),
                request.minorVersion(), null);
            if (request.head())
            {
                closeQuietly(channel);
                start(h, null, null, 0);
            }
            else
            {
                start(h, null, channel, size);
            }
        }

        private void respondError(final int status, final String message)
        {
            closeAfterResponse = true; // after a malformed request the byte stream cannot be trusted
            final byte[] text = (status + " " + reason(status) + ": " + message + "\n").getBytes(StandardCharsets.US_ASCII);
            start(responseHead(status, reason(status), text.length, "text/plain; charset=utf-8", false, 1,
                status == 501 ? "Allow: GET, HEAD\r\n" : null), text, null, 0);
        }

        private void start(final byte[] h, final byte[] b, final FileChannel f, final long size)
        {
            head = h;
            headPos = 0;
            body = b;
            bodyPos = 0;
            file = f;
            filePos = 0;
            fileEnd = size;
            responding = true;
        }

        /** Move as much of the current response into the TX pipe as fits now. */
        private int pump(final long now) throws NicstackException
        {
            int work = 0;
            headPos += copyOut(head, headPos);
            if (headPos < head.length)
            {
                return work;
            }
            if (body != null)
            {
                bodyPos += copyOut(body, bodyPos);
                if (bodyPos < body.length)
                {
                    return work;
                }
            }
            while (file != null && filePos < fileEnd)
            {
                final int writable = conn.claim((int)Math.min(fileEnd - filePos, Integer.MAX_VALUE));
                if (writable <= 0)
                {
                    return work; // TX pipe full: continue when acknowledgements free space
                }
                final int n = readFile(conn.txBuffer(), conn.txIndex(), (int)Math.min(writable, fileEnd - filePos));
                if (n <= 0)
                {
                    // The file shrank under us: the promised Content-Length cannot be kept; reset.
                    abort(null);
                    return work + 1;
                }
                conn.commit(n);
                filePos += n;
                work++;
            }
            // Response fully queued.
            responding = false;
            closeQuietly(file);
            file = null;
            head = null;
            body = null;
            lastActivity = now;
            if (closeAfterResponse)
            {
                shutdownAndLinger(now);
            }
            return work + 1;
        }

        private int copyOut(final byte[] src, final int from) throws NicstackException
        {
            int pos = from;
            while (pos < src.length)
            {
                final int writable = conn.claim(src.length - pos);
                if (writable <= 0)
                {
                    break;
                }
                final int n = Math.min(writable, src.length - pos);
                conn.txBuffer().putBytes(conn.txIndex(), src, pos, n);
                conn.commit(n);
                pos += n;
            }
            return pos - from;
        }

        /** FileChannel → TX pipe: straight into the pipe's memory when it has a ByteBuffer view, else via a scratch buffer. */
        private int readFile(final MutableDirectBuffer tx, final int index, final int max) throws NicstackException
        {
            try
            {
                final ByteBuffer backing = tx.byteBuffer();
                if (backing != null)
                {
                    if (txViewOf != backing)
                    {
                        txView = backing.duplicate();
                        txViewOf = backing;
                    }
                    final int offset = tx.wrapAdjustment() + index;
                    txView.limit(offset + max).position(offset);
                    return file.read(txView, filePos);
                }
                scratch.clear().limit(Math.min(max, scratch.capacity()));
                final int n = file.read(scratch, filePos);
                if (n > 0)
                {
                    tx.putBytes(index, scratch, 0, n);
                }
                return n;
            }
            catch (final IOException e)
            {
                return -1;
            }
        }

        @Override
        protected void releaseResources()
        {
            closeQuietly(file);
            file = null;
        }
    }

    private static void closeQuietly(final FileChannel c)
    {
        if (c != null)
        {
            try
            {
                c.close();
            }
            catch (final IOException ignored)
            {
                // Nothing to do.
            }
        }
    }
}
