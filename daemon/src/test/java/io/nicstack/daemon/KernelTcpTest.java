package io.nicstack.daemon;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import io.nicstack.nic.linux.NetNamespace;
import io.nicstack.nic.tap.TapDevice;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.wire.Ipv4Address;

import static org.junit.jupiter.api.Assertions.*;

/**
 * TCP against the Linux kernel over a tap in a namespace this test creates: the daemon's echo,
 * discard and chargen services driven by kernel sockets, the stack as a client of a kernel server,
 * a transfer through the daemon's fault injector, and the daemon behind kernel routers (path MTU discovery, ICMP
 * redirects). Addresses from 198.18.0.0/15 only. The work directory is
 * deleted at the end.
 */
@Tag("kernel")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class KernelTcpTest
{
    static final String DAEMON_IP = "198.18.0.2";
    static final String PYTHON = "/usr/bin/python3";

    private Netns ns;
    private Path work;
    private DaemonProcess daemon;

    @BeforeAll
    void start() throws Exception
    {
        ns = new Netns();
        work = Netns.workDir("nicstack-tcp");
        copyResource(work, "tcp_peer.py");
        daemon = new DaemonProcess(ns, work.resolve("shm"), "--device", "tap:nstap0", "--ip", DAEMON_IP + "/24",
            "--host-ip", "198.18.0.1/24", "--services", "echo,discard,chargen");
        daemon.awaitReady();
    }

    static void copyResource(final Path dir, final String name) throws IOException
    {
        try (InputStream in = KernelTcpTest.class.getClassLoader().getResourceAsStream(name))
        {
            assertNotNull(in, name);
            Files.copy(in, dir.resolve(name));
        }
    }

    @AfterAll
    void stop() throws Exception
    {
        DaemonProcess.stopAndCleanUp(daemon, ns, work);
    }

    private Netns.Result peer(final int timeoutSeconds, final String... args) throws IOException
    {
        final String[] cmd = new String[args.length + 2];
        cmd[0] = PYTHON;
        cmd[1] = work.resolve("tcp_peer.py").toString();
        System.arraycopy(args, 0, cmd, 2, args.length);
        return ns.exec(timeoutSeconds, cmd);
    }

    @Test
    void kernelClientEchoes200MegabytesExactly() throws IOException
    {
        final Netns.Result r = peer(300, "echo", DAEMON_IP, "200000000").assertOk("echo 200 MB");
        assertTrue(r.output().contains("exact=True"), r.output());
        System.out.println("[kernel tcp] " + r.output().trim());
    }

    @Test
    void twoHundredConcurrentConnectionsEcho256KilobytesEach() throws IOException
    {
        final Netns.Result r = peer(300, "parallel", DAEMON_IP, "200", "262144").assertOk("200 parallel echoes");
        assertTrue(r.output().contains("parallel 200 of 200"), r.output());
    }

    @Test
    void chargenAndDiscardMove100Megabytes() throws IOException
    {
        final Map<StackCounter, Long> before = DaemonCounters.read(daemon.shm);
        final Netns.Result c = peer(300, "chargen", DAEMON_IP, "100000000").assertOk("chargen 100 MB");
        assertTrue(c.output().contains("pattern exact"), c.output());
        final Map<StackCounter, Long> between = DaemonCounters.read(daemon.shm);
        final Netns.Result d = peer(300, "discard", DAEMON_IP, "100000000").assertOk("discard 100 MB");
        assertTrue(d.output().contains("closed cleanly=True"), d.output());
        final Map<StackCounter, Long> after = DaemonCounters.read(daemon.shm);

        // With the tap's offload, the stream out left in superframes and the stream in came in them (nicstack stats).
        final long segments = 100_000_000L / 1448;
        final long sentJoined = grew(before, between, StackCounter.TX_SUPERFRAME_SEGMENTS);
        final long receivedCut = grew(between, after, StackCounter.RX_SUPERFRAME_SEGMENTS);
        final String offload = "chargen: " + sentJoined + " of " + segments + " segments sent in " +
            grew(before, between, StackCounter.TX_SUPERFRAMES) + " superframes; discard: " + receivedCut +
            " received in " + grew(between, after, StackCounter.RX_SUPERFRAMES);
        assertTrue(sentJoined > segments / 2 && grew(before, between, StackCounter.TX_SUPERFRAMES) > 0, offload);
        assertTrue(receivedCut > segments / 2 && grew(between, after, StackCounter.RX_SUPERFRAMES) > 0, offload);
        System.out.println("[kernel tcp] " + c.output().trim() + "; " + d.output().trim() + "; " + offload);
    }

    private static long grew(final Map<StackCounter, Long> from, final Map<StackCounter, Long> to,
        final StackCounter counter)
    {
        return to.get(counter) - from.get(counter);
    }

    @Test
    void connectionToAClosedPortIsRefusedAtOnce() throws IOException
    {
        final Netns.Result r = peer(20, "refused", DAEMON_IP, "4444").assertOk("refused");
        final Matcher m = Pattern.compile("after ([0-9.]+) ms").matcher(r.output());
        assertTrue(m.find(), r.output());
        assertTrue(Double.parseDouble(m.group(1)) < 1000, "refused at once, not after a timeout: " + r.output());
    }

    @Test
    void connsListsAnEstablishedConnectionLikeSs() throws Exception
    {
        final Process holder = ns.start(PYTHON, work.resolve("tcp_peer.py").toString(), "hold", DAEMON_IP, "5");
        try
        {
            final BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("holding", out.readLine());
            String text = "";
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            // The conns file can list the connection before the daemon has read the 1000 bytes sendall queued.
            while (System.nanoTime() < deadline && !(text.contains(":9 ") && text.contains("bytes_received:1000 ")))
            {
                Thread.sleep(100);
                final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
                assertEquals(0, Main.run(new String[] {"conns", "--shm", daemon.shm.toString()},
                    new java.io.PrintStream(bytes, true), System.err));
                text = bytes.toString(StandardCharsets.UTF_8);
            }
            final String row = text.lines().filter(l -> l.contains(DAEMON_IP + ":9 ")).findFirst().orElse("");
            assertTrue(row.startsWith("ESTABLISHED"), text);
            assertTrue(row.contains("198.18.0.1:"), row);
            assertTrue(row.matches(".*cubic sack ts wscale:\\d+,\\d+ mss:1448 cwnd:\\d+ .*bytes_received:1000 .*"), row);
        }
        finally
        {
            holder.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
    }

    /** Byte {@code offset} of the deterministic stream shared with tcp_peer.py's stream_chunk. */
    static byte streamByte(final long offset, final int salt)
    {
        return (byte)(((offset % 256) * 7 + salt) & 0xFF);
    }

    @Test
    void stackAsClientMoves50MegabytesBothWaysWithAKernelServer() throws Exception
    {
        final long total = 50_000_000L;
        try (Netns clientNs = new Netns())
        {
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            final ClientRun run = new ClientRun(total);
            final Thread stackThread = new Thread(() ->
            {
                try
                {
                    NetNamespace.enter(clientNs.name);
                    try (TapDevice tap = TapDevice.open("nstap1"))
                    {
                        run.tapReady = true;
                        run.drive(tap);
                    }
                    finally
                    {
                        NetNamespace.restore();
                    }
                }
                catch (final Throwable t)
                {
                    failure.set(t);
                }
            }, "stack-client");
            stackThread.setDaemon(true);
            stackThread.start();
            Process server = null;
            try
            {
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!run.tapReady && failure.get() == null && System.nanoTime() < deadline)
                {
                    Thread.sleep(10);
                }
                assertNull(failure.get());
                assertTrue(run.tapReady, "the stack's tap did not open within 10 s");
                clientNs.exec(5, "ip", "addr", "add", "198.18.0.1/24", "dev", "nstap1").assertOk("addr");
                clientNs.exec(5, "ip", "link", "set", "nstap1", "up").assertOk("link up");
                final Path script = work.resolve("tcp_peer.py");
                // timeout bounds the server, and so the readLine calls below.
                server = clientNs.start("timeout", "240", PYTHON, script.toString(), "server", "198.18.0.1", "5001",
                    String.valueOf(total));
                final BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
                assertEquals("listening", out.readLine());
                run.go = true;
                stackThread.join(TimeUnit.SECONDS.toMillis(180));
                run.stop = true;
                stackThread.join(5_000);
                assertFalse(stackThread.isAlive(), "the stack thread stopped: " + run.status());
                assertNull(failure.get(), () -> "stack thread failed: " + failure.get());
                assertTrue(server.waitFor(30, TimeUnit.SECONDS), "kernel server finished");
                final String line = out.readLine();
                assertNotNull(line);
                final Matcher m = Pattern.compile("server received (\\d+) sha256 ([0-9a-f]+) errors 0").matcher(line);
                assertTrue(m.find(), line + " / " + run.status());
                assertEquals(total, Long.parseLong(m.group(1)), run.status());
                assertEquals(HexFormat.of().formatHex(run.sentHash.digest()), m.group(2), "kernel received what the stack sent");
                assertEquals(total, run.received, run.status());
                assertTrue(run.receivedExact, "the stack received the kernel's stream exactly: " + run.status());
                // The kernel's stream came in TSO superframes, cut into frames by the tap device; ours left joined into them.
                assertTrue(run.superframes > 0 && run.superframeSegments > run.superframes, run.status());
                assertTrue(run.sentSuperframes > 0 && run.sentSuperframeSegments > run.sentSuperframes, run.status());
            }
            finally
            {
                // On every path: the stack thread leaves its loops, the kernel server is gone.
                run.stop = true;
                stackThread.join(10_000);
                if (server != null)
                {
                    server.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            }
        }
    }

    /**
     * RFC 9293 MUST-54 against the kernel: its firewall rejects our SYN with ICMP port unreachable (nftables), and the
     * stack's connect fails as refused at once instead of retrying SYNs until R2.
     */
    @Test
    void connectRejectedWithIcmpPortUnreachableIsRefusedAtOnce() throws Exception
    {
        try (Netns rejectNs = new Netns())
        {
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            final java.util.concurrent.atomic.AtomicInteger closedReason = new java.util.concurrent.atomic.AtomicInteger(-1);
            final java.util.concurrent.atomic.AtomicLong closedAfterNanos = new java.util.concurrent.atomic.AtomicLong(-1);
            final java.util.concurrent.atomic.AtomicLong synsSent = new java.util.concurrent.atomic.AtomicLong();
            final java.util.concurrent.atomic.AtomicBoolean tapReady = new java.util.concurrent.atomic.AtomicBoolean();
            final java.util.concurrent.atomic.AtomicBoolean go = new java.util.concurrent.atomic.AtomicBoolean();
            final Thread stackThread = new Thread(() ->
            {
                try
                {
                    NetNamespace.enter(rejectNs.name);
                    try (TapDevice tap = TapDevice.open("nstap4"))
                    {
                        final NetStack stack = new NetStack(tap, StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), System.nanoTime());
                        stack.start(System.nanoTime());
                        tapReady.set(true);
                        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        while (!go.get() && System.nanoTime() < deadline)
                        {
                            stack.poll(System.nanoTime());
                            Thread.sleep(1);
                        }
                        final long start = System.nanoTime();
                        stack.tcp().connect(Ipv4Address.parse("198.18.0.1"), 5555, new TcpHandler()
                        {
                            @Override
                            public void onClosed(final TcpConnection c, final int reason)
                            {
                                closedAfterNanos.set(System.nanoTime() - start);
                                closedReason.set(reason);
                            }
                        }, null);
                        while (closedReason.get() < 0 && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5))
                        {
                            stack.poll(System.nanoTime());
                        }
                        synsSent.set(stack.counters().get(StackCounter.TCP_SEGMENTS_OUT));
                    }
                    finally
                    {
                        NetNamespace.restore();
                    }
                }
                catch (final Throwable t)
                {
                    failure.set(t);
                }
            }, "stack-icmp-reject");
            stackThread.start();
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!tapReady.get() && failure.get() == null && System.nanoTime() < deadline)
            {
                Thread.sleep(10);
            }
            assertNull(failure.get());
            rejectNs.exec(5, "ip", "addr", "add", "198.18.0.1/24", "dev", "nstap4").assertOk("addr");
            rejectNs.exec(5, "ip", "link", "set", "nstap4", "up").assertOk("link up");
            rejectNs.exec(5, "nft", "add", "table", "inet", "nstreject").assertOk("nft table");
            rejectNs.exec(5, "nft", "add", "chain", "inet", "nstreject", "in", "{ type filter hook input priority 0 ; }").assertOk("nft chain");
            rejectNs.exec(5, "nft", "add", "rule", "inet", "nstreject", "in", "tcp", "dport", "5555", "reject", "with", "icmp", "type",
                "port-unreachable").assertOk("nft rule");
            go.set(true);
            stackThread.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(stackThread.isAlive(), "stack thread finished");
            assertNull(failure.get(), () -> "stack thread failed: " + failure.get());
            assertEquals(TcpConnection.CLOSE_REFUSED, closedReason.get(), "the connection attempt was refused");
            assertTrue(closedAfterNanos.get() < TimeUnit.MILLISECONDS.toNanos(900),
                "refused before the first SYN retransmission (1 s): " + closedAfterNanos.get() / 1_000_000 + " ms");
            assertEquals(1, synsSent.get(), "one SYN, no retransmission");
            final String counters = rejectNs.exec(5, "nft", "list", "ruleset").output();
            assertTrue(counters.contains("reject"), counters);
        }
    }

    /**
     * RFC 1191 against the kernel: the daemon sends to a kernel client behind a router namespace whose next link has a
     * smaller MTU (the client's own MTU is 1500, so it offers MSS 1460). The daemon's full-sized DF segments are dropped
     * there and the router answers with ICMP fragmentation needed; the daemon lowers its MSS and chargen's 3 MB arrive
     * exact. At 1000 the segments then fit. At 400, below the 552 floor, they cannot: the daemon sends them without DF,
     * as Linux does for a path MTU locked at min_pmtu, and the router fragments them.
     */
    @ParameterizedTest(name = "link mtu {0}")
    @ValueSource(ints = {1000, 400})
    void pathMtuDiscoveryThroughARouterWithASmallerLink(final int linkMtu) throws Exception
    {
        try (Netns router = new Netns(); Netns client = new Netns();
            DaemonProcess pmtu = new DaemonProcess(router, work.resolve("shm-pmtu-" + linkMtu), "--device", "tap:nstap5",
                "--ip", DAEMON_IP + "/24", "--host-ip", "198.18.0.1/24", "--gateway", "198.18.0.1", "--services", "chargen"))
        {
            pmtu.awaitReady();
            router.exec(5, "ip", "link", "add", "nstpm0", "mtu", Integer.toString(linkMtu), "type", "veth", "peer", "name",
                "nstpm1", "netns", client.name).assertOk("veth");
            router.exec(5, "ip", "addr", "add", "198.18.1.1/24", "dev", "nstpm0").assertOk("router addr");
            router.exec(5, "ip", "link", "set", "nstpm0", "up").assertOk("router link");
            router.exec(5, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward").assertOk("forwarding");
            client.exec(5, "ip", "link", "set", "lo", "up").assertOk("lo");
            client.exec(5, "ip", "addr", "add", "198.18.1.2/24", "dev", "nstpm1").assertOk("client addr");
            client.exec(5, "ip", "link", "set", "nstpm1", "up").assertOk("client link");
            client.exec(5, "ip", "route", "add", "198.18.0.0/24", "via", "198.18.1.1").assertOk("client route");

            final Netns.Result r = client.exec(60, PYTHON, work.resolve("tcp_peer.py").toString(), "chargen", DAEMON_IP, "3000000");
            assertEquals(0, r.exitCode(), "chargen through the small link: " + r.output() + "\ndaemon: " + String.join("\n", pmtu.output));
            assertTrue(r.output().contains("pattern exact"), r.output());
            final Map<StackCounter, Long> c = DaemonCounters.read(pmtu.shm);
            assertTrue(c.get(StackCounter.TCP_PATH_MTU_REDUCTIONS) >= 1, "path MTU lowered: " + c);
            final long fragmented = snmpIp(router, "FragOKs");
            if (linkMtu < 552)
            {
                assertTrue(fragmented > 1000, "the router fragmented the daemon's segments: " + fragmented);
            }
            else
            {
                assertEquals(0, fragmented, "the segments fit the link");
            }
            System.out.println("[kernel tcp] path mtu " + linkMtu + ": " + r.output().trim() + ", reductions "
                + c.get(StackCounter.TCP_PATH_MTU_REDUCTIONS) + ", datagrams the router fragmented " + fragmented);
            assertEquals(0, pmtu.stop());
        }
    }

    /**
     * RFC 1122 §3.2.2.2 against the kernel: the daemon's gateway is a Linux router whose route to 198.19.7.0/24 goes
     * through a second router on the same link (the far namespace, 198.18.0.3, which also holds 198.19.7.7). The
     * daemon's first echo reply to 198.19.7.7 goes to the gateway, which forwards it back out the link it came in on and
     * answers with an ICMP Redirect. The daemon does not take a first hop it has not resolved (as Linux's
     * __ip_do_redirect): it asks 198.18.0.3's address and takes the gateway's next redirect, which Linux sends for a
     * later forwarded reply once its backoff (20 ms, then doubling) has passed, hence datagrams 50 ms apart; then it
     * sends the other replies to 198.18.0.3 directly. Before redirects were handled, the gateway forwarded every reply.
     * The link is a bridge: the daemon's tap is made its port after start, the bridge taking over the tap's address and
     * MAC.
     */
    @Test
    void anIcmpRedirectFromTheGatewaySendsTheDaemonStraightToTheBetterFirstHop() throws Exception
    {
        final int datagrams = 20;
        try (Netns router = new Netns(); Netns far = new Netns();
            DaemonProcess redirected = new DaemonProcess(router, work.resolve("shm-redirect"), "--device", "tap:nstap6",
                "--ip", DAEMON_IP + "/24", "--host-ip", "198.18.0.1/24", "--gateway", "198.18.0.1", "--services", "echo"))
        {
            redirected.awaitReady();
            final String tapMac = router.exec(5, "cat", "/sys/class/net/nstap6/address").assertOk("tap MAC").output().trim();
            router.exec(5, "ip", "link", "add", "nstbr6", "address", tapMac, "type", "bridge").assertOk("bridge");
            router.exec(5, "ip", "addr", "del", "198.18.0.1/24", "dev", "nstap6").assertOk("tap address");
            router.exec(5, "ip", "link", "set", "nstap6", "master", "nstbr6").assertOk("tap into the bridge");
            router.exec(5, "ip", "addr", "add", "198.18.0.1/24", "dev", "nstbr6").assertOk("bridge address");
            router.exec(5, "ip", "link", "add", "nstrd0", "type", "veth", "peer", "name", "nstrd1", "netns", far.name)
                .assertOk("veth");
            router.exec(5, "ip", "link", "set", "nstrd0", "master", "nstbr6").assertOk("veth into the bridge");
            router.exec(5, "ip", "link", "set", "nstrd0", "up").assertOk("veth up");
            router.exec(5, "ip", "link", "set", "nstbr6", "up").assertOk("bridge up");
            router.exec(5, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward").assertOk("forwarding");
            router.exec(5, "ip", "route", "add", "198.19.7.0/24", "via", "198.18.0.3").assertOk("route to the far net");
            far.exec(5, "ip", "link", "set", "lo", "up").assertOk("lo");
            far.exec(5, "ip", "addr", "add", "198.19.7.7/32", "dev", "lo").assertOk("far address");
            far.exec(5, "ip", "addr", "add", "198.18.0.3/24", "dev", "nstrd1").assertOk("far link address");
            far.exec(5, "ip", "link", "set", "nstrd1", "up").assertOk("far link");

            // One datagram at a time from 198.19.7.7, each echo awaited (2 s at most), 50 ms apart: the redirects
            // arrive in between.
            final Netns.Result r = far.exec(60, PYTHON, "-c", String.join("\n",
                "import socket, time",
                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
                "s.bind(('198.19.7.7', 0))",
                "s.settimeout(2)",
                "echoed = 0",
                "for i in range(" + datagrams + "):",
                "    m = b'redirect %d' % i",
                "    s.sendto(m, ('" + DAEMON_IP + "', 7))",
                "    try:",
                "        echoed += s.recv(100) == m",
                "    except socket.timeout:",
                "        pass",
                "    time.sleep(0.05)",
                "print('echoed', echoed)"));
            assertEquals(0, r.exitCode(), r.output());
            assertTrue(r.output().contains("echoed " + datagrams), r.output());
            final long forwarded = snmpIp(router, "ForwDatagrams");
            final Map<StackCounter, Long> c = DaemonCounters.read(redirected.shm);
            System.out.println("[kernel tcp] redirect: " + r.output().trim() + ", replies the gateway forwarded " + forwarded
                + ", redirects applied " + c.get(StackCounter.ICMP_IN_REDIRECTS_APPLIED) + ", ignored "
                + c.get(StackCounter.ICMP_IN_REDIRECTS_IGNORED));
            assertTrue(c.get(StackCounter.ICMP_IN_REDIRECTS_APPLIED) >= 1, "the gateway's redirect applied: " + c);
            assertTrue(forwarded >= 1 && forwarded <= 3,
                "the gateway forwarded only the replies before its redirect was taken: " + forwarded);
            assertEquals(0, redirected.stop());
        }
    }

    /** One field of the "Ip:" lines of /proc/net/snmp in {@code ns}. */
    private static long snmpIp(final Netns ns, final String field) throws Exception
    {
        final String[] lines = ns.exec(5, "cat", "/proc/net/snmp").assertOk("snmp").output().split("\n");
        for (int i = 0; i + 1 < lines.length; i++)
        {
            if (lines[i].startsWith("Ip:") && lines[i + 1].startsWith("Ip:"))
            {
                final java.util.List<String> names = java.util.Arrays.asList(lines[i].trim().split("\\s+"));
                return Long.parseLong(lines[i + 1].trim().split("\\s+")[names.indexOf(field)]);
            }
        }
        throw new AssertionError("no Ip: lines in /proc/net/snmp");
    }

    /** The stack side of the client test: connects, sends the stream with salt 1, checks the stream with salt 2. */
    static final class ClientRun implements TcpHandler
    {
        final long total;
        final MessageDigest sentHash;
        final UnsafeBuffer chunk = new UnsafeBuffer(ByteBuffer.allocateDirect(64 * 1024));
        final byte[] bytes = new byte[64 * 1024];
        volatile boolean tapReady;
        volatile boolean go;
        volatile boolean stop;
        long sent;
        long received;
        boolean receivedExact = true;
        boolean peerClosed;
        /** TSO superframes the tap took from the kernel, and the frames cut from them. */
        long superframes;
        long superframeSegments;
        /** TSO superframes the tap gave the kernel, and the frames joined into them. */
        long sentSuperframes;
        long sentSuperframeSegments;
        int closed = -1;
        TcpConnection connection;

        ClientRun(final long total) throws Exception
        {
            this.total = total;
            this.sentHash = MessageDigest.getInstance("SHA-256");
        }

        void drive(final TapDevice tap) throws InterruptedException
        {
            final NetStack stack = new NetStack(tap, StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), System.nanoTime());
            stack.start(System.nanoTime());
            final long goDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!go && !stop && System.nanoTime() < goDeadline)
            {
                stack.poll(System.nanoTime());
                Thread.sleep(1);
            }
            if (!go)
            {
                throw new IllegalStateException(stop ? "stopped before the kernel server listened" : "no go within 60 s");
            }
            connection = stack.tcp().connect(Ipv4Address.parse("198.18.0.1"), 5001, this, null);
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(170);
            while (!stop && System.nanoTime() < deadline && !(peerClosed && sent == total) && closed < 0)
            {
                if (stack.poll(System.nanoTime()) == 0)
                {
                    tap.awaitReadable(1_000_000L);
                }
            }
            // Let the FIN exchange finish.
            final long drain = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (System.nanoTime() < drain && closed < 0)
            {
                stack.poll(System.nanoTime());
                tap.awaitReadable(1_000_000L);
            }
            superframes = tap.receiveSuperframes();
            superframeSegments = tap.receiveSuperframeSegments();
            sentSuperframes = tap.transmitSuperframes();
            sentSuperframeSegments = tap.transmitSuperframeSegments();
        }

        String status()
        {
            return "sent " + sent + " received " + received + " peerClosed " + peerClosed + " closed " + closed
                + " superframes " + superframes + " cut into " + superframeSegments
                + ", sent " + sentSuperframes + " joined from " + sentSuperframeSegments
                + (connection != null ? " " + connection.describe() : "");
        }

        @Override
        public void onConnected(final TcpConnection c)
        {
            onWritable(c);
        }

        @Override
        public void onWritable(final TcpConnection c)
        {
            while (sent < total)
            {
                final int n = (int)Math.min(Math.min(c.writable(), bytes.length), total - sent);
                if (n <= 0)
                {
                    return;
                }
                for (int i = 0; i < n; i++)
                {
                    bytes[i] = streamByte(sent + i, 1);
                }
                chunk.putBytes(0, bytes, 0, n);
                final int w = c.write(chunk, 0, n);
                sentHash.update(bytes, 0, w);
                sent += w;
            }
            if (sent == total)
            {
                c.shutdownOutput();
            }
        }

        @Override
        public void onReadable(final TcpConnection c)
        {
            int n;
            while ((n = c.read(chunk, 0, bytes.length)) > 0)
            {
                for (int i = 0; i < n; i++)
                {
                    if (chunk.getByte(i) != streamByte(received + i, 2))
                    {
                        receivedExact = false;
                    }
                }
                received += n;
            }
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            onReadable(c);
            peerClosed = true;
        }

        @Override
        public void onClosed(final TcpConnection c, final int reason)
        {
            closed = reason;
        }
    }

    /**
     * The two non-default loop/device modes end to end: busy polling and the tap without checksum offload (and the
     * daemon starts with {@code --no-send-file}, whose refusals PipeServerTest checks).
     */
    @Test
    void busyPollingDaemonWithoutOffloadAnswersPingAndEchoesExactly() throws Exception
    {
        try (Netns busyNs = new Netns();
            DaemonProcess busy = new DaemonProcess(busyNs, work.resolve("shm-busy"), "--device", "tap:nstap3",
                "--ip", DAEMON_IP + "/24", "--host-ip", "198.18.0.1/24", "--services", "echo",
                "--busy-poll", "--no-offload", "--no-send-file"))
        {
            busy.awaitReady();
            busyNs.exec(20, "ping", "-c", "3", "-i", "0.2", "-W", "2", DAEMON_IP).assertOk("ping a busy-polling daemon");
            final Netns.Result r = busyNs.exec(120, PYTHON, work.resolve("tcp_peer.py").toString(), "echo", DAEMON_IP, "5000000");
            assertEquals(0, r.exitCode(), "echo failed: " + r.output() + "\ndaemon: " + String.join("\n", busy.output));
            assertTrue(r.output().contains("exact=True"), r.output());
            assertEquals(0, busy.stop());
        }
    }

    @Test
    void echoThroughTheDaemonsFaultInjectorIsExact() throws Exception
    {
        try (Netns faultNs = new Netns();
            DaemonProcess faulty = new DaemonProcess(faultNs, work.resolve("shm-faults"), "--device", "tap:nstap2",
                "--ip", DAEMON_IP + "/24", "--host-ip", "198.18.0.1/24", "--services", "echo",
                "--faults", "loss=0.02,reorder=0.03,dup=0.01"))
        {
            faulty.awaitReady();
            final Netns.Result r = faultNs.exec(300, PYTHON, work.resolve("tcp_peer.py").toString(), "echo", DAEMON_IP, "20000000");
            final String seed = String.join("\n", faulty.output);
            assertEquals(0, r.exitCode(), "echo through faults failed: " + r.output() + "\ndaemon: " + seed);
            assertTrue(r.output().contains("exact=True"), r.output());
            System.out.println("[kernel tcp] faults: " + r.output().trim());
            assertEquals(0, faulty.stop());
        }
    }
}
