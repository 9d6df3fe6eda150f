package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * IEEE 802 MAC addresses held as a {@code long}: the 48 bits sit in the low bits, first octet
 * most significant ({@code aa:bb:cc:dd:ee:ff} is {@code 0xAABB_CCDD_EEFFL}).
 */
public final class MacAddress
{
    /** Length of a MAC address on the wire. */
    public static final int LENGTH = 6;

    /** {@code ff:ff:ff:ff:ff:ff}. */
    public static final long BROADCAST = 0xFFFF_FFFF_FFFFL;

    /** Mask of the 48 address bits. */
    public static final long MASK = 0xFFFF_FFFF_FFFFL;

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private MacAddress()
    {
    }

    /**
     * Parse the colon-separated form {@code aa:bb:cc:dd:ee:ff} (exactly two hex digits per octet,
     * either case).
     *
     * @throws IllegalArgumentException if the text is not in that form.
     */
    public static long parse(final String text)
    {
        if (text == null || text.length() != 17)
        {
            throw new IllegalArgumentException("not a MAC address: " + text);
        }

        long mac = 0;
        for (int octet = 0; octet < LENGTH; octet++)
        {
            final int i = octet * 3;
            if (octet > 0 && text.charAt(i - 1) != ':')
            {
                throw new IllegalArgumentException("not a MAC address: " + text);
            }
            final int hi = Character.digit(text.charAt(i), 16);
            final int lo = Character.digit(text.charAt(i + 1), 16);
            if (hi < 0 || lo < 0 || !isAsciiHex(text.charAt(i)) || !isAsciiHex(text.charAt(i + 1)))
            {
                throw new IllegalArgumentException("not a MAC address: " + text);
            }
            mac = (mac << 8) | (hi << 4) | lo;
        }
        return mac;
    }

    /** Lower-case colon-separated form of the low 48 bits of {@code mac}. */
    public static String format(final long mac)
    {
        final char[] chars = new char[17];
        for (int octet = 0; octet < LENGTH; octet++)
        {
            final int b = (int)(mac >>> (40 - 8 * octet)) & 0xFF;
            final int i = octet * 3;
            chars[i] = HEX[b >>> 4];
            chars[i + 1] = HEX[b & 0xF];
            if (octet < LENGTH - 1)
            {
                chars[i + 2] = ':';
            }
        }
        return new String(chars);
    }

    /** Group address: the I/G bit (least significant bit of the first octet) is set (IEEE 802 section 8.2). */
    public static boolean isMulticast(final long mac)
    {
        return ((mac >>> 40) & 1) != 0;
    }

    /** All ones. */
    public static boolean isBroadcast(final long mac)
    {
        return (mac & MASK) == BROADCAST;
    }

    /** Individual (unicast) address: I/G bit clear. */
    public static boolean isUnicast(final long mac)
    {
        return !isMulticast(mac);
    }

    /** Read 6 octets at {@code index}, first octet most significant. */
    public static long read(final DirectBuffer buffer, final int index)
    {
        final long hi = buffer.getShort(index, ByteOrder.BIG_ENDIAN) & 0xFFFFL;
        final long lo = buffer.getInt(index + 2, ByteOrder.BIG_ENDIAN) & 0xFFFF_FFFFL;
        return (hi << 32) | lo;
    }

    /** Write the low 48 bits of {@code mac} as 6 octets at {@code index}. */
    public static void write(final MutableDirectBuffer buffer, final int index, final long mac)
    {
        buffer.putShort(index, (short)(mac >>> 32), ByteOrder.BIG_ENDIAN);
        buffer.putInt(index + 2, (int)mac, ByteOrder.BIG_ENDIAN);
    }

    private static boolean isAsciiHex(final char c)
    {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
}
