package io.nicstack.pipes.client;

import java.io.BufferedReader;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.agrona.BufferUtil;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.AppFile;
import io.nicstack.pipes.Libc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client's look at {@code daemon.lock} before it attaches ({@link NicstackClient#noDaemon}): a held lock is a
 * daemon, an unheld one none, and the look itself takes no lock, so a daemon starting meanwhile is never refused.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DaemonLockProbeTest
{
    /** fcntl(2): a classic POSIX record lock (owned by the process), and an open-file-description one (Linux 3.15). */
    static final int F_SETLK = 6;
    static final int F_OFD_SETLK = 37;
    private static final int EACCES = 13;
    private static final int EAGAIN = 11;

    @TempDir
    Path dir;
    private Path lockFile;

    @BeforeEach
    void setUp() throws Exception
    {
        lockFile = Files.writeString(dir.resolve(AppFile.DAEMON_LOCK), "4242 1\n");
    }

    /** A lock of {@code type} on the whole file open as {@code fd}, or its release (F_UNLCK), by {@code cmd}; 0 or -1. */
    static int lock(final int fd, final int cmd, final short type)
    {
        final ByteBuffer flock = ByteBuffer.allocateDirect(Libc.FLOCK_LENGTH).order(ByteOrder.nativeOrder());
        flock.putShort(Libc.FLOCK_TYPE_OFFSET, type);
        try
        {
            return Libc.calls().fcntl(fd, cmd, BufferUtil.address(flock));
        }
        finally
        {
            Reference.reachabilityFence(flock);
        }
    }

    private int openLockFile()
    {
        final int fd = Libc.calls().open(lockFile.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
        assertTrue(fd >= 0, Libc::lastError);
        return fd;
    }

    private String nobodyHolds()
    {
        return "no nicstack daemon runs in " + dir + " (nobody holds its daemon.lock: the daemon that used it has stopped)";
    }

    /**
     * Held as the daemon holds it (an open-file-description write lock, in another process or in this one) is a
     * daemon; released, none. So is a classic POSIX write lock, also one of the client's own process (another
     * process's: {@link AttachWithoutDaemonTest#aHeldLockIsADaemonToWaitFor}). Before, the look took a shared lock of
     * its own for a moment, which its own process's classic lock does not conflict with: it said "nobody holds". (That
     * the look's close drops such a lock of its own process, as every close of the file does, is POSIX's: the daemon
     * takes an open-file-description lock, which no close but its own drops.)
     */
    @Test
    void aHeldDaemonLockIsSeenAndAnUnheldOneIsNot() throws Exception
    {
        assertEquals(nobodyHolds(), NicstackClient.noDaemon(dir));

        final Process holder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx64m", "-cp", System.getProperty("java.class.path"),
            LockHolderMain.class.getName(), lockFile.toString(), "ofd")
            .redirectErrorStream(true).start();
        try (BufferedReader out = holder.inputReader(StandardCharsets.UTF_8))
        {
            assertEquals("locked", out.readLine());
            assertNull(NicstackClient.noDaemon(dir), "held by another process, as the daemon holds it");
        }
        finally
        {
            holder.getOutputStream().close();
            assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
        }
        assertEquals(nobodyHolds(), NicstackClient.noDaemon(dir), "its holder gone");

        final int fd = openLockFile();
        try
        {
            assertEquals(0, lock(fd, F_OFD_SETLK, Libc.F_WRLCK));
            assertNull(NicstackClient.noDaemon(dir), "held by this process, as the daemon holds it");
            assertEquals(0, lock(fd, F_OFD_SETLK, Libc.F_UNLCK));
            assertEquals(nobodyHolds(), NicstackClient.noDaemon(dir), "released");

            assertEquals(0, lock(fd, F_SETLK, Libc.F_WRLCK));
            assertNull(NicstackClient.noDaemon(dir), "held by a classic lock of this process");
            assertEquals(0, lock(fd, F_SETLK, Libc.F_UNLCK));
            assertEquals(nobodyHolds(), NicstackClient.noDaemon(dir), "released");
        }
        finally
        {
            Libc.calls().close(fd);
        }
    }

    /**
     * A daemon that takes its exclusive lock while clients look is never refused: here one thread looks again and
     * again while this one takes and releases the lock as a starting daemon does, many times. Before, each look took
     * a shared lock for a moment, and a daemon trying in that moment failed (DaemonLock: "in use by another daemon").
     */
    @Test
    void aDaemonTakingItsLockWhileClientsLookIsNeverRefused() throws Exception
    {
        final int attempts = 50_000;
        final AtomicBoolean done = new AtomicBoolean();
        final AtomicLong looks = new AtomicLong();
        final CountDownLatch looking = new CountDownLatch(1);
        final Thread client = new Thread(() ->
        {
            while (!done.get())
            {
                NicstackClient.noDaemon(dir);
                looks.incrementAndGet();
                looking.countDown();
            }
        }, "client-look");
        int refused = 0;
        long looksMeanwhile;
        final int fd = openLockFile();
        try
        {
            client.start();
            assertTrue(looking.await(30, TimeUnit.SECONDS), "the client looks");
            final long start = looks.get();
            for (int i = 0; i < attempts; i++)
            {
                if (lock(fd, F_OFD_SETLK, Libc.F_WRLCK) != 0)
                {
                    final int errno = Libc.errno();
                    assertTrue(errno == EAGAIN || errno == EACCES, Libc::lastError);
                    refused++;
                    continue;
                }
                assertEquals(0, lock(fd, F_OFD_SETLK, Libc.F_UNLCK));
            }
            looksMeanwhile = looks.get() - start;
        }
        finally
        {
            done.set(true);
            client.join();
            Libc.calls().close(fd);
        }
        assertTrue(looksMeanwhile > 100, "the client looked " + looksMeanwhile + " times meanwhile");
        assertEquals(0, refused, "lock attempts refused of " + attempts + ", while the client looked " + looksMeanwhile
            + " times");
    }
}
