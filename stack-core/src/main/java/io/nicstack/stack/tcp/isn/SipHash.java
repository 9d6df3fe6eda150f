package io.nicstack.stack.tcp.isn;

/**
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012) over messages of
 * whole 64-bit words, without allocation.
 *
 * <p>Byte layout: SipHash is defined on bytes read little-endian. The 128-bit key {@code k} is
 * {@code k0} = key bytes 0..7 and {@code k1} = key bytes 8..15, each as a little-endian long, so
 * the key 00 01 .. 0f is {@code k0 = 0x0706050403020100L, k1 = 0x0f0e0d0c0b0a0908L}. Message word
 * {@code mi} is message bytes {@code 8i..8i+7} as a little-endian long; hashing {@code n} words is
 * hashing an {@code 8n}-byte message. The result is the 64-bit output as a little-endian long, so
 * it equals the reference {@code vectors.h} entry read with a little-endian load.
 */
public final class SipHash
{
    private static final long V0_INIT = 0x736f6d6570736575L; // "somepseu"
    private static final long V1_INIT = 0x646f72616e646f6dL; // "dorandom"
    private static final long V2_INIT = 0x6c7967656e657261L; // "lygenera"
    private static final long V3_INIT = 0x7465646279746573L; // "tedbytes"

    private SipHash()
    {
    }

    /** SipHash-2-4 of the 8-byte message {@code m0}. */
    public static long hash(final long k0, final long k1, final long m0)
    {
        return hashWords(k0, k1, 1, m0, 0, 0);
    }

    /** SipHash-2-4 of the 16-byte message {@code m0 || m1}. */
    public static long hash(final long k0, final long k1, final long m0, final long m1)
    {
        return hashWords(k0, k1, 2, m0, m1, 0);
    }

    /** SipHash-2-4 of the 24-byte message {@code m0 || m1 || m2}. */
    public static long hash(final long k0, final long k1, final long m0, final long m1, final long m2)
    {
        return hashWords(k0, k1, 3, m0, m1, m2);
    }

    /** SipHash-2-4 of the first {@code count} (0 to 3) of the words {@code m0, m1, m2}. */
    static long hashWords(
        final long k0, final long k1, final int count, final long m0, final long m1, final long m2)
    {
        long v0 = k0 ^ V0_INIT;
        long v1 = k1 ^ V1_INIT;
        long v2 = k0 ^ V2_INIT;
        long v3 = k1 ^ V3_INIT;

        // The message words, then the final block: the length in bytes mod 256 in the top byte
        // (no tail bytes, since the message is whole words). Each takes c = 2 rounds.
        for (int i = 0; i <= count; i++)
        {
            final long m = i == count ? ((long)(8 * count)) << 56 : i == 0 ? m0 : i == 1 ? m1 : m2;
            v3 ^= m;
            for (int r = 0; r < 2; r++)
            {
                v0 += v1;
                v1 = Long.rotateLeft(v1, 13);
                v1 ^= v0;
                v0 = Long.rotateLeft(v0, 32);
                v2 += v3;
                v3 = Long.rotateLeft(v3, 16);
                v3 ^= v2;
                v0 += v3;
                v3 = Long.rotateLeft(v3, 21);
                v3 ^= v0;
                v2 += v1;
                v1 = Long.rotateLeft(v1, 17);
                v1 ^= v2;
                v2 = Long.rotateLeft(v2, 32);
            }
            v0 ^= m;
        }

        // Finalization: d = 4 rounds.
        v2 ^= 0xff;
        for (int r = 0; r < 4; r++)
        {
            v0 += v1;
            v1 = Long.rotateLeft(v1, 13);
            v1 ^= v0;
            v0 = Long.rotateLeft(v0, 32);
            v2 += v3;
            v3 = Long.rotateLeft(v3, 16);
            v3 ^= v2;
            v0 += v3;
            v3 = Long.rotateLeft(v3, 21);
            v3 ^= v0;
            v2 += v1;
            v1 = Long.rotateLeft(v1, 17);
            v1 ^= v2;
            v2 = Long.rotateLeft(v2, 32);
        }

        return v0 ^ v1 ^ v2 ^ v3;
    }
}
