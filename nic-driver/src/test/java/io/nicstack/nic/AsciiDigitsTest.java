package io.nicstack.nic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.SplittableRandom;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/** The one reader of ASCII-digit numbers that the daemon's options, the stack's config and the fault spec share. */
class AsciiDigitsTest
{
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
    private static final String REPLAY = "seed " + SEED + " (-Dnicstack.fuzz.seed=" + SEED + " repeats it)";
    /** Digits, signs and what Java's parsers also take: other scripts' digits, exponents, points, blanks. */
    private static final String ALPHABET = "0123456789+-.eE _\u0660\u0665\u0967\uff10\uff19\u00b2";
    private static final Pattern DIGITS = Pattern.compile("[0-9]+");

    @Test
    void digitsAloneAreANumber()
    {
        assertEquals(1500, AsciiDigits.parseInt("1500"));
        assertEquals(64, AsciiDigits.parseInt("064"));
        assertEquals(Integer.MAX_VALUE, AsciiDigits.parseInt("2147483647"));
        assertEquals(Long.MAX_VALUE, AsciiDigits.parseLong("9223372036854775807", 0, 19));
        assertEquals(85, AsciiDigits.parseLong("1.85ms", 2, 4));
        assertTrue(AsciiDigits.isDigits("0"));
        assertTrue(AsciiDigits.isDigits("x12y", 1, 3));
    }

    @Test
    void anythingElseIsRefusedNamingIt()
    {
        for (final String text : new String[] {"", "+1", "-1", "1.0", "1e3", " 1", "1 ", "\u0661\u0665", "\uff11", "1_000",
            "0x10", "\u00b2"})
        {
            assertFalse(AsciiDigits.isDigits(text), text);
            final NumberFormatException e = assertThrows(NumberFormatException.class, () -> AsciiDigits.parseInt(text));
            assertTrue(e.getMessage().contains("'" + text + "'"), e.getMessage());
        }
        assertThrows(NumberFormatException.class, () -> AsciiDigits.parseInt("2147483648"));
        assertThrows(NumberFormatException.class, () -> AsciiDigits.parseLong("9223372036854775808", 0, 19));
        assertThrows(NumberFormatException.class, () -> AsciiDigits.parseLong("99999999999999999999", 0, 20));
        assertFalse(AsciiDigits.isDigits("12", 1, 1), "an empty range has no digits");
    }

    /** Random strings: a number exactly when they are ASCII digits that fit, and then the number they say. */
    @Test
    void randomTextIsANumberExactlyWhenItIsAsciiDigitsThatFit()
    {
        final SplittableRandom random = new SplittableRandom(SEED);
        for (int i = 0; i < 100_000; i++)
        {
            final StringBuilder b = new StringBuilder();
            final int length = random.nextInt(22);
            for (int k = 0; k < length; k++)
            {
                b.append(random.nextInt(4) == 0 ? ALPHABET.charAt(random.nextInt(ALPHABET.length()))
                    : (char)('0' + random.nextInt(10)));
            }
            final String text = b.toString();
            final boolean digits = DIGITS.matcher(text).matches();
            assertEquals(digits, AsciiDigits.isDigits(text), () -> "'" + text + "', " + REPLAY);
            final BigInteger exact = digits ? new BigInteger(text) : null;
            if (digits && exact.bitLength() < 64)
            {
                assertEquals(exact.longValueExact(), AsciiDigits.parseLong(text, 0, text.length()), REPLAY);
            }
            else
            {
                assertThrows(NumberFormatException.class, () -> AsciiDigits.parseLong(text, 0, text.length()),
                    () -> "'" + text + "', " + REPLAY);
            }
            if (digits && exact.bitLength() < 32)
            {
                assertEquals(exact.intValueExact(), AsciiDigits.parseInt(text), REPLAY);
            }
            else
            {
                assertThrows(NumberFormatException.class, () -> AsciiDigits.parseInt(text), () -> "'" + text + "', " + REPLAY);
            }
        }
    }
}
