package io.nicstack.stack.icmp;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * The options of an echo reply (RFC 1122 3.2.2.6: a Record Route or Timestamp option received in an Echo Request
 * SHOULD be updated to include the current host and included in the IP header of the Echo Reply, without truncation,
 * so the route is recorded for the whole round trip). Other options are not reflected (Linux's ip_options_echo also
 * reverses a source route, which this host drops on input).
 *
 * <p>The request's options are well formed as far as {@code Ipv4} checks them (every length fits); an option whose
 * own pointer is malformed is left out of the reply. A Timestamp entry is milliseconds of the stack's clock with the
 * high-order bit set, the form RFC 791 allows when the time is not milliseconds since midnight UT: the stack keeps
 * an injected monotonic clock, not the time of day.
 */
final class EchoOptions
{
    static final int MAX_LENGTH = 40;
    private static final int EOL = 0;
    private static final int NOP = 1;
    private static final int RECORD_ROUTE = 7;
    private static final int TIMESTAMP = 68;
    /** The smallest pointer of each: the first slot after the option's type, length and pointer (and flags) octets. */
    private static final int RECORD_ROUTE_MIN_POINTER = 4;
    private static final int TIMESTAMP_MIN_POINTER = 5;
    private static final int TS_ONLY = 0;
    private static final int TS_AND_ADDRESS = 1;
    private static final int TS_PRESPECIFIED = 3;
    private static final int MAX_OVERFLOW = 15;

    private EchoOptions()
    {
    }

    /**
     * Write the reply's options for the request's {@code buffer[offset, offset + length)} to {@code out} at 0, padded
     * with end-of-list to a multiple of 4; returns their length, 0 when there is nothing to reflect.
     */
    static int reflect(
        final DirectBuffer buffer, final int offset, final int length, final int ourAddress, final long nowNanos,
        final MutableDirectBuffer out)
    {
        final int timestamp = 0x8000_0000 | (int)(nowNanos / 1_000_000L);
        int written = 0;
        int i = 0;
        while (i < length)
        {
            final int kind = buffer.getByte(offset + i) & 0xFF;
            if (kind == EOL)
            {
                break;
            }
            if (kind == NOP)
            {
                i++;
                continue;
            }
            final int optionLength = buffer.getByte(offset + i + 1) & 0xFF;
            if (kind == RECORD_ROUTE || kind == TIMESTAMP)
            {
                out.putBytes(written, buffer, offset + i, optionLength);
                if (kind == RECORD_ROUTE ? recordRoute(out, written, optionLength, ourAddress)
                    : timestamp(out, written, optionLength, ourAddress, timestamp))
                {
                    written += optionLength;
                }
            }
            i += optionLength;
        }
        final int padded = (written + 3) & ~3;
        out.setMemory(written, padded - written, (byte)EOL);
        return padded;
    }

    /** RFC 791 Record Route at {@code o[at]}: our address in the next free slot, if any; false if malformed. */
    private static boolean recordRoute(final MutableDirectBuffer o, final int at, final int length, final int ourAddress)
    {
        if (length < 3)
        {
            return false;
        }
        final int pointer = o.getByte(at + 2) & 0xFF;
        if (pointer < RECORD_ROUTE_MIN_POINTER)
        {
            return false;
        }
        if (pointer + 3 <= length)
        {
            o.putInt(at + pointer - 1, ourAddress, ByteOrder.BIG_ENDIAN);
            o.putByte(at + 2, (byte)(pointer + 4));
        }
        return true;
    }

    /**
     * RFC 791 Internet Timestamp at {@code o[at]}: our entry in the next free slot (a prespecified one only when it
     * names us), or the overflow count raised when there is no room; false if malformed.
     */
    private static boolean timestamp(
        final MutableDirectBuffer o, final int at, final int length, final int ourAddress, final int timestamp)
    {
        if (length < 4)
        {
            return false;
        }
        final int pointer = o.getByte(at + 2) & 0xFF;
        final int flags = o.getByte(at + 3) & 0x0F;
        final int overflow = (o.getByte(at + 3) & 0xF0) >>> 4;
        final int entry = flags == TS_ONLY ? 4 : 8;
        if (pointer < TIMESTAMP_MIN_POINTER || (flags != TS_ONLY && flags != TS_AND_ADDRESS && flags != TS_PRESPECIFIED))
        {
            return false;
        }
        if (pointer + entry - 1 > length)
        {
            if (flags != TS_PRESPECIFIED && overflow < MAX_OVERFLOW)
            {
                o.putByte(at + 3, (byte)((overflow + 1) << 4 | flags));
            }
            return true;
        }
        final int slot = at + pointer - 1;
        if (flags == TS_ONLY)
        {
            o.putInt(slot, timestamp, ByteOrder.BIG_ENDIAN);
        }
        else if (flags == TS_AND_ADDRESS)
        {
            o.putInt(slot, ourAddress, ByteOrder.BIG_ENDIAN);
            o.putInt(slot + 4, timestamp, ByteOrder.BIG_ENDIAN);
        }
        else if (o.getInt(slot, ByteOrder.BIG_ENDIAN) == ourAddress)
        {
            o.putInt(slot + 4, timestamp, ByteOrder.BIG_ENDIAN);
        }
        else
        {
            return true;
        }
        o.putByte(at + 2, (byte)(pointer + entry));
        return true;
    }
}
