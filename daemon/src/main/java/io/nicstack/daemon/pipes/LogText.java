package io.nicstack.daemon.pipes;

/**
 * How a string that someone else chose goes into one line of the daemon's log: an app file's name (any local user
 * creates files in the 01777 {@code apps} directory, and a name may hold any byte but '/' and NUL), or a message that
 * carries one, or text read from an app's process (a FUSE mount's subtype in its mountinfo, say). Control characters
 * would let it end the line and forge the next ones, or send a terminal escape sequence to whoever reads the log; here
 * each is written out visibly instead, so the line stays one line and still says exactly what the name was.
 *
 * <p>The rule: a backslash is doubled; newline, carriage return and tab become {@code \n}, {@code \r}, {@code \t};
 * every other C0 control, DEL and every C1 control become {@code \xHH}; the line and paragraph separators, the bidi
 * embedding, override and isolate controls (which reorder what a terminal shows) and a lone surrogate become a
 * backslash, 'u' and four hex digits. Everything else, printable UTF-8 included, stays as it is. Past
 * {@link #MAX_NAME} code points (or the limit given) the rest is left off and an ellipsis ends it.
 */
public final class LogText
{
    /** Code points of a name a log line shows at most: a Linux file name has at most 255 bytes (NAME_MAX). */
    public static final int MAX_NAME = 255;
    /** Code points of a message (an exception, a refusal that quotes a name) a log line shows at most. */
    public static final int MAX_MESSAGE = 1024;
    /** Ends a string cut at its limit. */
    static final String ELLIPSIS = "\u2026";
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private LogText()
    {
    }

    /** {@code text} (its {@link String#valueOf}) for a log line, at most {@link #MAX_NAME} code points of it. */
    public static String untrusted(final Object text)
    {
        return untrusted(text, MAX_NAME);
    }

    /** {@code text} (its {@link String#valueOf}) for a log line, at most {@code maxCodePoints} code points of it. */
    public static String untrusted(final Object text, final int maxCodePoints)
    {
        final String s = String.valueOf(text);
        int i = 0;
        int shown = 0;
        while (i < s.length() && shown < maxCodePoints && !needsEscape(s.codePointAt(i)))
        {
            i += Character.charCount(s.codePointAt(i));
            shown++;
        }
        if (i == s.length())
        {
            return s; // the usual case: nothing to change, nothing allocated
        }
        final StringBuilder sb = new StringBuilder(s.length() + 16).append(s, 0, i);
        for (; i < s.length() && shown < maxCodePoints; shown++)
        {
            final int c = s.codePointAt(i);
            i += Character.charCount(c);
            if (!needsEscape(c))
            {
                sb.appendCodePoint(c);
            }
            else if (c == '\\')
            {
                sb.append("\\\\");
            }
            else if (c == '\n')
            {
                sb.append("\\n");
            }
            else if (c == '\r')
            {
                sb.append("\\r");
            }
            else if (c == '\t')
            {
                sb.append("\\t");
            }
            else if (c <= 0xFF)
            {
                sb.append("\\x").append(HEX[c >> 4]).append(HEX[c & 0xF]);
            }
            else
            {
                sb.append("\\u").append(HEX[c >> 12]).append(HEX[(c >> 8) & 0xF]).append(HEX[(c >> 4) & 0xF]).append(HEX[c & 0xF]);
            }
        }
        if (i < s.length())
        {
            sb.append(ELLIPSIS);
        }
        return sb.toString();
    }

    /** A C0 control, DEL or a C1 control (Unicode's category Cc): what no terminal shows as a character. */
    public static boolean isControl(final int codePoint)
    {
        return codePoint < 0x20 || (codePoint >= 0x7F && codePoint < 0xA0);
    }

    private static boolean needsEscape(final int c)
    {
        return isControl(c) || c == '\\'
            || c == 0x2028 || c == 0x2029 // line and paragraph separators
            || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) // bidi embeddings, overrides, isolates
            || (c >= Character.MIN_SURROGATE && c <= Character.MAX_SURROGATE); // a lone one (a pair is one code point)
    }
}
