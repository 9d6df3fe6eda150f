package io.nicstack.pipes;

import java.util.Random;

/**
 * A deterministic byte stream for pipe tests: byte {@code p} is {@code bytes[p % PERIOD]}. The period is prime, so it
 * shares no factor with a power-of-two pipe capacity and any wrap or offset slip shows up as a mismatch.
 */
final class StreamPattern
{
    static final int PERIOD = 1_000_003;
    static final int MAX_SPAN = 1 << 20;

    final byte[] bytes;

    StreamPattern(final long seed)
    {
        bytes = new byte[PERIOD + MAX_SPAN];
        new Random(seed).nextBytes(bytes);
        System.arraycopy(bytes, 0, bytes, PERIOD, MAX_SPAN);
    }

    /** Index in {@link #bytes} where stream position {@code position} starts; {@code MAX_SPAN} bytes follow it. */
    static int offset(final long position)
    {
        return (int)(position % PERIOD);
    }
}
