package io.nicstack.daemon.pipes;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.AppFileDescriptor;
import io.nicstack.pipes.Protocol.Reason;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The scanner alone, inline on the test's clock, with the test playing the event loop: it takes what the scanner hands
 * over and answers it in the file as {@link PipeServer} does (pwrite of the reason, the daemon's pid and version, then
 * the state).
 */
class AppDirectoryScannerTest
{
    @TempDir
    Path apps;

    /** Forks a child that exits at once, says its pid, and never waits for it (for 30 s, or until killed). */
    private static final String ZOMBIE_PARENT =
        "import os, time\npid = os.fork()\nif pid == 0: os._exit(0)\nprint(pid, flush=True)\ntime.sleep(30)";

    private long now = 1_000_000_000L;
    private AppDirectoryScanner scanner;

    @BeforeEach
    void setUp()
    {
        scanner = new AppDirectoryScanner(apps, PipeServer.SUFFIX, () -> now, new PrintStream(OutputStream.nullOutputStream()));
    }

    /**
     * An app's file saying ATTACHING, as AppFile.create makes it: the app's pid, its memory's descriptor and inode, and
     * when it was made. Last modified a minute ago (made then): a write now surely changes its modification time, which
     * the file system keeps at the granularity of its clock tick, and so does each rewrite below (a time of its own).
     */
    private Path appFile(final String name, final long pid, final long memoryInode) throws IOException
    {
        return write(apps.resolve(name + "-" + pid + PipeServer.SUFFIX), pid, memoryInode, 60);
    }

    /** Write an app's file under {@code path} (into the file there, if there is one), made {@code secondsAgo}. */
    private static Path write(final Path path, final long pid, final long memoryInode, final int secondsAgo)
        throws IOException
    {
        Files.write(path, header(pid, memoryInode));
        Files.setLastModifiedTime(path, FileTime.fromMillis(System.currentTimeMillis() - secondsAgo * 1000L));
        return path;
    }

    private static byte[] header(final long pid, final long memoryInode)
    {
        final byte[] bytes = new byte[AppFileDescriptor.HEADER_LENGTH];
        final UnsafeBuffer header = new UnsafeBuffer(bytes);
        header.putLong(AppFileDescriptor.MAGIC_OFFSET, AppFileDescriptor.MAGIC);
        header.putInt(AppFileDescriptor.VERSION_OFFSET, AppFileDescriptor.VERSION);
        header.putInt(AppFileDescriptor.STATE_OFFSET, AppFileDescriptor.STATE_ATTACHING);
        header.putLong(AppFileDescriptor.APP_PID_OFFSET, pid);
        header.putInt(AppFileDescriptor.MEMORY_FD_OFFSET, 7);
        header.putLong(AppFileDescriptor.MEMORY_INODE_OFFSET, memoryInode);
        header.putLong(AppFileDescriptor.APP_HEARTBEAT_OFFSET, System.currentTimeMillis());
        return bytes;
    }

    /** An app's file as an earlier daemon left it: in {@code state} from the first look on. */
    private Path leftIn(final String name, final long pid, final int state) throws IOException
    {
        final Path path = appFile(name, pid, 20 + pid);
        answer(path, state);
        return path;
    }

    /** The pid of a process that has exited and been waited for: a pid that names no process now. */
    private static long deadPid() throws IOException, InterruptedException
    {
        final Process p = new ProcessBuilder("true").start();
        p.waitFor();
        return p.pid();
    }

    /** The pid of a zombie: a child of {@code parent} ({@link #ZOMBIE_PARENT}) that exited and that nobody waits for. */
    private static long zombieOf(final Process parent) throws IOException, InterruptedException
    {
        final String line = new java.io.BufferedReader(new java.io.InputStreamReader(parent.getInputStream())).readLine();
        assertTrue(line != null && line.matches("[0-9]+"), "the shell said " + line);
        final long pid = Long.parseLong(line);
        final Path stat = Path.of("/proc/" + pid + "/stat");
        for (int i = 0; i < 500; i++) // at most 5 s
        {
            final String text = Files.exists(stat) ? Files.readString(stat) : "";
            if (text.substring(text.lastIndexOf(')') + 1).trim().startsWith("Z"))
            {
                assertTrue(java.lang.ProcessHandle.of(pid).isPresent(), "the JDK takes a zombie for a process");
                return pid;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("pid " + pid + " did not become a zombie");
    }

    private static Path ownedBy(final Path path, final int uid) throws IOException
    {
        Files.setAttribute(path, "unix:uid", uid);
        return path;
    }

    /** The loop's answer, written into the file as PipeServer.reject and writeState write it. */
    private static void answer(final Path path, final int state) throws IOException
    {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            // From the reason to the daemon's version, with what lies between as the file has it (the loop writes back
            // the header it read).
            final ByteBuffer fields = ByteBuffer.allocate(AppFileDescriptor.MEMORY_FD_OFFSET - AppFileDescriptor.REASON_OFFSET)
                .order(ByteOrder.nativeOrder());
            channel.read(fields, AppFileDescriptor.REASON_OFFSET);
            fields.putInt(0, Reason.BAD_ARGUMENT);
            fields.putLong(AppFileDescriptor.DAEMON_PID_OFFSET - AppFileDescriptor.REASON_OFFSET, ProcessHandle.current().pid());
            fields.putInt(AppFileDescriptor.DAEMON_VERSION_OFFSET - AppFileDescriptor.REASON_OFFSET, AppFileDescriptor.VERSION);
            channel.write(fields.flip(), AppFileDescriptor.REASON_OFFSET);
            channel.write(ByteBuffer.allocate(Integer.BYTES).order(ByteOrder.nativeOrder()).putInt(0, state),
                AppFileDescriptor.STATE_OFFSET);
        }
    }

    /** A scan a millisecond on, and what it handed over, in order. */
    private List<Path> scan()
    {
        now += 1_000_000L;
        scanner.scan();
        final List<Path> handed = new ArrayList<>();
        for (Path p; (p = scanner.poll()) != null; )
        {
            handed.add(p);
        }
        return handed;
    }

    /**
     * An owner whose file the loop rejected takes its turns after every other owner's. The loop's answer is a write
     * to the file, which changes its modification time: the scanner took the answered file for a new one, forgot it had
     * handed it over, and never applied the penalty. Here the rejected owner was served less lately than the other, so
     * without the penalty its next file would be handed over first.
     */
    @Test
    void anOwnerWhoseFileTheLoopRejectedTakesItsTurnsLast() throws IOException
    {
        assumeTrue("root".equals(System.getProperty("user.name")), "files of two owners need root (chown)");
        final int rejectedUid = 5001;
        final int otherUid = 5002;
        final Path rejected = ownedBy(appFile("bad", 1001, 11), rejectedUid);
        assertEquals(List.of(rejected), scan());
        final Path attached = ownedBy(appFile("good", 1002, 12), otherUid);
        assertEquals(List.of(attached), scan(), "the other owner's file; the first is not due again yet");
        answer(rejected, AppFileDescriptor.STATE_REJECTED);
        answer(attached, AppFileDescriptor.STATE_ATTACHED);
        assertEquals(List.of(), scan(), "the answers are looked at, nothing is handed over");
        final Path next = ownedBy(appFile("bad-again", 1003, 13), rejectedUid);
        final Path other = ownedBy(appFile("good-again", 1004, 14), otherUid);
        assertEquals(List.of(other, next), scan(), "the owner the loop rejected comes last");
    }

    /**
     * A file an earlier daemon left ATTACHED (or in any state but ATTACHING and REJECTED) whose app's process is gone
     * is deleted at its first look, and counted: nothing else would delete it (the loop deletes the files of the apps it
     * attached itself, the client library its own file when it closes, and this app is dead). Before, only a REJECTED
     * file was ever deleted, so an app killed while no daemon ran left its file for good. One whose app lives is kept,
     * look after look.
     */
    @Test
    void aFileAnEarlierDaemonLeftWhoseAppIsGoneIsDeleted() throws Exception
    {
        final long dead = deadPid();
        final Path attached = leftIn("attached", dead, AppFileDescriptor.STATE_ATTACHED);
        final Path detached = leftIn("detached", dead, AppFileDescriptor.STATE_DETACHED);
        final Path live = leftIn("live", ProcessHandle.current().pid(), AppFileDescriptor.STATE_ATTACHED);
        assertEquals(List.of(), scan(), "nothing to attach");
        assertFalse(Files.exists(attached), "an ATTACHED file of a dead app");
        assertFalse(Files.exists(detached), "a DETACHED one");
        assertEquals(2, scanner.abandonedDeleted());
        for (int i = 0; i < 8; i++)
        {
            now += AppDirectoryScanner.MAX_RELOOK_NANOS;
            scan();
        }
        assertTrue(Files.exists(live), "a live app's file is kept");
        assertEquals(2, scanner.abandonedDeleted());
    }

    /**
     * A zombie's pid names no app: the JDK's ProcessHandle says it is alive (its /proc entry stays until its parent waits
     * for it), so a REJECTED file naming one was kept for as long as the zombie lasted; a pidfd tells the truth.
     */
    @Test
    void aFileWhoseAppIsAZombieIsDeleted() throws Exception
    {
        final List<String> command = new ArrayList<>(io.nicstack.daemon.Netns.dieWithParent());
        command.addAll(List.of("/usr/bin/python3", "-c", ZOMBIE_PARENT));
        final Process parent = new ProcessBuilder(command).start();
        try
        {
            final long zombie = zombieOf(parent);
            final Path attached = leftIn("attached", zombie, AppFileDescriptor.STATE_ATTACHED);
            final Path rejected = appFile("rejected", zombie, 31);
            assertEquals(List.of(rejected), scan());
            answer(rejected, AppFileDescriptor.STATE_REJECTED);
            scan();
            assertFalse(Files.exists(attached), "an ATTACHED file of a zombie");
            now += AppDirectoryScanner.ABANDONED_AFTER_NANOS;
            scan();
            assertFalse(Files.exists(rejected), "a REJECTED one, once its answer is old");
            assertEquals(2, scanner.abandonedDeleted());
        }
        finally
        {
            parent.destroyForcibly();
            parent.waitFor();
        }
    }

    /**
     * A file this daemon holds open, as a live session holds its app file until the reap, is never deleted by the
     * scanner, whatever pid it names (its app may rewrite it): the loop deletes it when it reaps the app. Nor is one the
     * scanner handed over to attach and then saw ATTACHED: the loop answered it, and deletes it itself.
     */
    @Test
    void aFileThisDaemonAttachedIsLeftToTheLoop() throws Exception
    {
        final long dead = deadPid();
        final Path held = leftIn("held", dead, AppFileDescriptor.STATE_ATTACHED);
        final Path handed = appFile("handed", dead, 41);
        try (FileChannel session = FileChannel.open(held, StandardOpenOption.READ, StandardOpenOption.WRITE))
        {
            assertEquals(List.of(handed), scan());
            answer(handed, AppFileDescriptor.STATE_ATTACHED);
            for (int i = 0; i < 3; i++)
            {
                now += AppDirectoryScanner.MAX_RELOOK_NANOS;
                scan();
            }
            assertTrue(Files.exists(held), "held open by this daemon");
            assertTrue(Files.exists(handed), "attached by this daemon");
            assertEquals(0, scanner.abandonedDeleted());
        }
        now += AppDirectoryScanner.MAX_RELOOK_NANOS;
        scan();
        assertFalse(Files.exists(held), "no longer held: no session of this daemon owns it");
        assertTrue(Files.exists(handed));
        assertEquals(1, scanner.abandonedDeleted());
    }

    /**
     * The loop's answer leaves a file the file it was (before, every answer made it a new one, see {@link #newFiles});
     * another app's file under its name is a new one, also when it has the old file's inode, as the file of a
     * restarted app may on ext4 and tmpfs (here it is written into the old file, so that it surely has).
     */
    @Test
    void theLoopsAnswerLeavesAFileTheSameAndAnotherAppsFileUnderItsNameIsNew() throws IOException
    {
        final Path path = appFile("app", 1001, 11);
        assertEquals(List.of(path), scan());
        assertEquals(1, scanner.newFiles());
        answer(path, AppFileDescriptor.STATE_REJECTED);
        assertEquals(List.of(), scan());
        assertEquals(1, scanner.newFiles(), "the answered file is the file handed over");

        // The app restarted (another pid, another memory) and its file got the old one's inode.
        write(path, 1002, 12, 50);
        assertEquals(List.of(path), scan(), "handed over at once");
        assertEquals(2, scanner.newFiles(), "another app's file in the old inode");
        answer(path, AppFileDescriptor.STATE_ATTACHED);
        assertEquals(List.of(), scan());
        assertEquals(2, scanner.newFiles());

        // The same process's next app of that name: the same pid, another memory.
        write(path, 1002, 13, 40);
        assertEquals(List.of(path), scan(), "handed over at once");
        assertEquals(3, scanner.newFiles(), "the same pid's next app in the old inode");

        // And a file made anew, whatever inode it gets.
        Files.delete(path);
        write(path, 1003, 14, 30);
        assertEquals(List.of(path), scan(), "handed over at once");
        assertEquals(4, scanner.newFiles());
    }
}
