package io.nicstack.stack.tcp.isn;

import java.security.SecureRandom;

/**
 * Initial sequence numbers per RFC 6528 (3): {@code ISN = M + F(localip, localport, remoteip,
 * remoteport, secretkey)} with M a 4-microsecond timer from the injected clock and F SipHash-2-4
 * under a 128-bit secret, so that ISNs of one connection tuple advance with time (protecting old
 * duplicates, RFC 9293 (3.4.1)) while an off-path attacker cannot guess those of another tuple.
 *
 * <p>F hashes 16 bytes: word 0 is {@code localIp} (high 32 bits) and {@code remoteIp} (low 32
 * bits), word 1 is {@code localPort << 16 | remotePort} (ports as unsigned 16-bit values), both
 * in {@link SipHash}'s little-endian word layout; F is the low 32 bits of the hash.
 */
public final class IsnGenerator
{
    /** RFC 6528 (3): M is a timer that ticks every 4 microseconds. */
    public static final long TICK_NANOS = 4_000L;

    private final long k0;
    private final long k1;

    /** A generator with the given secret (tests, or a secret restored across restarts). */
    public IsnGenerator(final long k0, final long k1)
    {
        this.k0 = k0;
        this.k1 = k1;
    }

    /** RFC 6528 (3): "secretkey is a random number"; a fresh 128-bit key from {@link SecureRandom}. */
    public static IsnGenerator withRandomSecret()
    {
        final SecureRandom random = new SecureRandom();
        return new IsnGenerator(random.nextLong(), random.nextLong());
    }

    /**
     * The ISN for a new connection.
     *
     * @param localIp    our IPv4 address, network order as an int.
     * @param localPort  our port (0 to 65535).
     * @param remoteIp   the peer's IPv4 address.
     * @param remotePort the peer's port.
     * @param nowNanos   the injected clock.
     * @return the initial sequence number modulo 2^32.
     */
    public int isn(final int localIp, final int localPort, final int remoteIp, final int remotePort, final long nowNanos)
    {
        final long m = Math.floorDiv(nowNanos, TICK_NANOS);
        final long f = SipHash.hash(k0, k1, addresses(localIp, remoteIp), ports(localPort, remotePort));
        return (int)m + (int)f;
    }

    /**
     * RFC 6056 §3.3.3 (Algorithm 3): the offset of a destination's ephemeral port sequence, {@code F(localIp, remoteIp,
     * remotePort, secretkey)}, so that the ports of connections to one destination tell nothing of those to another,
     * nor of how many connections the host opens. The same secret as the ISNs, in a separate domain: the hash's second
     * word has bit 40 set, which no ISN input has.
     */
    public int portOffset(final int localIp, final int remoteIp, final int remotePort)
    {
        return (int)SipHash.hash(k0, k1, addresses(localIp, remoteIp), 1L << 40 | (remotePort & 0xFFFF));
    }

    /**
     * The offset added to the millisecond clock for the TCP timestamps of a 4-tuple, {@code F(localip, localport,
     * remoteip, remoteport, secretkey)} as Linux's secure_tcp_ts_off: it hides the clock (RFC 7323 §7.1), and being
     * the same for every incarnation of the tuple, their timestamps rise as the clock does (RFC 6191 §3; a random
     * offset per incarnation has a peer in TIME-WAIT take a new SYN for an old duplicate). The same secret as the
     * ISNs, in a separate domain: the hash's second word has bit 41 set, which neither an ISN's nor a port offset's has.
     */
    public int timestampOffset(final int localIp, final int localPort, final int remoteIp, final int remotePort)
    {
        return (int)SipHash.hash(k0, k1, addresses(localIp, remoteIp), 1L << 41 | ports(localPort, remotePort));
    }

    static long addresses(final int localIp, final int remoteIp)
    {
        return ((long)localIp << 32) | (remoteIp & 0xFFFF_FFFFL);
    }

    static long ports(final int localPort, final int remotePort)
    {
        return ((long)(localPort & 0xFFFF) << 16) | (remotePort & 0xFFFF);
    }
}
