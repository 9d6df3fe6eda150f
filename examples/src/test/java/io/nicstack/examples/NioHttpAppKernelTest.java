package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import io.nicstack.daemon.Netns;
import io.nicstack.nic.linux.NetNamespace;

/**
 * {@link NioHttpApp}, the kernel-socket baseline of {@code scripts/bench-http.sh}, in this JVM: its listening socket
 * and the test's client sockets are made by a thread moved into a namespace this test creates
 * ({@link NetNamespace}), on {@value #IP} (198.18.0.0/15) on its loopback. Needs root.
 */
@Tag("kernel")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NioHttpAppKernelTest
{
    static final String IP = "198.18.0.1";

    private Netns ns;
    private Path work;
    private NioHttpApp app;
    private Thread appThread;
    private final AtomicReference<Throwable> appFailure = new AtomicReference<>();

    @BeforeAll
    void createNamespace() throws Exception
    {
        assertEquals("0", Netns.run(5, "id", "-u").output().strip(), "kernel tests need root");
        work = Netns.workDir("nicstack-nio");
        ns = new Netns();
        ns.exec(10, "ip", "addr", "add", IP + "/32", "dev", "lo").assertOk("address on lo");
    }

    @AfterAll
    void deleteNamespace() throws Exception
    {
        try
        {
            if (ns != null)
            {
                ns.close();
            }
        }
        finally
        {
            if (work != null)
            {
                Netns.deleteTree(work);
            }
        }
    }

    @AfterEach
    void stopApp() throws Exception
    {
        if (app != null)
        {
            app.stop();
            appThread.join(10_000);
            app = null;
        }
        if (appFailure.get() != null)
        {
            throw new AssertionError("the app failed", appFailure.get());
        }
    }

    /** The app serving {@code root}, its socket made in the namespace, running on a thread of its own. */
    private void start(final Path root, final boolean copy) throws Exception
    {
        NetNamespace.enter(ns.name);
        try
        {
            app = new NioHttpApp(new StaticFiles(root), new InetSocketAddress(IP, 0), 16, 16, copy);
        }
        finally
        {
            NetNamespace.restore();
        }
        appThread = new Thread(() ->
        {
            try
            {
                app.run();
            }
            catch (final Throwable t)
            {
                appFailure.set(t);
            }
        }, "nio-http");
        appThread.setDaemon(true);
        appThread.start();
    }

    /** A client socket to the app, made in the namespace; reads time out after 20 s. */
    private Socket connect(final int receiveBuffer) throws IOException
    {
        NetNamespace.enter(ns.name);
        try
        {
            final Socket s = new Socket();
            if (receiveBuffer > 0)
            {
                s.setReceiveBufferSize(receiveBuffer);
            }
            s.setSoTimeout(20_000);
            s.connect(new InetSocketAddress(IP, app.port()), 10_000);
            return s;
        }
        finally
        {
            NetNamespace.restore();
        }
    }

    /** Descriptors of this process open on {@code file}. */
    private static int descriptorsOn(final Path file) throws IOException
    {
        int n = 0;
        try (var fds = Files.newDirectoryStream(Path.of("/proc/self/fd")))
        {
            for (final Path fd : fds)
            {
                try
                {
                    if (Files.readSymbolicLink(fd).equals(file))
                    {
                        n++;
                    }
                }
                catch (final IOException e)
                {
                    // Closed meanwhile (the directory stream's own descriptor among them).
                }
            }
        }
        return n;
    }

    /**
     * The baseline keeps files open in the same open-file cache as {@link HttpApp}, under the same key: after four
     * requests for one file by four names, one descriptor of it stays open. Before, it looked the file up, opened,
     * sized and closed it for every request (none stayed open), work the pipe app does not do per request, which
     * made the benchmark's baseline pay for more than its sockets.
     */
    @Test
    void filesAreServedFromTheOpenFileCache() throws Exception
    {
        final Path root = Files.createDirectory(work.resolve("cached"));
        final Path file = HttpAppExchangeTest.aliasedFile(root).toRealPath();
        start(root, false);
        final String received;
        try (Socket s = connect(0))
        {
            s.getOutputStream().write(HttpAppExchangeTest.ALIASED_REQUESTS.getBytes(StandardCharsets.US_ASCII));
            received = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
        HttpAppExchangeTest.checkAliasedResponses(received);
        assertEquals(1, descriptorsOn(file), "the file open once, in the cache");
        app.stop();
        appThread.join(10_000);
        assertEquals(0, descriptorsOn(file), "closed when the app stops");
        app = null;
    }

    /**
     * A response cut short (here: its file truncated while it is sent, both with sendfile and with {@code --copy}) ends
     * with a reset, as {@link HttpApp} ends it: the client is not told the short stream is whole. Before, the baseline
     * closed the socket with a FIN, and the client read the bytes it got, then a clean end of stream.
     */
    @Test
    void aResponseCutShortEndsWithAReset() throws Exception
    {
        final long size = 32L << 20; // cached (at most 64 MiB), and far more than the socket buffers hold
        for (final boolean copy : new boolean[] {false, true})
        {
            final Path root = Files.createDirectory(work.resolve("cut-" + copy));
            final Path file = root.resolve("big.bin");
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
            {
                raf.setLength(size);
            }
            start(root, copy);
            long got = 0;
            String end;
            try (Socket s = connect(64 * 1024))
            {
                s.getOutputStream().write("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                final InputStream in = s.getInputStream();
                final byte[] buf = new byte[64 * 1024];
                int n = 0;
                while (got < 1 << 20 && (n = in.read(buf)) > 0)
                {
                    got += n;
                }
                assertTrue(got >= 1 << 20, "the transfer under way");
                try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
                {
                    raf.setLength(0);
                }
                try
                {
                    while ((n = in.read(buf)) > 0)
                    {
                        got += n;
                    }
                    end = "end of stream";
                }
                catch (final SocketException e)
                {
                    end = e.getMessage();
                }
            }
            assertTrue(got < size, "copy " + copy + ": got " + got);
            assertEquals("Connection reset", end, "copy " + copy + " after " + got + " bytes");
            stopApp();
        }
    }

    /** As {@link HttpAppExchangeTest#lastModifiedAndIfModifiedSince}: the baseline sends Last-Modified and answers 304. */
    @Test
    void lastModifiedAndIfModifiedSince() throws Exception
    {
        final Path root = Files.createDirectory(work.resolve("conditional"));
        HttpAppExchangeTest.modifiedFile(root);
        start(root, false);
        final String r;
        try (Socket s = connect(0))
        {
            s.getOutputStream().write(HttpAppExchangeTest.conditionalRequests().getBytes(StandardCharsets.US_ASCII));
            r = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
        HttpAppExchangeTest.checkConditionalResponses(r);
    }

    /** As {@link HttpAppExchangeTest#optionsAndConnectAre501WithAllow}: the baseline answers them 501 with Allow. */
    @Test
    void optionsAndConnectAre501WithAllow() throws Exception
    {
        final Path root = Files.createDirectory(work.resolve("forms"));
        start(root, false);
        final java.util.List<String> responses = new java.util.ArrayList<>();
        for (final String request : HttpAppExchangeTest.OTHER_TARGET_FORMS)
        {
            try (Socket s = connect(0))
            {
                s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
                responses.add(new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1));
            }
        }
        HttpAppExchangeTest.checkOtherTargetForms(responses);
    }
}
