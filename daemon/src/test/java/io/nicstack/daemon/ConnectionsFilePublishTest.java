package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.wire.Ipv4Address;

/** Publishing the connection table, on the event loop: the same text as ever, at no cost per connection. */
class ConnectionsFilePublishTest
{
    private static final int CONNECTIONS = 50;

    @TempDir
    Path dir;

    private NetStack a;

    @BeforeEach
    void connect()
    {
        a = servingConnections(StackCounters.inMemory(), CONNECTIONS);
    }

    /**
     * A stack at 198.18.0.2 (counting into {@code counters}) serving echo and discard, with {@code connections}
     * established from a peer stack over a memory wire, half to each service; the peer is polled no more.
     */
    static NetStack servingConnections(final StackCounters counters, final int connections)
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        long now = 1_000_000_000L;
        final NetStack served = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), counters, now);
        final NetStack b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        new TcpServices().start(served.tcp(), true, true, false);
        for (int i = 0; i < connections; i++)
        {
            b.tcp().connect(0xC612_0002, i % 2 == 0 ? 7 : 9, new TcpHandler() { }, null);
        }
        for (int i = 0; i < 300; i++)
        {
            served.poll(now);
            b.poll(now);
            now += 1_234_567L; // odd RTTs, for srtt's three decimals
        }
        assertEquals(connections, served.tcp().connectionCount());
        return served;
    }

    /**
     * The line as String.format makes it: conns's format must not change. cwnd and ssthresh in segments of the send
     * MSS, as ss shows them; ssthresh left out while it is the initial, infinite one, as ss does.
     */
    private static String formattedLine(final String local, final TcpConnection c)
    {
        return String.format("%-12s %-21s %-21s", c.state(), local + c.localPort(),
            Ipv4Address.format(c.remoteAddress()) + ":" + c.remotePort())
            + ' ' + c.congestionControl() + (c.sackEnabled() ? " sack" : "") + (c.timestampsEnabled() ? " ts" : "")
            + " wscale:" + c.sendWindowScale() + ',' + c.receiveWindowScale()
            + " mss:" + c.sendMss() + " cwnd:" + c.cwnd() / c.sendMss()
            + (c.ssthresh() >= Integer.MAX_VALUE ? "" : " ssthresh:" + c.ssthresh() / c.sendMss())
            + " srtt:" + (c.srttNanos() < 0 ? "-" : String.format("%.3fms", c.srttNanos() / 1e6))
            + " rto:" + c.rtoNanos() / 1_000_000 + "ms" + " bytes_acked:" + c.bytesAcked()
            + " bytes_received:" + c.bytesReceived() + " retrans:" + c.retransmittedSegments() + '\n';
    }

    @Test
    void tableIsTheTextStringFormatMade() throws Exception
    {
        final StringBuilder expected = new StringBuilder();
        expected.append(CONNECTIONS).append(" connections\n").append(ConnectionsFile.HEADER).append('\n');
        final List<TcpConnection> all = new ArrayList<>();
        a.tcp().forEachConnection(all::add);
        for (final TcpConnection c : all)
        {
            expected.append(formattedLine("198.18.0.2:", c));
        }
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (DaemonLock lock = DaemonLock.acquire(shm); ConnectionsFile file = ConnectionsFile.create(shm))
        {
            assertEquals(expected.toString(), served(shm, file, a));
        }
        for (final long srtt : new long[] {0, 1, 499, 500, 1_000_500, 1_234_567, 99_999_999_999L})
        {
            final long micros = (srtt + 500) / 1000;
            assertEquals(String.format("%.3f", srtt / 1e6), micros / 1000 + "." + String.format("%03d", micros % 1000),
                "srtt " + srtt);
        }
    }

    /**
     * A table longer than the file shows the whole lines that fit, then how many connections it leaves out. Before, the
     * text was cut at the file's end, mid-line, and "... (truncated)" written over the last bytes, with no count.
     */
    @Test
    void aTableTooLongForTheFileEndsWithWholeLinesAndACount() throws Exception
    {
        final List<TcpConnection> all = new ArrayList<>();
        a.tcp().forEachConnection(all::add);
        final int capacity = 4096;
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final String text;
        try (DaemonLock lock = DaemonLock.acquire(shm); ConnectionsFile file = ConnectionsFile.create(shm, capacity))
        {
            text = served(shm, file, a);
        }
        assertTrue(text.length() <= capacity, text.length() + " bytes");
        final String[] lines = text.split("\n", -1);
        assertEquals("", lines[lines.length - 1], "ends with a newline");
        assertEquals(CONNECTIONS + " connections", lines[0]);
        assertEquals(ConnectionsFile.HEADER, lines[1]);
        final int shown = lines.length - 4;
        assertTrue(shown > 0 && shown < CONNECTIONS, shown + " shown");
        for (int i = 0; i < shown; i++)
        {
            assertEquals(formattedLine("198.18.0.2:", all.get(i)), lines[2 + i] + '\n', "line " + i);
        }
        assertEquals("... " + (CONNECTIONS - shown) + " more connections not shown: the table is full", lines[lines.length - 2]);
    }

    /**
     * With room for no connection line, the table is its header and the note, which counts connections only; a file
     * without room for those is refused. Before, a cut inside the header counted its lines as connections ("6 more"
     * of 5) and a smaller file made the publication throw.
     */
    @Test
    void aFileWithRoomForNoLineKeepsItsHeaderAndCountsEveryConnection() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        assertThrows(IllegalArgumentException.class, () -> ConnectionsFile.create(shm, ConnectionsFile.MIN_CAPACITY - 1));
        try (DaemonLock lock = DaemonLock.acquire(shm); ConnectionsFile file = ConnectionsFile.create(shm, ConnectionsFile.MIN_CAPACITY))
        {
            assertEquals(CONNECTIONS + " connections\n" + ConnectionsFile.HEADER + "\n... " + CONNECTIONS
                + " more connections not shown: the table is full\n", served(shm, file, a));
        }
    }

    /** Twice a second on the packet path: once its buffers have grown, a publication allocates nothing per connection. */
    @Test
    void publishingAllocatesNothingPerConnection() throws Exception
    {
        final com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long thread = Thread.currentThread().getId();
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (ConnectionsFile file = ConnectionsFile.create(shm); ConnsRequester requester = new ConnsRequester(shm))
        {
            for (int i = 0; i < 3; i++)
            {
                requester.ask();
                file.publish(a.tcp(), 0xC612_0002);
            }
            requester.ask();
            final long before = threads.getThreadAllocatedBytes(thread);
            file.publish(a.tcp(), 0xC612_0002);
            final long allocated = threads.getThreadAllocatedBytes(thread) - before;
            assertTrue(allocated < 20L * CONNECTIONS, allocated + " bytes for " + CONNECTIONS + " connections");
        }
    }

    /**
     * Like ss -tin, conns counts cwnd and ssthresh in segments, and shows ssthresh once it is set. A chargen connection
     * whose peer stops answering: the retransmission timeout sets ssthresh (RFC 5681 (4)) and cwnd to one segment. Before,
     * both were printed in bytes under ss's labels (cwnd:14480 for ss's cwnd:10), and ssthresh as "-" until set.
     */
    @Test
    void cwndAndSsthreshAreInSegmentsAsSsShowsThem() throws Exception
    {
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        long now = 1_000_000_000L;
        final NetStack server = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        final NetStack client = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        new TcpServices().start(server.tcp(), false, false, true);
        final UnsafeBuffer sink = new UnsafeBuffer(new byte[1 << 16]);
        final TcpConnection reader = client.tcp().connect(0xC612_0002, 19, new TcpHandler() { }, null);
        for (int i = 0; i < 100; i++, now += 1_000_000L)
        {
            server.poll(now);
            client.poll(now);
            while (reader.read(sink, 0, sink.capacity()) > 0)
            {
                // chargen: read and forget
            }
        }
        final TcpConnection sender = only(server);
        assertTrue(sender.ssthresh() >= Integer.MAX_VALUE, "no loss yet: " + sender.ssthresh());
        final String fresh = table(server);
        assertTrue(fresh.contains(" mss:" + sender.sendMss() + " cwnd:" + sender.cwnd() / sender.sendMss() + " srtt:"), fresh);
        for (int i = 0; i < 3000; i++, now += 1_000_000L) // the client is silent: the server's RTO fires
        {
            server.poll(now);
        }
        assertTrue(sender.ssthresh() < Integer.MAX_VALUE, "ssthresh set by the timeout: " + sender.ssthresh());
        assertTrue(sender.cwnd() > 0 && sender.ssthresh() > 2L * sender.sendMss(), sender.cwnd() + " " + sender.ssthresh());
        final String afterLoss = table(server);
        assertTrue(afterLoss.contains(" cwnd:" + sender.cwnd() / sender.sendMss() + " ssthresh:"
            + sender.ssthresh() / sender.sendMss() + " srtt:"), afterLoss);
    }

    /** A connection in SYN-SENT has no send MSS yet: its cwnd is "-", not a division by zero on the event loop. */
    @Test
    void aConnectionWithoutAnMssYetShowsNoCwnd() throws Exception
    {
        final NetStack client = new NetStack(MemoryWire.pair(1500, 16).b(), StackConfig.of("198.18.0.3/24"),
            StackCounters.inMemory(), 1_000_000_000L);
        final TcpConnection c = client.tcp().connect(0xC612_0063, 9, new TcpHandler() { }, null); // nobody answers
        client.poll(1_000_000_000L);
        assertEquals(0, c.sendMss());
        final String text = table(client);
        assertTrue(text.contains("SYN_SENT") && text.contains(" mss:0 cwnd:- srtt:"), text);
    }

    private static TcpConnection only(final NetStack stack)
    {
        final List<TcpConnection> all = new ArrayList<>();
        stack.tcp().forEachConnection(all::add);
        assertEquals(1, all.size());
        return all.get(0);
    }

    private String table(final NetStack stack) throws Exception
    {
        final Path shm = Files.createDirectories(dir.resolve("table"));
        try (DaemonLock lock = DaemonLock.acquire(shm); ConnectionsFile file = ConnectionsFile.create(shm))
        {
            return served(shm, file, stack);
        }
    }

    /** What {@code conns} reads from {@code file} when the event loop answers it (publish runs while the reader waits). */
    static String served(final Path shm, final ConnectionsFile file, final NetStack stack) throws Exception
    {
        return ConnectionsFile.read(shm, System::nanoTime, ConnectionsFile.READ_BUDGET_NANOS,
            () -> file.publish(stack.tcp(), 0xC612_0002));
    }
}
