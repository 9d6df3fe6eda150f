package io.nicstack.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.pipes.client.ClientOptions;
import io.nicstack.pipes.client.NicstackClient;
import io.nicstack.pipes.client.PipeListener;

/**
 * Whole requests through the HTTP app over an in-process daemon ({@link InProcessDaemon}, no kernel interface): a
 * peer on stack B writes requests on one connection, the last with {@code Connection: close}, and reads every response
 * until the app ends the stream.
 */
class HttpAppExchangeTest
{
    @TempDir
    Path tmp;

    private InProcessDaemon daemon;
    private NicstackClient client;
    private HttpApp http;
    private AppServer app;

    @AfterEach
    void tearDown() throws Exception
    {
        if (app != null)
        {
            app.stop();
        }
        if (client != null)
        {
            client.close();
        }
        if (daemon != null)
        {
            daemon.close();
        }
    }

    /** The app serving {@code root} (bodies copied), 64 KiB pipes. */
    private void start(final Path root) throws Exception
    {
        daemon = new InProcessDaemon(tmp);
        final ClientOptions options = new ClientOptions();
        options.maxConnections = 4;
        options.pipeCapacity = 64 * 1024;
        client = daemon.attach("http", options);
        final PipeListener listener = client.listen(8080, 4);
        http = new HttpApp(new StaticFiles(root), false);
        app = new AppServer(client, listener, http::handler);
    }

    /** What the peer received for {@code requests}, written at once on one connection, until the app ended it. */
    private String exchange(final String requests) throws Exception
    {
        final InProcessDaemon.Peer peer = new InProcessDaemon.Peer(null, true);
        daemon.connect(8080, peer);
        InProcessDaemon.spinUntil("connected", () -> peer.connection != null, app::doWork);
        daemon.onLoop(() ->
        {
            peer.write(requests);
            return null;
        });
        InProcessDaemon.spinUntil("the app to end the stream", peer::ended, app::doWork);
        return peer.received();
    }

    private static int count(final String s, final String what)
    {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1))
        {
            n++;
        }
        return n;
    }

    /**
     * Names of one file that differ only in empty, {@code .} and {@code ..} segments share one cache entry (one open
     * file, one share of the cache's bytes). Before, the cache was keyed by the decoded request path as sent: each
     * alias (a client can make any number) got an entry and a descriptor of its own, here four.
     */
    @Test
    void aliasesOfOneFileShareOneCacheEntry() throws Exception
    {
        final Path root = Files.createDirectory(tmp.resolve("root"));
        Files.writeString(root.resolve("x.txt"), "x\n");
        Files.createDirectory(root.resolve("a"));
        start(root);
        final String r = exchange("GET /x.txt HTTP/1.1\r\nHost: h\r\n\r\n"
            + "GET //x.txt HTTP/1.1\r\nHost: h\r\n\r\n"
            + "GET /./x.txt HTTP/1.1\r\nHost: h\r\n\r\n"
            + "GET /a/../x.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        assertEquals(4, count(r, "HTTP/1.1 200 OK\r\n"), r);
        assertEquals(4, count(r, "\r\n\r\nx\n"), r);
        assertEquals(1, http.cachedFiles(), "one file, one entry");
    }
}
