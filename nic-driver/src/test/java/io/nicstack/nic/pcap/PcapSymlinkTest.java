package io.nicstack.nic.pcap;

import io.nicstack.nic.FakeDevice;
import io.nicstack.nic.linux.Linux;
import org.agrona.concurrent.EpochNanoClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The capture file is opened without following a symbolic link at its last component (O_NOFOLLOW): the daemon runs
 * as root, and a user who plants {@code /tmp/lab.pcap} as a link to another file must not get that file truncated and
 * overwritten (or created, for a dangling link). The open fails with a clear error and the target is untouched.
 */
class PcapSymlinkTest
{
    private static final byte[] VICTIM = "root:x:0:0:root:/root:/bin/bash\n".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path dir;

    private final FakeDevice inner = new FakeDevice(1500);
    private final EpochNanoClock clock = () -> 1_700_000_000_000_000_000L;

    @Test
    void aSymbolicLinkToAnotherFileIsRefusedAndThatFileIsLeftAlone() throws Exception
    {
        final Path victim = Files.write(dir.resolve("victim"), VICTIM);
        final Path link = Files.createSymbolicLink(dir.resolve("lab.pcap"), victim);

        final UncheckedIOException e = assertThrows(UncheckedIOException.class,
            () -> new PcapWritingDevice(inner, link, clock).close());

        assertTrue(e.getMessage().startsWith("cannot open pcap file " + link + ": "), e.getMessage());
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        assertArrayEquals(VICTIM, Files.readAllBytes(victim), "the link's target is unchanged");
        assertTrue(Files.isSymbolicLink(link), "the link is left as it was");
    }

    @Test
    void aDanglingSymbolicLinkIsRefusedAndItsTargetNotCreated() throws Exception
    {
        final Path target = dir.resolve("nologin");
        final Path link = Files.createSymbolicLink(dir.resolve("lab.pcap"), target);

        final UncheckedIOException e = assertThrows(UncheckedIOException.class,
            () -> new PcapWritingDevice(inner, link, clock).close());

        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        assertFalse(Files.exists(target, LinkOption.NOFOLLOW_LINKS), "no file is made where the link points");
    }

    @Test
    void aSymbolicLinkToANamedPipeIsRefusedWithoutWaitingForAReader() throws Exception
    {
        final Path fifo = dir.resolve("fifo");
        assertTrue(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor() == 0, "mkfifo");
        final Path link = Files.createSymbolicLink(dir.resolve("lab.pcap"), fifo);
        // A reader, so that an open that followed the link would not wait for ever but return and write.
        final int reader = Linux.LIBC.open(fifo.toString(), Linux.O_RDONLY | Linux.O_NONBLOCK | Linux.O_CLOEXEC);
        assertTrue(reader >= 0, "open the named pipe's reader");
        try
        {
            final UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> new PcapWritingDevice(inner, link, clock).close());
            assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        }
        finally
        {
            Linux.closeQuietly(reader);
        }
    }

    @Test
    void aRegularFileIsStillTruncatedAndWritten() throws Exception
    {
        final Path file = Files.write(dir.resolve("old.pcap"), new byte[1000]);
        new PcapWritingDevice(inner, file, clock).close();
        assertTrue(Files.size(file) == PcapWritingDevice.FILE_HEADER_LENGTH, "the old content is gone, the header is in");
    }
}
