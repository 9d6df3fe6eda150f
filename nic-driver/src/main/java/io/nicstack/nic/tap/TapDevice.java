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
import static io.nicstack.nic.linux.Linux.ENXIO;
import static io.nicstack.nic.linux.Linux.EPERM;
import static io.nicstack.nic.linux.Linux.IFF_NO_PI;
import static io.nicstack.nic.linux.Linux.IFF_TAP;
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

/**
 * A Linux tap interface driven through /dev/net/tun (kernel Documentation/networking/tuntap.rst).
 *
 * <p>The fd is non-blocking and opened with {@code IFF_TAP | IFF_NO_PI}, so every read(2) and write(2) moves exactly
 * one Ethernet frame without FCS. Receive reads into one device-owned native buffer; transmit queues up to
 * {@link #BURST} frames in device-owned native slots and writes them on {@link #flush()}. Calls pass raw addresses,
 * so nothing is allocated per frame. The MTU is read once at open.
 */
public final class TapDevice implements NetDevice
{
    /** The clone device, see tuntap.rst. */
    public static final String TUN_PATH = "/dev/net/tun";

    /** A tap delivers at most a 65535-byte MTU plus the Ethernet header; larger reads would be truncated. */
    private static final int RX_BUFFER_LENGTH = 65_536 + ETHERNET_HEADER_LENGTH;
    private static final int TX_SLOT_ALIGNMENT = 64;

    private final String ifName;
    private final String name;
    private final boolean created;
    private final int fd;
    private final int mtu;
    private final int maxFrameLength;

    private final UnsafeBuffer rxBuffer;
    private final long rxAddress;
    private final UnsafeBuffer[] txSlots = new UnsafeBuffer[BURST];
    private final long[] txAddresses = new long[BURST];
    private final int[] txLengths = new int[BURST];
    private final UnsafeBuffer pollFd;

    private int txQueued;
    private boolean claimed;
    private long droppedFrames;
    private boolean closed;

    private TapDevice(final String ifName, final int fd, final int mtu, final boolean created)
    {
        this.ifName = ifName;
        this.name = "tap:" + ifName;
        this.fd = fd;
        this.mtu = mtu;
        this.created = created;
        this.maxFrameLength = mtu + ETHERNET_HEADER_LENGTH;

        rxBuffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(RX_BUFFER_LENGTH, TX_SLOT_ALIGNMENT));
        rxAddress = rxBuffer.addressOffset();

        final int slotLength = BitUtil.align(maxFrameLength, TX_SLOT_ALIGNMENT);
        final UnsafeBuffer tx =
            new UnsafeBuffer(BufferUtil.allocateDirectAligned(slotLength * BURST, TX_SLOT_ALIGNMENT));
        for (int i = 0; i < BURST; i++)
        {
            txSlots[i] = new UnsafeBuffer(tx, i * slotLength, maxFrameLength);
            txAddresses[i] = txSlots[i].addressOffset();
        }

        pollFd = new UnsafeBuffer(BufferUtil.allocateDirectAligned(POLLFD_LENGTH, 8));
        pollFd.putInt(0, fd);
        pollFd.putShort(POLLFD_EVENTS_OFFSET, POLLIN);
    }

    /** Attach to the tap {@code ifName} in the calling thread's network namespace, creating it if it does not exist. */
    public static TapDevice open(final String ifName)
    {
        return open(ifName, TUN_PATH);
    }

    /** As {@link #open(String)} with the clone device at {@code tunPath} (containers sometimes put it elsewhere). */
    public static TapDevice open(final String ifName, final String tunPath)
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
            ifreq.putShort(IFREQ_UNION_OFFSET, (short)(IFF_TAP | IFF_NO_PI));
            if (LIBC.ioctl(fd, TUNSETIFF, ifreqAddress) != 0)
            {
                throw attachError(ifName, Linux.errno());
            }

            ifreq.setMemory(IFREQ_UNION_OFFSET, IFREQ_LENGTH - IFREQ_UNION_OFFSET, (byte)0);
            if (LIBC.ioctl(sock, SIOCGIFMTU, ifreqAddress) != 0)
            {
                throw Linux.failure("ioctl(SIOCGIFMTU) on " + ifName, Linux.errno());
            }

            return new TapDevice(ifName, fd, ifreq.getInt(IFREQ_UNION_OFFSET), !existed);
        }
        catch (final RuntimeException ex)
        {
            Linux.closeQuietly(fd);
            throw ex;
        }
        finally
        {
            LIBC.close(sock);
        }
    }

    /** Interface name rules of dev_valid_name() in net/core/dev.c, restricted to printable ASCII. */
    static void validateName(final String ifName)
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
            if (c <= ' ' || c > '~' || c == '/' || c == ':')
            {
                throw new IllegalArgumentException(
                    "tap name '" + ifName + "' has a bad character at " + i + " (no '/', ':', space or non-ASCII)");
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

    @Override
    public int receive(final FrameHandler handler, final int limit)
    {
        final int max = Math.min(limit, BURST);
        int frames = 0;
        while (frames < max)
        {
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

            if (length > maxFrameLength)
            {
                droppedFrames++; // the interface MTU was raised after open
                continue;
            }

            handler.onFrame(rxBuffer, 0, (int)length);
            frames++;
        }

        return frames;
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
            claimed = true;
        }

        return txSlots[txQueued];
    }

    @Override
    public void commit(final int length)
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
        for (int i = 0; i < queued; i++)
        {
            if (LIBC.write(fd, txAddresses[i], txLengths[i]) >= 0)
            {
                sent++;
            }
            else
            {
                final int errno = Linux.errno();
                switch (errno)
                {
                    // Queue full, link down, or a frame the kernel refuses (shorter than a header): drop, never spin.
                    case EAGAIN, ENOBUFS, EINTR, EIO, ENETDOWN, EINVAL -> droppedFrames++;
                    default -> throw Linux.failure("write(2) to tap " + ifName, errno);
                }
            }
        }

        return sent;
    }

    @Override
    public boolean awaitReadable(final long timeoutNanos)
    {
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

    @Override
    public long droppedFrames()
    {
        return droppedFrames;
    }

    /** Close the fd; a tap this device created disappears with it unless it was made persistent. */
    @Override
    public void close()
    {
        if (!closed)
        {
            closed = true;
            LIBC.close(fd);
        }
    }

    @Override
    public String toString()
    {
        return name + " (mtu " + mtu + (created ? ", created)" : ", attached)");
    }
}
