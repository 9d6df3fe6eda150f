package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Whole requests through the HTTP app over an in-process daemon ({@link InProcessDaemon}, no kernel interface): a
 * peer on stack B writes requests on one connection, the last with {@code Connection: close}, and reads every response
 * until the app ends the stream.
 */
class HttpAppExchangeTest
{
    @TempDir
    Path tmp;

    @AutoClose
    private InProcessApp app;
    private HttpApp http;

    /** The app serving {@code root} (bodies copied), 64 KiB pipes. */
    private void start(final Path root) throws Exception
    {
        app = new InProcessApp(tmp, "http", InProcessApp.options(4, 64 * 1024));
        http = new HttpApp(new StaticFiles(root), false);
        app.serve(8080, 4, http::handler);
    }

    /** What the peer received for {@code requests}, written at once on one connection, until the app ended it. */
    private String exchange(final String requests) throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        app.daemon.connect(8080, peer);
        app.spinUntil("connected", () -> peer.connection != null);
        app.daemon.onLoop(() -> peer.write(requests));
        app.spinUntil("the app to end the stream", peer::ended);
        return peer.received();
    }

    /** How many times {@code what} stands in {@code s}. */
    static int count(final String s, final String what)
    {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1))
        {
            n++;
        }
        return n;
    }

    /** Four requests for /x.txt on one connection, each by another name of it, the last closing. */
    static final String ALIASED_REQUESTS = "GET /x.txt HTTP/1.1\r\nHost: h\r\n\r\n"
        + "GET //x.txt HTTP/1.1\r\nHost: h\r\n\r\n"
        + "GET /./x.txt HTTP/1.1\r\nHost: h\r\n\r\n"
        + "GET /a/../x.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";

    /** A root for {@link #ALIASED_REQUESTS}: x.txt ("x\n") and a directory a; returns x.txt. */
    static Path aliasedFile(final Path root) throws Exception
    {
        Files.createDirectory(root.resolve("a"));
        return Files.writeString(root.resolve("x.txt"), "x\n");
    }

    /** What {@link #ALIASED_REQUESTS} must get: the file, four times. */
    static void checkAliasedResponses(final String received)
    {
        assertEquals(4, count(received, "HTTP/1.1 200 OK\r\n"), received);
        assertEquals(4, count(received, "\r\n\r\nx\n"), received);
    }

    /**
     * Names of one file that differ only in empty, {@code .} and {@code ..} segments share one cache entry (one open
     * file, one share of the cache's bytes). Before, the cache was keyed by the decoded request path as sent: each
     * alias (a client can make any number) got an entry and a descriptor of its own, here four.
     */
    @Test
    void aliasesOfOneFileShareOneCacheEntry() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        aliasedFile(root);
        start(root);
        checkAliasedResponses(exchange(ALIASED_REQUESTS));
        assertEquals(1, http.cachedFiles(), "one file, one entry");
    }

    /** Requests in the asterisk-form and the authority-form (RFC 9112 §3.2.3, §3.2.4), each alone on a connection. */
    static final String[] OTHER_TARGET_FORMS = {"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
        "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", "GET * HTTP/1.1\r\nHost: h\r\n\r\n"};

    /** What each of {@link #OTHER_TARGET_FORMS} must get: 501 with Allow for the two methods not implemented, 400. */
    static void checkOtherTargetForms(final List<String> responses)
    {
        for (int i = 0; i < 2; i++)
        {
            final String r = responses.get(i);
            assertTrue(r.startsWith("HTTP/1.1 501 Not Implemented\r\n"), r);
            assertTrue(r.substring(0, r.indexOf("\r\n\r\n") + 2).contains("\r\nAllow: GET, HEAD\r\n"), r);
        }
        assertTrue(responses.get(2).startsWith("HTTP/1.1 400 Bad Request\r\n"), responses.get(2));
    }

    /**
     * OPTIONS * and CONNECT h:443 are answered 501 with Allow (RFC 9110 §9.1, §15.6.2), as POST is; GET * is still a
     * 400. Before, both were a 400 "unsupported request target form": the target was judged before the method.
     */
    @Test
    void optionsAndConnectAre501WithAllow() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        start(root);
        final List<String> responses = new ArrayList<>();
        for (final String request : OTHER_TARGET_FORMS)
        {
            responses.add(exchange(request));
        }
        checkOtherTargetForms(responses);
    }

    /** The status codes of the responses in {@code received}, in order. */
    static List<Integer> statuses(final String received)
    {
        final List<Integer> codes = new ArrayList<>();
        final Matcher m = Pattern.compile("HTTP/1\\.1 (\\d{3}) ").matcher(received);
        while (m.find())
        {
            codes.add(Integer.parseInt(m.group(1)));
        }
        return codes;
    }

    /** Requests for /x.txt (modified 2024-03-05T06:07:08Z) with the given header lines, the last closing. */
    static String conditionalRequests()
    {
        final String get = "GET /x.txt HTTP/1.1\r\nHost: h\r\n";
        return get + "\r\n"
            + get + "If-Modified-Since: Tue, 05 Mar 2024 06:07:08 GMT\r\n\r\n"          // the same: 304
            + "HEAD /x.txt HTTP/1.1\r\nHost: h\r\nIf-Modified-Since: Wednesday, 06-Mar-24 00:00:00 GMT\r\n\r\n"
            + get + "If-Modified-Since: Tue Mar  5 06:07:07 2024\r\n\r\n"              // a second earlier: 200
            + get + "If-Modified-Since: yesterday\r\n\r\n"                             // no date: ignored
            + get + "If-Modified-Since: Tue, 05 Mar 2024 06:07:08 GMT\r\nIf-None-Match: \"x\"\r\n\r\n" // §13.2.2
            + get + "If-Modified-Since: Tue, 05 Mar 2024 06:07:08 GMT\r\n"
            + "If-Modified-Since: Tue, 05 Mar 2024 06:07:08 GMT\r\nConnection: close\r\n\r\n"; // twice: ignored
    }

    /** What {@link #conditionalRequests()} must get: 200 or 304, each with Last-Modified, the file with the 200s. */
    static void checkConditionalResponses(final String received)
    {
        assertEquals(List.of(200, 304, 304, 200, 200, 200, 200), statuses(received), received);
        assertEquals(7, count(received, "\r\nLast-Modified: Tue, 05 Mar 2024 06:07:08 GMT\r\n"), received);
        assertEquals(5, count(received, "\r\n\r\nx\n"), "the 200s have the file, the 304s nothing: " + received);
    }

    /** A file whose modification time is 2024-03-05T06:07:08.5Z. */
    static Path modifiedFile(final Path root) throws Exception
    {
        final Path f = Files.writeString(root.resolve("x.txt"), "x\n");
        Files.setLastModifiedTime(f, FileTime.from(Instant.parse("2024-03-05T06:07:08.500Z")));
        return f;
    }

    /**
     * A file response says when the file was last modified (RFC 9110 §8.8.2, an IMF-fixdate, whole seconds), and a
     * GET or HEAD whose If-Modified-Since, in any of the three HTTP-date forms, is not earlier than that is answered
     * 304 without content (§13.1.3); an invalid or repeated date, or one beside an If-None-Match (§13.2.2), is
     * ignored. Before, responses had no Last-Modified and every request was a 200 with the file.
     */
    @Test
    void lastModifiedAndIfModifiedSince() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        modifiedFile(root);
        start(root);
        final String r = exchange(conditionalRequests());
        checkConditionalResponses(r);
        final String notModified = r.substring(r.indexOf("HTTP/1.1 304"), r.indexOf("HTTP/1.1 304") + 200);
        assertFalse(notModified.substring(0, notModified.indexOf("\r\n\r\n")).contains("Content-Length"), notModified);
    }

    /** The same for a file too large for the cache (opened per response): Last-Modified, and a 304 without the file. */
    @Test
    void lastModifiedAndIfModifiedSinceForAFileOutsideTheCache() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        final Path big = root.resolve("big.bin");
        try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(big.toFile(), "rw"))
        {
            raf.setLength(HttpApp.CACHE_FILE_BYTES + 1);
        }
        Files.setLastModifiedTime(big, FileTime.from(Instant.parse("2024-03-05T06:07:08Z")));
        start(root);
        final String r = exchange("HEAD /big.bin HTTP/1.1\r\nHost: h\r\n\r\n"
            + "GET /big.bin HTTP/1.1\r\nHost: h\r\nIf-Modified-Since: Tue, 05 Mar 2024 06:07:08 GMT\r\n"
            + "Connection: close\r\n\r\n");
        assertEquals(List.of(200, 304), statuses(r), r);
        assertEquals(2, count(r, "\r\nLast-Modified: Tue, 05 Mar 2024 06:07:08 GMT\r\n"), r);
        assertEquals(0, http.cachedFiles(), "too large for the cache");
    }
}
