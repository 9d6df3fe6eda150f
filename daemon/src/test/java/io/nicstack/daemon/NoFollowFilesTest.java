package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.linux.Linux;

/** {@code stats} and {@code conns} open the daemon's files without following a link and without waiting on a pipe. */
class NoFollowFilesTest
{
    /** How long, and how many opens, the race below runs for: the unfixed reader hung within some 10,000 opens. */
    private static final long RACE_NANOS = TimeUnit.SECONDS.toNanos(8);
    private static final int RACE_TRIES = 100_000;

    @TempDir
    Path dir;

    private static String[] run(final String... args)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = Main.run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    private static Path mkfifo(final Path path) throws Exception
    {
        assertEquals(0, new ProcessBuilder("mkfifo", path.toString()).start().waitFor());
        return path;
    }

    /** A writer on the named pipe releases a reader blocked in open(2); opened without waiting, so only if one waits. */
    private static void unblock(final Path fifo)
    {
        Linux.closeQuietly(Linux.LIBC.open(fifo.toString(), Linux.O_WRONLY | Linux.O_NONBLOCK | Linux.O_CLOEXEC));
    }

    /**
     * The review's probe (CountersFifoRaceProbeTest): --shm is a symbolic link swapped between the daemon's directory
     * and one where counters.dat is a named pipe. The path checked to be a regular file could be the pipe when opened,
     * and open(2) for reading waited for a writer for ever. Now every open is the file or a refusal, never a wait.
     */
    @Test
    void aNamedPipeSwappedInAfterTheCheckIsRefusedNotWaitedOn() throws Exception
    {
        final Path real = Files.createDirectory(dir.resolve("real"));
        CountersFile.create(real).close();
        final Path fifoDir = Files.createDirectory(dir.resolve("fifo"));
        final Path fifo = mkfifo(fifoDir.resolve(CountersFileDescriptor.FILE_NAME));
        final Path link = Files.createSymbolicLink(dir.resolve("shm"), real);
        final Path tmpLink = dir.resolve("shm.tmp");
        final AtomicBoolean stop = new AtomicBoolean();
        final Thread swapper = new Thread(() ->
        {
            for (boolean toFifo = true; !stop.get(); toFifo = !toFifo)
            {
                try
                {
                    Files.deleteIfExists(tmpLink);
                    Files.createSymbolicLink(tmpLink, toFifo ? fifoDir : real);
                    Files.move(tmpLink, link, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                }
                catch (final IOException e)
                {
                    // keep swapping
                }
            }
        }, "shm-swapper");
        final ExecutorService readers = Executors.newSingleThreadExecutor(r ->
        {
            final Thread t = new Thread(r, "stats-reader");
            t.setDaemon(true);
            return t;
        });
        int tries = 0;
        int opened = 0;
        int refused = 0;
        boolean hung = false;
        swapper.start();
        try
        {
            final long end = System.nanoTime() + RACE_NANOS;
            for (; tries < RACE_TRIES && System.nanoTime() - end < 0 && !hung; tries++)
            {
                final Future<String> f = readers.submit(() ->
                {
                    try (CountersFile c = CountersFile.open(link))
                    {
                        return null;
                    }
                    catch (final IOException e)
                    {
                        return e.getMessage();
                    }
                });
                try
                {
                    final String refusal = f.get(2, TimeUnit.SECONDS);
                    if (refusal == null)
                    {
                        opened++;
                    }
                    else
                    {
                        refused++;
                        assertTrue(refusal.contains("is not a regular file") || refusal.contains("is not a directory")
                            || refusal.startsWith("no counters file at"), refusal);
                    }
                }
                catch (final TimeoutException e)
                {
                    hung = true;
                }
            }
        }
        finally
        {
            stop.set(true);
            swapper.join();
            if (hung)
            {
                unblock(fifo);
            }
            readers.shutdownNow();
        }
        assertFalse(hung, "open blocked > 2 s on the named pipe after " + tries + " tries (" + opened + " opened, "
            + refused + " refused)");
        assertTrue(opened > 0 && refused > 0, "the race ran both ways: " + opened + " opened, " + refused + " refused");
    }

    /** A named pipe in place of either file: one line that says so, at once. */
    @Test
    void aNamedPipeInPlaceOfTheFilesIsRefusedInOneLine() throws Exception
    {
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final Path counters = mkfifo(shm.resolve(CountersFileDescriptor.FILE_NAME));
        final Path conns = mkfifo(shm.resolve(ConnectionsFile.FILE_NAME));
        try
        {
            String[] r = run("stats", "--shm", shm.toString());
            assertEquals("1", r[0], r[1]);
            assertEquals("stats: " + counters + " is not a regular file (a named pipe): not a nicstack counters file\n", r[2]);
            r = run("conns", "--shm", shm.toString());
            assertEquals("1", r[0], r[1]);
            assertEquals("conns: " + conns + " is not a regular file (a named pipe): not a nicstack connections file\n", r[2]);
        }
        finally
        {
            unblock(counters);
            unblock(conns);
        }
    }

    /**
     * A symbolic link in place of a file is not followed, even to a good file: the daemon makes regular files, and
     * whoever made the link chose what the reader shows. Before, Files.isRegularFile followed it and the target was read.
     */
    @Test
    void aSymbolicLinkInPlaceOfTheCountersFileIsNotFollowed() throws Exception
    {
        final Path real = Files.createDirectory(dir.resolve("real"));
        CountersFile.create(real).close();
        final Path shm = Files.createDirectory(dir.resolve("shm"));
        final Path link = Files.createSymbolicLink(shm.resolve(CountersFileDescriptor.FILE_NAME),
            real.resolve(CountersFileDescriptor.FILE_NAME));
        final IOException e = assertThrows(IOException.class, () -> CountersFile.open(shm).close());
        assertEquals(link + " is not a regular file (a symbolic link, not followed): not a nicstack counters file", e.getMessage());
    }
}
