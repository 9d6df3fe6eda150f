package io.nicstack.examples;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.agrona.CloseHelper;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The HTTP/1.1 static file server of {@link HttpApp}, on the JDK's NIO sockets over the kernel's TCP
 * instead of the pipes: the baseline for the host-CPU benchmark ({@code scripts/bench-http.sh}).
 *
 * <p>Same behaviour by construction: requests are parsed by the same {@link HttpRequestParser},
 * files are looked up by the same {@link StaticFiles} and kept open in the same {@link FileCache} (same bounds, same
 * revalidation, same key: no open, stat or close per request for a cached file, as {@link HttpApp}), response heads
 * come from {@link HttpApp#responseHead}; GET and HEAD, persistent connections (closed after a request with
 * a chunked body, which is not read), Content-Length on every response but a 304, Last-Modified and 304 (Not
 * Modified) as {@link HttpApp#notModified} says, 301 to a directory's name
 * with its slash, 404/403/400/413/414/431/501/503/505, request bodies discarded after the response
 * (within the same {@link HttpDeadlines}), a malformed request answered and the connection closed,
 * pipelined requests read only after the response before them is fully written, idle keep-alive
 * connections closed after 60 s, a closing connection lingers (reads and discards) until the peer's
 * FIN or 30 s.
 *
 * <p>One thread, one {@link Selector}, non-blocking {@link SocketChannel}s with {@code TCP_NODELAY}.
 * File bodies are sent one of two ways:
 * <ul>
 * <li>{@code transfer} (the default): {@link FileChannel#transferTo}, i.e. {@code sendfile(2)}: the
 *   kernel moves page-cache pages to the socket, no copy through user space. The head is written first
 *   with its own {@code write}.</li>
 * <li>{@code copy} ({@code --copy}): {@code pread} into a 64 KiB direct {@link ByteBuffer} per connection
 *   (the head goes first into the same buffer), then {@code write} from it: the data crosses user
 *   space once, like the pipe app, which reads the file into the TX pipe.</li>
 * </ul>
 */
final class NioHttpApp
{
    static final int COPY_BUFFER = 64 * 1024;
    private static final int READ_BUFFER = 4 * 1024;
    private static final long LINGER_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final StaticFiles files;
    private final FileCache cache = new FileCache(HttpApp.CACHE_ENTRIES, HttpApp.CACHE_BYTES, HttpApp.CACHE_FILE_BYTES,
        HttpApp.CACHE_REVALIDATE_NANOS, Long.MAX_VALUE);
    private final boolean copy;
    private final int maxConnections;
    private final Selector selector;
    private final ServerSocketChannel server;
    private final List<Conn> sweep = new ArrayList<>();
    private volatile boolean running = true;
    private int connections;
    private long now;

    NioHttpApp(final StaticFiles files, final InetSocketAddress bind, final int backlog, final int maxConnections,
        final boolean copy) throws IOException
    {
        this.files = files;
        this.copy = copy;
        this.maxConnections = maxConnections;
        this.selector = Selector.open();
        ServerSocketChannel s = null;
        try
        {
            s = ServerSocketChannel.open();
            s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            s.bind(bind, backlog);
            s.configureBlocking(false);
            s.register(selector, SelectionKey.OP_ACCEPT);
        }
        catch (final IOException | RuntimeException e)
        {
            if (s != null)
            {
                s.close();
            }
            selector.close();
            throw e;
        }
        this.server = s;
    }

    /** Files in the open-file cache now. */
    int cachedFiles()
    {
        return cache.entries();
    }

    int port()
    {
        return ((InetSocketAddress)server.socket().getLocalSocketAddress()).getPort();
    }

    /** Ask {@link #run()} to return (any thread, signal handlers included). */
    void stop()
    {
        running = false;
        selector.wakeup();
    }

    /** Serve until {@link #stop()}; closes every connection, the listener and the selector on the way out. */
    void run() throws IOException
    {
        long nextSweep = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        try
        {
            while (running)
            {
                selector.select(this::ready, 1000);
                now = System.nanoTime();
                if (now - nextSweep >= 0)
                {
                    sweepIdle();
                    nextSweep = now + TimeUnit.SECONDS.toNanos(1);
                }
            }
        }
        finally
        {
            for (final SelectionKey k : selector.keys())
            {
                if (k.attachment() instanceof Conn)
                {
                    ((Conn)k.attachment()).close();
                }
            }
            cache.clear();
            server.close();
            selector.close();
        }
    }

    private void ready(final SelectionKey key)
    {
        now = System.nanoTime();
        if (!key.isValid())
        {
            return;
        }
        final Object a = key.attachment();
        if (a == null)
        {
            acceptPending();
            return;
        }
        final Conn c = (Conn)a;
        try
        {
            c.ready(key.readyOps());
        }
        catch (final IOException | RuntimeException e)
        {
            c.abort(); // reset by peer, broken pipe and the like: whatever was under way is cut short
        }
    }

    private void acceptPending()
    {
        while (true)
        {
            final SocketChannel ch;
            try
            {
                ch = server.accept();
                if (ch == null)
                {
                    return;
                }
            }
            catch (final IOException e)
            {
                return; // e.g. out of file descriptors: try again on the next readiness
            }
            try
            {
                if (connections >= maxConnections)
                {
                    ch.close();
                    continue;
                }
                ch.configureBlocking(false);
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                final Conn c = new Conn(ch);
                c.key = ch.register(selector, SelectionKey.OP_READ, c);
                connections++;
            }
            catch (final IOException e)
            {
                try
                {
                    ch.close();
                }
                catch (final IOException ignored)
                {
                    // Nothing to do.
                }
            }
        }
    }

    private void sweepIdle()
    {
        sweep.clear();
        for (final SelectionKey k : selector.keys())
        {
            if (k.attachment() instanceof Conn)
            {
                sweep.add((Conn)k.attachment());
            }
        }
        for (final Conn c : sweep)
        {
            c.checkTimers();
        }
    }

    /** One connection's state: the parser, the response being written, the linger after a close. */
    private final class Conn
    {
        private final SocketChannel ch;
        private final HttpRequestParser parser = new HttpRequestParser();
        private final ByteBuffer in = ByteBuffer.allocateDirect(READ_BUFFER);
        private final UnsafeBuffer inView = new UnsafeBuffer(in);
        private int inStart;
        private int inEnd;
        private SelectionKey key;
        private ByteBuffer out; // response bytes not yet written (head, small body; file data in copy mode)
        private ByteBuffer copyBuffer;
        private FileChannel file;      // the body's file: the cache entry's channel, or one opened for this response
        private FileCache.Entry entry; // the body's cache entry, in use while responding; null if it is not cached
        private long filePos;
        private long fileEnd;
        private boolean responding;
        private boolean closeAfterResponse;
        private boolean lingering;
        private boolean closed;
        private long discardBody;
        private long lastActivity = now;
        private final HttpDeadlines deadlines = new HttpDeadlines();
        private long lingerDeadline;

        Conn(final SocketChannel ch)
        {
            this.ch = ch;
        }

        void ready(final int ops) throws IOException
        {
            if (lingering)
            {
                drainLinger();
                return;
            }
            if (responding)
            {
                if ((ops & SelectionKey.OP_WRITE) != 0 && pump())
                {
                    serviceInput(false); // pipelined requests already read; otherwise wait for readiness
                }
                return;
            }
            if ((ops & SelectionKey.OP_READ) != 0)
            {
                serviceInput(true);
            }
        }

        /** Parse and answer buffered requests; read from the socket when the buffer is empty and {@code read}. */
        private void serviceInput(final boolean read) throws IOException
        {
            boolean mayRead = read;
            while (!responding && !lingering && !closed)
            {
                if (inStart == inEnd)
                {
                    if (!mayRead)
                    {
                        interest(SelectionKey.OP_READ); // wait for the next request without a read that would find nothing
                        return;
                    }
                    in.clear();
                    final int n = ch.read(in);
                    if (n == 0)
                    {
                        interest(SelectionKey.OP_READ);
                        return;
                    }
                    if (n < 0)
                    {
                        // Peer's FIN. A half-sent request gets no answer; every complete one was answered.
                        close();
                        return;
                    }
                    inStart = 0;
                    inEnd = n;
                    mayRead = n == READ_BUFFER; // a full buffer may have more behind it; otherwise wait for readiness
                }
                final int available = inEnd - inStart;
                if (discardBody > 0)
                {
                    lastActivity = now;
                    final int n = (int)Math.min(available, discardBody);
                    inStart += n;
                    discardBody -= n;
                    if (discardBody == 0)
                    {
                        deadlines.bodyDone();
                    }
                    continue;
                }
                inStart += parser.feed(inView, inStart, available);
                if (!parser.beforeRequest())
                {
                    // As HttpApp: empty lines before a request (RFC 9112 §2.2) are skipped, and are no activity.
                    lastActivity = now;
                }
                switch (parser.state())
                {
                    case COMPLETE:
                        deadlines.requestDone();
                        deadlines.responseStarted(now);
                        respond(parser.request());
                        parser.reset();
                        mayRead = false; // the client waits for this response before it sends the next request
                        pump();
                        break;
                    case ERROR:
                        deadlines.requestDone();
                        deadlines.responseStarted(now);
                        respondError(parser.errorStatus(), parser.errorMessage(), parser.errorOnHead());
                        pump();
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
        }

        private void respond(final HttpRequestParser.Request request)
        {
            discardBody = request.contentLength();
            closeAfterResponse = !request.keepAlive();
            // As HttpApp: the cache first, the lookup only for a miss or once the entry is due for revalidation.
            final FileCache.Entry e = cache.serve(files, request.path(), now);
            if (e == null)
            {
                final StaticFiles.Lookup lookup = cache.missed();
                if (lookup.status() != 200)
                {
                    respondStatus(lookup.status(), request, HttpApp.statusHeaders(lookup, request));
                }
                else
                {
                    respondFromChannel(lookup, request);
                }
                return;
            }
            final long nowMillis = System.currentTimeMillis();
            final long lastModified = HttpApp.lastModified(e.lastModifiedSeconds(), nowMillis);
            if (HttpApp.notModified(request, lastModified, nowMillis))
            {
                start(HttpApp.notModifiedHead(lastModified, request.keepAlive(), request.minorVersion()), null, null, 0);
                return;
            }
            final byte[] h = HttpApp.responseHead(200, "OK", e.size(), e.contentType(), request.keepAlive(),
                request.minorVersion(), lastModified == e.lastModifiedSeconds() ? e.lastModifiedField() :
                HttpApp.lastModifiedField(lastModified));
            if (request.head())
            {
                start(h, null, null, 0);
            }
            else
            {
                final FileChannel channel;
                try
                {
                    channel = e.channel(); // open already: this cache opens no file for sending
                }
                catch (final IOException ex)
                {
                    cache.drop(e);
                    respondStatus(HttpApp.unopenedFileStatus(e.file(), ex), request, null);
                    return;
                }
                start(h, null, channel, e.size());
                cache.use(e);
                entry = e;
            }
        }

        /** A status response with a one-line text body ("404 Not Found"), carrying {@code extraHeaders} (null: none). */
        private void respondStatus(final int status, final HttpRequestParser.Request request, final String extraHeaders)
        {
            final byte[] text = (status + " " + HttpApp.reason(status) + "\n").getBytes(StandardCharsets.US_ASCII);
            start(HttpApp.responseHead(status, HttpApp.reason(status), text.length, "text/plain; charset=utf-8",
                request.keepAlive(), request.minorVersion(), extraHeaders), request.head() ? null : text, null, 0);
        }

        /** A file the cache does not hold (too large, or not readable): opened for this response alone. */
        private void respondFromChannel(final StaticFiles.Lookup lookup, final HttpRequestParser.Request request)
        {
            FileChannel channel = null;
            long size;
            final long modified;
            try
            {
                final BodyFile body = BodyFile.open(lookup.file(), false);
                channel = body.channel();
                modified = body.modified().toInstant().getEpochSecond();
                size = channel.size();
            }
            catch (final IOException e)
            {
                CloseHelper.quietClose(channel);
                respondStatus(HttpApp.unopenedFileStatus(lookup.file(), e), request, null);
                return;
            }
            final long nowMillis = System.currentTimeMillis();
            final long lastModified = HttpApp.lastModified(modified, nowMillis);
            if (HttpApp.notModified(request, lastModified, nowMillis))
            {
                CloseHelper.quietClose(channel);
                start(HttpApp.notModifiedHead(lastModified, request.keepAlive(), request.minorVersion()), null, null, 0);
                return;
            }
            final byte[] h = HttpApp.responseHead(200, "OK", size, lookup.contentType(), request.keepAlive(),
                request.minorVersion(), HttpApp.lastModifiedField(lastModified));
            if (request.head())
            {
                CloseHelper.quietClose(channel);
                start(h, null, null, 0);
            }
            else
            {
                start(h, null, channel, size);
            }
        }

        private void respondError(final int status, final String message, final boolean head)
        {
            closeAfterResponse = true; // after a malformed request the byte stream cannot be trusted
            final HttpApp.ErrorResponse r = HttpApp.errorResponse(status, message, head);
            start(r.head(), r.body(), null, 0);
        }

        private void start(final byte[] head, final byte[] body, final FileChannel f, final long size)
        {
            final int length = head.length + (body == null ? 0 : body.length);
            if (copy && length <= COPY_BUFFER)
            {
                if (copyBuffer == null)
                {
                    copyBuffer = ByteBuffer.allocateDirect(COPY_BUFFER);
                }
                out = copyBuffer.clear();
                out.put(head);
                if (body != null)
                {
                    out.put(body);
                }
                out.flip();
            }
            else
            {
                final byte[] bytes = new byte[length];
                System.arraycopy(head, 0, bytes, 0, head.length);
                if (body != null)
                {
                    System.arraycopy(body, 0, bytes, head.length, body.length);
                }
                out = ByteBuffer.wrap(bytes);
            }
            file = f;
            filePos = 0;
            fileEnd = size;
            responding = true;
        }

        /** Write as much of the current response as the socket takes now; true when it is fully written. */
        private boolean pump() throws IOException
        {
            while (true)
            {
                if (out.hasRemaining())
                {
                    if (ch.write(out) > 0)
                    {
                        deadlines.progress(now);
                    }
                    if (out.hasRemaining())
                    {
                        interest(SelectionKey.OP_WRITE); // socket buffer full
                        return false;
                    }
                }
                if (file == null || filePos >= fileEnd)
                {
                    break;
                }
                if (copy)
                {
                    final ByteBuffer b = copyBuffer.clear();
                    if (fileEnd - filePos < b.capacity())
                    {
                        b.limit((int)(fileEnd - filePos));
                    }
                    final int n = file.read(b, filePos);
                    if (n <= 0)
                    {
                        shrank();
                        abort(); // the file shrank under us: the promised Content-Length cannot be kept
                        return false;
                    }
                    filePos += n;
                    out = b.flip();
                }
                else
                {
                    final long n = file.transferTo(filePos, fileEnd - filePos, ch);
                    if (n > 0)
                    {
                        deadlines.progress(now);
                    }
                    if (n == 0)
                    {
                        if (filePos >= file.size())
                        {
                            shrank();
                            abort(); // the file shrank under us
                            return false;
                        }
                        interest(SelectionKey.OP_WRITE);
                        return false;
                    }
                    filePos += n;
                }
            }
            // Response fully written.
            responding = false;
            deadlines.responseDone();
            releaseFile();
            out = null;
            lastActivity = now;
            if (discardBody > 0)
            {
                deadlines.bodyStarted(now); // read from now on: each read is activity, so only this bounds a drip
            }
            if (closeAfterResponse)
            {
                shutdownAndLinger();
                return false;
            }
            return true;
        }

        /** The body's file ended before its Content-Length: a cache entry of it is dropped (the next request opens it anew). */
        private void shrank()
        {
            if (entry != null)
            {
                cache.drop(entry);
            }
        }

        /** Done with the body's file: the cache entry released, or the file opened for this response closed. */
        private void releaseFile()
        {
            if (entry != null)
            {
                cache.release(entry);
                entry = null;
            }
            else
            {
                CloseHelper.quietClose(file);
            }
            file = null;
        }

        private void shutdownAndLinger() throws IOException
        {
            ch.shutdownOutput();
            lingering = true;
            lingerDeadline = now + LINGER_NANOS;
            interest(SelectionKey.OP_READ);
        }

        /** After our FIN: read and discard until the peer's FIN, so a reset cannot destroy the response in flight. */
        private void drainLinger() throws IOException
        {
            while (true)
            {
                in.clear();
                final int n = ch.read(in);
                if (n < 0)
                {
                    close();
                    return;
                }
                if (n == 0)
                {
                    return;
                }
            }
        }

        void checkTimers()
        {
            if (closed)
            {
                return;
            }
            if (lingering)
            {
                if (now - lingerDeadline > 0)
                {
                    close();
                }
                return;
            }
            if (deadlines.expired(now) != null)
            {
                abort(); // a request head or body that takes too long, or a peer that reads nothing
                return;
            }
            if (!responding && now - lastActivity > HttpApp.IDLE_TIMEOUT_NANOS)
            {
                try
                {
                    shutdownAndLinger(); // idle keep-alive connection
                }
                catch (final IOException e)
                {
                    close();
                }
            }
        }

        private void interest(final int ops) throws ClosedChannelException
        {
            if (key.interestOps() != ops)
            {
                key.interestOps(ops);
            }
        }

        /**
         * Close with a reset (SO_LINGER 0: RFC 9293's ABORT, not its CLOSE), as {@link HttpApp} ends a response cut
         * short: a FIN would pass the stream cut short off as whole.
         */
        void abort()
        {
            if (!closed)
            {
                try
                {
                    ch.setOption(StandardSocketOptions.SO_LINGER, 0);
                }
                catch (final IOException ignored)
                {
                    // Already reset or closed: nothing more to take back.
                }
            }
            close();
        }

        /** Close: a FIN after what was written (or a reset if {@link #abort} set SO_LINGER 0). */
        void close()
        {
            if (closed)
            {
                return;
            }
            closed = true;
            connections--;
            releaseFile();
            key.cancel();
            try
            {
                ch.close();
            }
            catch (final IOException ignored)
            {
                // Nothing to do.
            }
        }
    }
}
