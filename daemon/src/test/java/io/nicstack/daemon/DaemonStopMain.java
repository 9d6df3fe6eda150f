package io.nicstack.daemon;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpState;

/**
 * A daemon in a JVM of its own ({@link DaemonStopTest}): how it ends is a matter of its shutdown hook and exit status,
 * which a test JVM cannot share. It runs {@link DaemonCommand} as {@link Main} does, on a memory wire (no interface).
 * <ul>
 * <li>{@code peer SHM}: a peer stack echoes 5 bytes through the echo service, then the JVM exits as on SIGTERM; the
 * daemon's device close waits until the peer printed what it knows of the connection.</li>
 * <li>{@code error SHM} / {@code runtime SHM}: the device's receive throws an Error / a RuntimeException after 100
 * rounds; the exit status is the daemon's.</li>
 * <li>{@code faults SHM}: the daemon runs with {@code --faults loss=1} and a {@code --pcap} beside SHM; the peer side
 * of the wire sends {@link #FAULTS_FRAMES} frames, and once the daemon's device has taken them all (each lost), the
 * JVM exits as on SIGTERM.</li>
 * <li>{@code fifo SHM}: the daemon runs with a {@code --pcap} that is the named pipe {@code live.pcap} beside SHM, which
 * the test made and nobody reads: it waits for a reader until the test sends SIGTERM. Removing the link prints
 * {@code link removed}.</li>
 * </ul>
 */
public final class DaemonStopMain
{
    private static final long SECOND = 1_000_000_000L;
    /** Frames the peer side sends in {@code faults} mode. */
    static final int FAULTS_FRAMES = 5;

    private DaemonStopMain()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final String mode = args[0];
        final MemoryWire wire = MemoryWire.pair(1500, 256);
        final CountDownLatch closing = new CountDownLatch(1);
        final CountDownLatch peerChecked = new CountDownLatch(1);
        final int[] rounds = {0};
        final java.util.concurrent.atomic.AtomicLong received = new java.util.concurrent.atomic.AtomicLong();
        final NetDevice inner = wire.a();
        final NetDevice device = (NetDevice)Proxy.newProxyInstance(NetDevice.class.getClassLoader(),
            new Class<?>[] {NetDevice.class}, (proxy, method, a) ->
            {
                // Only the crash modes fail: "faults" once did too, after 100 receive rounds, which a loaded machine
                // reaches before the test has stopped the daemon (exit 70 where 0 was expected).
                if (method.getName().equals("receive") && (mode.equals("error") || mode.equals("runtime"))
                    && ++rounds[0] > 100)
                {
                    if (mode.equals("error"))
                    {
                        throw new StackOverflowError("injected");
                    }
                    throw new IllegalStateException("injected");
                }
                if (method.getName().equals("close") && mode.equals("peer"))
                {
                    closing.countDown();
                    peerChecked.await(10, TimeUnit.SECONDS);
                }
                if (method.isDefault())
                {
                    return InvocationHandler.invokeDefault(proxy, method, a);
                }
                try
                {
                    final Object result = method.invoke(inner, a);
                    if (method.getName().equals("receive"))
                    {
                        received.addAndGet((Integer)result);
                    }
                    return result;
                }
                catch (final InvocationTargetException e)
                {
                    throw e.getCause();
                }
            });
        final String[] options = mode.equals("faults")
            ? new String[] {"--faults", "loss=1,seed=7", "--pcap", Path.of(args[1]).resolveSibling("run.pcap").toString()}
            : mode.equals("fifo") ? new String[] {"--pcap", Path.of(args[1]).resolveSibling("live.pcap").toString()}
            : new String[0];
        final String[] daemonArgs = java.util.stream.Stream.concat(java.util.stream.Stream.of("daemon", "--device",
            "tap:nsstop0", "--ip", "198.18.0.2/24", "--shm", args[1], "--services", "echo"), java.util.Arrays.stream(options))
            .toArray(String[]::new);
        final DaemonCommand daemon = new DaemonCommand(daemonArgs, (name, offload, mtu, hostIp) -> new DaemonCommand.Link()
            {
                @Override
                public NetDevice device()
                {
                    return device;
                }

                @Override
                public void remove()
                {
                    System.out.println("link removed");
                    System.out.flush();
                }
            });
        if (!mode.equals("peer") && !mode.equals("faults"))
        {
            System.exit(daemon.run(System.out, System.err)); // as Main.main
        }
        final Thread serving = new Thread(() -> System.exit(daemon.run(System.out, System.err)), "daemon");
        serving.start();
        if (mode.equals("faults"))
        {
            final NetDevice peerSide = wire.b();
            for (int i = 0; i < FAULTS_FRAMES; i++)
            {
                final MutableDirectBuffer frame = peerSide.claim();
                frame.setMemory(0, 60, (byte)0);
                frame.setMemory(0, 6, (byte)0xFF); // broadcast
                frame.putLong(6, 0x0200_C612_0003L, java.nio.ByteOrder.BIG_ENDIAN); // (two bytes past the source MAC)
                frame.putShort(12, (short)0x88B5, java.nio.ByteOrder.BIG_ENDIAN); // IEEE 802 local experimental
                peerSide.commit(60);
            }
            peerSide.flush();
            for (final long end = System.nanoTime() + 10 * SECOND; System.nanoTime() < end && received.get() < FAULTS_FRAMES; )
            {
                Thread.onSpinWait();
            }
            System.out.println("daemon received " + received.get() + " frames");
            System.out.flush();
            new Thread(() -> System.exit(0), "sigterm").start();
            serving.join(10_000);
            return;
        }
        final NetStack peer = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), System.nanoTime());
        final int[] closedReason = {-1};
        final TcpConnection c = peer.tcp().connect(0xC612_0002, 7, new TcpHandler()
        {
            @Override
            public void onClosed(final TcpConnection connection, final int reason)
            {
                closedReason[0] = reason;
            }
        }, null);
        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(64));
        boolean wrote = false;
        int echoed = 0;
        for (final long end = System.nanoTime() + 10 * SECOND; System.nanoTime() < end && echoed < 5; )
        {
            peer.poll(System.nanoTime());
            if (!wrote && c.state() == TcpState.ESTABLISHED)
            {
                wrote = c.write(buffer, 0, 5) == 5;
            }
            echoed += Math.max(0, c.read(buffer, 0, 64));
        }
        System.out.println("peer echoed " + echoed);
        new Thread(() -> System.exit(0), "sigterm").start(); // the path SIGINT and SIGTERM take: the shutdown hook
        for (final long end = System.nanoTime() + 10 * SECOND; System.nanoTime() < end && closing.getCount() > 0; )
        {
            peer.poll(System.nanoTime());
        }
        for (final long end = System.nanoTime() + SECOND / 2; System.nanoTime() < end && c.state() != TcpState.CLOSED; )
        {
            peer.poll(System.nanoTime());
        }
        System.out.println("peer state " + c.state() + " reason " + closedReason[0]);
        System.out.flush();
        peerChecked.countDown();
        serving.join(10_000);
    }
}
