package io.nicstack.examples;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.*;

class HttpAppTest
{
    private static String text(final byte[] b, final int length)
    {
        return new String(b, 0, length, StandardCharsets.ISO_8859_1);
    }

    private static String withoutDate(final String head)
    {
        final String masked = head.replaceFirst("\r\nDate: [^\r\n]*\r\n", "\r\nDate: X\r\n");
        assertNotEquals(head, masked, "a Date header: " + head);
        return masked;
    }

    @Test
    void theDateIsAnImfFixdate()
    {
        // RFC 9110 §5.6.7: two-digit day, English names, GMT.
        assertEquals("Sun, 01 Nov 2026 02:03:04 GMT", HttpApp.DATE.format(Instant.parse("2026-11-01T02:03:04Z")));
        assertEquals("Tue, 05 Mar 2030 23:59:59 GMT", HttpApp.DATE.format(Instant.parse("2030-03-05T23:59:59Z")));
    }

    /**
     * A file removed between its lookup and its open is a 404 (RFC 9110 §15.5.5: no current representation), as it
     * would have been a moment sooner; it was a 403. A file there that cannot be opened for a body (a FIFO swapped in)
     * stays a 403.
     */
    @Test
    void aFileGoneBetweenItsLookupAndItsOpenIs404(@TempDir final Path dir) throws Exception
    {
        final Path f = Files.writeString(dir.resolve("a.txt"), "a\n");
        final StaticFiles.Lookup lookup = new StaticFiles(dir).lookup("/a.txt");
        assertEquals(200, lookup.status());
        Files.delete(f);
        assertThrows(java.io.IOException.class, () -> BodyFile.open(lookup.file(), false));
        assertEquals(404, HttpApp.unopenedFileStatus(lookup.file()));

        assertEquals(0, new ProcessBuilder("mkfifo", lookup.file().toString()).start().waitFor());
        assertThrows(java.io.IOException.class, () -> BodyFile.open(lookup.file(), false));
        assertEquals(403, HttpApp.unopenedFileStatus(lookup.file()));
    }

    /**
     * A readable regular file whose open failed for want of something on the server's side, most often a
     * descriptor (EMFILE under many connections): a 503 (RFC 9110 §15.6.4, the client may try again), not a 403 telling
     * the client the file is forbidden, as it was.
     */
    @Test
    void aReadableFileThatCouldNotBeOpenedIs503(@TempDir final Path dir) throws Exception
    {
        final Path f = Files.writeString(dir.resolve("a.txt"), "a\n");
        assertEquals(503, HttpApp.unopenedFileStatus(f));
        assertEquals("Service Unavailable", HttpApp.reason(503));
        assertEquals(403, HttpApp.unopenedFileStatus(dir), "a directory is no file to serve");
    }

    /**
     * A file whose open {@link BodyFile} refused as not the file looked up (a directory on its path swapped for a link
     * out of the root) is a 403, as its lookup would now answer; the file the path leads to is a readable regular
     * file, which would have made it a 503 (try again).
     */
    @Test
    void aFileOpenedThroughASwappedLinkIs403(@TempDir final Path dir) throws Exception
    {
        final SwappedDirectory swapped = new SwappedDirectory(dir);
        final StaticFiles.Lookup lookup = swapped.lookup;
        final java.io.IOException refused = assertThrows(java.nio.file.AccessDeniedException.class,
            () -> BodyFile.open(lookup.file(), false));
        assertEquals(403, HttpApp.unopenedFileStatus(lookup.file(), refused));
        assertEquals(403, swapped.files.lookup("/d/f.txt").status(), "what the lookup answers now");
    }

    @Test
    void theHeadOfACachedFileIsWhatResponseHeadMakes(@TempDir final Path dir) throws Exception
    {
        final Path f = dir.resolve("page.html");
        Files.writeString(f, "<p>hello</p>\n");
        final HttpApp app = new HttpApp(new StaticFiles(dir), false);
        final FileCache cache = new FileCache(4, 1 << 20, 1 << 20, 1_000_000, Long.MAX_VALUE);
        final FileCache.Entry e = cache.refresh("/page.html", f.toRealPath(), StaticFiles.contentType("page.html"), 0);
        final byte[] dst = new byte[256];
        for (final boolean keepAlive : new boolean[] {true, false})
        {
            for (final int minor : new int[] {0, 1})
            {
                final long now = System.currentTimeMillis();
                final int n = app.okHead(e, keepAlive, minor, now, dst);
                final String expected = new String(HttpApp.responseHead(200, "OK", 13, "text/html; charset=utf-8",
                    keepAlive, minor, HttpApp.lastModifiedField(e.lastModifiedSeconds())), StandardCharsets.ISO_8859_1);
                assertEquals(withoutDate(expected), withoutDate(text(dst, n)), "keepAlive " + keepAlive + " 1." + minor);
                assertTrue(text(dst, n).contains("\r\nDate: " + HttpApp.DATE.format(Instant.ofEpochMilli(now)) + "\r\n"));
            }
        }
        final int needed = app.okHead(e, true, 1, 0, dst);
        final byte[] small = new byte[needed - 1];
        assertEquals(-needed, app.okHead(e, true, 1, 0, small), "too small: the length needed, nothing written");
        assertArrayEquals(new byte[needed - 1], small);
    }

    /** RFC 9110 §8.8.2.1: a file modified after the response's Date is said to be modified at the Date. */
    @Test
    void aFileModifiedInTheFutureIsLastModifiedNow(@TempDir final Path dir) throws Exception
    {
        final Path f = Files.writeString(dir.resolve("future.txt"), "f\n");
        Files.setLastModifiedTime(f, java.nio.file.attribute.FileTime.from(Instant.parse("2100-01-01T00:00:00Z")));
        final HttpApp app = new HttpApp(new StaticFiles(dir), false);
        final FileCache.Entry e = new FileCache(4, 1 << 20, 1 << 20, 1_000_000, Long.MAX_VALUE)
            .refresh("/future.txt", f.toRealPath(), "text/plain", 0);
        final long now = Instant.parse("2026-11-01T02:03:04.900Z").toEpochMilli();
        final byte[] dst = new byte[512];
        final String head = text(dst, app.okHead(e, true, 1, now, dst));
        assertTrue(head.contains("\r\nDate: Sun, 01 Nov 2026 02:03:04 GMT\r\n"), head);
        assertTrue(head.contains("\r\nLast-Modified: Sun, 01 Nov 2026 02:03:04 GMT\r\n"), head);
        assertEquals(Instant.parse("2026-11-01T02:03:04Z").getEpochSecond(), HttpApp.lastModified(e.lastModifiedSeconds(), now));
    }

    /**
     * RFC 9110 §5.6.7: the three HTTP-date forms a recipient must accept give one time; anything else (another zone,
     * another case, no such day or hour) is no date. An RFC 850 year more than 50 years ahead is a past one.
     */
    @Test
    void httpDatesInTheirThreeForms()
    {
        final long now = Instant.parse("2026-06-01T00:00:00Z").toEpochMilli();
        final long expected = Instant.parse("1994-11-06T08:49:37Z").getEpochSecond();
        assertEquals(expected, HttpApp.parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT", now));
        assertEquals(expected, HttpApp.parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", now));
        assertEquals(expected, HttpApp.parseHttpDate("Sun Nov  6 08:49:37 1994", now));
        assertEquals(Instant.parse("2030-01-02T03:04:05Z").getEpochSecond(),
            HttpApp.parseHttpDate("Wednesday, 02-Jan-30 03:04:05 GMT", now));
        assertEquals(Instant.parse("2076-01-02T03:04:05Z").getEpochSecond(),
            HttpApp.parseHttpDate("Thursday, 02-Jan-76 03:04:05 GMT", now), "50 years ahead: still ahead");
        assertEquals(Instant.parse("1977-01-02T03:04:05Z").getEpochSecond(),
            HttpApp.parseHttpDate("Sunday, 02-Jan-77 03:04:05 GMT", now), "51 years ahead: a past year");
        assertEquals(Instant.parse("2016-12-31T23:59:59Z").getEpochSecond(),
            HttpApp.parseHttpDate("Sat, 31 Dec 2016 23:59:60 GMT", now), "a leap second");
        for (final String bad : new String[] {"", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC",
            "sun, 06 nov 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ", "Sun Nov 6 08:49:37 1994", "Sunday, 06-Nov-1994 08:49:37 GMT"})
        {
            assertEquals(HttpApp.NOT_A_DATE, HttpApp.parseHttpDate(bad, now), bad);
        }
    }

    /** RFC 9110 §13.1.3 and §13.2.2: when a GET or HEAD is answered 304. */
    @Test
    void notModifiedOnlyForAValidDateNotEarlierAndNoIfNoneMatch()
    {
        final long now = Instant.parse("2026-06-01T00:00:00Z").toEpochMilli();
        final long modified = Instant.parse("2024-03-05T06:07:08Z").getEpochSecond();
        final String date = "Tue, 05 Mar 2024 06:07:08 GMT";
        assertTrue(HttpApp.notModified(request("If-Modified-Since: " + date), modified, now));
        assertTrue(HttpApp.notModified(request("If-Modified-Since: Tue, 05 Mar 2024 06:07:09 GMT"), modified, now));
        assertFalse(HttpApp.notModified(request("If-Modified-Since: Tue, 05 Mar 2024 06:07:07 GMT"), modified, now));
        assertFalse(HttpApp.notModified(request(""), modified, now));
        assertFalse(HttpApp.notModified(request("If-Modified-Since: 0"), modified, now));
        assertFalse(HttpApp.notModified(request("If-Modified-Since: " + date + "\r\nIf-None-Match: *"), modified, now));
        assertFalse(HttpApp.notModified(request("If-Modified-Since: " + date + "\r\nIf-Modified-Since: " + date),
            modified, now), "more than one member");
        final String head = text(HttpApp.notModifiedHead(modified, true, 1), HttpApp.notModifiedHead(modified, true, 1).length);
        assertTrue(head.startsWith("HTTP/1.1 304 Not Modified\r\n"), head);
        assertTrue(head.endsWith("\r\nLast-Modified: " + date + "\r\n\r\n"), head);
        assertFalse(head.contains("Content-"), head);
    }

    private static HttpRequestParser.Request request(final String fields)
    {
        final HttpRequestParser p = new HttpRequestParser();
        final byte[] req = ("GET / HTTP/1.1\r\nHost: h\r\n" + (fields.isEmpty() ? "" : fields + "\r\n") + "\r\n")
            .getBytes(StandardCharsets.ISO_8859_1);
        p.feed(req, 0, req.length);
        assertEquals(HttpRequestParser.State.COMPLETE, p.state(), fields);
        return p.request();
    }

    /** The review's case: a HEAD the parser refuses (a coding) got a body, which the client reads as the next response. */
    @Test
    void refusedHeadRequestGetsTheHeadersAndNoContent()
    {
        final HttpRequestParser p = new HttpRequestParser();
        final byte[] req = "HEAD / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
            .getBytes(StandardCharsets.ISO_8859_1);
        p.feed(new org.agrona.concurrent.UnsafeBuffer(req), 0, req.length);
        assertEquals(HttpRequestParser.State.ERROR, p.state());
        assertTrue(p.errorOnHead());
        final HttpApp.ErrorResponse head = HttpApp.errorResponse(p.errorStatus(), p.errorMessage(), p.errorOnHead());
        final HttpApp.ErrorResponse get = HttpApp.errorResponse(p.errorStatus(), p.errorMessage(), false);
        assertNull(head.body());
        assertArrayEquals(get.head(), head.head(), "the same header fields, Content-Length included");
        assertTrue(text(head.head(), head.head().length).contains("Content-Length: " + get.body().length + "\r\n"));
    }

    @Test
    void refusedGetAndBadRequestLineKeepTheirBody()
    {
        for (final String r : new String[] {"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "GET  / HTTP/1.1\r\n\r\n", "HEADER / HTTP/1.1\r\n\r\n"})
        {
            final HttpRequestParser p = new HttpRequestParser();
            final byte[] req = r.getBytes(StandardCharsets.ISO_8859_1);
            p.feed(new org.agrona.concurrent.UnsafeBuffer(req), 0, req.length);
            assertEquals(HttpRequestParser.State.ERROR, p.state(), r);
            assertFalse(p.errorOnHead(), r); // not a HEAD, whether its request line parsed or not
        }
    }

    /** The size refusals say what they are (RFC 9110 §15.5.14 and §15.5.15, RFC 6585 §5), and close. */
    @Test
    void sizeRefusalsCarryTheirOwnReasonPhrases()
    {
        for (final String expected : new String[] {"413 Content Too Large", "414 URI Too Long",
            "431 Request Header Fields Too Large"})
        {
            final HttpApp.ErrorResponse r = HttpApp.errorResponse(Integer.parseInt(expected.substring(0, 3)), "x", false);
            final String head = text(r.head(), r.head().length);
            assertTrue(head.startsWith("HTTP/1.1 " + expected + "\r\n"), head);
            assertTrue(head.contains("\r\nConnection: close\r\n"), head);
        }
    }

    @Test
    void aFileNamedAsADirectoryIsNotFound(@TempDir final Path dir) throws Exception
    {
        Files.writeString(dir.resolve("a.txt"), "hello");
        Files.createDirectory(dir.resolve("sub"));
        Files.writeString(dir.resolve("sub").resolve("index.html"), "<p>sub</p>");
        final StaticFiles files = new StaticFiles(dir);
        assertEquals(200, files.lookup("/a.txt").status());
        assertEquals(404, files.lookup("/a.txt/").status());
        assertEquals(404, files.lookup("/a.txt/.").status());
        assertEquals(200, files.lookup("/sub/").status());
        assertEquals(301, files.lookup("/sub").status());
    }

    /**
     * A directory named without its trailing slash is a 301 to the name with it (as nginx answers): its index.html
     * served at /sub resolved its relative links against /. The location is built from the decoded segments and
     * percent-encoded, so it always stays on this host; the request's query follows it.
     */
    @Test
    void aDirectoryNamedWithoutItsSlashIsRedirectedToIt(@TempDir final Path dir) throws Exception
    {
        final Path root = Files.createDirectory(dir.resolve("root"));
        Files.createDirectories(root.resolve("sub").resolve("a b"));
        Files.createDirectory(root.resolve("\\evil.example"));
        Files.createDirectory(dir.resolve("outside"));
        Files.createSymbolicLink(root.resolve("out"), dir.resolve("outside"));
        final StaticFiles files = new StaticFiles(root);
        assertEquals(new StaticFiles.Lookup(301, null, 0, null, "/sub/"), files.lookup("/sub"));
        assertEquals("/sub/", files.lookup("//sub").location());
        assertEquals("/sub/a%20b/", files.lookup("/sub/a b").location());
        assertEquals("/", files.lookup("/sub/..").location());
        assertEquals("/sub/", files.lookup("/sub/.").location());
        assertEquals("/%5Cevil.example/", files.lookup("/\\evil.example").location(), "a browser reads /\\ as //");
        assertEquals(403, files.lookup("/out").status());
        assertNull(files.lookup("/sub/").location());

        for (final String[] c : new String[][] {{"/sub?x=1", "/sub/?x=1"}, {"/sub?x=1#top", "/sub/?x=1"},
            {"/sub#top", "/sub/"}, {"http://h/sub?x", "/sub/?x"}, {"/s%75b", "/sub/"}})
        {
            final HttpRequestParser p = new HttpRequestParser();
            final byte[] req = ("GET " + c[0] + " HTTP/1.1\r\nHost: h\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
            p.feed(req, 0, req.length);
            final StaticFiles.Lookup lookup = files.lookup(p.request().path());
            assertEquals("Location: " + c[1] + "\r\n", HttpApp.statusHeaders(lookup, p.request()), c[0]);
        }
    }
}
