package io.nicstack.nic.linux;

import static io.nicstack.nic.linux.Linux.LIBC;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.Allocations;

/**
 * The fcntl(2), ioctl(2) and syscall(2) calls that per-request and per-frame paths make (SEND_FILE's kcmp and
 * F_DUPFD_CLOEXEC, a live capture's FIONREAD) pass their arguments right, kcmp's sixth included, and allocate nothing
 * per call after a warm-up: jnr-ffi's variadic invoker boxes every argument and allocates an invocation buffer each
 * time.
 */
class LibCAllocationTest
{
    private static final int WARM_CALLS = 20_000;
    private static final int CALLS = 10_000;
    private static final int ROUNDS = 5;
    /** Far below one byte per call: a boxed argument alone is 16 B. */
    private static final long ALLOWED_BYTES = 1024;
    private static final int FILE_LENGTH = 4321;

    @TempDir
    Path dir;

    private int fd = -1;
    private int other = -1;
    private final UnsafeBuffer scratch = new UnsafeBuffer(ByteBuffer.allocateDirect(Linux.FLOCK_LENGTH));

    @BeforeEach
    void open() throws Exception
    {
        final Path file = Files.write(dir.resolve("data"), new byte[FILE_LENGTH]);
        fd = LIBC.open(file.toString(), Linux.O_RDONLY | Linux.O_CLOEXEC);
        other = LIBC.open(file.toString(), Linux.O_RDONLY | Linux.O_CLOEXEC);
        assertTrue(fd >= 0 && other >= 0, "open");
    }

    @AfterEach
    void close()
    {
        Linux.closeQuietly(fd);
        Linux.closeQuietly(other);
    }

    @Test
    void fcntlDupAndGetFlagsAllocateNothing()
    {
        final Runnable call = () ->
        {
            final int dup = LIBC.fcntl(fd, Linux.F_DUPFD_CLOEXEC, 0);
            if (dup < 0 || LIBC.close(dup) != 0
                || (LIBC.fcntl(fd, Linux.F_GETFL, 0) & Linux.O_ACCMODE) != Linux.O_RDONLY)
            {
                throw new AssertionError("fcntl: " + Linux.describe(Linux.errno()));
            }
        };
        assertPerCall("fcntl(F_DUPFD_CLOEXEC) + close + fcntl(F_GETFL)", call);
    }

    @Test
    void fcntlWithAPointerArgumentReadsTheStruct()
    {
        // F_OFD_GETLK of a read lock on a file nobody locks: the kernel writes F_UNLCK into the struct flock.
        scratch.setMemory(0, Linux.FLOCK_LENGTH, (byte)0);
        scratch.putShort(Linux.FLOCK_TYPE_OFFSET, Linux.F_RDLCK);
        assertEquals(0, LIBC.fcntl(fd, Linux.F_OFD_GETLK, scratch.addressOffset()),
            () -> Linux.describe(Linux.errno()));
        assertEquals(Linux.F_UNLCK, scratch.getShort(Linux.FLOCK_TYPE_OFFSET));
    }

    @Test
    void ioctlFionreadAllocatesNothing()
    {
        // FIONREAD on a regular file: the bytes from the file position to its end, written through the pointer.
        final Runnable call = () ->
        {
            scratch.putInt(0, -1);
            if (LIBC.ioctl(fd, Linux.FIONREAD, scratch.addressOffset()) != 0 || scratch.getInt(0) != FILE_LENGTH)
            {
                throw new AssertionError("ioctl(FIONREAD): " + scratch.getInt(0) + ", "
                    + Linux.describe(Linux.errno()));
            }
        };
        assertPerCall("ioctl(FIONREAD)", call);
    }

    @Test
    void syscallKcmpAllocatesNothing()
    {
        final int pid = (int)ProcessHandle.current().pid();
        final int dup = LIBC.fcntl(fd, Linux.F_DUPFD_CLOEXEC, 0);
        try
        {
            final long probe = Linux.syscall(Linux.SYS_KCMP, pid, pid, Linux.KCMP_FILE, fd, dup);
            assumeTrue(probe >= 0 || (Linux.errno() != Linux.ENOSYS && Linux.errno() != Linux.EPERM),
                "kcmp(2) not available here");
            // The same open file through two descriptors is 0; two opens of one file are two open files (1 or 2).
            final Runnable call = () ->
            {
                final long same = Linux.syscall(Linux.SYS_KCMP, pid, pid, Linux.KCMP_FILE, fd, dup);
                final long different = Linux.syscall(Linux.SYS_KCMP, pid, pid, Linux.KCMP_FILE, fd, other);
                if (same != 0 || different <= 0)
                {
                    throw new AssertionError("kcmp: " + same + ", " + different + ", " + Linux.describe(Linux.errno()));
                }
            };
            assertPerCall("syscall(kcmp) x2", call);
        }
        finally
        {
            Linux.closeQuietly(dup);
        }
    }

    private static void assertPerCall(final String what, final Runnable call)
    {
        for (int i = 0; i < WARM_CALLS; i++)
        {
            call.run();
        }
        // The least of a few rounds: a late JIT compilation or deoptimisation on a loaded machine allocates a little
        // in one round (1,320 B in 10,000 calls was seen once), where a boxing call allocates 160 KB in every round.
        long least = Long.MAX_VALUE;
        for (int round = 0; round < ROUNDS && least >= ALLOWED_BYTES; round++)
        {
            final long before = Allocations.currentThread();
            for (int i = 0; i < CALLS; i++)
            {
                call.run();
            }
            least = Math.min(least, Allocations.currentThread() - before);
        }
        final long allocated = least;
        assertTrue(allocated < ALLOWED_BYTES, () -> what + ": " + allocated + " B for " + CALLS + " calls in the least of "
            + ROUNDS + " rounds (" + allocated / CALLS + " B per call)");
    }
}
