package io.nicstack.stack;

import java.util.SplittableRandom;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryDevice;
import io.nicstack.nic.mem.MemoryWire;
import io.nicstack.stack.iface.StackConfig;
import io.nicstack.stack.stats.StackCounter;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.ArpPacket;
import io.nicstack.stack.wire.EthernetFrame;
import io.nicstack.stack.wire.IcmpHeader;
import io.nicstack.stack.wire.MacAddress;

import static io.nicstack.stack.Frames.*;
import static org.junit.jupiter.api.Assertions.*;

/**
 * Randomized hostile input: a million mutated frames (bit flips, byte rewrites, truncation,
 * extension, field-targeted garbage) into one stack. No exception may escape, every frame must end
 * in a terminal counter, and the stack must still answer afterwards.
 */
class MutatedFramesTest
{
    private static final int FRAMES = Integer.getInteger("nicstack.fuzz.frames", 1_000_000);
    private static final long SEED = Long.getLong("nicstack.fuzz.seed", System.nanoTime());

    /**
     * The test: mutated frames cross a {@link MemoryWire} from a peer device into the stack,
     * in bursts, through the same receive path as the daemon's.
     */
    @Test
    void aMillionMutatedFramesOverTheMemoryWireAreAllAccountedForAndTheStackStillAnswers()
    {
        final MemoryWire wire = MemoryWire.pair(1500, 256);
        final MemoryDevice peer = wire.b();
        run(wire.a(), FRAMES, (frame, length) ->
        {
            final MutableDirectBuffer slot = peer.claim();
            slot.putBytes(0, frame, 0, length);
            peer.commit(length);
        }, () ->
        {
            peer.flush();
            peer.receive((b, o, l) -> { }, NetDevice.BURST);
        });
    }

    /** The same storm handed to the stack in buffers of exactly the frame's length: any overread throws. */
    @Test
    void mutatedFramesInExactlySizedBuffersNeverReadOutOfBounds()
    {
        final TestDevice device = new TestDevice(1500);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[2048]);
        final NetStack[] stack = new NetStack[1];
        run(device, FRAMES / 5, (frame, length) ->
        {
            final UnsafeBuffer exact = new UnsafeBuffer(buffer, 0, length);
            exact.putBytes(0, frame, 0, length);
            stack[0].onFrame(exact, 0, length);
        }, device::takeSent, s -> stack[0] = s);
    }

    private interface Sender
    {
        void send(byte[] frame, int length);
    }

    private void run(final NetDevice device, final int frames, final Sender sender, final Runnable drain)
    {
        run(device, frames, sender, drain, s -> { });
    }

    private void run(
        final NetDevice device,
        final int frames,
        final Sender sender,
        final Runnable drain,
        final java.util.function.Consumer<NetStack> created)
    {
        final StackCounters counters = StackCounters.inMemory();
        long now = 1_000_000_000L;
        final NetStack stack = new NetStack(device, StackConfig.of("198.18.0.2/24").reassemblyTimeoutNanos(50_000_000L), counters, now);
        created.accept(stack);
        stack.udp().bind(7, (s, src, port, b, o, l, t) -> s.send(src, port, b, o, l, t));
        final long mac = stack.config().mac();

        final byte[][] templates = {
            ethernet(MacAddress.BROADCAST, PEER_MAC, EthernetFrame.ETHERTYPE_ARP, arp(ArpPacket.OP_REQUEST, PEER_MAC, PEER_IP, 0, STACK_IP)),
            fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 1, false, 0, icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 1, 1, new byte[56]))),
            fromPeer(mac, ipv4(PEER_IP, STACK_IP, 17, 2, false, 0, udp(PEER_IP, STACK_IP, 999, 7, new byte[32]))),
            fromPeer(mac, ipv4(PEER_IP, STACK_IP, 17, 3, false, 0, udp(PEER_IP, STACK_IP, 999, 4444, new byte[8]))),
            fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 4, true, 0, new byte[1024])),
            fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 4, false, 1024, new byte[200])),
            fromPeer(mac, ipv4(PEER_IP, STACK_IP, 6, 5, false, 0, new byte[40])),
        };
        final SplittableRandom random = new SplittableRandom(SEED);
        final byte[] work = new byte[2048];
        try
        {
            for (int i = 0; i < frames; i++)
            {
                final byte[] t = templates[random.nextInt(templates.length)];
                sender.send(work, mutate(t, work, random));
                if ((i & 31) == 31)
                {
                    now += 1_000_000L;
                    drain.run();
                    stack.poll(now);
                }
            }
            drain.run();
            stack.poll(now);
            assertEquals(frames, counters.get(StackCounter.FRAMES_IN), "device drops: " + device.droppedFrames());
            assertEquals(0, counters.get(StackCounter.INTERNAL_ERRORS), "no exception while processing:\n" + counters);
            assertEquals(0, counters.unaccountedFrames(), "every frame ends in exactly one terminal counter:\n" + counters);
            assertTrue(counters.totalDrops() > frames / 4, "the mutations really produce drops:\n" + counters);

            // Still alive: a clean echo request is answered.
            final int[] replies = new int[1];
            final StackCounters before = counters;
            final long echoes = before.get(StackCounter.ICMP_OUT_ECHO_REPLIES);
            final byte[] arpReply = ethernet(mac, PEER_MAC, EthernetFrame.ETHERTYPE_ARP, arp(ArpPacket.OP_REPLY, PEER_MAC, PEER_IP, mac, STACK_IP));
            final byte[] echo = fromPeer(mac, ipv4(PEER_IP, STACK_IP, 1, 9, false, 0, icmpEcho(IcmpHeader.TYPE_ECHO_REQUEST, 7, 7, new byte[8])));
            sender.send(arpReply, arpReply.length);
            sender.send(echo, echo.length);
            drain.run();
            stack.poll(now);
            replies[0] = (int)(counters.get(StackCounter.ICMP_OUT_ECHO_REPLIES) - echoes);
            assertEquals(1, replies[0], "echo reply after the storm");
        }
        catch (final Throwable e)
        {
            throw new AssertionError("replay with -Dnicstack.fuzz.seed=" + SEED + ": " + e, e);
        }
    }

    private static int mutate(final byte[] template, final byte[] out, final SplittableRandom random)
    {
        int length = template.length;
        System.arraycopy(template, 0, out, 0, length);
        final int kind = random.nextInt(8);
        switch (kind)
        {
            case 0: // truncate anywhere, including inside the Ethernet header
                length = random.nextInt(length + 1);
                break;
            case 1: // extend with garbage
            {
                final int extra = random.nextInt(64);
                for (int i = 0; i < extra; i++)
                {
                    out[length + i] = (byte)random.nextInt();
                }
                length += extra;
                break;
            }
            case 2: // IPv4 header fields: version/IHL, total length, flags/offset, ttl, protocol
            {
                final int[] fields = {14, 16, 17, 20, 21, 22, 23};
                out[fields[random.nextInt(fields.length)]] = (byte)random.nextInt();
                break;
            }
            case 3: // L4 header bytes
                if (length > 42)
                {
                    out[34 + random.nextInt(8)] = (byte)random.nextInt();
                }
                break;
            default: // one to four random bit flips anywhere
            {
                final int flips = 1 + random.nextInt(4);
                for (int i = 0; i < flips && length > 0; i++)
                {
                    final int at = random.nextInt(length);
                    out[at] ^= (byte)(1 << random.nextInt(8));
                }
                break;
            }
        }
        // Half the time, repair the IPv4 header checksum (and drop the UDP one) so mutations reach
        // the deeper checks instead of all dying at the checksum.
        if (random.nextBoolean() && length >= 34 && out[12] == 0x08 && out[13] == 0x00)
        {
            final int ihl = (out[14] & 0x0F) * 4;
            if (ihl >= 20 && 14 + ihl <= length)
            {
                final UnsafeBuffer b = new UnsafeBuffer(out, 0, length);
                if (out[23] == 17 && 14 + ihl + 8 <= length)
                {
                    b.putShort(14 + ihl + 6, (short)0);
                }
                new io.nicstack.stack.wire.Ipv4Header().wrap(b, 14, length - 14).updateChecksum();
            }
        }
        return length;
    }
}
