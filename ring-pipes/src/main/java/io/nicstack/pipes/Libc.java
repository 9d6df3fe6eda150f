package io.nicstack.pipes;

import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Variadic;
import jnr.ffi.types.intptr_t;

/**
 * The libc calls the client library makes, bound with jnr-ffi on first use: the app memory's memfd (memfd_create(2),
 * ftruncate(2), fcntl(2) seals; pidfd_getfd(2) for {@link AppFile#open}), the descriptors named in SEND_FILE, and the
 * look at the daemon's lock (fcntl(2) F_OFD_GETLK), and the watch on the daemon's process (pidfd_open(2), poll(2)).
 * Constants are the Linux ABI's, the same on x86_64 and aarch64 but
 * where said.
 *
 * <p>fcntl, variadic, is bound with a fixed arity, as nic-driver's LibC binds it (its Javadoc says why that is
 * ABI-correct on Linux x86-64 and aarch64, for integer and pointer arguments): jnr-ffi calls a {@code @Variadic}
 * binding through its generic invoker, which boxes every argument, where a fixed binding of primitives is a direct
 * call. The argument is a 64-bit {@code long}, the width glibc's {@code va_arg} reads it with, whether the command
 * takes an int or a pointer (C leaves the upper half of a register holding an int unspecified).
 */
public final class Libc
{
    public static final int O_RDONLY = 0;
    public static final int O_RDWR = 2;
    public static final int O_ACCMODE = 3;
    public static final int O_NONBLOCK = 0x800;
    public static final int O_CLOEXEC = 0x80000;
    /** The one open(2) flag here where the two differ: aarch64 (arch/arm64) moved it, x86_64 keeps asm-generic's. */
    public static final int O_NOFOLLOW = "aarch64".equals(System.getProperty("os.arch")) ? 0x8000 : 0x20000;

    // memfd_create(2), linux/memfd.h
    public static final int MFD_CLOEXEC = 0x1;
    public static final int MFD_ALLOW_SEALING = 0x2;

    // fcntl(2) file seals, linux/fcntl.h
    public static final int F_GETFL = 3;
    public static final int F_ADD_SEALS = 1033;
    public static final int F_GET_SEALS = 1034;
    public static final int F_SEAL_SEAL = 0x1;
    public static final int F_SEAL_SHRINK = 0x2;
    public static final int F_SEAL_GROW = 0x4;
    public static final int F_SEAL_WRITE = 0x8;
    public static final int F_SEAL_FUTURE_WRITE = 0x10;

    /**
     * fcntl(2) F_OFD_GETLK (Linux 3.15): the first lock that would conflict with the {@code struct flock} given, an
     * open-file-description lock or a classic POSIX one, of any process, this one too, written back into it; or its
     * l_type set to {@link #F_UNLCK} for none. It takes no lock.
     */
    public static final int F_OFD_GETLK = 36;
    public static final short F_RDLCK = 0;
    public static final short F_WRLCK = 1;
    public static final short F_UNLCK = 2;
    /**
     * {@code struct flock}, the same on x86_64 and aarch64: l_type (short) at 0, l_whence (short) at 2, l_start (off_t)
     * at 8, l_len (off_t) at 16, l_pid (int) at 24. All zero but l_type: the whole file (l_len 0 is to the end), l_pid 0
     * as OFD commands require.
     */
    public static final int FLOCK_LENGTH = 32;
    public static final int FLOCK_TYPE_OFFSET = 0;

    /** pidfd_open(2), pidfd_getfd(2): numbers of the unified syscall table, the same on x86_64 and aarch64. */
    public static final long SYS_PIDFD_OPEN = 434;
    public static final long SYS_PIDFD_GETFD = 438;

    /** poll(2): {@code struct pollfd { int fd; short events; short revents; }}. */
    public static final int POLLFD_LENGTH = 8;
    public static final int POLLFD_EVENTS_OFFSET = 4;
    public static final int POLLFD_REVENTS_OFFSET = 6;
    /** A pidfd polls readable once its process has exited, zombie or reaped (Linux 5.3). */
    public static final short POLLIN = 0x1;

    /** The calls. */
    public interface Calls
    {
        int open(String path, int flags);

        int close(int fd);

        int memfd_create(String name, int flags);

        int ftruncate(int fd, long length);

        /**
         * fcntl(2) with an int argument (or none: pass 0), or a pointer: the {@code struct flock} of the lock commands
         * ({@link #F_OFD_GETLK}) in native memory. Variadic, bound fixed (see the class Javadoc).
         */
        int fcntl(int fd, int cmd, @intptr_t long arg);

        /** syscall(2) with three int arguments (pass 0 for those a call does not take). */
        @Variadic(fixedCount = 1)
        long syscall(long number, int arg1, int arg2, int arg3);

        /** poll(2) of {@code nfds} {@code struct pollfd}s at native address {@code fds}; timeout 0 does not wait. */
        int poll(@intptr_t long fds, int nfds, int timeout);

        String strerror(int errnum);
    }

    private Libc()
    {
    }

    /** The bound libc. */
    public static Calls calls()
    {
        return Bound.CALLS;
    }

    /** errno of the last call made through {@link #calls()} on this thread. */
    public static int errno()
    {
        return LastError.getLastError(Bound.RUNTIME);
    }

    /** {@code strerror(errno) (errno N)} of the last call on this thread. */
    public static String lastError()
    {
        final int errno = errno();
        return Bound.CALLS.strerror(errno) + " (errno " + errno + ")";
    }

    private static final class Bound
    {
        static final Calls CALLS = LibraryLoader.create(Calls.class).load("c");
        static final Runtime RUNTIME = Runtime.getRuntime(CALLS);
    }
}
