package io.nicstack.stack.iface;

import io.nicstack.nic.AsciiDigits;
import io.nicstack.stack.wire.Ipv4Address;
import io.nicstack.stack.wire.MacAddress;

/**
 * Addresses and limits of one stack instance; plain fluent setters, read once at construction. The stack
 * {@link #seal seals} its config: parts of it cache what they read (early demultiplexing keeps the address), so a
 * later change would reach some layers and not others. A setter called after that throws.
 */
public final class StackConfig
{
    private static final int DEFAULT_PREFIX_LENGTH = 24;

    private boolean sealed;

    private long mac;
    private int address;
    private int prefixLength = DEFAULT_PREFIX_LENGTH;
    /** address | ~netmask, kept current by the two setters: every received datagram compares against it. */
    private int subnetBroadcast = ~Ipv4Address.prefixMask(DEFAULT_PREFIX_LENGTH);
    private int gateway;
    private int mtu = 1500;
    private int defaultTtl = 64;

    private int arpCacheSize = 256;
    private int arpQueueFrames = 64;
    private long arpRetryNanos = 1_000_000_000L;
    private int arpMaxRetries = 3;
    private long arpEntryLifetimeNanos = 60_000_000_000L;

    private long reassemblyTimeoutNanos = 30_000_000_000L;
    private int reassemblyMaxDatagrams = 64;
    /** 119 fragments make the largest datagram from a sender behind a 576-byte MTU (552 bytes each). */
    private int reassemblyMaxFragments = 128;

    private int icmpErrorsPerSecond = 100;
    private int icmpErrorBurst = 50;

    /**
     * A config for {@code A.B.C.D/N}, or {@code A.B.C.D} alone (/24).
     *
     * @throws IllegalArgumentException naming {@code cidr} when the address is not dotted decimal or N is not a prefix
     *                                  length 1..30 in one or two ASCII digits (Integer.parseInt would also take "+24"
     *                                  and digits of any script).
     */
    public static StackConfig of(final String cidr)
    {
        final int slash = cidr.indexOf('/');
        final StackConfig c = new StackConfig();
        c.address(Ipv4Address.parse(slash < 0 ? cidr : cidr.substring(0, slash)));
        if (slash >= 0)
        {
            c.prefixLength(prefixLength(cidr, slash + 1));
        }
        return c;
    }

    /** The prefix length from {@code cidr}'s {@code from} on: one or two ASCII digits, 1..30. */
    private static int prefixLength(final String cidr, final int from)
    {
        final int length = AsciiDigits.isDigits(cidr, from, cidr.length()) && cidr.length() - from <= 2
            ? AsciiDigits.parseInt(cidr.substring(from)) : -1;
        if (length < 1 || length > 30)
        {
            throw new IllegalArgumentException(
                "'" + cidr + "' is not A.B.C.D/N with N a prefix length 1..30 (one or two ASCII digits)");
        }
        return length;
    }

    /** A locally administered unicast MAC derived from the IPv4 address: 02:00:a.b.c.d. */
    public static long macFor(final int address)
    {
        return 0x0200_0000_0000L | (address & 0xFFFF_FFFFL);
    }

    public long mac()
    {
        return mac != 0 ? mac : macFor(address);
    }

    public StackConfig mac(final long mac)
    {
        mutable();
        if (MacAddress.isMulticast(mac))
        {
            throw new IllegalArgumentException("MAC must be unicast: " + MacAddress.format(mac));
        }
        this.mac = mac;
        return this;
    }

    public int address()
    {
        return address;
    }

    public StackConfig address(final int address)
    {
        mutable();
        this.address = address;
        this.subnetBroadcast = address | ~netmask();
        return this;
    }

    public int prefixLength()
    {
        return prefixLength;
    }

    public StackConfig prefixLength(final int prefixLength)
    {
        mutable();
        if (prefixLength < 1 || prefixLength > 30)
        {
            throw new IllegalArgumentException("prefix length must be 1..30: " + prefixLength);
        }
        this.prefixLength = prefixLength;
        this.subnetBroadcast = address | ~netmask();
        return this;
    }

    public int gateway()
    {
        return gateway;
    }

    public StackConfig gateway(final int gateway)
    {
        mutable();
        this.gateway = gateway;
        return this;
    }

    public int mtu()
    {
        return mtu;
    }

    public StackConfig mtu(final int mtu)
    {
        mutable();
        if (mtu < 576 || mtu > 9000)
        {
            throw new IllegalArgumentException("MTU must be 576..9000: " + mtu);
        }
        this.mtu = mtu;
        return this;
    }

    /** TTL of every datagram this stack sends (64, as Linux's net.ipv4.ip_default_ttl). */
    public int defaultTtl()
    {
        return defaultTtl;
    }

    /**
     * RFC 1122 §3.2.1.7 and RFC 9293 §3.9.1.1 (MUST-49): the TTL of the datagrams this stack sends is configurable;
     * 1..255 (a host MUST NOT send a datagram with TTL 0).
     */
    public StackConfig defaultTtl(final int ttl)
    {
        mutable();
        if (ttl < 1 || ttl > 255)
        {
            throw new IllegalArgumentException("TTL must be 1..255: " + ttl);
        }
        this.defaultTtl = ttl;
        return this;
    }

    public int arpCacheSize()
    {
        return arpCacheSize;
    }

    public StackConfig arpCacheSize(final int n)
    {
        mutable();
        this.arpCacheSize = checked("ARP cache size (entries)", n, 1, 65_536);
        return this;
    }

    public int arpQueueFrames()
    {
        return arpQueueFrames;
    }

    public StackConfig arpQueueFrames(final int n)
    {
        mutable();
        this.arpQueueFrames = checked("ARP queue (frames waiting for resolution)", n, 0, 4_096);
        return this;
    }

    public long arpRetryNanos()
    {
        return arpRetryNanos;
    }

    public int arpMaxRetries()
    {
        return arpMaxRetries;
    }

    public long arpEntryLifetimeNanos()
    {
        return arpEntryLifetimeNanos;
    }

    public long reassemblyTimeoutNanos()
    {
        return reassemblyTimeoutNanos;
    }

    public StackConfig reassemblyTimeoutNanos(final long nanos)
    {
        mutable();
        if (nanos <= 0)
        {
            throw new IllegalArgumentException("reassembly timeout must be positive: " + nanos + " ns");
        }
        this.reassemblyTimeoutNanos = nanos;
        return this;
    }

    /**
     * Datagrams in reassembly at once (default 64), a quarter of them from one source at most. This bounds reassembly's
     * memory: each holds a buffer for the largest datagram, 65,595 bytes of direct memory allocated up front (about
     * 4 MiB for the default).
     */
    public int reassemblyMaxDatagrams()
    {
        return reassemblyMaxDatagrams;
    }

    public StackConfig reassemblyMaxDatagrams(final int n)
    {
        mutable();
        this.reassemblyMaxDatagrams = checked("reassembly datagrams at once", n, 1, 4_096);
        return this;
    }

    public int reassemblyMaxFragments()
    {
        return reassemblyMaxFragments;
    }

    public int icmpErrorsPerSecond()
    {
        return icmpErrorsPerSecond;
    }

    public int icmpErrorBurst()
    {
        return icmpErrorBurst;
    }

    public StackConfig icmpErrorRate(final int perSecond, final int burst)
    {
        mutable();
        checked("ICMP error rate (per second)", perSecond, 1, 1_000_000);
        checked("ICMP error rate (burst)", burst, 1, 1_000_000);
        this.icmpErrorsPerSecond = perSecond;
        this.icmpErrorBurst = burst;
        return this;
    }

    private static int checked(final String name, final int value, final int min, final int max)
    {
        if (value < min || value > max)
        {
            throw new IllegalArgumentException(name + " must be " + min + ".." + max + ": " + value);
        }
        return value;
    }

    public int netmask()
    {
        return Ipv4Address.prefixMask(prefixLength);
    }

    public int subnetBroadcast()
    {
        return subnetBroadcast;
    }

    /** True when {@code ip} is the limited broadcast address (255.255.255.255) or our subnet's broadcast address. */
    public boolean isBroadcast(final int ip)
    {
        return ip == 0xFFFF_FFFF || ip == subnetBroadcast;
    }

    public boolean onLink(final int ip)
    {
        return (ip & netmask()) == (address & netmask());
    }

    /** True when another host on our subnet may hold {@code ip}: on link, not ours, not the network or broadcast address. */
    public boolean isNeighbour(final int ip)
    {
        final int host = ip & ~netmask();
        return onLink(ip) && ip != address && host != 0 && host != ~netmask();
    }

    @Override
    public String toString()
    {
        return Ipv4Address.format(address) + "/" + prefixLength + " mac " + MacAddress.format(mac()) + " mtu " + mtu;
    }

    /**
     * Make this config read-only: {@code NetStack} calls it once it has read the config.
     *
     * @throws IllegalArgumentException when the gateway is set but is no other host on our subnet (checked here, as the
     *                                  setters may come in any order); the config then stays open.
     */
    public StackConfig seal()
    {
        if (gateway != 0 && !isNeighbour(gateway))
        {
            throw new IllegalArgumentException("gateway " + Ipv4Address.format(gateway) + " is no other host on the subnet "
                + Ipv4Address.format(address & netmask()) + "/" + prefixLength + ": every off-link datagram would wait for it");
        }
        sealed = true;
        return this;
    }

    public boolean sealed()
    {
        return sealed;
    }

    private void mutable()
    {
        if (sealed)
        {
            throw new IllegalStateException("this StackConfig was read by a running NetStack and is sealed: "
                + "a stack takes its addresses and limits once; build a new stack with a new config to change them");
        }
    }
}
