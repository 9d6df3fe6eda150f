package io.nicstack.stack.tcp;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.storage.RingReceiveBuffer;
import io.nicstack.stack.storage.RingSendBuffer;

import static org.junit.jupiter.api.Assertions.*;

/**
 * 100,000 concurrent established connections between two stacks over the memory wire in one JVM,
 * and the heap each idle connection costs (printed; the figure goes into BENCHMARKS.md).
 */
class TcpScaleTest
{
    static final int CONNECTIONS = Integer.getInteger("nicstack.scale.connections", 100_000);
    static final int PORTS = 8;
    static final int BUFFER = 1024;

    static long usedHeap()
    {
        for (int i = 0; i < 3; i++)
        {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    @Test
    void hundredThousandEstablishedConnections()
    {
        final TwoStacks net = new TwoStacks(FaultConfig.NONE);
        final NetStack server = net.a;
        final NetStack client = net.b;
        for (final NetStack s : new NetStack[] {server, client})
        {
            s.tcp().defaults().sendBufferBytes = BUFFER;
            s.tcp().defaults().receiveBufferBytes = BUFFER;
        }
        final int[] accepted = {0};
        for (int p = 0; p < PORTS; p++)
        {
            final TcpListener l = server.tcp().listen(10_000 + p, 4096, listener ->
            {
                while (listener.accept() != null)
                {
                    accepted[0]++;
                }
            });
            l.settings().sendBufferBytes = BUFFER;
            l.settings().receiveBufferBytes = BUFFER;
        }
        final int[] connected = {0};
        final TcpHandler onConnect = new TcpHandler()
        {
            @Override
            public void onConnected(final TcpConnection c)
            {
                connected[0]++;
            }
        };
        net.runUntil(() -> false, 10_000_000L); // ARP both ways first
        final long before = usedHeap();
        final TcpConnection[] clients = new TcpConnection[CONNECTIONS];
        for (int i = 0; i < CONNECTIONS; i += 500)
        {
            for (int j = i; j < Math.min(CONNECTIONS, i + 500); j++)
            {
                clients[j] = client.tcp().connect(TwoStacks.A_IP, 10_000 + j % PORTS, onConnect, null);
            }
            final int target = Math.min(CONNECTIONS, i + 500);
            assertTrue(net.runUntil(() -> connected[0] >= target && accepted[0] >= target, 10_000_000_000L),
                "connected " + connected[0] + " accepted " + accepted[0] + " of " + target);
        }
        assertEquals(CONNECTIONS, server.tcp().connectionCount());
        assertEquals(CONNECTIONS, client.tcp().connectionCount());
        // Quiesce (delayed ACKs, timers), then measure.
        net.runUntil(() -> false, 1_000_000_000L);
        final long after = usedHeap();

        // The buffers alone, to subtract: the same number of ring pairs.
        final long beforeBuffers = usedHeap();
        final Object[] buffers = new Object[4 * CONNECTIONS];
        for (int i = 0; i < buffers.length; i += 2)
        {
            buffers[i] = new RingSendBuffer(BUFFER);
            buffers[i + 1] = new RingReceiveBuffer(BUFFER, 16);
        }
        final long buffersHeap = usedHeap() - beforeBuffers;
        assertNotNull(buffers[buffers.length - 1]);

        final double perConnection = (double)(after - before) / (2.0 * CONNECTIONS);
        final double perConnectionWithoutBuffers = (double)(after - before - buffersHeap) / (2.0 * CONNECTIONS);
        System.out.printf("[scale] %d connections each side; heap per connection %.0f B including buffer objects, %.0f B excluding"
            + " the send/receive ring objects (their %d-byte storage is off-heap)%n", CONNECTIONS, perConnection,
            perConnectionWithoutBuffers, BUFFER);

        // And they work: a sample of connections moves data after the crowd is established.
        final UnsafeBuffer b = new UnsafeBuffer(ByteBuffer.allocateDirect(16));
        b.putLong(0, 0x1234_5678_9ABC_DEF0L);
        for (int i = 0; i < CONNECTIONS; i += CONNECTIONS / 10)
        {
            assertEquals(8, clients[i].write(b, 0, 8));
        }
        net.runUntil(() -> false, 100_000_000L);
        final long[] readable = {0};
        server.tcp().forEachConnection(c -> readable[0] += c.readable());
        assertEquals(8L * 10, readable[0]);
    }
}
