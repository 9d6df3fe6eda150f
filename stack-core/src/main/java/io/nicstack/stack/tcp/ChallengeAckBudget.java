package io.nicstack.stack.tcp;

import java.security.SecureRandom;

import io.nicstack.stack.tcp.isn.SipHash;

/**
 * The host-wide budget of RFC 5961 §7 challenge ACKs per second, drawn afresh each second from
 * {@code [limit/2, limit/2 + limit)}.
 *
 * <p>A fixed budget shared by all connections is a side channel (CVE-2016-5696, "Off-Path TCP
 * Exploits", USENIX Security 2016): an off-path attacker spends the budget on a connection of its
 * own and counts the challenge ACKs it gets back, which tells it whether its spoofed segments hit
 * another connection's window. A budget the attacker cannot predict spoils the count; Linux drew
 * it the same way after that paper (tcp_send_challenge_ack). The draw is SipHash-2-4 of the
 * window's number under a secret key, so it costs no allocation and reveals nothing about the
 * next one.
 */
final class ChallengeAckBudget
{
    private static final long WINDOW_NANOS = 1_000_000_000L;

    private final int limit;
    private final long k0;
    private final long k1;
    private long windowStart;
    private long windows;
    private int left;

    /**
     * @param limitPerSecond the mean budget per second (at least 1).
     * @param k0             first half of the secret key.
     * @param k1             second half of the secret key.
     */
    ChallengeAckBudget(final int limitPerSecond, final long k0, final long k1)
    {
        if (limitPerSecond < 1)
        {
            throw new IllegalArgumentException("challenge ACK limit must be at least 1: " + limitPerSecond);
        }
        this.limit = limitPerSecond;
        this.k0 = k0;
        this.k1 = k1;
    }

    /** A budget under a fresh 128-bit key from {@link SecureRandom}. */
    static ChallengeAckBudget withRandomKey(final int limitPerSecond)
    {
        final SecureRandom random = new SecureRandom();
        return new ChallengeAckBudget(limitPerSecond, random.nextLong(), random.nextLong());
    }

    /** Take one challenge ACK from the current second's budget; false when it is spent. */
    boolean tryAcquire(final long nowNanos)
    {
        if (windows == 0 || nowNanos - windowStart >= WINDOW_NANOS)
        {
            windowStart = nowNanos;
            windows++;
            left = budget(windows);
        }
        if (left <= 0)
        {
            return false;
        }
        left--;
        return true;
    }

    /** The budget of window {@code n}: {@code limit/2 + F(n) mod limit}, with F keyed SipHash. */
    int budget(final long n)
    {
        final int half = (limit + 1) / 2;
        return half + (int)Long.remainderUnsigned(SipHash.hash(k0, k1, n), limit);
    }
}
