package io.nicstack.nic.linux;

import io.nicstack.nic.NicException;
import io.nicstack.nic.tap.KernelSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link NetNamespace#enter} that fails keeps no descriptor. A namespace "name" that is a plain file in
 * {@code /var/run/netns} opens but is refused by setns(2) (EINVAL), after the thread's own namespace was opened to be
 * restored later. Needs root; each test runs on a thread of its own, so the test thread never changes namespace.
 */
@Tag("kernel")
class NetNamespaceKernelTest
{
    private static final String NOT_A_NAMESPACE = "nst-" + ProcessHandle.current().pid() + "-0";

    /**
     * A first enter that fails closes the descriptor of the thread's own namespace again, and leaves nothing for
     * {@link NetNamespace#restore()}. Before, it stayed in the thread-local: restore() is not called after an enter
     * that threw, so it stayed open for the thread's life.
     */
    @Test
    void aFailedEnterKeepsNoNamespaceDescriptor() throws Exception
    {
        withFileThatIsNotANamespace(() -> onOwnThread(() ->
        {
            final long before = namespaceDescriptors();
            final NicException ex = assertThrows(NicException.class, () -> NetNamespace.enter(NOT_A_NAMESPACE));
            assertTrue(ex.getMessage().contains("EINVAL"), ex.getMessage());
            assertEquals(before, namespaceDescriptors(), "network namespace descriptors open after a failed enter");
            NetNamespace.restore(); // nothing to restore: a no-op
            assertEquals(before, namespaceDescriptors());
        }));
    }

    /** An enter that fails after one that worked keeps what restore() needs: the thread goes back where it started. */
    @Test
    void aFailedEnterAfterOneThatWorkedStillRestores() throws Exception
    {
        // Named nst-<pid>-<n> like every test namespace, so a later run deletes it if this JVM dies before the finally.
        final String ns = KernelSupport.addNamespace();
        try
        {
            withFileThatIsNotANamespace(() -> onOwnThread(() ->
            {
                final Path self = Path.of("/proc/thread-self/ns/net");
                final Path home = Files.readSymbolicLink(self);
                NetNamespace.enter(ns);
                final Path entered = Files.readSymbolicLink(self);
                assertNotEquals(home, entered);
                assertThrows(NicException.class, () -> NetNamespace.enter(NOT_A_NAMESPACE));
                assertEquals(entered, Files.readSymbolicLink(self), "a failed enter leaves the thread where it was");
                NetNamespace.restore();
                assertEquals(home, Files.readSymbolicLink(self), "restore goes back to the thread's own namespace");
            }));
        }
        finally
        {
            run("ip", "netns", "del", ns);
        }
    }

    /** Descriptors of this process open on a network namespace ({@code net:[inode]}). */
    private static long namespaceDescriptors() throws IOException
    {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd")))
        {
            return fds.filter(fd ->
            {
                try
                {
                    return Files.readSymbolicLink(fd).toString().startsWith("net:[");
                }
                catch (final IOException ex)
                {
                    return false; // closed while listed
                }
            }).count();
        }
    }

    private static void withFileThatIsNotANamespace(final Body test) throws Exception
    {
        Files.createDirectories(NetNamespace.NETNS_RUN_DIR); // as ip netns add does
        final Path file = NetNamespace.NETNS_RUN_DIR.resolve(NOT_A_NAMESPACE);
        Files.deleteIfExists(file);
        Files.createFile(file);
        try
        {
            test.run();
        }
        finally
        {
            Files.deleteIfExists(file);
        }
    }

    /** A test's body, which may throw anything. */
    private interface Body
    {
        void run() throws Exception;
    }

    private static void onOwnThread(final Body test) throws Exception
    {
        final FutureTask<Void> task = new FutureTask<>(() ->
        {
            test.run();
            return null;
        });
        final Thread thread = new Thread(task, "netns-test");
        thread.start();
        try
        {
            task.get(30, TimeUnit.SECONDS);
        }
        catch (final ExecutionException ex)
        {
            if (ex.getCause() instanceof Error error)
            {
                throw error; // a failed assertion
            }
            throw ex.getCause() instanceof Exception cause ? cause : ex;
        }
    }

    private static void run(final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        if (!process.waitFor(10, TimeUnit.SECONDS))
        {
            process.destroyForcibly();
            fail(String.join(" ", command) + " timed out after 10 s");
        }
        final String output = new String(process.getInputStream().readAllBytes());
        if (process.exitValue() != 0)
        {
            fail(String.join(" ", command) + " failed (root and iproute2 needed): " + output.trim());
        }
    }
}
