package io.nicstack.stack.tcp.isn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.junit.jupiter.api.Test;

/**
 * Reference vectors from the SipHash reference code ({@code vectors.h}, {@code vectors_sip64}):
 * key 00 01 .. 0f, message 00 01 .. (n-1) for entry n, output bytes read little-endian.
 */
class SipHashTest
{
    private static final long K0 = 0x0706050403020100L;
    private static final long K1 = 0x0f0e0d0c0b0a0908L;
    private static final long M0 = 0x0706050403020100L;
    private static final long M1 = 0x0f0e0d0c0b0a0908L;
    private static final long M2 = 0x1716151413121110L;

    @Test
    void referenceVectorEmptyMessage()
    {
        // vectors_sip64[0] = 31 0e 0e dd 47 db 6f 72
        assertEquals(0x726fdb47dd0e0e31L, SipHash.hashWords(K0, K1, 0, 0, 0, 0));
    }

    @Test
    void referenceVector8Bytes()
    {
        // vectors_sip64[8] = 62 24 93 9a 79 f5 f5 93
        assertEquals(0x93f5f5799a932462L, SipHash.hash(K0, K1, M0));
    }

    @Test
    void referenceVector16Bytes()
    {
        // vectors_sip64[16] = db 9b c2 57 7f cc 2a 3f
        assertEquals(0x3f2acc7f57c29bdbL, SipHash.hash(K0, K1, M0, M1));
    }

    @Test
    void referenceVector24Bytes()
    {
        // vectors_sip64[24] = 94 af 49 f6 c6 50 ad b8
        assertEquals(0xb8ad50c6f649af94L, SipHash.hash(K0, K1, M0, M1, M2));
    }

    @Test
    void keyAndLengthMatter()
    {
        assertNotEquals(SipHash.hash(K0, K1, M0, M1), SipHash.hash(K0 ^ 1, K1, M0, M1));
        assertNotEquals(SipHash.hash(K0, K1, M0, M1), SipHash.hash(K0, K1 ^ (1L << 63), M0, M1));
        // Trailing zero words still change the hash: the length is in the final block.
        assertNotEquals(SipHash.hash(K0, K1, M0), SipHash.hash(K0, K1, M0, 0));
        assertNotEquals(SipHash.hash(K0, K1, M0, M1), SipHash.hash(K0, K1, M0, M1, 0));
    }
}
