package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Big-endian reads without per-read bounds checks, for parsers that have already proved the whole
 * region they read lies inside the buffer ({@link Bounds#regionFits} plus their own length checks).
 * Agrona checks every {@code getInt}; on the receive path those checks cost more than the reads, and
 * they are redundant after one range check. Every caller states, next to its range check, why each
 * index it passes lies inside the checked region; a wrong index here reads wrong memory instead of
 * throwing, so nothing that has not been range-checked may come through. With assertions on (as in
 * every test run) each read is checked anyway, so the fuzz tests catch an index that escapes.
 */
final class Raw
{
    /** The platform's byte order is little-endian (so big-endian values need a byte swap). */
    static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private Raw()
    {
    }

    static int u8(final DirectBuffer buffer, final int index)
    {
        assert inside(buffer, index, 1);
        return UnsafeApi.getByte(buffer.byteArray(), buffer.addressOffset() + index) & 0xFF;
    }

    static int u16(final DirectBuffer buffer, final int index)
    {
        assert inside(buffer, index, 2);
        final short v = UnsafeApi.getShort(buffer.byteArray(), buffer.addressOffset() + index);
        return (LITTLE_ENDIAN ? Short.reverseBytes(v) : v) & 0xFFFF;
    }

    static int i32(final DirectBuffer buffer, final int index)
    {
        assert inside(buffer, index, 4);
        final int v = UnsafeApi.getInt(buffer.byteArray(), buffer.addressOffset() + index);
        return LITTLE_ENDIAN ? Integer.reverseBytes(v) : v;
    }

    /** Six octets, first most significant, as a MAC address ({@link MacAddress#read} is the checked read). */
    static long u48(final DirectBuffer buffer, final int index)
    {
        return ((long)u16(buffer, index) << 32) | (i32(buffer, index + 2) & 0xFFFF_FFFFL);
    }

    private static boolean inside(final DirectBuffer buffer, final int index, final int size)
    {
        if (index < 0 || (long)index + size > buffer.capacity())
        {
            throw new AssertionError("raw read of " + size + " bytes at " + index + " outside a buffer of " + buffer.capacity());
        }
        return true;
    }
}
