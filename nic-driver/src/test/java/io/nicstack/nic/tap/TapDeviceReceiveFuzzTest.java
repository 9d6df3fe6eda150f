package io.nicstack.nic.tap;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.linux.Linux;
import jnr.ffi.LibraryLoader;
import jnr.ffi.annotations.Out;
import org.agrona.BufferUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;

import static io.nicstack.nic.linux.Linux.LIBC;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Receive over arbitrary input, read from a datagram socket pair as a tap's reads are: random virtio-net headers (any
 * flags, GSO type, sizes and checksum offsets) in front of TCP/IPv4 frames and superframes with random options and
 * lengths, and plain garbage. receive() never throws and never hands out bytes outside its buffer; every datagram is
 * delivered as at least one frame or counted in {@link TapDevice#droppedFrames()}; a frame without GSO is delivered
 * whole if it fits the MTU and dropped otherwise; a superframe the kernel could have sent (GSO_TCPV4 with a gso_size
 * that fits the MTU) comes out as exactly its segments, each within the MTU, none dropped, with the header's checksum
 * flag. Adopted from the nic-driver review's probe, which passed.
 */
class TapDeviceReceiveFuzzTest
{
    /** socketpair(2), which the device itself never needs. */
    public interface SocketPair
    {
        int socketpair(int domain, int type, int protocol, @Out int[] fds);
    }

    private static final SocketPair SOCKETS = LibraryLoader.create(SocketPair.class).load("c");
    private static final int AF_UNIX = 1;
    private static final int DATAGRAMS = 2_000;
    private static final int ETHERNET = 14;
    private static final int V = VirtioNetHeader.LENGTH;

    /** Fixed seeds, and one new each run ({@code -Dnicstack.fuzz.seed=N} replays it); the seed names each run. */
    static LongStream seeds()
    {
        return LongStream.of(1, 2, 3, Long.getLong("nicstack.fuzz.seed", System.nanoTime()));
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void everyDatagramIsDeliveredOrCounted(final long seed)
    {
        final SplittableRandom r = new SplittableRandom(seed);
        final int mtu = r.nextBoolean() ? 1500 : 9000;
        final int maxFrame = mtu + ETHERNET;
        final int[] fds = new int[2];
        assertEquals(0, SOCKETS.socketpair(AF_UNIX, Linux.SOCK_DGRAM | Linux.O_NONBLOCK | Linux.SOCK_CLOEXEC, 0, fds));
        final UnsafeBuffer datagram = new UnsafeBuffer(BufferUtil.allocateDirectAligned(V + 65_536 + ETHERNET, 64));
        final List<int[]> frames = new ArrayList<>(); // length, flags
        final FrameHandler handler = new FrameHandler()
        {
            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length)
            {
                fail("a tap delivers every frame with its flags");
            }

            @Override
            public void onFrame(final DirectBuffer buffer, final int offset, final int length, final int flags)
            {
                assertTrue(offset >= 0 && length >= 0 && offset + length <= buffer.capacity(), "inside the buffer");
                frames.add(new int[]{ length, flags });
            }
        };

        try (TapDevice tap = new TapDevice("pairtap0", fds[0], mtu, false, true))
        {
            for (int run = 0; run < DATAGRAMS; run++)
            {
                final String where = "seed " + seed + " run " + run + " mtu " + mtu;
                final int kind = r.nextInt(4);
                final int frameLength;
                int expectedFrames = -1; // unknown: delivered or counted
                if (kind == 0)
                {
                    frameLength = r.nextInt(200);
                    randomBytes(r, datagram, V + frameLength);
                }
                else
                {
                    final int ipOptions = r.nextInt(3) == 0 ? 4 * r.nextInt(11) : 0;
                    final int tcpOptions = 4 * r.nextInt(11);
                    final int headers = ETHERNET + 20 + ipOptions + 20 + tcpOptions;
                    final int payload = 1 + r.nextInt(65_535 - (headers - ETHERNET));
                    frameLength = headers + payload;
                    randomBytes(r, datagram, V + frameLength);
                    tcpIpv4(datagram, ipOptions, tcpOptions, frameLength);
                    // kind 1: no GSO; 2: TSO4 (now and then another type) with a size that fits; 3: any size.
                    final int gsoType = kind == 1 ? VirtioNetHeader.GSO_NONE
                        : r.nextInt(5) == 0 ? r.nextInt(256) : VirtioNetHeader.GSO_TCPV4;
                    final int gsoSize = kind == 3 ? r.nextInt(65_536) : 1 + r.nextInt(maxFrame - headers);
                    new VirtioNetHeader().wrap(datagram, 0).flags(r.nextInt(4)).gsoType(gsoType).gsoSize(gsoSize)
                        .checksumStart(r.nextInt(65_536)).checksumOffset(r.nextInt(65_536))
                        .headerLength(r.nextInt(65_536));
                    if (gsoType == VirtioNetHeader.GSO_NONE)
                    {
                        expectedFrames = frameLength <= maxFrame ? 1 : 0;
                    }
                    else if (gsoType == VirtioNetHeader.GSO_TCPV4 && gsoSize > 0 && headers + gsoSize <= maxFrame)
                    {
                        expectedFrames = (payload + gsoSize - 1) / gsoSize;
                    }
                }
                if (LIBC.write(fds[1], datagram.addressOffset(), V + frameLength) < 0)
                {
                    continue; // larger than the socket takes
                }
                final int checksumFlags =
                    datagram.getByte(0) & (VirtioNetHeader.F_NEEDS_CSUM | VirtioNetHeader.F_DATA_VALID);

                final long droppedBefore = tap.droppedFrames();
                frames.clear();
                for (int calls = 0; calls < 100_000; calls++)
                {
                    if (tap.receive(handler, 1 + r.nextInt(NetDevice.BURST)) == 0 && !tap.awaitReadable(0))
                    {
                        break;
                    }
                }
                final long dropped = tap.droppedFrames() - droppedBefore;
                assertTrue(frames.size() + dropped >= 1, where + ": a datagram vanished without a count");
                if (expectedFrames >= 0)
                {
                    assertEquals(expectedFrames, frames.size(), where + ": frames delivered");
                    assertEquals(expectedFrames == 0 ? 1 : 0, dropped, where + ": frames dropped");
                    for (final int[] frame : frames)
                    {
                        assertTrue(frame[0] <= maxFrame, where + ": a frame of " + frame[0] + " bytes");
                        assertEquals(checksumFlags != 0 ? FrameHandler.RX_L4_CHECKSUM_TRUSTED : 0, frame[1],
                            where + ": receive flags");
                    }
                }
            }
        }
        finally
        {
            LIBC.close(fds[1]);
        }
    }

    private static void randomBytes(final SplittableRandom r, final UnsafeBuffer buffer, final int length)
    {
        for (int i = 0; i < length; i++)
        {
            buffer.putByte(i, (byte)r.nextInt(256));
        }
    }

    /** The fields of an Ethernet, IPv4 (DF) and TCP header that the splitter checks, after the virtio-net header. */
    private static void tcpIpv4(final UnsafeBuffer b, final int ipOptions, final int tcpOptions, final int frameLength)
    {
        final int ip = V + ETHERNET;
        b.putShort(V + 12, (short)0x0800, ByteOrder.BIG_ENDIAN);
        b.putByte(ip, (byte)(0x40 | (20 + ipOptions) / 4));
        b.putShort(ip + 2, (short)(frameLength - ETHERNET), ByteOrder.BIG_ENDIAN);
        b.putShort(ip + 6, (short)0x4000, ByteOrder.BIG_ENDIAN);
        b.putByte(ip + 9, (byte)6);
        b.putByte(ip + 20 + ipOptions + 12, (byte)((20 + tcpOptions) / 4 << 4));
    }
}
