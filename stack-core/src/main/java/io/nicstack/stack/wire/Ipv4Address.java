package io.nicstack.stack.wire;

/**
 * IPv4 addresses held as an {@code int}, first octet most significant ({@code 10.0.0.1} is
 * {@code 0x0A00_0001}).
 */
public final class Ipv4Address
{
    /** Length of an IPv4 address on the wire. */
    public static final int LENGTH = 4;

    /** {@code 0.0.0.0}. */
    public static final int ANY = 0;

    /** {@code 255.255.255.255}, the limited broadcast address (RFC 919). */
    public static final int BROADCAST = 0xFFFF_FFFF;

    private Ipv4Address()
    {
    }

    /**
     * Parse a strict dotted quad: exactly four decimal octets 0..255 separated by dots, no signs,
     * no whitespace and no leading zeros (which some parsers read as octal).
     *
     * @throws IllegalArgumentException if the text is not in that form.
     */
    public static int parse(final String text)
    {
        if (text == null)
        {
            throw new IllegalArgumentException("not an IPv4 address: null");
        }

        final int length = text.length();
        int address = 0;
        int i = 0;
        for (int octet = 0; octet < 4; octet++)
        {
            if (octet > 0)
            {
                if (i >= length || text.charAt(i) != '.')
                {
                    throw new IllegalArgumentException("not an IPv4 address: " + text);
                }
                i++;
            }

            final int start = i;
            int value = 0;
            while (i < length && i - start < 4)
            {
                final char c = text.charAt(i);
                if (c < '0' || c > '9')
                {
                    break;
                }
                value = value * 10 + (c - '0');
                i++;
            }

            final int digits = i - start;
            if (digits == 0 || digits > 3 || value > 255 || (digits > 1 && text.charAt(start) == '0'))
            {
                throw new IllegalArgumentException("not an IPv4 address: " + text);
            }
            address = (address << 8) | value;
        }

        if (i != length)
        {
            throw new IllegalArgumentException("not an IPv4 address: " + text);
        }
        return address;
    }

    /** Dotted-quad form. */
    public static String format(final int address)
    {
        return append(new StringBuilder(15), address).toString();
    }

    /** Append the dotted-quad form to {@code sb} (no string made: for text built in a loop); returns {@code sb}. */
    public static StringBuilder append(final StringBuilder sb, final int address)
    {
        return sb.append(address >>> 24).append('.').append((address >>> 16) & 0xFF).append('.')
            .append((address >>> 8) & 0xFF).append('.').append(address & 0xFF);
    }

    /**
     * Network mask with the top {@code prefixLength} bits set ({@code prefixMask(24)} is
     * {@code 0xFFFF_FF00}).
     *
     * @throws IllegalArgumentException unless {@code 0 <= prefixLength <= 32}.
     */
    public static int prefixMask(final int prefixLength)
    {
        if (prefixLength < 0 || prefixLength > 32)
        {
            throw new IllegalArgumentException("prefix length out of range: " + prefixLength);
        }
        // A shift by 32 is a shift by 0 in Java, hence the special case.
        return prefixLength == 0 ? 0 : -1 << (32 - prefixLength);
    }

    /** Class D multicast, 224.0.0.0/4 (RFC 5771). */
    public static boolean isMulticast(final int address)
    {
        return (address >>> 28) == 0xE;
    }
}
