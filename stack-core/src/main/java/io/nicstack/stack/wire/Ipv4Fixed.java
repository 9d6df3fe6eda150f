package io.nicstack.stack.wire;

import org.agrona.DirectBuffer;

/**
 * The 20-byte fixed part of a received IPv4 header, decoded in one pass: one range check, then five raw 32-bit
 * reads, from which every field and the header's checksum sum come (instead of a bounds-checked read per getter,
 * several of them of the same bytes). A reusable value like {@link TcpRepr}; the receive path keeps one. Options,
 * when the header has them, are read through {@link Ipv4Header}.
 */
public final class Ipv4Fixed
{
    /** Version, the high nibble of the first byte. */
    public int version;
    /** IHL × 4: the header's length in bytes, options included. */
    public int headerLength;
    /** Total length field. */
    public int totalLength;
    /** Flags and fragment offset field (16 bits). */
    public int flagsAndFragmentOffset;
    /** Time to live. */
    public int ttl;
    /** Protocol number. */
    public int protocol;
    /** Source address, big endian. */
    public int source;
    /** Destination address, big endian. */
    public int destination;
    /** Unfolded ones' complement sum of the 20 bytes (checksum field included). */
    private long sum;

    /**
     * Decode {@code buffer[offset, offset + 20)}.
     *
     * @return false, leaving the fields stale, when {@code [offset, offset + length)} does not lie inside the buffer
     *     or is shorter than 20 bytes.
     */
    public boolean decode(final DirectBuffer buffer, final int offset, final int length)
    {
        if (!Bounds.regionFits(buffer, offset, length) || length < Ipv4Header.MIN_HEADER_LENGTH)
        {
            return false;
        }
        // [offset, offset + 20) is inside the buffer: the five reads below stay in it.
        final int w0 = Raw.i32(buffer, offset);
        final int w1 = Raw.i32(buffer, offset + 4);
        final int w2 = Raw.i32(buffer, offset + 8);
        source = Raw.i32(buffer, offset + 12);
        destination = Raw.i32(buffer, offset + 16);
        version = w0 >>> 28;
        headerLength = ((w0 >>> 24) & 0x0F) * 4;
        totalLength = w0 & 0xFFFF;
        flagsAndFragmentOffset = w1 & 0xFFFF;
        ttl = w2 >>> 24;
        protocol = (w2 >>> 16) & 0xFF;
        // 32-bit chunks fold to the same ones' complement sum as 16-bit words (RFC 1071 section 2 (C)).
        sum = (w0 & 0xFFFF_FFFFL) + (w1 & 0xFFFF_FFFFL) + (w2 & 0xFFFF_FFFFL) + (source & 0xFFFF_FFFFL) +
            (destination & 0xFFFF_FFFFL);
        return true;
    }

    /** RFC 791: the header checksum verifies; only for a header without options ({@link #headerLength} 20). */
    public boolean checksumValidWithoutOptions()
    {
        if (headerLength != Ipv4Header.MIN_HEADER_LENGTH)
        {
            throw new IllegalStateException("a header with options: verify it with Ipv4Header.checksumValid()");
        }
        return Checksum.finish(sum) == 0;
    }

    /** The reserved flag, which RFC 791 requires to be zero. */
    public boolean reservedFlag()
    {
        return (flagsAndFragmentOffset & Ipv4Header.FLAG_RESERVED) != 0;
    }

    /** MF set or a non-zero fragment offset. */
    public boolean isFragment()
    {
        return (flagsAndFragmentOffset & (Ipv4Header.FLAG_MORE_FRAGMENTS | Ipv4Header.FRAGMENT_OFFSET_MASK)) != 0;
    }
}
