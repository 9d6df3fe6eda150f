package io.nicstack.nic.linux;

import jnr.ffi.annotations.Variadic;
import jnr.ffi.types.intptr_t;
import jnr.ffi.types.size_t;
import jnr.ffi.types.ssize_t;
import jnr.ffi.types.u_int64_t;

/**
 * The few libc calls the Linux devices need, bound with jnr-ffi.
 *
 * <p>Buffers are passed as raw native addresses ({@code long}) so a call on the fast path boxes nothing
 * and allocates nothing; callers own the memory (direct buffers kept reachable for the call).
 */
public interface LibC
{
    /** open(2). */
    int open(String path, int flags);

    /** close(2). */
    int close(int fd);

    /** dup2(2): {@code newfd} becomes a copy of {@code oldfd} (closed first if open). */
    int dup2(int oldfd, int newfd);

    /** read(2) into native memory at {@code buf}. */
    @ssize_t long read(int fd, @intptr_t long buf, @size_t long count);

    /** pread(2) into native memory at {@code buf}, from {@code offset} of the file (its file position is not used). */
    @ssize_t long pread(int fd, @intptr_t long buf, @size_t long count, long offset);

    /** pwrite(2) from native memory at {@code buf}, at {@code offset} of the file (its file position is not used). */
    @ssize_t long pwrite(int fd, @intptr_t long buf, @size_t long count, long offset);
    /** write(2) from native memory at {@code buf}. */
    @ssize_t long write(int fd, @intptr_t long buf, @size_t long count);

    /**
     * writev(2) from {@code iovcnt} {@code struct iovec} at {@code iov} (16 bytes each on 64-bit Linux: base, then
     * length); on a tap the whole vector is one frame.
     */
    @ssize_t long writev(int fd, @intptr_t long iov, int iovcnt);

    /** ioctl(2) with a pointer argument (the request's struct in native memory). */
    @Variadic(fixedCount = 2)
    int ioctl(int fd, @u_int64_t long request, @intptr_t long arg);

    /** fstatfs(2) into a {@code struct statfs} at {@code buf} (120 bytes on x86_64 and aarch64; f_type first, a long). */
    int fstatfs(int fd, @intptr_t long buf);

    /** fcntl(2) with an int argument (or none: pass 0). */
    @Variadic(fixedCount = 2)
    int fcntl(int fd, int cmd, int arg);

    /** fcntl(2) with a pointer argument: the {@code struct flock} of the lock commands ({@link Linux#F_OFD_SETLK}). */
    @Variadic(fixedCount = 2)
    int fcntl(int fd, int cmd, @intptr_t long arg);

    /**
     * syscall(2) with up to five int arguments (pass 0 for those a call does not take), for calls glibc may not wrap:
     * pidfd_open, pidfd_getfd, pidfd_send_signal, kcmp.
     */
    @Variadic(fixedCount = 1)
    long syscall(long number, int arg1, int arg2, int arg3, int arg4, int arg5);

    /** poll(2) over {@code nfds} {@code struct pollfd} at {@code fds}. */
    int poll(@intptr_t long fds, @u_int64_t long nfds, int timeoutMillis);

    /** socket(2). */
    int socket(int domain, int type, int protocol);

    /** setns(2): move the calling thread into the namespace behind {@code fd}. */
    int setns(int fd, int nsType);

    /** strerror(3). */
    String strerror(int errnum);
}
