package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** How an untrusted string (an app file's name, a message carrying one) is shown in a log line. */
class LogTextTest
{
    @Test
    void printableTextIsShownAsItIsAndNotCopied()
    {
        final String name = "app-1.2_x (café, 日本, 😀) $HOME %s 'q' \"q\".app";
        assertSame(name, LogText.untrusted(name));
        assertEquals("null", LogText.untrusted(null));
    }

    @Test
    void everyKindOfControlCharacterIsWrittenOutVisibly()
    {
        assertEquals("a\\nb\\rc\\td", LogText.untrusted("a\nb\rc\td"));
        assertEquals("\\x00\\x07\\x1b[2J\\x1f", LogText.untrusted("\u0000\u0007\u001b[2J\u001f"), "C0");
        assertEquals("\\x7f", LogText.untrusted("\u007f"), "DEL");
        assertEquals("\\x80\\x85\\x9b2J\\x9f", LogText.untrusted("\u0080\u0085\u009b2J\u009f"), "C1");
        assertEquals("\\u2028\\u2029", LogText.untrusted("\u2028\u2029"), "line and paragraph separators");
        assertEquals("\\u202a\\u202e\\u2066\\u2069", LogText.untrusted("\u202a\u202e\u2066\u2069"), "bidi controls");
        assertEquals("\\ud800x\\udfff", LogText.untrusted("\ud800x\udfff"), "lone surrogates");
        assertEquals("\u00a0\u200d", LogText.untrusted("\u00a0\u200d"), "printable or joining, not controls");
    }

    /** A backslash is doubled, so what the name held can be told from an escape: "\n" typed is not a newline. */
    @Test
    void aBackslashIsDoubledSoEscapesAreUnambiguous()
    {
        assertEquals("\\\\n", LogText.untrusted("\\n"));
        assertEquals("\\\\\\n", LogText.untrusted("\\\n"));
    }

    @Test
    void aForgedLogLineStaysInsideTheLineThatQuotesIt()
    {
        final String name = "x\nnicstack pipes: attached forged-1.app (pid 1, 1 connections of 4096-byte pipes)\n\u001b[2J.app";
        assertEquals("x\\nnicstack pipes: attached forged-1.app (pid 1, 1 connections of 4096-byte pipes)\\n\\x1b[2J.app",
            LogText.untrusted(name));
    }

    /** No character of the whole BMP comes out as one a terminal would act on, nor ends the line. */
    @Test
    void nothingComesOutThatATerminalActsOn()
    {
        for (int c = 0; c <= 0xFFFF; c++)
        {
            final String shown = LogText.untrusted("a" + (char)c + "b");
            for (int i = 0; i < shown.length(); i++)
            {
                final char d = shown.charAt(i);
                assertFalse(d < 0x20 || (d >= 0x7F && d < 0xA0) || d == 0x2028 || d == 0x2029
                    || (d >= 0x202A && d <= 0x202E) || (d >= 0x2066 && d <= 0x2069) || Character.isSurrogate(d),
                    "U+" + Integer.toHexString(c) + " came out as " + shown);
            }
            assertTrue(shown.startsWith("a") && shown.endsWith("b"), shown);
        }
    }

    /** Past the limit, in code points, the rest is left off and an ellipsis says so; a surrogate pair is never split. */
    @Test
    void aLongStringIsCutAtItsLimitWithAnEllipsis()
    {
        final String max = "n".repeat(LogText.MAX_NAME);
        assertSame(max, LogText.untrusted(max), "a name of NAME_MAX is shown whole");
        assertEquals(max + LogText.ELLIPSIS, LogText.untrusted(max + "tail"));
        assertEquals("\\n".repeat(LogText.MAX_NAME), LogText.untrusted("\n".repeat(LogText.MAX_NAME)), "escapes do not count");
        assertEquals("\\n".repeat(LogText.MAX_NAME) + LogText.ELLIPSIS, LogText.untrusted("\n".repeat(LogText.MAX_NAME + 1)));
        final String emoji = "😀".repeat(LogText.MAX_NAME);
        assertSame(emoji, LogText.untrusted(emoji), "255 code points, 510 chars");
        assertEquals("😀".repeat(3) + LogText.ELLIPSIS, LogText.untrusted("😀".repeat(4), 3));
        assertEquals("ab" + LogText.ELLIPSIS, LogText.untrusted("ab\u001b", 2));
        assertEquals("x".repeat(LogText.MAX_MESSAGE) + LogText.ELLIPSIS,
            LogText.untrusted("x".repeat(LogText.MAX_MESSAGE + 1), LogText.MAX_MESSAGE));
    }
}
