package io.nicstack.jmh;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import io.nicstack.stack.iface.Identifications;
import io.nicstack.stack.wire.Ipv4Header;

import static io.nicstack.jmh.BenchFrames.check;

/**
 * The IPv4 identification of each outgoing datagram ({@link Identifications}, RFC 7739 §5.3), with datagrams going
 * round-robin to {@code peers} destinations in 198.18.0.0/15: by destination ({@code byDestination}, as UDP and ICMP
 * take it: a SipHash per datagram unless the pair is in the 256-line cache), and by the key a TCP connection keeps
 * ({@code byKeptKey}: no hash, no cache). One peer is what every other benchmark here measures; a server has many.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"})
public class IdentificationsBenchmark
{
    @Param({"1", "4096"})
    public int peers;

    private final Identifications identifications = new Identifications(0x1234_5678_9ABC_DEF0L, 0x0FED_CBA9_8765_4321L);
    private int[] destinations;
    private long[] keys;
    private int next;

    @Setup(Level.Trial)
    public void setUp()
    {
        destinations = new int[peers];
        keys = new long[peers];
        for (int i = 0; i < peers; i++)
        {
            destinations[i] = 0xC612_0000 + 2 + i; // 198.18.0.2 onwards
            keys[i] = identifications.key(destinations[i], Ipv4Header.PROTOCOL_TCP);
        }
        check(identifications.key(destinations[0], Ipv4Header.PROTOCOL_TCP) == keys[0], "a pair's key is fixed");
    }

    @Benchmark
    public int byDestination()
    {
        final int i = next;
        next = i + 1 == peers ? 0 : i + 1;
        return identifications.next(destinations[i], Ipv4Header.PROTOCOL_TCP);
    }

    @Benchmark
    public int byKeptKey()
    {
        final int i = next;
        next = i + 1 == peers ? 0 : i + 1;
        return identifications.next(keys[i]);
    }
}
