package io.nicstack.pipes;

import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Variadic;

/**
 * The libc calls the client library makes, bound with jnr-ffi on first use: the app memory's memfd (memfd_create(2),
 * ftruncate(2), fcntl(2) seals; pidfd_getfd(2) for {@link AppFile#open}) and the descriptors named in SEND_FILE. Constants are the Linux ABI's, the same on
 * x86_64 and aarch64.
 */
public final class Libc
{
    public static final int O_RDONLY = 0;
    public static final int O_RDWR = 2;
    public static final int O_ACCMODE = 3;
    public static final int O_NONBLOCK = 0x800;
    public static final int O_CLOEXEC = 0x80000;

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

    /** pidfd_open(2), pidfd_getfd(2): numbers of the unified syscall table, the same on x86_64 and aarch64. */
    public static final long SYS_PIDFD_OPEN = 434;
    public static final long SYS_PIDFD_GETFD = 438;

    /** The calls. */
    public interface Calls
    {
        int open(String path, int flags);

        int close(int fd);

        int memfd_create(String name, int flags);

        int ftruncate(int fd, long length);

        /** fcntl(2) with an int argument (or none: pass 0). */
        @Variadic(fixedCount = 2)
        int fcntl(int fd, int cmd, int arg);

        /** syscall(2) with three int arguments (pass 0 for those a call does not take). */
        @Variadic(fixedCount = 1)
        long syscall(long number, int arg1, int arg2, int arg3);

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
