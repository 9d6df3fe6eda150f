package io.nicstack.nic.linux;

import jnr.ffi.types.intptr_t;
import jnr.ffi.types.size_t;
import jnr.ffi.types.ssize_t;
import jnr.ffi.types.u_int64_t;

/**
 * The few libc calls the Linux devices need, bound with jnr-ffi.
 *
 * <p>Buffers are passed as raw native addresses ({@code long}) so a call on the fast path boxes nothing
 * and allocates nothing; callers own the memory (direct buffers kept reachable for the call).
 *
 * <p>The variadic functions, {@link #fcntl fcntl} and {@link #ioctl ioctl}, are bound with a fixed arity, without
 * jnr-ffi's {@code @Variadic}: jnr-ffi calls a variadic binding through its generic invoker, which allocates an
 * argument array, boxes every argument and takes an invocation session and a heap buffer on every call (about 110 to
 * 220 bytes), where a fixed-arity binding of primitives goes through its generated direct call and allocates nothing.
 * SEND_FILE takes F_DUPFD_CLOEXEC per request, a live capture FIONREAD per pipe write. This is ABI-correct on the two
 * platforms the project runs on, Linux x86-64 and Linux aarch64: the System V AMD64 psABI and AAPCS64 pass the
 * variadic arguments of integer or pointer class in the same registers (and, past those, the same 8-byte stack slots)
 * as named ones, so the callee's {@code va_arg} reads what a fixed call put there. (x86-64 also has the caller put an
 * upper bound of the vector registers used in {@code %al}, which a fixed call leaves as it is; a callee looks at it
 * only to decide whether to save those registers for {@code va_arg}, and glibc's fcntl, ioctl and syscall, which take
 * no floating-point arguments, do not look at it at all.) It would not be on Apple's arm64, which puts every variadic
 * argument on the stack, nor for floating-point arguments: do not bind a variadic function either way. Every variadic
 * argument is bound as a 64-bit {@code long}, the width the callee reads it with ({@code va_arg} of a pointer or a
 * long), whatever the command makes of it: C leaves the upper half of a register that holds an {@code int}
 * unspecified. syscall(2) is {@link Linux#syscall}, not here: it needs six integer arguments, one more than jnr-ffi's
 * x86-64 stubs pass right.
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

    /** ioctl(2) with a pointer argument (the request's struct in native memory) or a value; variadic, bound fixed. */
    int ioctl(int fd, @u_int64_t long request, @intptr_t long arg);

    /** fstatfs(2) into a {@code struct statfs} at {@code buf} (120 bytes on x86_64 and aarch64; f_type first, a long). */
    int fstatfs(int fd, @intptr_t long buf);

    /**
     * fcntl(2) with an int argument (or none: pass 0), or a pointer: the {@code struct flock} of the lock commands
     * ({@link Linux#F_OFD_SETLK}). Variadic, bound fixed: glibc reads the argument as a pointer whatever the command.
     */
    int fcntl(int fd, int cmd, @intptr_t long arg);

    /** flock(2): a lock of the open file description, here of a directory ({@link Linux#LOCK_EX}, {@link Linux#LOCK_NB}). */
    int flock(int fd, int operation);

    /** poll(2) over {@code nfds} {@code struct pollfd} at {@code fds}. */
    int poll(@intptr_t long fds, @u_int64_t long nfds, int timeoutMillis);

    /** socket(2). */
    int socket(int domain, int type, int protocol);

    /** setns(2): move the calling thread into the namespace behind {@code fd}. */
    int setns(int fd, int nsType);

    /** strerror(3). */
    String strerror(int errnum);
}
