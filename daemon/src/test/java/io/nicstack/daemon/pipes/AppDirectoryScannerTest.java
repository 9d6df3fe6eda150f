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
