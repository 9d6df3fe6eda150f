package io.nicstack.stack.tcp.isn;

import java.security.SecureRandom;

/**
 * SYN cookies (RFC 4987 (3.6), in the manner of D. J. Bernstein's design and Linux
 * {@code syncookies.c}): under a SYN flood the listener keeps no state and instead encodes what it
 * must remember into its ISN; the final ACK of the handshake returns it as {@code ack - 1}.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |  t mod 32 | MSS |                 MAC (24 bits)                 |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * {@code t} is a counter of 64-second periods of the injected clock; its low 5 bits sit at the top
 * so that cookies increase slowly like ordinary ISNs. The MSS field indexes {@link #mssForIndex}.
 * The MAC is the low 24 bits of SipHash-2-4 under a 128-bit secret of the 24-byte message
 * {@code (localIp << 32 | remoteIp), (localPort << 48 | remotePort << 32 | clientIsn),
 * (t << 3 | mssIndex)} (unsigned fields, {@link SipHash} word layout), so a cookie is bound to the
 * connection tuple, the client's ISN, the full counter and the MSS. A cookie is accepted during
 * the period it was issued in and the next one, so it lives between 64 and 128 seconds (Linux
 * {@code MAX_SYNCOOKIE_AGE}).
 *
 * <p>Options other than the MSS do not fit the ISN. When the SYN offers timestamps they travel in our
 * SYN,ACK's TSval instead, as Linux's {@code cookie_init_timestamp} carries them, and come back as the
 * final ACK's TSecr (RFC 7323 §3: echoed unchanged): {@link #timestampWithOptions} writes the peer's
 * window scale and SACK-permitted into its low {@value #TS_OPTION_BITS} bits, {@link #windowScaleIn} and
 * {@link #sackIn} read them back. These bits carry no MAC: a forger that holds a valid cookie can choose only
 * the options of its own connection, within their legal ranges.
 */
public final class SynCookies
{
    /** Length of one counter period: 64 s. */
    public static final long PERIOD_NANOS = 64_000_000_000L;
    /** Periods a cookie stays valid: the one it was issued in and the next. */
    public static final int MAX_AGE_PERIODS = 2;
    /** The longest a cookie stays valid after it was issued: {@link #MAX_AGE_PERIODS} whole periods. */
    public static final long MAX_LIFETIME_NANOS = MAX_AGE_PERIODS * PERIOD_NANOS;

    private static final int MAC_BITS = 24;
    private static final int MAC_MASK = (1 << MAC_BITS) - 1;
    private static final int MSS_SHIFT = MAC_BITS;
    private static final int MSS_MASK = 0x7;
    private static final int COUNTER_SHIFT = 27;
    private static final int COUNTER_MASK = 0x1F;

    /** Low bits of a cookie SYN,ACK's TSval that carry the options: window scale (4), SACK-permitted (1). */
    public static final int TS_OPTION_BITS = 6;
    private static final int TS_OPTION_MASK = (1 << TS_OPTION_BITS) - 1;
    private static final int TS_NO_WINDOW_SCALE = 0xF;
    private static final int TS_WINDOW_SCALE_MASK = 0xF;
    private static final int TS_SACK = 1 << 4;

    /**
     * MSS values a cookie can carry (its three bits), ascending: the floor every connection's send MSS keeps (76, as a
     * state-kept connection's), 256, the RFC 9293 §3.7.1 default 536, and common values under IPv6-in-tunnel, VPN,
     * PPPoE and Ethernet MTUs. The small entries keep a cookie connection within a peer's MSS below 536 (RFC 9293
     * §3.7.1: never larger segments than the peer's MSS), which Linux's four-entry table, starting at 536, does not.
     */
    private static final int[] MSS_TABLE = { 76, 256, 536, 1220, 1300, 1380, 1440, 1460 };

    private final long k0;
    private final long k1;

    /** Cookies under the given secret (tests, or several listeners sharing one secret). */
    public SynCookies(final long k0, final long k1)
    {
        this.k0 = k0;
        this.k1 = k1;
    }

    /** Cookies under a fresh 128-bit secret from {@link SecureRandom}. */
    public static SynCookies withRandomSecret()
    {
        final SecureRandom random = new SecureRandom();
        return new SynCookies(random.nextLong(), random.nextLong());
    }

    /** Number of entries in the MSS table. */
    public static int mssTableLength()
    {
        return MSS_TABLE.length;
    }

    /** The MSS for a table index. */
    public static int mssForIndex(final int index)
    {
        return MSS_TABLE[index];
    }

    /**
     * Index of the largest table MSS not above the client's MSS; index 0 (76, the floor of every connection's send
     * MSS) when the client's is smaller still.
     */
    public static int mssIndexFor(final int mss)
    {
        for (int i = MSS_TABLE.length - 1; i > 0; i--)
        {
            if (MSS_TABLE[i] <= mss)
            {
                return i;
            }
        }
        return 0;
    }

    /**
     * Our ISN for a SYN-ACK sent without keeping state.
     *
     * @param clientIsn the SYN's sequence number.
     * @param mssIndex  from {@link #mssIndexFor(int)}.
     * @return the cookie to use as our ISN.
     */
    public int encode(
        final int localIp,
        final int localPort,
        final int remoteIp,
        final int remotePort,
        final int clientIsn,
        final int mssIndex,
        final long nowNanos)
    {
        if (mssIndex < 0 || mssIndex >= MSS_TABLE.length)
        {
            throw new IllegalArgumentException("mssIndex out of range: " + mssIndex);
        }
        final long counter = counter(nowNanos);
        final int mac = mac(localIp, localPort, remoteIp, remotePort, clientIsn, counter, mssIndex);
        return ((int)counter & COUNTER_MASK) << COUNTER_SHIFT | mssIndex << MSS_SHIFT | mac;
    }

    /**
     * Check the cookie returned by the handshake's final ACK.
     *
     * @param clientIsn the ACK's sequence number minus 1.
     * @param cookie    the ACK's acknowledgment number minus 1.
     * @return the MSS from the table if the cookie is authentic and fresh, else -1.
     */
    public int decode(
        final int localIp,
        final int localPort,
        final int remoteIp,
        final int remotePort,
        final int clientIsn,
        final int cookie,
        final long nowNanos)
    {
        final int mssIndex = (cookie >>> MSS_SHIFT) & MSS_MASK;
        if (mssIndex >= MSS_TABLE.length)
        {
            return -1;
        }
        final long now = counter(nowNanos);
        // Age modulo 32: a cookie from the future wraps to 31 and is rejected with the stale ones.
        final int age = ((int)now - (cookie >>> COUNTER_SHIFT)) & COUNTER_MASK;
        if (age >= MAX_AGE_PERIODS)
        {
            return -1;
        }
        final int expected = mac(localIp, localPort, remoteIp, remotePort, clientIsn, now - age, mssIndex);
        return expected == (cookie & MAC_MASK) ? MSS_TABLE[mssIndex] : -1;
    }

    /**
     * The TSval of a cookie SYN,ACK: {@code tsNow} with the options in its low bits, never above {@code tsNow}, so the
     * connection's later TSvals, from the same clock, never go back from it (the peer's PAWS, RFC 7323 §5).
     *
     * @param peerWindowScale the shift the SYN offered (RFC 7323 §2.3), or -1 when it offered none or we take none.
     * @param sack            whether the SYN offered SACK-permitted and we take it.
     */
    public static int timestampWithOptions(final int tsNow, final int peerWindowScale, final boolean sack)
    {
        final int options = (peerWindowScale < 0 ? TS_NO_WINDOW_SCALE : peerWindowScale) | (sack ? TS_SACK : 0);
        final int ts = (tsNow & ~TS_OPTION_MASK) | options;
        // Unsigned 32-bit clock: compare by the sign of the difference (RFC 7323 §5.2).
        return ts - tsNow > 0 ? ts - (1 << TS_OPTION_BITS) : ts;
    }

    /**
     * The peer's window scale from the final ACK's TSecr, 0 to 14 (RFC 7323 §2.3; the four bits hold nothing else), or
     * -1 when its SYN offered none.
     */
    public static int windowScaleIn(final int tsEcr)
    {
        final int shift = tsEcr & TS_WINDOW_SCALE_MASK;
        return shift == TS_NO_WINDOW_SCALE ? -1 : shift;
    }

    /** Whether the peer's SYN offered SACK-permitted, from the final ACK's TSecr. */
    public static boolean sackIn(final int tsEcr)
    {
        return (tsEcr & TS_SACK) != 0;
    }

    static long counter(final long nowNanos)
    {
        return Math.floorDiv(nowNanos, PERIOD_NANOS);
    }

    private int mac(
        final int localIp,
        final int localPort,
        final int remoteIp,
        final int remotePort,
        final int clientIsn,
        final long counter,
        final int mssIndex)
    {
        final long m0 = ((long)localIp << 32) | (remoteIp & 0xFFFF_FFFFL);
        final long m1 = ((long)(localPort & 0xFFFF) << 48) | ((long)(remotePort & 0xFFFF) << 32) |
            (clientIsn & 0xFFFF_FFFFL);
        final long m2 = (counter << 3) | mssIndex;
        return (int)SipHash.hash(k0, k1, m0, m1, m2) & MAC_MASK;
    }
}
