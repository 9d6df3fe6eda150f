package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteOrder;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.NetStack;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.udp.UdpSocket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.Ipv4Header;
import io.nicstack.stack.wire.MacAddress;
import io.nicstack.stack.wire.UdpHeader;

/**
 * RFC 862 over UDP, the CVE-1999-0103 loop between two services that answer automatically, and the "fraggle" reflector
 * (an echo to a broadcast address).
 */
class UdpEchoServiceTest
{
    private static final int A = 0xC612_0002;
    private static final int B = 0xC612_0003;

    private long now = 1_000_000_000L;
    private final MemoryWire wire = MemoryWire.pair(1500, 4096);
    private final NetStack a = new NetStack(wire.a(), StackConfig.of("198.18.0.2/24"), StackCounters.inMemory(), now);
    private final NetStack b = new NetStack(wire.b(), StackConfig.of("198.18.0.3/24"), StackCounters.inMemory(), now);
    private final long[] dropped = {0};
    private final long[] broadcastDropped = {0};

    private void run(final int rounds)
    {
        for (int i = 0; i < rounds; i++)
        {
            a.poll(now);
            b.poll(now);
            now += 100_000L;
        }
    }

    /** Another echo service (inetd, another nicstack) sends one datagram from port 7: one drop, no ping-pong. */
    @Test
    void cve1999_0103_datagramFromAnotherEchoServiceIsDroppedNotEchoed()
    {
        a.udp().bind(UdpEchoService.PORT, new UdpEchoService(() -> dropped[0]++, () -> broadcastDropped[0]++));
        final UdpSocket peerEcho = b.udp().bind(UdpEchoService.PORT, new UdpEchoService());
        peerEcho.send(A, UdpEchoService.PORT, new UnsafeBuffer(new byte[1000]), 0, 1000, now);
        run(10_000);
        assertEquals(1, a.counters().get(StackCounter.UDP_IN_DATAGRAMS));
        assertEquals(0, a.counters().get(StackCounter.UDP_OUT_DATAGRAMS));
        assertEquals(1, dropped[0]);
    }

    @Test
    void everyPrivilegedSourcePortIsDroppedAndAClientPortIsEchoed()
    {
        a.udp().bind(UdpEchoService.PORT, new UdpEchoService(() -> dropped[0]++, () -> broadcastDropped[0]++));
        final int[] echoed = {0};
        for (final int port : new int[] {13, 19, 37, 53, 123, 1023})
        {
            b.udp().bind(port, (s, src, srcPort, buf, off, len, t) -> echoed[0]++).send(A, 7, new UnsafeBuffer(new byte[8]), 0, 8, now);
        }
        b.udp().bind(1024, (s, src, srcPort, buf, off, len, t) -> echoed[0]++).send(A, 7, new UnsafeBuffer(new byte[8]), 0, 8, now);
        run(100);
        assertEquals(6, dropped[0]);
        assertEquals(1, echoed[0]);
    }

    /**
     * A datagram to the subnet's broadcast address or to 255.255.255.255 is received (every host on the link takes it)
     * but not echoed: its source may be forged, and every echo service on the link answering it would flood that source
     * (the "fraggle" attack, the UDP form of smurf). ICMP drops broadcast echo requests likewise (RFC 1122 3.2.2.6,
     * ICMP_DROP_BROADCAST_ECHO). Before, both were echoed to their source.
     */
    @Test
    void aDatagramToABroadcastAddressIsNotEchoed()
    {
        a.udp().bind(UdpEchoService.PORT, new UdpEchoService(() -> dropped[0]++, () -> broadcastDropped[0]++));
        final int[] echoed = {0};
        final UdpSocket client = b.udp().bind(40000, (s, src, srcPort, buf, off, len, t) -> echoed[0]++);
        for (final int broadcast : new int[] {0xC612_00FF, 0xFFFF_FFFF})
        {
            client.send(broadcast, UdpEchoService.PORT, new UnsafeBuffer(new byte[512]), 0, 512, now);
        }
        run(100);
        assertEquals(2, a.counters().get(StackCounter.UDP_IN_DATAGRAMS), "both reached the echo service");
        assertEquals(0, a.counters().get(StackCounter.UDP_OUT_DATAGRAMS));
        assertEquals(0, echoed[0]);
        assertEquals(0, dropped[0], "the loop guard's counter is for privileged source ports only");
        assertEquals(2, broadcastDropped[0], "each counted");

        client.send(A, UdpEchoService.PORT, new UnsafeBuffer(new byte[512]), 0, 512, now);
        run(100);
        assertEquals(1, echoed[0], "a datagram to our own address is echoed");
    }

    /**
     * RFC 1122 §3.3.6: a datagram to the subnet's network address {subnet, 0}, the old broadcast form, is a broadcast
     * for IPv4, so not echoed either. UdpSocket cannot send to it (only the standard forms), so b's side of the wire
     * carries a hand-built Ethernet broadcast frame from b:40000. Before, it was echoed: the guard asked only about
     * 255.255.255.255 and the all-ones address, and every daemon on the link answered the (possibly forged) source.
     */
    @Test
    void aDatagramToTheSubnetsNetworkAddressIsNotEchoed()
    {
        a.udp().bind(UdpEchoService.PORT, new UdpEchoService(() -> dropped[0]++, () -> broadcastDropped[0]++));
        final int[] echoed = {0};
        b.udp().bind(40000, (s, src, srcPort, buf, off, len, t) -> echoed[0]++);
        final int subnetZero = 0xC612_0000;
        final int payload = 64;
        final int udpLength = UdpHeader.HEADER_LENGTH + payload;
        final int totalLength = Ipv4Header.MIN_HEADER_LENGTH + udpLength;
        final MutableDirectBuffer frame = wire.b().claim();
        frame.setMemory(0, EthernetFrame.HEADER_LENGTH + totalLength, (byte)0);
        MacAddress.write(frame, 0, MacAddress.BROADCAST);
        MacAddress.write(frame, 6, b.config().mac());
        frame.putShort(12, (short)EthernetFrame.ETHERTYPE_IPV4, ByteOrder.BIG_ENDIAN);
        new Ipv4Header().wrap(frame, EthernetFrame.HEADER_LENGTH, totalLength).versionAndIhl(5).tos(0)
            .totalLength(totalLength).identification(1).flagsAndFragmentOffset(false, false, 0).ttl(64)
            .protocol(Ipv4Header.PROTOCOL_UDP).source(B).destination(subnetZero).updateChecksum();
        new UdpHeader().wrap(frame, EthernetFrame.HEADER_LENGTH + Ipv4Header.MIN_HEADER_LENGTH, udpLength).sourcePort(40000)
            .destinationPort(UdpEchoService.PORT).datagramLength(udpLength).checksum(0).updateChecksum(B, subnetZero);
        wire.b().commit(EthernetFrame.HEADER_LENGTH + totalLength);
        wire.b().flush();
        run(100);
        assertEquals(1, a.counters().get(StackCounter.UDP_IN_DATAGRAMS), "it reached the echo service");
        assertEquals(0, a.counters().get(StackCounter.UDP_OUT_DATAGRAMS));
        assertEquals(0, echoed[0]);
        assertEquals(1, broadcastDropped[0], "counted by the fraggle guard");
        assertEquals(0, dropped[0]);
    }
}
