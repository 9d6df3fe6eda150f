package io.nicstack.nic.linux;

import com.kenai.jffi.CallContext;
import com.kenai.jffi.CallingConvention;
import com.kenai.jffi.Invoker;
import com.kenai.jffi.Library;
import com.kenai.jffi.Type;

import io.nicstack.nic.NicException;
import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;

/** The loaded libc binding, errno access and the Linux ABI constants (x86_64 and aarch64 agree on all but O_NOFOLLOW). */
public final class Linux
{
    /** The bound libc. */
    public static final LibC LIBC = LibraryLoader.create(LibC.class).load("c");

    private static final Runtime RUNTIME = Runtime.getRuntime(LIBC);

    private static final Invoker INVOKER = Invoker.getInstance();
    private static final long SYSCALL = Library.getDefault().getSymbolAddress("syscall");
    private static final CallContext SIX_LONGS_TO_LONG = CallContext.getCallContext(Type.SINT64,
        new Type[] {Type.SINT64, Type.SINT64, Type.SINT64, Type.SINT64, Type.SINT64, Type.SINT64},
        CallingConvention.DEFAULT, true);

    // open(2), asm-generic/fcntl.h
    public static final int O_RDONLY = 0;
    public static final int O_RDWR = 2;
    public static final int O_NONBLOCK = 0x800;
    public static final int O_CLOEXEC = 0x80000;
    public static final int O_WRONLY = 1;
    public static final int O_ACCMODE = 3;
    public static final int O_PATH = 0x200000;
    /** The one open(2) flag here where the two differ: aarch64 (arch/arm64) moved it, x86_64 keeps asm-generic's. */
    public static final int O_NOFOLLOW = "aarch64".equals(System.getProperty("os.arch")) ? 0x8000 : 0x20000;

    // st_mode's file types (inode(7))
    public static final int S_IFMT = 0170000;
    public static final int S_IFSOCK = 0140000;
    public static final int S_IFLNK = 0120000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFBLK = 0060000;
    public static final int S_IFDIR = 0040000;
    public static final int S_IFCHR = 0020000;
    public static final int S_IFIFO = 0010000;

    // fcntl(2)
    public static final int F_GETFL = 3;
    public static final int F_SETFL = 4;
    /** A pipe's capacity in bytes (Linux 2.6.35). */
    public static final int F_GETPIPE_SZ = 1032;
    public static final int F_DUPFD_CLOEXEC = 1030;
    /**
     * Open-file-description record locks (fcntl(2), Linux 3.15): owned by the open file, not the process, so closing
     * another descriptor of the same file does not drop them, and they conflict with locks of the same process.
     */
    public static final int F_OFD_GETLK = 36;
    public static final int F_OFD_SETLK = 37;
    public static final short F_RDLCK = 0;
    public static final short F_WRLCK = 1;
    public static final short F_UNLCK = 2;
    /** {@code struct flock}: l_type (short), l_whence (short), l_start (off_t at 8), l_len (at 16), l_pid (int at 24). */
    public static final int FLOCK_LENGTH = 32;
    public static final int FLOCK_TYPE_OFFSET = 0;

    /** kcmp(2): its number differs between x86_64 (312) and aarch64 (272); -1 elsewhere. */
    public static final long SYS_KCMP = switch (System.getProperty("os.arch"))
    {
        case "amd64", "x86_64" -> 312;
        case "aarch64" -> 272;
        default -> -1;
    };
    public static final int KCMP_FILE = 0;

    // pidfd_open(2), pidfd_getfd(2), pidfd_send_signal(2): numbers of the unified syscall table (424 and up), the same on x86_64 and aarch64.
    public static final long SYS_PIDFD_OPEN = 434;
    /** flock(2)'s operations: an exclusive lock, and do not wait for it. */
    public static final int LOCK_EX = 2;
    public static final int LOCK_NB = 4;
    public static final long SYS_PIDFD_GETFD = 438;
    public static final long SYS_PIDFD_SEND_SIGNAL = 424;

    // socket(2)
    public static final int AF_INET = 2;
    public static final int SOCK_DGRAM = 2;
    public static final int SOCK_CLOEXEC = O_CLOEXEC;

    // poll(2): struct pollfd { int fd; short events; short revents; }
    public static final int POLLFD_LENGTH = 8;
    public static final int POLLFD_EVENTS_OFFSET = 4;
    public static final int POLLFD_REVENTS_OFFSET = 6;
    public static final short POLLIN = 0x1;
    public static final short POLLERR = 0x8;
    public static final short POLLHUP = 0x10;

    // netdevice(7): struct ifreq is a 16-byte name followed by a 24-byte union.
    public static final int IFNAMSIZ = 16;
    public static final int IFREQ_LENGTH = 40;
    public static final int IFREQ_UNION_OFFSET = IFNAMSIZ;
    public static final long SIOCGIFMTU = 0x8921;
    public static final long SIOCGIFINDEX = 0x8933;
    /** asm-generic/ioctls.h: bytes queued for reading (on a pipe, those its reader has not taken yet). */
    public static final long FIONREAD = 0x541BL;

    // linux/if_tun.h
    public static final long TUNSETIFF = 0x400454caL;       // _IOW('T', 202, int)
    public static final long TUNSETOFFLOAD = 0x400454d0L;   // _IOW('T', 208, unsigned int), the argument by value
    public static final long TUNSETVNETHDRSZ = 0x400454d8L; // _IOW('T', 216, int), the argument by pointer
    public static final long TUNSETVNETLE = 0x400454dcL;    // _IOW('T', 220, int), the argument by pointer
    public static final short IFF_TAP = 0x0002;
    public static final short IFF_NO_PI = 0x1000;
    public static final short IFF_VNET_HDR = 0x4000;
    /** TUNSETOFFLOAD: the reader accepts frames with a partial checksum (virtio-net {@code NEEDS_CSUM}). */
    public static final int TUN_F_CSUM = 0x01;
    /** TUNSETOFFLOAD: the reader accepts TCP/IPv4 segmentation-offload superframes (virtio-net {@code GSO_TCPV4}). */
    public static final int TUN_F_TSO4 = 0x02;

    // setns(2), linux/sched.h
    public static final int CLONE_NEWNET = 0x40000000;

    // errno(3), asm-generic/errno-base.h and errno.h
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EBUSY = 16;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int EMFILE = 24;
    public static final int ENOTTY = 25;
    public static final int EPIPE = 32;
    public static final int ESRCH = 3;
    public static final int ENOSYS = 38;
    public static final int ENOBUFS = 105;
    public static final int ENETDOWN = 100;
    public static final int EBADFD = 77;

    private Linux()
    {
    }

    /** errno of the last libc call made through {@link #LIBC} on this thread. */
    public static int errno()
    {
        return LastError.getLastError(RUNTIME);
    }

    /**
     * syscall(2) with up to five arguments (pass 0 for those a call does not take), for calls glibc may not wrap:
     * pidfd_open, pidfd_getfd, pidfd_send_signal, kcmp; -1 with {@link #errno()} set on failure. Allocates nothing.
     *
     * <p>Not a {@link LibC} method: kcmp needs the number and five arguments, six integers, and jnr-ffi's x86-64 stub
     * compiler reads a sixth integer argument from the wrong stack slot (the return address; jnr-ffi 2.3.4, its issue
     * 181): a fixed-arity LibC binding passed kcmp garbage for its second descriptor (EBADF). This calls syscall
     * through jffi, jnr-ffi's own backend, with a call context of six longs, which on x86-64 is a plain C call and
     * allocates nothing either. Fixed arity for a variadic function, as LibC's fcntl and ioctl: see {@link LibC} for
     * why that is ABI-correct here (glibc's syscall reads every argument as a long and hands the kernel six whatever
     * the call takes). errno is saved where {@link #errno()} reads it.
     */
    public static long syscall(
        final long number, final long arg1, final long arg2, final long arg3, final long arg4, final long arg5)
    {
        return INVOKER.invokeN6(SIX_LONGS_TO_LONG, SYSCALL, number, arg1, arg2, arg3, arg4, arg5);
    }

    /** Symbolic name of an errno value, e.g. {@code EBUSY}, or {@code errno 123} for the rare ones. */
    public static String errnoName(final int errno)
    {
        return switch (errno)
        {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case ENXIO -> "ENXIO";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EBUSY -> "EBUSY";
            case ENODEV -> "ENODEV";
            case EINVAL -> "EINVAL";
            case EMFILE -> "EMFILE";
            case ENOTTY -> "ENOTTY";
            case EPIPE -> "EPIPE";
            case ENOSYS -> "ENOSYS";
            case ESRCH -> "ESRCH";
            case EBADFD -> "EBADFD";
            case ENETDOWN -> "ENETDOWN";
            case ENOBUFS -> "ENOBUFS";
            default -> "errno " + errno;
        };
    }

    /** {@code EBUSY (Device or resource busy)}. */
    public static String describe(final int errno)
    {
        return errnoName(errno) + " (" + LIBC.strerror(errno) + ")";
    }

    /** Exception for a failed call: {@code what failed: EBUSY (Device or resource busy)}. */
    public static NicException failure(final String what, final int errno)
    {
        return new NicException(what + " failed: " + describe(errno));
    }

    /** close(2) ignoring errors; for cleanup paths. */
    public static void closeQuietly(final int fd)
    {
        if (fd >= 0)
        {
            LIBC.close(fd);
        }
    }
}
