package io.nicstack.stack.tcp;

import org.agrona.concurrent.NanoClock;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.nic.fault.FaultInjectingDevice;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;

/** Two stacks joined by a memory wire (optionally through fault injectors), driven by one simulated clock. */
final class TwoStacks
{
    static final int A_IP = 0xC612_0002; // 198.18.0.2
    static final int B_IP = 0xC612_0003; // 198.18.0.3

    final NetStack a;
    final NetStack b;
    final FaultInjectingDevice faultsA;
    final FaultInjectingDevice faultsB;
    long now = 1_000_000_000L;
    private final NanoClock clock = () -> now;

    TwoStacks(final FaultConfig faults)
    {
        this(faults, null, device -> device);
    }

    /**
     * With {@code secrets} (null: random) as the ISN and SYN-cookie keys of both stacks, so that two runs with the same
     * faults repeat each other exactly, and each stack's device as {@code outermost} makes it (e.g. a recorder).
     */
    TwoStacks(final FaultConfig faults, final long[] secrets, final java.util.function.UnaryOperator<NetDevice> outermost)
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        NetDevice da = wire.a();
        NetDevice db = wire.b();
        if (faults != null && !faults.isNone())
        {
            // Each direction passes two lines (the sender's TX, the receiver's RX); only the TX line corrupts. Two bit
            // flips in one frame can cancel in TCP's 16-bit ones' complement sum (the same bit, opposite ways, in the
            // same byte lane), and a transfer would then deliver wrong bytes through a correct checksum: seed 23 of
            // TcpEarlyDemuxTest's corruption run once did. Real links have a CRC for that; one flip is always caught.
            faultsA = new FaultInjectingDevice(da, withoutCorruption(faults), faults.withSeed(faults.seed() + 1), clock);
            faultsB = new FaultInjectingDevice(db, withoutCorruption(faults.withSeed(faults.seed() + 2)),
                faults.withSeed(faults.seed() + 3), clock);
            da = faultsA;
            db = faultsB;
        }
        else
        {
            faultsA = null;
            faultsB = null;
        }
        a = stack(outermost.apply(da), "198.18.0.2/24", secrets);
        b = stack(outermost.apply(db), "198.18.0.3/24", secrets);
    }

    private static FaultConfig withoutCorruption(final FaultConfig f)
    {
        return new FaultConfig(f.loss(), f.reorder(), f.duplicate(), 0, f.delayNanos(), f.rateBitsPerSecond(), f.seed());
    }

    private NetStack stack(final NetDevice device, final String cidr, final long[] secrets)
    {
        if (secrets == null)
        {
            return new NetStack(device, StackConfig.of(cidr), StackCounters.inMemory(), now);
        }
        return new NetStack(device, StackConfig.of(cidr), StackCounters.inMemory(), now,
            new io.nicstack.stack.tcp.isn.IsnGenerator(secrets[0], secrets[1]),
            new io.nicstack.stack.tcp.isn.SynCookies(secrets[2], secrets[3]));
    }

    /** One round: both stacks poll; time moves 20 µs when there was work, 1 ms when idle. */
    int step()
    {
        final int work = a.poll(now) + b.poll(now);
        now += work > 0 ? 20_000L : 1_000_000L;
        return work;
    }

    /** Run until {@code done} or the simulated time limit; returns whether done. */
    boolean runUntil(final java.util.function.BooleanSupplier done, final long maxSimulatedNanos)
    {
        final long end = now + maxSimulatedNanos;
        while (!done.getAsBoolean())
        {
            if (now - end > 0)
            {
                return false;
            }
            step();
        }
        return true;
    }
}
