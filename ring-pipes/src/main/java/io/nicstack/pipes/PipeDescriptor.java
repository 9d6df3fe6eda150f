package io.nicstack.pipes;

import static org.agrona.BitUtil.CACHE_LINE_LENGTH;

/**
 * Layout of one pipe: a single-producer single-consumer byte ring with 64-bit monotonic positions.
 *
 * <pre>
 *   0                                                             2 cache lines
 *  +----------------------------------------------------------------+
 *  |  tail: producer position (long), written with release          |  <- producer's line(s)
 *  +----------------------------------------------------------------+
 *  |  head: consumer position (long), written with release          |  <- consumer's line(s)
 *  +----------------------------------------------------------------+
 *  |  capacity bytes of data (a power of two); byte at position p    |
 *  |  lives at DATA_OFFSET + (p & (capacity - 1))                    |
 *  +----------------------------------------------------------------+
 * </pre>
 *
 * Positions only grow (64 bits never wrap in practice). Readable = tail - head; free = capacity - (tail - head).
 * The producer writes data, then publishes with {@code putLongRelease(TAIL)}; the consumer reads tail with
 * {@code getLongVolatile}, reads data, then publishes consumption with {@code putLongRelease(HEAD)}.
 *
 * <p>RX pipe (daemon produces, app consumes): the daemon may write out-of-order TCP payload beyond the tail
 * at its stream offset, but moves the tail only over contiguous bytes. TX pipe (app produces, daemon
 * consumes): the daemon reads any byte in [head, tail) as often as TCP needs (retransmissions) and moves
 * the head only when bytes are acknowledged. Position 0 is the first payload byte of the connection.
 * Each position field has two cache lines to itself (adjacent-line prefetch), as in Agrona's rings.
 */
public final class PipeDescriptor
{
    public static final int TAIL_OFFSET = 0;
    public static final int HEAD_OFFSET = 2 * CACHE_LINE_LENGTH;
    public static final int DATA_OFFSET = 4 * CACHE_LINE_LENGTH;

    private PipeDescriptor()
    {
    }

    /** Bytes a pipe of {@code capacity} data bytes takes. */
    public static int length(final int capacity)
    {
        return DATA_OFFSET + capacity;
    }
}
