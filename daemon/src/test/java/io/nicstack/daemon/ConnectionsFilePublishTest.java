package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
        final MemoryWire wire = MemoryWire.pair(1500, 4096);
        long now = 1_000_000_000L;
        a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
        final NetStack b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
        new TcpServices().start(a.tcp(), true, true, false);
        for (int i = 0; i < CONNECTIONS; i++)
        {
            b.tcp().connect(0xC612_0002, i % 2 == 0 ? 7 : 9, new TcpHandler() { }, null);
        }
        for (int i = 0; i < 300; i++)
        {
            a.poll(now);
            b.poll(now);
            now += 1_234_567L; // odd RTTs, for srtt's three decimals
        }
        assertEquals(CONNECTIONS, a.tcp().connectionCount());
    }

    /** The line as it was made with String.format: conns's format must not change. */
    private static String formattedLine(final String local, final TcpConnection c)
    {
        return String.format("%-12s %-21s %-21s", c.state(), local + c.localPort(),
            Ipv4Address.format(c.remoteAddress()) + ":" + c.remotePort())
            + ' ' + c.congestionControl() + (c.sackEnabled() ? " sack" : "") + (c.timestampsEnabled() ? " ts" : "")
            + " wscale:" + c.sendWindowScale() + ',' + c.receiveWindowScale()
            + " mss:" + c.sendMss() + " cwnd:" + c.cwnd()
            + " ssthresh:" + (c.ssthresh() >= Integer.MAX_VALUE ? "-" : String.valueOf(c.ssthresh()))
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
            file.publish(a.tcp(), 0xC612_0002);
            assertEquals(expected.toString(), ConnectionsFile.read(shm));
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
            file.publish(a.tcp(), 0xC612_0002);
            text = ConnectionsFile.read(shm);
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
            file.publish(a.tcp(), 0xC612_0002);
            assertEquals(CONNECTIONS + " connections\n" + ConnectionsFile.HEADER + "\n... " + CONNECTIONS
                + " more connections not shown: the table is full\n", ConnectionsFile.read(shm));
        }
    }

    /** Twice a second on the packet path: once its buffers have grown, a publication allocates nothing per connection. */
    @Test
    void publishingAllocatesNothingPerConnection() throws Exception
    {
        final com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long thread = Thread.currentThread().getId();
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        try (ConnectionsFile file = ConnectionsFile.create(shm))
        {
            for (int i = 0; i < 3; i++)
            {
                file.publish(a.tcp(), 0xC612_0002);
            }
            final long before = threads.getThreadAllocatedBytes(thread);
            file.publish(a.tcp(), 0xC612_0002);
            final long allocated = threads.getThreadAllocatedBytes(thread) - before;
            assertTrue(allocated < 20L * CONNECTIONS, allocated + " bytes for " + CONNECTIONS + " connections");
        }
    }
}
