package io.nicstack.stack.wire;

import java.nio.ByteOrder;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * A parsed TCP header with its options (smoltcp {@code TcpRepr}): a reusable, mutable value that
 * {@link #parse}s and {@link #emit}s without allocating. The state machine works on this, never
 * on raw offsets; keep one per thread on the fast path, build fresh ones in tests.
 *
 * <p>Options understood (RFC 9293 section 3.2, RFC 7323, RFC 2018): end of list, no-operation,
 * maximum segment size, window scale, SACK-permitted, SACK and timestamps. Parsing makes no
 * assumption about alignment or NOP padding; unknown kinds are skipped by their length; a known
 * kind whose length does not match its definition (e.g. MSS with length 3) is skipped and ignored.
 *
 * <p>Illegal option lengths: RFC 9293 section 3.2 says a TCP "MUST be prepared to handle an
 * illegal option length (e.g., zero) without crashing; a suggested procedure is to reset the
 * connection and log the error cause". {@link #parse} stops at the first option whose length is
 * below 2 or runs past the header and returns {@link #BAD_OPTION}; every field parsed before it,
 * the fixed header and the payload bounds stay valid, so the caller can choose between dropping
 * the segment, resetting, or (like Linux {@code tcp_parse_options}) carrying on with what was
 * read. Nothing is ever read outside the header.
 *
 * <p>Sequence numbers are raw 32-bit values: compare them only through {@link Seq}.
 */
public final class TcpRepr
{
    /** Parsed without error. */
    public static final int OK = 0;

    /** The region is shorter than the 20-byte fixed header (or lies outside the buffer). */
    public static final int TRUNCATED = 1;

    /** The data offset is below 20 bytes or beyond the end of the segment. */
    public static final int BAD_DATA_OFFSET = 2;

    /** An option length is below 2 or runs past the header; earlier fields are valid. */
    public static final int BAD_OPTION = 3;

    /** Option kind: end of option list. */
    public static final int OPTION_EOL = 0;

    /** Option kind: no-operation. */
    public static final int OPTION_NOP = 1;

    /** Option kind: maximum segment size (RFC 9293 section 3.7.1), length 4. */
    public static final int OPTION_MSS = 2;

    /** Option kind: window scale (RFC 7323 section 2.2), length 3. */
    public static final int OPTION_WINDOW_SCALE = 3;

    /** Option kind: SACK-permitted (RFC 2018 section 2), length 2. */
    public static final int OPTION_SACK_PERMITTED = 4;

    /** Option kind: SACK (RFC 2018 section 3), length 2 + 8n. */
    public static final int OPTION_SACK = 5;

    /** Option kind: timestamps (RFC 7323 section 3.2), length 10. */
    public static final int OPTION_TIMESTAMPS = 8;

    /** Most SACK blocks that fit in 40 bytes of options (RFC 2018 section 3). */
    public static final int MAX_SACK_BLOCKS = 4;

    /** Largest window shift (RFC 7323 section 2.3). */
    public static final int MAX_WINDOW_SCALE = 14;

    /** Most option bytes a header can carry. */
    public static final int MAX_OPTIONS_LENGTH = TcpHeader.MAX_HEADER_LENGTH - TcpHeader.HEADER_LENGTH;

    private static final int MSS_LENGTH = 4;
    private static final int WINDOW_SCALE_LENGTH = 3;
    private static final int SACK_PERMITTED_LENGTH = 2;
    private static final int TIMESTAMPS_LENGTH = 10;
    private static final int SACK_BLOCK_LENGTH = 8;
    /** NOP, NOP, kind 8, length 10: the timestamps layout of RFC 7323 Appendix A, as one big-endian word. */
    private static final int ALIGNED_TIMESTAMPS = 0x0101_080A;
    private static final int ALIGNED_TIMESTAMPS_LENGTH = 12;

    /** Source port, 0..65535. */
    public int sourcePort;

    /** Destination port, 0..65535. */
    public int destinationPort;

    /** Sequence number, raw 32 bits. */
    public int seq;

    /** Acknowledgment number, raw 32 bits. */
    public int ack;

    /** Control bits, {@link TcpHeader#FIN} .. {@link TcpHeader#CWR}. */
    public int flags;

    /** Window field, raw 16 bits before scaling. */
    public int window;

    /** Urgent pointer, 0..65535. */
    public int urgentPointer;

    /** Maximum segment size option, or -1 if absent. */
    public int mss;

    /** Window scale shift, 0..14, or -1 if absent (RFC 7323 section 2.3: larger values become 14). */
    public int windowScale;

    /** SACK-permitted option present. */
    public boolean sackPermitted;

    /** Timestamps option present; {@link #tsVal} and {@link #tsEcr} are meaningful only then. */
    public boolean timestampsPresent;

    /** Timestamp value, raw 32 bits. */
    public int tsVal;

    /** Timestamp echo reply, raw 32 bits. */
    public int tsEcr;

    /** Number of valid entries in {@link #sackLeft} and {@link #sackRight}, 0..4; the rest are stale. */
    public int sackBlockCount;

    /** Left edges of the SACK blocks. */
    public final int[] sackLeft = new int[MAX_SACK_BLOCKS];

    /** Right edges (exclusive) of the SACK blocks. */
    public final int[] sackRight = new int[MAX_SACK_BLOCKS];

    /** Absolute index of the payload after {@link #parse}. */
    public int payloadOffset;

    /** Length of the payload after {@link #parse}; for {@link #bufferLength()} when emitting. */
    public int payloadLength;

    /** A repr with every field at its default. */
    public TcpRepr()
    {
        reset();
    }

    /** Clear every field to its default: zeros, options absent. */
    public TcpRepr reset()
    {
        sourcePort = 0;
        destinationPort = 0;
        seq = 0;
        ack = 0;
        flags = 0;
        window = 0;
        urgentPointer = 0;
        resetOptions();
        payloadOffset = 0;
        payloadLength = 0;
        return this;
    }

    /** The options' part of {@link #reset()}: every option absent. */
    private void resetOptions()
    {
        mss = -1;
        windowScale = -1;
        sackPermitted = false;
        timestampsPresent = false;
        tsVal = 0;
        tsEcr = 0;
        sackBlockCount = 0; // entries at and past the count are stale and never read
    }

    /** True when every bit of {@code mask} is set in {@link #flags}. */
    public boolean hasFlags(final int mask)
    {
        return (flags & mask) == mask;
    }

    /**
     * Append a SACK block if there is room for it in {@link #sackLeft}/{@link #sackRight}.
     *
     * @return false when four blocks are already held.
     */
    public boolean addSackBlock(final int left, final int rightExclusive)
    {
        if (sackBlockCount >= MAX_SACK_BLOCKS)
        {
            return false;
        }
        sackLeft[sackBlockCount] = left;
        sackRight[sackBlockCount] = rightExclusive;
        sackBlockCount++;
        return true;
    }

    /**
     * Parse the segment in {@code buffer[offset, offset + length)} (header, options and payload).
     * Every field is set: parsed, or reset to its default. The checksum is not verified here: it needs the IP addresses,
     * see {@link TcpHeader#checksumValid(int, int)}.
     *
     * @return {@link #OK}, {@link #TRUNCATED}, {@link #BAD_DATA_OFFSET} or {@link #BAD_OPTION}.
     */
    public int parse(final DirectBuffer buffer, final int offset, final int length)
    {
        if (!Bounds.regionFits(buffer, offset, length) || length < TcpHeader.HEADER_LENGTH)
        {
            reset();
            return TRUNCATED;
        }
        // The fixed header overwrites every other field below.
        resetOptions();

        // From here on [offset, offset + length) lies inside the buffer and holds the fixed header, so the
        // raw reads below at offsets under 20 are in bounds; parseOptions stays below offset + dataOffset <= length.
        // Five big-endian reads for the fixed header's fields: ports | sequence | acknowledgment |
        // data offset, reserved, flags, window | urgent pointer (the checksum, at 16, is not kept).
        final int ports = Raw.i32(buffer, offset + TcpHeader.SOURCE_PORT_OFFSET);
        seq = Raw.i32(buffer, offset + TcpHeader.SEQUENCE_NUMBER_OFFSET);
        ack = Raw.i32(buffer, offset + TcpHeader.ACKNOWLEDGMENT_NUMBER_OFFSET);
        final int control = Raw.i32(buffer, offset + TcpHeader.DATA_OFFSET_OFFSET);
        urgentPointer = Raw.u16(buffer, offset + TcpHeader.URGENT_POINTER_OFFSET);
        sourcePort = ports >>> 16;
        destinationPort = ports & 0xFFFF;
        flags = (control >>> 16) & 0xFF;
        window = control & 0xFFFF;

        final int dataOffset = (control >>> 28) * 4;
        if (dataOffset < TcpHeader.HEADER_LENGTH || dataOffset > length)
        {
            payloadOffset = 0;
            payloadLength = 0;
            return BAD_DATA_OFFSET;
        }
        payloadOffset = offset + dataOffset;
        payloadLength = length - dataOffset;

        final int options = offset + TcpHeader.HEADER_LENGTH;
        if (dataOffset == TcpHeader.HEADER_LENGTH + ALIGNED_TIMESTAMPS_LENGTH && Raw.i32(buffer, options) == ALIGNED_TIMESTAMPS)
        {
            // The layout every established segment of Linux and of this stack carries (NOP, NOP, timestamps):
            // read it straight, as Linux tcp_parse_aligned_timestamp does. 12 option bytes lie inside dataOffset.
            timestampsPresent = true;
            tsVal = Raw.i32(buffer, options + 4);
            tsEcr = Raw.i32(buffer, options + 8);
            return OK;
        }
        return parseOptions(buffer, options, offset + dataOffset);
    }

    private int parseOptions(final DirectBuffer buffer, final int start, final int end)
    {
        // Every read below lies in [start, end), which parse proved is inside the buffer: the kind at i < end,
        // the length at i + 1 once end - i >= 2, and each option's fields inside its optionLength <= end - i.
        int i = start;
        while (i < end)
        {
            final int kind = Raw.u8(buffer, i);
            if (kind == OPTION_EOL)
            {
                break;
            }
            if (kind == OPTION_NOP)
            {
                i++;
                continue;
            }

            // RFC 9293 section 3.2: every other kind has a length octet counting kind and length.
            if (end - i < 2)
            {
                return BAD_OPTION;
            }
            final int optionLength = Raw.u8(buffer, i + 1);
            if (optionLength < 2 || optionLength > end - i)
            {
                return BAD_OPTION;
            }

            switch (kind)
            {
                case OPTION_MSS:
                    if (optionLength == MSS_LENGTH)
                    {
                        mss = Raw.u16(buffer, i + 2);
                    }
                    break;

                case OPTION_WINDOW_SCALE:
                    if (optionLength == WINDOW_SCALE_LENGTH)
                    {
                        // RFC 7323 section 2.3: a shift above 14 MUST be used as 14.
                        windowScale = Math.min(Raw.u8(buffer, i + 2), MAX_WINDOW_SCALE);
                    }
                    break;

                case OPTION_SACK_PERMITTED:
                    if (optionLength == SACK_PERMITTED_LENGTH)
                    {
                        sackPermitted = true;
                    }
                    break;

                case OPTION_SACK:
                    if (optionLength >= 2 + SACK_BLOCK_LENGTH && (optionLength - 2) % SACK_BLOCK_LENGTH == 0)
                    {
                        final int blocks = Math.min((optionLength - 2) / SACK_BLOCK_LENGTH, MAX_SACK_BLOCKS);
                        for (int b = 0; b < blocks; b++)
                        {
                            final int at = i + 2 + b * SACK_BLOCK_LENGTH;
                            sackLeft[b] = Raw.i32(buffer, at);
                            sackRight[b] = Raw.i32(buffer, at + 4);
                        }
                        sackBlockCount = blocks;
                    }
                    break;

                case OPTION_TIMESTAMPS:
                    if (optionLength == TIMESTAMPS_LENGTH)
                    {
                        timestampsPresent = true;
                        tsVal = Raw.i32(buffer, i + 2);
                        tsEcr = Raw.i32(buffer, i + 6);
                    }
                    break;

                default:
                    // Unknown kinds are skipped by their length (RFC 9293 section 3.2).
                    break;
            }
            i += optionLength;
        }
        return OK;
    }

    /**
     * Length of the header {@link #emit} writes: 20 plus the options, which are laid out in
     * 4-byte units so no padding is ever needed.
     */
    public int headerLength()
    {
        final int fixedOptions = fixedOptionsLength();
        return TcpHeader.HEADER_LENGTH + fixedOptions + sackOptionLength(emittedSackBlocks(fixedOptions));
    }

    /** {@link #headerLength()} plus {@link #payloadLength}: the whole segment. */
    public int bufferLength()
    {
        return headerLength() + payloadLength;
    }

    /**
     * Write the header and options at {@code offset} with the checksum field zero; the payload,
     * if any, goes at {@code offset + headerLength()} and the checksum is computed afterwards with
     * {@link TcpHeader#updateChecksum(int, int)}.
     *
     * <p>Options use the layouts of Linux {@code tcp_options_write}, every piece a multiple of 4
     * bytes: MSS; SACK-permitted + timestamps as {@code 4,2,8,10,...} (or {@code NOP,NOP,8,10,...}
     * without SACK-permitted); {@code NOP,3,3,shift}; {@code NOP,NOP,4,2} when SACK-permitted has no
     * timestamps to share with; {@code NOP,NOP,5,len,...} for the SACK blocks that still fit in the
     * 40 option bytes (the first ones are kept, the others dropped).
     */
    public void emit(final MutableDirectBuffer buffer, final int offset)
    {
        final int fixedOptions = fixedOptionsLength();
        final int sackBlocks = emittedSackBlocks(fixedOptions);
        final int headerLength = TcpHeader.HEADER_LENGTH + fixedOptions + sackOptionLength(sackBlocks);

        buffer.putShort(offset + TcpHeader.SOURCE_PORT_OFFSET, (short)sourcePort, ByteOrder.BIG_ENDIAN);
        buffer.putShort(offset + TcpHeader.DESTINATION_PORT_OFFSET, (short)destinationPort, ByteOrder.BIG_ENDIAN);
        buffer.putInt(offset + TcpHeader.SEQUENCE_NUMBER_OFFSET, seq, ByteOrder.BIG_ENDIAN);
        buffer.putInt(offset + TcpHeader.ACKNOWLEDGMENT_NUMBER_OFFSET, ack, ByteOrder.BIG_ENDIAN);
        buffer.putByte(offset + TcpHeader.DATA_OFFSET_OFFSET, (byte)((headerLength >>> 2) << 4));
        buffer.putByte(offset + TcpHeader.FLAGS_OFFSET, (byte)flags);
        buffer.putShort(offset + TcpHeader.WINDOW_OFFSET, (short)window, ByteOrder.BIG_ENDIAN);
        buffer.putShort(offset + TcpHeader.CHECKSUM_OFFSET, (short)0, ByteOrder.BIG_ENDIAN);
        buffer.putShort(offset + TcpHeader.URGENT_POINTER_OFFSET, (short)urgentPointer, ByteOrder.BIG_ENDIAN);

        int i = offset + TcpHeader.HEADER_LENGTH;
        if (mss >= 0)
        {
            buffer.putByte(i, (byte)OPTION_MSS);
            buffer.putByte(i + 1, (byte)MSS_LENGTH);
            buffer.putShort(i + 2, (short)mss, ByteOrder.BIG_ENDIAN);
            i += 4;
        }
        if (timestampsPresent)
        {
            if (sackPermitted)
            {
                buffer.putByte(i, (byte)OPTION_SACK_PERMITTED);
                buffer.putByte(i + 1, (byte)SACK_PERMITTED_LENGTH);
            }
            else
            {
                buffer.putByte(i, (byte)OPTION_NOP);
                buffer.putByte(i + 1, (byte)OPTION_NOP);
            }
            buffer.putByte(i + 2, (byte)OPTION_TIMESTAMPS);
            buffer.putByte(i + 3, (byte)TIMESTAMPS_LENGTH);
            buffer.putInt(i + 4, tsVal, ByteOrder.BIG_ENDIAN);
            buffer.putInt(i + 8, tsEcr, ByteOrder.BIG_ENDIAN);
            i += 12;
        }
        if (windowScale >= 0)
        {
            buffer.putByte(i, (byte)OPTION_NOP);
            buffer.putByte(i + 1, (byte)OPTION_WINDOW_SCALE);
            buffer.putByte(i + 2, (byte)WINDOW_SCALE_LENGTH);
            buffer.putByte(i + 3, (byte)windowScale);
            i += 4;
        }
        if (sackPermitted && !timestampsPresent)
        {
            buffer.putByte(i, (byte)OPTION_NOP);
            buffer.putByte(i + 1, (byte)OPTION_NOP);
            buffer.putByte(i + 2, (byte)OPTION_SACK_PERMITTED);
            buffer.putByte(i + 3, (byte)SACK_PERMITTED_LENGTH);
            i += 4;
        }
        if (sackBlocks > 0)
        {
            buffer.putByte(i, (byte)OPTION_NOP);
            buffer.putByte(i + 1, (byte)OPTION_NOP);
            buffer.putByte(i + 2, (byte)OPTION_SACK);
            buffer.putByte(i + 3, (byte)(2 + sackBlocks * SACK_BLOCK_LENGTH));
            i += 4;
            for (int b = 0; b < sackBlocks; b++)
            {
                buffer.putInt(i, sackLeft[b], ByteOrder.BIG_ENDIAN);
                buffer.putInt(i + 4, sackRight[b], ByteOrder.BIG_ENDIAN);
                i += SACK_BLOCK_LENGTH;
            }
        }
    }

    /** Copy every field of {@code other} into this repr. */
    public TcpRepr set(final TcpRepr other)
    {
        sourcePort = other.sourcePort;
        destinationPort = other.destinationPort;
        seq = other.seq;
        ack = other.ack;
        flags = other.flags;
        window = other.window;
        urgentPointer = other.urgentPointer;
        mss = other.mss;
        windowScale = other.windowScale;
        sackPermitted = other.sackPermitted;
        timestampsPresent = other.timestampsPresent;
        tsVal = other.tsVal;
        tsEcr = other.tsEcr;
        sackBlockCount = other.sackBlockCount;
        System.arraycopy(other.sackLeft, 0, sackLeft, 0, MAX_SACK_BLOCKS);
        System.arraycopy(other.sackRight, 0, sackRight, 0, MAX_SACK_BLOCKS);
        payloadOffset = other.payloadOffset;
        payloadLength = other.payloadLength;
        return this;
    }

    /** Readable form for logs and test failures (allocates). */
    @Override
    public String toString()
    {
        final StringBuilder sb = new StringBuilder(128);
        sb.append("TcpRepr{").append(sourcePort).append("->").append(destinationPort)
            .append(" seq=").append(Integer.toUnsignedString(seq))
            .append(" ack=").append(Integer.toUnsignedString(ack))
            .append(" flags=");
        appendFlags(sb, flags);
        sb.append(" win=").append(window);
        if (urgentPointer != 0)
        {
            sb.append(" urg=").append(urgentPointer);
        }
        if (mss >= 0)
        {
            sb.append(" mss=").append(mss);
        }
        if (windowScale >= 0)
        {
            sb.append(" ws=").append(windowScale);
        }
        if (sackPermitted)
        {
            sb.append(" sackOK");
        }
        if (timestampsPresent)
        {
            sb.append(" ts=").append(Integer.toUnsignedString(tsVal))
                .append('/').append(Integer.toUnsignedString(tsEcr));
        }
        for (int b = 0; b < sackBlockCount; b++)
        {
            sb.append(" sack=").append(Integer.toUnsignedString(sackLeft[b]))
                .append('-').append(Integer.toUnsignedString(sackRight[b]));
        }
        sb.append(" len=").append(payloadLength).append('}');
        return sb.toString();
    }

    /** Human-readable name of a {@link #parse} status. */
    public static String statusName(final int status)
    {
        switch (status)
        {
            case OK:
                return "OK";
            case TRUNCATED:
                return "TRUNCATED";
            case BAD_DATA_OFFSET:
                return "BAD_DATA_OFFSET";
            case BAD_OPTION:
                return "BAD_OPTION";
            default:
                return "UNKNOWN(" + status + ")";
        }
    }

    private static void appendFlags(final StringBuilder sb, final int flags)
    {
        final String names = "FSRPAUEC";
        if (flags == 0)
        {
            sb.append('-');
        }
        for (int bit = 0; bit < 8; bit++)
        {
            if ((flags & (1 << bit)) != 0)
            {
                sb.append(names.charAt(bit));
            }
        }
    }

    private int fixedOptionsLength()
    {
        int length = 0;
        if (mss >= 0)
        {
            length += 4;
        }
        if (timestampsPresent)
        {
            length += 12;
        }
        if (windowScale >= 0)
        {
            length += 4;
        }
        if (sackPermitted && !timestampsPresent)
        {
            length += 4;
        }
        return length;
    }

    private int emittedSackBlocks(final int fixedOptionsLength)
    {
        // NOP, NOP, kind, length, then 8 bytes per block, within the 40 option bytes.
        final int room = (MAX_OPTIONS_LENGTH - fixedOptionsLength - 4) / SACK_BLOCK_LENGTH;
        return Math.max(0, Math.min(sackBlockCount, room));
    }

    private static int sackOptionLength(final int blocks)
    {
        return blocks == 0 ? 0 : 4 + blocks * SACK_BLOCK_LENGTH;
    }
}
