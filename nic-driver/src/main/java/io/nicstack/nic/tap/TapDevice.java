package io.nicstack.nic.tap;

import io.nicstack.nic.FrameHandler;
import io.nicstack.nic.NetDevice;
import io.nicstack.nic.NicException;
import io.nicstack.nic.linux.Linux;
import org.agrona.BitUtil;
import org.agrona.BufferUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import static io.nicstack.nic.linux.Linux.AF_INET;
import static io.nicstack.nic.linux.Linux.EACCES;
import static io.nicstack.nic.linux.Linux.EAGAIN;
import static io.nicstack.nic.linux.Linux.EBUSY;
import static io.nicstack.nic.linux.Linux.EINTR;
import static io.nicstack.nic.linux.Linux.EINVAL;
import static io.nicstack.nic.linux.Linux.EIO;
import static io.nicstack.nic.linux.Linux.ENETDOWN;
import static io.nicstack.nic.linux.Linux.ENOBUFS;
import static io.nicstack.nic.linux.Linux.ENODEV;
import static io.nicstack.nic.linux.Linux.ENOENT;
import static io.nicstack.nic.linux.Linux.ENOMEM;
import static io.nicstack.nic.linux.Linux.ENXIO;
import static io.nicstack.nic.linux.Linux.EPERM;
import static io.nicstack.nic.linux.Linux.IFF_NO_PI;
import static io.nicstack.nic.linux.Linux.IFF_TAP;
import static io.nicstack.nic.linux.Linux.IFF_VNET_HDR;
import static io.nicstack.nic.linux.Linux.IFNAMSIZ;
import static io.nicstack.nic.linux.Linux.IFREQ_LENGTH;
import static io.nicstack.nic.linux.Linux.IFREQ_UNION_OFFSET;
import static io.nicstack.nic.linux.Linux.LIBC;
import static io.nicstack.nic.linux.Linux.O_CLOEXEC;
import static io.nicstack.nic.linux.Linux.O_NONBLOCK;
import static io.nicstack.nic.linux.Linux.O_RDWR;
import static io.nicstack.nic.linux.Linux.POLLFD_EVENTS_OFFSET;
import static io.nicstack.nic.linux.Linux.POLLFD_LENGTH;
import static io.nicstack.nic.linux.Linux.POLLFD_REVENTS_OFFSET;
import static io.nicstack.nic.linux.Linux.POLLIN;
import static io.nicstack.nic.linux.Linux.SIOCGIFINDEX;
import static io.nicstack.nic.linux.Linux.SIOCGIFMTU;
import static io.nicstack.nic.linux.Linux.SOCK_CLOEXEC;
import static io.nicstack.nic.linux.Linux.SOCK_DGRAM;
import static io.nicstack.nic.linux.Linux.TUNSETIFF;
import static io.nicstack.nic.linux.Linux.TUNSETOFFLOAD;
import static io.nicstack.nic.linux.Linux.TUNSETVNETHDRSZ;
import static io.nicstack.nic.linux.Linux.TUNSETVNETLE;
import static io.nicstack.nic.linux.Linux.TUN_F_CSUM;
import static io.nicstack.nic.linux.Linux.TUN_F_TSO4;

/**
 * A Linux tap interface driven through /dev/net/tun (kernel Documentation/networking/tuntap.rst).
 *
 * <p>The fd is non-blocking and opened with {@code IFF_TAP | IFF_NO_PI}, so every read(2) and write(2) moves exactly
 * one Ethernet frame without FCS. Receive reads into one device-owned native buffer; transmit queues up to
 * {@link #BURST} frames in device-owned native slots and writes them on {@link #flush()}. Calls pass raw addresses,
 * so nothing is allocated per frame. The MTU is set at open if asked ({@code SIOCSIFMTU}), before the device sizes its
 * buffers from it, and read back once; frames of an MTU raised later by someone else are dropped.
 *
 * <p>Checksum offload (the default, as a NIC gives it; {@code open(name, false)} turns it off): the tap is opened with
 * {@code IFF_VNET_HDR} and offered {@code TUN_F_CSUM} and {@code TUN_F_TSO4}, so every frame in either direction is
 * preceded by a {@link VirtioNetHeader}. Received frames the kernel marks {@code NEEDS_CSUM} (its own segments, with
 * only the pseudo-header sum in the checksum field) or {@code DATA_VALID} are delivered with
 * {@link FrameHandler#RX_L4_CHECKSUM_TRUSTED}. With TSO4 the kernel hands its TCP/IPv4 streams over in superframes of
 * up to 64 KiB, one read(2) for up to 45 segments instead of one each, and does not segment them in software first;
 * {@link TcpSuperframeSplitter} cuts each into MTU-sized frames in the receive buffer, so the stack still sees the
 * frames a NIC would deliver (over as many {@link #receive} bursts as they take). Frames committed with
 * {@link #TX_L4_CHECKSUM_PARTIAL} go out with {@code NEEDS_CSUM} and the kernel completes their checksum. Each transmit
 * slot keeps the header bytes in front of the frame, so {@link #claim()} still hands out the frame at index 0 and one
 * write(2) from the slot sends header and frame together, without a copy. In the other direction, {@link #flush()}
 * joins a burst's consecutive segments of one TCP flow into one {@code GSO_TCPV4} superframe
 * ({@link TcpSuperframeJoiner}) and sends it with one writev(2): the first slot whole, then each other slot's payload
 * in place, still without a copy. The kernel takes the superframe as it takes its own, and cuts it back into exactly
 * those frames if it must (a device without TSO on the way). What we write is taken as a virtio guest's transmit is
 * ({@code tun_get_user}, {@code virtio_net_hdr_to_skb}); {@code TUNSETOFFLOAD} only says what the tap may hand us.
 */
public final class TapDevice implements NetDevice
{
    /** The clone device, see tuntap.rst. */
    public static final String TUN_PATH = "/dev/net/tun";

    /** A tap delivers at most a 65535-byte MTU plus the Ethernet header; larger reads would be truncated. */
    private static final int RX_BUFFER_LENGTH = VirtioNetHeader.LENGTH + 65_536 + ETHERNET_HEADER_LENGTH;
    private static final int TX_SLOT_ALIGNMENT = 64;
    /** {@code struct iovec} on 64-bit Linux: {@code void *iov_base}, {@code size_t iov_len}. */
    private static final int IOVEC_LENGTH = 16;
    /** {@code SIOCSIFMTU} (linux/sockios.h): set an interface's MTU from {@code ifr_mtu}. */
    private static final long SIOCSIFMTU = 0x8922;

    /** For {@link #open(String, String, boolean, int)}: leave the interface's MTU as it is. */
    public static final int KEEP_MTU = 0;

    private final String ifName;
    private final String name;
    private final boolean created;
    private final int fd;
    private final int mtu;
    private final int maxFrameLength;
    private final boolean checksumOffload;
    /** Bytes in front of every frame read or written: a {@link VirtioNetHeader} with offload, none without. */
    private final int vnetHeaderLength;

    private final UnsafeBuffer rxBuffer;
    private final long rxAddress;
    private final VirtioNetHeader rxHeader = new VirtioNetHeader();
    /** The superframe being delivered from {@link #rxBuffer}; no read(2) until it is done. */
    private final TcpSuperframeSplitter superframe = new TcpSuperframeSplitter();
    private int superframeFlags;
    private long superframes;
    private long superframeSegments;
    private final UnsafeBuffer txMemory;
    private final int txSlotLength;
    private final VirtioNetHeader txHeader = new VirtioNetHeader();
    private final UnsafeBuffer[] txSlots = new UnsafeBuffer[BURST];
    private final long[] txAddresses = new long[BURST];
    /** Frame lengths, without the virtio-net header in front. */
    private final int[] txLengths = new int[BURST];
    private final boolean[] txNeedsChecksum = new boolean[BURST];
    private final TcpSuperframeJoiner joiner = new TcpSuperframeJoiner();
    /** {@code struct iovec[BURST]} for a superframe's writev(2): the first slot whole, then each joined payload. */
    private final UnsafeBuffer iovecs;
    private long txSuperframes;
    private long txSuperframeSegments;
    private long txSuperframesRefused;
    /** Whether flush joins frames into superframes: with checksum offload, until the kernel refuses one. */
    private boolean joining;
    /** The GSO type a superframe's header says; a test sets one the kernel refuses, nothing else changes it. */
    int superframeGsoType = VirtioNetHeader.GSO_TCPV4;
    private final UnsafeBuffer pollFd;

    private int txQueued;
    private boolean claimed;
    /** The slot {@link #claim()} handed out, {@link #txQueued} when claimed unless a flush came before the commit. */
    private int claimedSlot;
    private long droppedFrames;
    private boolean closed;

    /** Over {@code fd}, a tap attached by {@link #open} or, in tests, any fd write(2) takes frames on. */
    TapDevice(
        final String ifName, final int fd, final int mtu, final boolean created, final boolean checksumOffload)
    {
        this.ifName = ifName;
        this.name = "tap:" + ifName;
        this.fd = fd;
        this.mtu = mtu;
        this.created = created;
        this.maxFrameLength = mtu + ETHERNET_HEADER_LENGTH;
        this.checksumOffload = checksumOffload;
        this.joining = checksumOffload;
        this.vnetHeaderLength = checksumOffload ? VirtioNetHeader.LENGTH : 0;

        rxBuffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(RX_BUFFER_LENGTH, TX_SLOT_ALIGNMENT));
        rxAddress = rxBuffer.addressOffset();
        rxHeader.wrap(rxBuffer, 0);

        // Slot: [virtio-net header][frame]; write(2) starts at the slot, claim() hands out the frame part.
        txSlotLength = BitUtil.align(vnetHeaderLength + maxFrameLength, TX_SLOT_ALIGNMENT);
        txMemory = new UnsafeBuffer(BufferUtil.allocateDirectAligned(txSlotLength * BURST, TX_SLOT_ALIGNMENT));
        for (int i = 0; i < BURST; i++)
        {
            txSlots[i] = new UnsafeBuffer(txMemory, i * txSlotLength + vnetHeaderLength, maxFrameLength);
            txAddresses[i] = txMemory.addressOffset() + (long)i * txSlotLength;
        }

        iovecs = new UnsafeBuffer(BufferUtil.allocateDirectAligned(BURST * IOVEC_LENGTH, 8));
        pollFd = new UnsafeBuffer(BufferUtil.allocateDirectAligned(POLLFD_LENGTH, 8));
        pollFd.putInt(0, fd);
        pollFd.putShort(POLLFD_EVENTS_OFFSET, POLLIN);
    }

    /**
     * Attach to the tap {@code ifName} in the calling thread's network namespace, creating it if it does not exist,
     * with checksum offload.
     */
    public static TapDevice open(final String ifName)
    {
        return open(ifName, TUN_PATH, true);
    }

    /** As {@link #open(String)}, with checksum offload ({@code IFF_VNET_HDR}, {@code TUN_F_CSUM}) only if asked. */
    public static TapDevice open(final String ifName, final boolean checksumOffload)
    {
        return open(ifName, TUN_PATH, checksumOffload);
    }

    /** As {@link #open(String)} with the clone device at {@code tunPath} (containers sometimes put it elsewhere). */
    public static TapDevice open(final String ifName, final String tunPath)
    {
        return open(ifName, tunPath, true);
    }

    /**
     * As {@link #open(String, boolean)}, first setting the interface's MTU to {@code mtu} (unless {@link #KEEP_MTU}),
     * so that the device's frames, the kernel side and {@link #mtu()} agree on it.
     *
     * @throws IllegalArgumentException when the kernel refuses the MTU for a tap (68..65535 on Linux 4.10 and later).
     */
    public static TapDevice open(final String ifName, final boolean checksumOffload, final int mtu)
    {
        return open(ifName, TUN_PATH, checksumOffload, mtu);
    }

    /** As {@link #open(String, boolean)} with the clone device at {@code tunPath}. */
    public static TapDevice open(final String ifName, final String tunPath, final boolean checksumOffload)
    {
        return open(ifName, tunPath, checksumOffload, KEEP_MTU);
    }

    /** As {@link #open(String, boolean, int)} with the clone device at {@code tunPath}. */
    public static TapDevice open(
        final String ifName, final String tunPath, final boolean checksumOffload, final int mtu)
    {
        validateName(ifName);

        final UnsafeBuffer ifreq = new UnsafeBuffer(BufferUtil.allocateDirectAligned(IFREQ_LENGTH, 8));
        ifreq.putStringWithoutLengthAscii(0, ifName);
        final long ifreqAddress = ifreq.addressOffset();

        // netdevice(7) ioctls need some socket; it is bound to the calling thread's namespace, unlike /sys/class/net,
        // which shows the namespace sysfs was mounted in, so this is also how we learn whether the tap exists.
        final int sock = LIBC.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (sock < 0)
        {
            throw Linux.failure("socket(AF_INET, SOCK_DGRAM)", Linux.errno());
        }

        int fd = -1;
        try
        {
            final boolean existed = LIBC.ioctl(sock, SIOCGIFINDEX, ifreqAddress) == 0;

            fd = LIBC.open(tunPath, O_RDWR | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0)
            {
                throw openError(ifName, tunPath, Linux.errno());
            }

            ifreq.setMemory(IFREQ_UNION_OFFSET, IFREQ_LENGTH - IFREQ_UNION_OFFSET, (byte)0);
            ifreq.putShort(IFREQ_UNION_OFFSET, (short)(IFF_TAP | IFF_NO_PI | (checksumOffload ? IFF_VNET_HDR : 0)));
            if (LIBC.ioctl(fd, TUNSETIFF, ifreqAddress) != 0)
            {
                throw attachError(ifName, Linux.errno());
            }
            configureOffload(fd, ifName, checksumOffload, ifreq, IFREQ_UNION_OFFSET);

            if (mtu != KEEP_MTU)
            {
                // Before the MTU is read back and the buffers sized from it: a link raised after open would hand us
                // frames longer than the device takes, and they would be dropped.
                ifreq.setMemory(IFREQ_UNION_OFFSET, IFREQ_LENGTH - IFREQ_UNION_OFFSET, (byte)0);
                ifreq.putInt(IFREQ_UNION_OFFSET, mtu);
                if (LIBC.ioctl(sock, SIOCSIFMTU, ifreqAddress) != 0)
                {
                    throw mtuError(ifName, mtu, Linux.errno());
                }
            }
            ifreq.setMemory(IFREQ_UNION_OFFSET, IFREQ_LENGTH - IFREQ_UNION_OFFSET, (byte)0);
            if (LIBC.ioctl(sock, SIOCGIFMTU, ifreqAddress) != 0)
            {
                throw Linux.failure("ioctl(SIOCGIFMTU) on " + ifName, Linux.errno());
            }

            return new TapDevice(ifName, fd, ifreq.getInt(IFREQ_UNION_OFFSET), !existed, checksumOffload);
        }
        catch (final RuntimeException | Error ex)
        {
            // An Error too: the device's direct buffers may not fit (OutOfMemoryError), and a tap we created lives
            // as long as its fd.
            Linux.closeQuietly(fd);
            throw ex;
        }
        finally
        {
            LIBC.close(sock);
        }
    }

    /**
     * Set up the virtio-net header and the offloads of an attached tap fd (drivers/net/tun.c, tun_vnet.h), using
     * {@code scratch} at {@code scratchOffset} for the ioctls that take an {@code int *}.
     *
     * <p>With offload: headers of exactly {@link VirtioNetHeader#LENGTH} bytes, little-endian on every host
     * ({@code TUNSETVNETLE}; the legacy default is native order), {@code TUN_F_CSUM} and {@code TUN_F_TSO4}: TCP/IPv4
     * superframes reach us whole (see the class comment); without {@code TUN_F_TSO_ECN}, {@code TUN_F_TSO6} and
     * {@code TUN_F_USO4/6} the kernel segments the others in software before the tap. Without offload:
     * {@code TUNSETOFFLOAD 0}, a no-op on a tap we just created, which also takes back offloads another program left
     * on a persistent tap (they would hand us partial checksums or superframes without a header).
     * Header size and byte order belong to the tap, not the fd, so they are set on every open.
     */
    private static void configureOffload(
        final int fd, final String ifName, final boolean checksumOffload, final UnsafeBuffer scratch,
        final int scratchOffset)
    {
        final long scratchAddress = scratch.addressOffset() + scratchOffset;
        if (checksumOffload)
        {
            scratch.putInt(scratchOffset, 1);
            if (LIBC.ioctl(fd, TUNSETVNETLE, scratchAddress) != 0)
            {
                throw Linux.failure("ioctl(TUNSETVNETLE) on tap " + ifName, Linux.errno());
            }
            scratch.putInt(scratchOffset, VirtioNetHeader.LENGTH);
            if (LIBC.ioctl(fd, TUNSETVNETHDRSZ, scratchAddress) != 0)
            {
                throw Linux.failure("ioctl(TUNSETVNETHDRSZ) on tap " + ifName, Linux.errno());
            }
        }
        if (LIBC.ioctl(fd, TUNSETOFFLOAD, checksumOffload ? TUN_F_CSUM | TUN_F_TSO4 : 0) != 0)
        {
            throw Linux.failure("ioctl(TUNSETOFFLOAD) on tap " + ifName, Linux.errno());
        }
    }

    /**
     * Interface name rules of dev_valid_name() in net/core/dev.c, restricted to printable ASCII and without '%': an
     * {@link IllegalArgumentException} saying what is wrong. A name with '%' is a template ({@code nst%d}) that
     * TUNSETIFF expands into a name of the kernel's choosing (dev_get_valid_name); this device, and whoever configures
     * the interface by the name given, would go on using the template, which names no interface.
     */
    public static void validateName(final String ifName)
    {
        if (ifName == null || ifName.isEmpty())
        {
            throw new IllegalArgumentException("tap name is empty");
        }
        if (ifName.length() >= IFNAMSIZ)
        {
            throw new IllegalArgumentException(
                "tap name '" + ifName + "' is longer than " + (IFNAMSIZ - 1) + " characters (IFNAMSIZ - 1)");
        }
        if (ifName.equals(".") || ifName.equals(".."))
        {
            throw new IllegalArgumentException("tap name '" + ifName + "' is not allowed");
        }
        for (int i = 0; i < ifName.length(); i++)
        {
            final char c = ifName.charAt(i);
            if (c <= ' ' || c > '~' || c == '/' || c == ':' || c == '%')
            {
                throw new IllegalArgumentException("tap name '" + ifName + "' has a bad character at " + i
                    + " (no '/', ':', '%', space or non-ASCII: give the name itself, not a template)");
            }
        }
    }

    static NicException openError(final String ifName, final String tunPath, final int errno)
    {
        return switch (errno)
        {
            case ENOENT, ENXIO, ENODEV -> new NicException(tunPath + " is missing (load the tun module)");
            case EPERM, EACCES -> permissionDenied(ifName);
            default -> Linux.failure("open " + tunPath + " for tap " + ifName, errno);
        };
    }

    static NicException attachError(final String ifName, final int errno)
    {
        return switch (errno)
        {
            case EPERM, EACCES -> permissionDenied(ifName);
            case EBUSY -> new NicException("tap " + ifName + " is busy: another fd is attached to it");
            case EINVAL -> new NicException("interface " + ifName + " exists and is not a single-queue tap");
            default -> Linux.failure("ioctl(TUNSETIFF) for tap " + ifName, errno);
        };
    }

    /** SIOCSIFMTU failed: an MTU outside the tap's range ({@code dev_validate_mtu}) is the caller's to fix. */
    static RuntimeException mtuError(final String ifName, final int mtu, final int errno)
    {
        return switch (errno)
        {
            case EINVAL -> new IllegalArgumentException(
                "tap " + ifName + " refuses MTU " + mtu + " (a tap takes 68..65535)");
            case EPERM, EACCES -> permissionDenied(ifName);
            default -> Linux.failure("ioctl(SIOCSIFMTU) " + mtu + " on tap " + ifName, errno);
        };
    }

    private static NicException permissionDenied(final String ifName)
    {
        return new NicException("not permitted to open tap " + ifName + ": need root or CAP_NET_ADMIN");
    }

    /** Kernel name of the interface, e.g. {@code nsttap0}. */
    public String ifName()
    {
        return ifName;
    }

    /** True when the interface did not exist before {@link #open(String)}, so it vanishes when this device closes. */
    public boolean created()
    {
        return created;
    }

    /** True when opened with checksum offload: frames carry a {@link VirtioNetHeader} and flags are honoured. */
    @Override
    public boolean transmitChecksumOffload()
    {
        return checksumOffload;
    }

    /** The header of the frame being delivered, valid during the handler's call; only with offload (for tests). */
    VirtioNetHeader rxHeader()
    {
        return rxHeader;
    }

    @Override
    public String name()
    {
        return name;
    }

    @Override
    public int mtu()
    {
        return mtu;
    }

    @Override
    public int maxFrameLength()
    {
        return maxFrameLength;
    }

    /**
     * {@inheritDoc}
     *
     * <p>At most {@code min(limit, BURST)} read(2)s per call, whether their frames are delivered or dropped: a flood of
     * frames the device drops cannot keep one call reading, so the event loop gets control back.
     */
    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        final int max = Math.min(limit, BURST);
        int frames = 0;
        int reads = 0;
        while (frames < max)
        {
            if (superframe.hasNext())
            {
                final int offset = superframe.next();
                superframeSegments++;
                handler.onFrame(rxBuffer, offset, superframe.length(), superframeFlags);
                frames++;
                continue;
            }
            if (reads == max)
            {
                break;
            }
            reads++;
            final long length = LIBC.read(fd, rxAddress, RX_BUFFER_LENGTH);
            if (length <= 0)
            {
                if (length < 0)
                {
                    final int errno = Linux.errno();
                    if (errno != EAGAIN && errno != EINTR)
                    {
                        throw Linux.failure("read(2) from tap " + ifName, errno);
                    }
                }
                break;
            }

            final int frameLength = (int)length - vnetHeaderLength;
            int flags = 0;
            if (checksumOffload)
            {
                if (rxHeader.checksumTrusted())
                {
                    flags = FrameHandler.RX_L4_CHECKSUM_TRUSTED;
                }
                if (rxHeader.gsoType() != VirtioNetHeader.GSO_NONE)
                {
                    // Only TSO4 was offered; anything else, or a superframe that does not parse, is dropped whole.
                    if (rxHeader.gsoType() == VirtioNetHeader.GSO_TCPV4 && superframe.start(
                        rxBuffer, vnetHeaderLength, frameLength, rxHeader.gsoSize(), maxFrameLength))
                    {
                        superframes++;
                        superframeFlags = flags;
                    }
                    else
                    {
                        droppedFrames += refusedSuperframeSegments(frameLength, rxHeader.gsoSize());
                    }
                    continue;
                }
            }
            if (frameLength > maxFrameLength || frameLength < 0)
            {
                droppedFrames++; // the interface MTU was raised after open (a read shorter than the header: never)
                continue;
            }

            handler.onFrame(rxBuffer, vnetHeaderLength, frameLength, flags);
            frames++;
        }

        return frames;
    }

    /**
     * The frames a superframe we could not cut held, for {@link #droppedFrames()}: its TCP payload over
     * {@code gso_size}, rounded up (as the kernel's {@code gso_segs}); 1 when it is not TCP/IPv4 or has no size.
     */
    private int refusedSuperframeSegments(final int frameLength, final int gsoSize)
    {
        final int headers = TcpIpv4Frames.headersLength(rxBuffer, vnetHeaderLength, frameLength);
        if (headers < 0 || gsoSize <= 0)
        {
            return 1;
        }
        final int payload = ETHERNET_HEADER_LENGTH + TcpIpv4Frames.ipv4TotalLength(rxBuffer, vnetHeaderLength) - headers;
        return (payload + gsoSize - 1) / gsoSize;
    }

    @Override
    public MutableDirectBuffer claim()
    {
        if (!claimed)
        {
            if (txQueued == BURST)
            {
                flush();
            }
            claimedSlot = txQueued;
            claimed = true;
        }

        return txSlots[claimedSlot];
    }

    @Override
    public void commit(final int length)
    {
        commit(length, 0);
    }

    /**
     * Queue the claimed frame; with {@link #TX_L4_CHECKSUM_PARTIAL} its header says {@code NEEDS_CSUM} at the TCP or
     * UDP checksum, found from the frame's own IPv4 header.
     *
     * @throws IllegalArgumentException when the flag is given without offload or the frame does not qualify (see
     *         {@link VirtioNetHeader#needsChecksum}); the frame stays claimed.
     */
    @Override
    public void commit(final int length, final int flags)
    {
        if (!claimed)
        {
            throw new IllegalStateException("commit without claim on " + name);
        }
        if (length < 0 || length > maxFrameLength)
        {
            throw new IllegalArgumentException(
                "frame length " + length + " outside 0.." + maxFrameLength + " on " + name);
        }
        if (flags != 0 && !checksumOffload)
        {
            throw new IllegalArgumentException(name + " does not offload checksums (flags " + flags + ")");
        }
        if ((flags & ~TX_L4_CHECKSUM_PARTIAL) != 0)
        {
            throw new IllegalArgumentException("unknown transmit flags " + flags + " on " + name);
        }

        if (claimedSlot != txQueued)
        {
            // A flush between claim and commit (NetDevice allows it: the claimed buffer stays valid until commit)
            // sent the slots before the claimed one and emptied the queue, but never touched the claimed slot.
            // The queue is one run of slots from 0 for flush and the joiner, so the claimed frame is copied down to
            // where the queue goes on; a copy only in this rare case, where keeping a start index or swapping slots
            // would cost every burst. The claimed slot stays as it is in case a flag below is refused.
            txSlots[txQueued].putBytes(0, txSlots[claimedSlot], 0, length);
        }
        if (checksumOffload)
        {
            txHeader.wrap(txMemory, txQueued * txSlotLength);
            if (flags == TX_L4_CHECKSUM_PARTIAL)
            {
                txHeader.needsChecksum(txSlots[txQueued], 0, length);
            }
            else
            {
                txHeader.clear();
            }
        }

        txNeedsChecksum[txQueued] = flags == TX_L4_CHECKSUM_PARTIAL;
        txLengths[txQueued++] = length;
        claimed = false;
    }

    @Override
    public void abort()
    {
        claimed = false;
    }

    @Override
    public int flush()
    {
        int sent = 0;
        final int queued = txQueued;
        txQueued = 0;
        int i = 0;
        while (i < queued)
        {
            final int frames = joining ? joiner.join(txSlots, txLengths, txNeedsChecksum, i, queued) : 1;
            final long written = frames == 1 ?
                LIBC.write(fd, txAddresses[i], vnetHeaderLength + txLengths[i]) : writeSuperframe(i, frames);
            if (written >= 0)
            {
                sent += frames;
            }
            else
            {
                final int errno = Linux.errno();
                if (frames > 1 && errno == EINVAL)
                {
                    // The kernel refused the superframe (virtio_net_hdr_to_skb): its frames go one by one as they
                    // were committed, and none is joined on this device again. Dropping them would leave the flow
                    // to a retransmission timeout per segment if every superframe were refused.
                    joiner.restore(txSlots[i]);
                    txHeader.wrap(txMemory, i * txSlotLength).needsChecksum(txSlots[i], 0, txLengths[i]);
                    joining = false;
                    txSuperframesRefused++;
                    continue;
                }
                switch (errno)
                {
                    // Queue full, link down, a frame the kernel refuses (shorter than a header), or no memory for its
                    // skb (tun_build_skb, tun_alloc_skb under memory pressure): drop, never spin.
                    case EAGAIN, ENOBUFS, EINTR, EIO, ENETDOWN, EINVAL, ENOMEM -> droppedFrames += frames;
                    default -> throw Linux.failure("write(2) to tap " + ifName, errno);
                }
            }
            i += frames;
        }

        return sent;
    }

    /**
     * Send the {@code frames} slots from {@code first}, which the joiner has made one superframe of, in one writev(2):
     * the first slot whole (its virtio-net header now says {@code GSO_TCPV4}), then each other slot's payload.
     */
    private long writeSuperframe(final int first, final int frames)
    {
        final int headerLength = joiner.headerLength();
        txHeader.wrap(txMemory, first * txSlotLength)
            .gsoType(superframeGsoType)
            .gsoSize(joiner.gsoSize())
            .headerLength(headerLength);
        final UnsafeBuffer iov = iovecs;
        iov.putLong(0, txAddresses[first]);
        iov.putLong(Long.BYTES, vnetHeaderLength + txLengths[first]);
        for (int k = 1; k < frames; k++)
        {
            final int slot = first + k;
            iov.putLong(k * IOVEC_LENGTH, txAddresses[slot] + vnetHeaderLength + headerLength);
            iov.putLong(k * IOVEC_LENGTH + Long.BYTES, txLengths[slot] - headerLength);
        }
        final long written = LIBC.writev(fd, iov.addressOffset(), frames);
        if (written >= 0)
        {
            txSuperframes++;
            txSuperframeSegments += frames;
        }
        return written;
    }

    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
        if (superframe.hasNext())
        {
            return true;
        }
        // poll(2) takes milliseconds: round up so a short wait is not turned into a busy loop.
        final int timeoutMillis =
            timeoutNanos <= 0 ? 0 : (int)Math.min(Integer.MAX_VALUE, (timeoutNanos + 999_999) / 1_000_000);
        pollFd.putShort(POLLFD_REVENTS_OFFSET, (short)0);
        final int ready = LIBC.poll(pollFd.addressOffset(), 1, timeoutMillis);
        if (ready < 0)
        {
            final int errno = Linux.errno();
            if (errno == EINTR)
            {
                return true;
            }
            throw Linux.failure("poll(2) on tap " + ifName, errno);
        }

        // POLLERR or POLLHUP also count as readable: the next read(2) reports what happened.
        return ready > 0;
    }

    /**
     * Frames read and not delivered (longer than the MTU, or in a superframe that could not be cut, counted as the
     * segments it held) and frames the kernel refused on write(2) (a superframe's as the frames joined into it).
     */
    @Override
    public long droppedFrames()
    {
        return droppedFrames;
    }

    /** TCP segmentation-offload superframes read from the tap and cut into frames. */
    @Override
    public long receiveSuperframes()
    {
        return superframes;
    }

    @Override
    public long receiveSuperframeSegments()
    {
        return superframeSegments;
    }

    /** TCP segmentation-offload superframes written to the tap, each joined from a burst's frames. */
    @Override
    public long transmitSuperframes()
    {
        return txSuperframes;
    }

    @Override
    public long transmitSuperframeSegments()
    {
        return txSuperframeSegments;
    }

    /** Superframes the kernel refused (EINVAL); their frames were sent one by one, and joining stopped at the first. */
    @Override
    public long transmitSuperframesRefused()
    {
        return txSuperframesRefused;
    }

    /** Close the fd; a tap this device created disappears with it unless it was made persistent. */
    @Override
    public void close()
    {
        if (!closed)
        {
            closed = true;
            superframe.clear();
            LIBC.close(fd);
        }
    }

    @Override
    public String toString()
    {
        return name + " (mtu " + mtu + (created ? ", created" : ", attached") +
            (checksumOffload ? ", checksum offload, TSO4 both ways)" : ")");
    }
}
