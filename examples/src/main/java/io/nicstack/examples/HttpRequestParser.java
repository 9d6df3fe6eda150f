package io.nicstack.examples;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

import org.agrona.DirectBuffer;

/**
 * Incremental parser of one HTTP/1.1 request head (request line and header section, RFC 9112),
 * fed with untrusted bytes in arbitrary pieces. It copies at most {@link #MAX_HEADER_BYTES} bytes
 * and consumes nothing past the blank line that ends the head, so pipelined requests stay where
 * they are until the caller is ready for them. It never throws on bad input: it ends in
 * {@link State#ERROR} with the status code to answer ({@code 400}, {@code 413}, {@code 414}, {@code 431},
 * {@code 501}, {@code 505}). The request line is checked as soon as it ends, so a head too large is a 414
 * (URI Too Long) when its request line does not end within the limit and a 431 (Request Header Fields Too
 * Large) when it did, never a size error for a request line that was bad anyway.
 *
 * <p>A request with a chunked body ({@code Transfer-Encoding: chunked}, RFC 9112 §7.1) is complete at the
 * end of its head, with no keep-alive: the caller answers it and closes the connection, never parsing the body.
 *
 * <p>Lines may end with CRLF or a bare LF (RFC 9112 §2.2); empty lines before the request line are
 * skipped. Anything else that is not strictly valid is a 400: a bare CR, bytes outside VCHAR in the request
 * line, obs-fold, whitespace before a header colon, a missing or repeated Host in HTTP/1.1,
 * disagreeing Content-Length values, bad percent-encoding or a NUL in the path. A method other than GET and HEAD is a
 * 501 whatever its target ({@code OPTIONS *}, {@code CONNECT host:443}), its target never judged.
 */
public final class HttpRequestParser
{
    /** Largest request head accepted (request line plus headers); more is a 414 or a 431. */
    public static final int MAX_HEADER_BYTES = 8192;
    /**
     * Largest request body accepted (nginx's client_max_body_size default); a Content-Length above it is a 413. The
     * server only discards bodies (GET and HEAD ones have no meaning here, RFC 9110 §9.3.1), and a large one mostly
     * holds a connection.
     */
    public static final long MAX_BODY_BYTES = 1 << 20;

    /** What the parser has seen so far. */
    public enum State
    {
        NEED_MORE, COMPLETE, ERROR
    }

    /**
     * A parsed request head. {@code path} is percent-decoded, without query or fragment. {@code ifModifiedSince} is the
     * If-Modified-Since field value as sent, null if the field is absent or given more than once (RFC 9110 §13.1.3:
     * then it is ignored); {@code ifNoneMatch} whether an If-None-Match field was sent (RFC 9110 §13.1.2).
     */
    public record Request(String method, String target, String path, int minorVersion, boolean keepAlive,
        long contentLength, boolean head, String ifModifiedSince, boolean ifNoneMatch)
    {
    }

    private static final boolean[] TOKEN = new boolean[128];

    static
    {
        for (char c = '0'; c <= '9'; c++)
        {
            TOKEN[c] = true;
        }
        for (char c = 'a'; c <= 'z'; c++)
        {
            TOKEN[c] = true;
            TOKEN[Character.toUpperCase(c)] = true;
        }
        for (final char c : "!#$%&'*+-.^_`|~".toCharArray())
        {
            TOKEN[c] = true;
        }
    }

    private final byte[] buf = new byte[MAX_HEADER_BYTES];
    private int length;
    private int skippedBlankBytes;
    private boolean blankCr; // the last byte skipped before the request line was a CR: an LF must follow
    private boolean requestLineDone;
    private State state = State.NEED_MORE;
    private int errorStatus;
    private String errorMessage;
    private Request request;

    public State state()
    {
        return state;
    }

    /** The parsed request once {@link State#COMPLETE}. */
    public Request request()
    {
        return request;
    }

    /** Status code to answer once {@link State#ERROR}. */
    public int errorStatus()
    {
        return errorStatus;
    }

    /** Short reason once {@link State#ERROR}, for the response body. */
    public String errorMessage()
    {
        return errorMessage;
    }

    /**
     * Once {@link State#ERROR}: whether the request asked for HEAD, i.e. its first token, up to a space, is
     * {@code HEAD}, whatever the error (a 414 never parses its request line; a 505 or a 400 refuses it before the
     * method is taken from it). The error response then has no content (RFC 9110 §9.3.2: the header fields a GET
     * would get, no content).
     */
    public boolean errorOnHead()
    {
        return state == State.ERROR && length > 4 &&
            buf[0] == 'H' && buf[1] == 'E' && buf[2] == 'A' && buf[3] == 'D' && buf[4] == ' ';
    }

    /** True when some bytes of a request head have been seen but the head is not complete. */
    public boolean hasPartialRequest()
    {
        return state == State.NEED_MORE && length > 0;
    }

    /**
     * True while nothing but empty lines before a request line (RFC 9112 §2.2) has been fed since the last reset:
     * such bytes are skipped, and are no activity that keeps a connection open.
     */
    public boolean beforeRequest()
    {
        return state == State.NEED_MORE && length == 0;
    }

    /** Forget the last request and start on the next one. */
    public void reset()
    {
        length = 0;
        skippedBlankBytes = 0;
        blankCr = false;
        requestLineDone = false;
        state = State.NEED_MORE;
        errorStatus = 0;
        errorMessage = null;
        request = null;
        method = null;
    }

    /** Feed bytes; returns how many were consumed (less than {@code count} once the head is complete or bad). */
    public int feed(final DirectBuffer src, final int index, final int count)
    {
        int i = 0;
        while (i < count && state == State.NEED_MORE)
        {
            accept(src.getByte(index + i));
            i++;
        }
        return i;
    }

    /** Feed bytes from an array; as {@link #feed(DirectBuffer, int, int)}. */
    public int feed(final byte[] src, final int offset, final int count)
    {
        int i = 0;
        while (i < count && state == State.NEED_MORE)
        {
            accept(src[offset + i]);
            i++;
        }
        return i;
    }

    private void accept(final byte b)
    {
        if (length == 0)
        {
            if (b == '\n' || (b == '\r' && !blankCr))
            {
                // RFC 9112 §2.2: ignore at least one empty line before the request line; bounded like the head.
                blankCr = b == '\r';
                if (++skippedBlankBytes > MAX_HEADER_BYTES)
                {
                    fail(400, "too many empty lines");
                }
                return;
            }
            if (blankCr)
            {
                fail(400, "bare CR before the request line"); // RFC 9112 §2.2: a CR not followed by LF is invalid
                return;
            }
        }
        if (length == MAX_HEADER_BYTES)
        {
            if (requestLineDone)
            {
                fail(431, "request header section larger than " + MAX_HEADER_BYTES + " bytes"); // RFC 6585 §5
            }
            else if (inRequestTarget())
            {
                fail(414, "request target longer than " + MAX_HEADER_BYTES + " bytes"); // RFC 9112 §3
            }
            else
            {
                fail(400, "malformed request line");
            }
            return;
        }
        buf[length++] = b;
        if (b != '\n')
        {
            return;
        }
        if (!requestLineDone)
        {
            requestLineDone = true;
            if (!parseRequestLine(0, trimCr(0, length - 1)))
            {
                return;
            }
        }
        if (endsHead())
        {
            parseHead();
        }
    }

    /** Whether the bytes so far end inside a request target: a method, one space, and no space after it. */
    private boolean inRequestTarget()
    {
        final int sp = indexOf(0, length, (byte)' ');
        if (sp <= 0 || indexOf(sp + 1, length, (byte)' ') >= 0)
        {
            return false;
        }
        for (int i = 0; i < sp; i++)
        {
            if (!isToken(buf[i]))
            {
                return false;
            }
        }
        return true;
    }

    private boolean endsHead()
    {
        // "\n\n" or "\n\r\n" at the end.
        if (length >= 2 && buf[length - 2] == '\n')
        {
            return true;
        }
        return length >= 3 && buf[length - 2] == '\r' && buf[length - 3] == '\n';
    }

    private void fail(final int status, final String message)
    {
        state = State.ERROR;
        errorStatus = status;
        errorMessage = message;
    }

    private void parseHead()
    {
        int pos = lineEnd(0) + 1; // past the request line, parsed when it ended
        int lineEnd;

        int hostCount = 0;
        boolean connectionClose = false;
        boolean connectionKeepAlive = false;
        long contentLength = -1;
        boolean transferEncoding = false;
        int codings = 0;
        int chunked = 0;
        String lastCoding = null;
        String ifModifiedSince = null;
        int ifModifiedSinceCount = 0;
        boolean ifNoneMatch = false;
        while (pos < length)
        {
            lineEnd = lineEnd(pos);
            final int end = trimCr(pos, lineEnd);
            if (end == pos)
            {
                break; // the blank line
            }
            if (buf[pos] == ' ' || buf[pos] == '\t')
            {
                fail(400, "obsolete line folding");
                return;
            }
            int colon = -1;
            for (int i = pos; i < end; i++)
            {
                if (buf[i] == ':')
                {
                    colon = i;
                    break;
                }
            }
            if (colon <= pos)
            {
                fail(400, "malformed header line");
                return;
            }
            for (int i = pos; i < colon; i++)
            {
                if (!isToken(buf[i]))
                {
                    fail(400, "malformed header name");
                    return;
                }
            }
            int vs = colon + 1;
            int ve = end;
            while (vs < ve && (buf[vs] == ' ' || buf[vs] == '\t'))
            {
                vs++;
            }
            while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
            {
                ve--;
            }
            for (int i = vs; i < ve; i++)
            {
                final int c = buf[i] & 0xFF;
                if ((c < 0x20 && c != '\t') || c == 0x7F)
                {
                    fail(400, "control character in header value");
                    return;
                }
            }
            final String name = ascii(pos, colon).toLowerCase(java.util.Locale.ROOT);
            switch (name)
            {
                case "host":
                    hostCount++;
                    if (!validHost(vs, ve))
                    {
                        fail(400, "malformed Host");
                        return;
                    }
                    break;
                case "connection":
                    for (final String option : ascii(vs, ve).split(","))
                    {
                        final String o = option.trim().toLowerCase(java.util.Locale.ROOT);
                        if (o.equals("close"))
                        {
                            connectionClose = true;
                        }
                        else if (o.equals("keep-alive"))
                        {
                            connectionKeepAlive = true;
                        }
                    }
                    break;
                case "content-length":
                    final long value = parseContentLength(vs, ve);
                    if (value < 0 || (contentLength >= 0 && contentLength != value))
                    {
                        fail(400, "bad Content-Length");
                        return;
                    }
                    contentLength = value;
                    break;
                case "transfer-encoding":
                    transferEncoding = true;
                    for (final String coding : ascii(vs, ve).split(","))
                    {
                        final String c = coding.trim().toLowerCase(java.util.Locale.ROOT);
                        if (!c.isEmpty())
                        {
                            codings++;
                            chunked += c.equals("chunked") ? 1 : 0;
                            lastCoding = c;
                        }
                    }
                    break;
                case "if-modified-since":
                    ifModifiedSinceCount++;
                    ifModifiedSince = ascii(vs, ve);
                    break;
                case "if-none-match":
                    ifNoneMatch = true;
                    break;
                default:
                    break;
            }
            pos = lineEnd + 1;
        }

        if (minorVersion >= 1 && hostCount != 1)
        {
            fail(400, hostCount == 0 ? "missing Host header" : "more than one Host header");
            return;
        }
        if (hostCount > 1)
        {
            fail(400, "more than one Host header");
            return;
        }
        if (transferEncoding)
        {
            if (contentLength >= 0)
            {
                // RFC 9112 §6.3: two framings, the opening of request smuggling; refused, and the connection closed.
                fail(400, "both Transfer-Encoding and Content-Length");
                return;
            }
            if (!"chunked".equals(lastCoding) || chunked > 1)
            {
                // RFC 9112 §6.3: without chunked last the body's length cannot be known (§7: never chunked twice).
                fail(400, "request Transfer-Encoding without chunked last");
                return;
            }
            if (codings > 1)
            {
                fail(501, "request Transfer-Encoding not supported"); // RFC 9112 §6.1: a coding we do not implement
                return;
            }
        }
        if (!implemented(method))
        {
            fail(501, "method " + method + " not implemented");
            return;
        }
        if (contentLength > MAX_BODY_BYTES)
        {
            // RFC 9110 §15.5.14: 413 Content Too Large, and close: nothing of the body is read.
            fail(413, "request body larger than " + MAX_BODY_BYTES + " bytes");
            return;
        }
        // A chunked body (RFC 9112 §7.1: every recipient must take one) is not read but left behind the head: the
        // request is answered, then the connection closed (it lingers, reading and dropping the body for a while). Its
        // end is only found by decoding it, and GET and HEAD bodies have no meaning here (RFC 9110 §9.3.1).
        final boolean keepAlive = !transferEncoding &&
            (minorVersion >= 1 ? !connectionClose : connectionKeepAlive && !connectionClose);
        request = new Request(method, target, path, minorVersion, keepAlive, Math.max(0, contentLength),
            method.equals("HEAD"), ifModifiedSinceCount == 1 ? ifModifiedSince : null, ifNoneMatch);
        state = State.COMPLETE;
    }

    // request-line fields, set when the request line ends
    private String method;
    private String target;
    private String path;
    private int minorVersion;

    private boolean parseRequestLine(final int start, final int end)
    {
        final int sp1 = indexOf(start, end, (byte)' ');
        if (sp1 <= start)
        {
            fail(400, "malformed request line");
            return false;
        }
        final int sp2 = indexOf(sp1 + 1, end, (byte)' ');
        if (sp2 <= sp1 + 1 || indexOf(sp2 + 1, end, (byte)' ') >= 0 || sp2 + 1 >= end)
        {
            fail(400, "malformed request line");
            return false;
        }
        for (int i = start; i < sp1; i++)
        {
            if (!isToken(buf[i]))
            {
                fail(400, "malformed method");
                return false;
            }
        }
        for (int i = sp1 + 1; i < sp2; i++)
        {
            final int c = buf[i] & 0xFF;
            if (c <= 0x20 || c >= 0x7F)
            {
                fail(400, "malformed request target");
                return false;
            }
        }
        // HTTP-version = "HTTP/" DIGIT "." DIGIT
        if (end - (sp2 + 1) != 8 || !ascii(sp2 + 1, sp2 + 6).equals("HTTP/") || !isDigit(buf[sp2 + 6])
            || buf[sp2 + 7] != '.' || !isDigit(buf[sp2 + 8]))
        {
            fail(400, "malformed HTTP version");
            return false;
        }
        if (buf[sp2 + 6] != '1')
        {
            fail(505, "HTTP version not supported");
            return false;
        }
        method = ascii(start, sp1);
        target = ascii(sp1 + 1, sp2);
        minorVersion = buf[sp2 + 8] - '0';
        if (!implemented(method))
        {
            // RFC 9110 §9.1: a method we do not implement SHOULD get a 501 (given at the end of the head), whatever its
            // target: OPTIONS's asterisk-form and CONNECT's authority-form (RFC 9112 §3.2.3, §3.2.4) too. Such a
            // target is never used, so it is not judged; one of a method we implement still is (a 400).
            path = null;
            return true;
        }
        path = decodePath(target);
        return path != null;
    }

    private static boolean implemented(final String method)
    {
        return method.equals("GET") || method.equals("HEAD");
    }

    private String decodePath(final String t)
    {
        String p = t;
        final String lower = t.toLowerCase(java.util.Locale.ROOT);
        if (lower.startsWith("http://") || lower.startsWith("https://"))
        {
            // absolute-form: drop scheme and authority.
            final int authority = t.indexOf("//") + 2;
            final int slash = t.indexOf('/', authority);
            final int q = t.indexOf('?', authority);
            if (slash < 0 || (q >= 0 && q < slash))
            {
                p = "/" + (q >= 0 ? t.substring(q) : "");
            }
            else
            {
                p = t.substring(slash);
            }
        }
        else if (!t.startsWith("/"))
        {
            fail(400, "unsupported request target form");
            return null;
        }
        int cut = p.length();
        final int q = p.indexOf('?');
        if (q >= 0)
        {
            cut = q;
        }
        final int h = p.indexOf('#');
        if (h >= 0 && h < cut)
        {
            cut = h;
        }
        p = p.substring(0, cut);
        final byte[] out = new byte[p.length()];
        int n = 0;
        for (int i = 0; i < p.length(); i++)
        {
            final char c = p.charAt(i);
            if (c == '%')
            {
                if (i + 2 >= p.length())
                {
                    fail(400, "bad percent-encoding");
                    return null;
                }
                final int hi = Character.digit(p.charAt(i + 1), 16);
                final int lo = Character.digit(p.charAt(i + 2), 16);
                if (hi < 0 || lo < 0)
                {
                    fail(400, "bad percent-encoding");
                    return null;
                }
                final int v = (hi << 4) | lo;
                if (v == 0)
                {
                    fail(400, "NUL in path");
                    return null;
                }
                out[n++] = (byte)v;
                i += 2;
            }
            else
            {
                out[n++] = (byte)c;
            }
        }
        try
        {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(out, 0, n)).toString();
        }
        catch (final CharacterCodingException e)
        {
            fail(400, "path is not UTF-8");
            return null;
        }
    }

    private boolean validHost(final int start, final int end)
    {
        for (int i = start; i < end; i++)
        {
            final int c = buf[i] & 0xFF;
            final boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || "-._~:[]%!$&'()*+,;=".indexOf(c) >= 0;
            if (!ok)
            {
                return false;
            }
        }
        return true;
    }

    private long parseContentLength(final int start, final int end)
    {
        if (end == start || end - start > 18)
        {
            return -1;
        }
        long v = 0;
        for (int i = start; i < end; i++)
        {
            if (!isDigit(buf[i]))
            {
                return -1;
            }
            v = v * 10 + (buf[i] - '0');
        }
        return v;
    }

    private int lineEnd(final int from)
    {
        for (int i = from; i < length; i++)
        {
            if (buf[i] == '\n')
            {
                return i;
            }
        }
        return length;
    }

    private int trimCr(final int start, final int lineEnd)
    {
        return lineEnd > start && buf[lineEnd - 1] == '\r' ? lineEnd - 1 : lineEnd;
    }

    private int indexOf(final int from, final int to, final byte b)
    {
        for (int i = from; i < to; i++)
        {
            if (buf[i] == b)
            {
                return i;
            }
        }
        return -1;
    }

    private String ascii(final int from, final int to)
    {
        return new String(buf, from, to - from, StandardCharsets.ISO_8859_1);
    }

    private static boolean isToken(final byte b)
    {
        return b > 0 && TOKEN[b];
    }

    private static boolean isDigit(final byte b)
    {
        return b >= '0' && b <= '9';
    }
}
