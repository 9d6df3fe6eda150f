package io.nicstack.examples;

import io.nicstack.daemon.Netns;
import io.nicstack.daemon.DaemonProcess;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The example apps against the Linux kernel: the daemon on a tap in a namespace this test creates
 * (198.18.0.2, kernel side 198.18.0.1), the apps as child JVMs attached through shared memory, and
 * curl, wrk and python sockets in the namespace as the peers. Needs root, curl, wrk and
 * /usr/bin/python3 (scripts/install-deps.sh installs them).
 */
@Tag("kernel")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class KernelAppTest
{
    static final String DAEMON_IP = "198.18.0.2";
    static final String PYTHON = "/usr/bin/python3";
    static final String FILE_BYTES = "pipes: file bytes read into TX pipes";

    private Netns ns;
    private Path work;
    private Path shm;
    private Path www;
    private String bigSha256;
    private DaemonProcess daemon;

    @BeforeAll
    void start() throws Exception
    {
        assertEquals("0", Netns.run(5, "id", "-u").output().strip(), "kernel tests need root");
        for (final String tool : new String[] {"curl", "wrk", "ss", PYTHON})
        {
            assertEquals(0, Netns.run(5, "sh", "-c", "command -v " + tool).exitCode(),
                tool + " is missing: run scripts/install-deps.sh as root");
        }
        work = Netns.workDir("nicstack-apps");
        www = Files.createDirectory(work.resolve("www"));
        bigSha256 = writeRandomFile(www.resolve("big.bin"), 100L << 20, 42);
        Files.writeString(www.resolve("small.txt"), "hello from a host app on nicstack\n");
        Files.writeString(www.resolve("index.html"), "<html><body>nicstack</body></html>\n");
        Files.writeString(work.resolve("secret.txt"), "outside the root\n");
        shm = Files.createDirectory(work.resolve("shm"));
        ns = new Netns();
        daemon = new DaemonProcess(ns, shm, "--device", "tap:nstap0", "--ip", DAEMON_IP + "/24",
            "--host-ip", "198.18.0.1/24");
        daemon.awaitReady();
    }

    @AfterAll
    void stop() throws Exception
    {
        DaemonProcess.stopAndCleanUp(daemon, ns, work);
    }

    /** A file of seeded random bytes; returns its SHA-256. */
    static String writeRandomFile(final Path file, final long size, final long seed) throws Exception
    {
        final MessageDigest sha = MessageDigest.getInstance("SHA-256");
        final Random rnd = new Random(seed);
        final byte[] chunk = new byte[1 << 20];
        try (OutputStream out = Files.newOutputStream(file))
        {
            for (long done = 0; done < size; done += chunk.length)
            {
                rnd.nextBytes(chunk);
                final int n = (int)Math.min(chunk.length, size - done);
                out.write(chunk, 0, n);
                sha.update(chunk, 0, n);
            }
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    static String sha256(final Path file) throws Exception
    {
        final MessageDigest sha = MessageDigest.getInstance("SHA-256");
        try (var in = Files.newInputStream(file))
        {
            final byte[] buf = new byte[1 << 20];
            int n;
            while ((n = in.read(buf)) > 0)
            {
                sha.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    private AppProcess startHttp(final int port) throws Exception
    {
        final AppProcess app = new AppProcess(shm, "http", "--port", String.valueOf(port), "--root", www.toString());
        assertEquals("nicstack app ready http " + port, app.awaitReady());
        return app;
    }

    /** A counter of the running daemon, as {@code nicstack stats} prints it (0 when it leaves it out). */
    private long counter(final String label)
    {
        final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        final java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        assertEquals(0, io.nicstack.daemon.Main.run(new String[] {"stats", "--shm", shm.toString()},
            new java.io.PrintStream(out, true), new java.io.PrintStream(err, true)), err.toString());
        assertTrue(out.toString().startsWith("nicstack counters"), out.toString());
        final Matcher m = Pattern.compile("(\\d+)  " + Pattern.quote(label) + "\n").matcher(out.toString());
        return m.find() ? Long.parseLong(m.group(1)) : 0; // stats leaves out counters that are 0
    }

    private static void stopApp(final AppProcess app) throws InterruptedException
    {
        try
        {
            assertEquals(0, app.stop(), app.text());
        }
        finally
        {
            app.close();
        }
    }

    @Test
    void curlDownloads100MegabytesByteExact() throws Exception
    {
        final AppProcess app = startHttp(80);
        try
        {
            final Path out = work.resolve("download.bin");
            final long fileBytes = counter(FILE_BYTES);
            ns.exec(150, "curl", "-sS", "--fail", "--max-time", "120", "-o", out.toString(),
                "http://" + DAEMON_IP + "/big.bin").assertOk("curl big.bin");
            assertEquals(100L << 20, Files.size(out));
            assertEquals(bigSha256, sha256(out), "downloaded file differs");
            assertEquals(100L << 20, counter(FILE_BYTES) - fileBytes, "the body went by SEND_FILE: the daemon read it");
            Files.delete(out);

            // Headers, HEAD, 404, traversal, and two requests on one kept-alive connection.
            final String head = ns.exec(20, "curl", "-sS", "-I", "http://" + DAEMON_IP + "/big.bin")
                .assertOk("curl -I").output();
            assertTrue(head.startsWith("HTTP/1.1 200"), head);
            assertTrue(head.contains("Content-Length: " + (100L << 20)), head);
            assertTrue(head.contains("Content-Type: application/octet-stream"), head);
            final String codes = ns.exec(20, "curl", "-s", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
                "-w", "%{http_code} %{num_connects}\\n",
                "http://" + DAEMON_IP + "/small.txt", "http://" + DAEMON_IP + "/missing",
                "http://" + DAEMON_IP + "/").assertOk("curl keep-alive").output();
            assertEquals("200 1\n404 0\n200 0\n", codes, "one connection reused for three requests");
            final String traversal = ns.exec(20, "curl", "-s", "--path-as-is", "-o", "/dev/null", "-w", "%{http_code}",
                "http://" + DAEMON_IP + "/../secret.txt").assertOk("curl traversal").output();
            assertTrue(traversal.equals("403") || traversal.equals("404"), traversal);
        }
        finally
        {
            stopApp(app);
        }
    }

    /** {@code --copy}: the app copies bodies into the TX pipe itself, and the bytes are the same. */
    @Test
    void theCopyingAppServesTheSameBytes() throws Exception
    {
        final AppProcess app = new AppProcess(shm, "http", "--port", "8085", "--root", www.toString(), "--copy");
        assertEquals("nicstack app ready http 8085", app.awaitReady());
        try
        {
            final Path out = work.resolve("copied.bin");
            final long fileBytes = counter(FILE_BYTES);
            ns.exec(150, "curl", "-sS", "--fail", "--max-time", "120", "-o", out.toString(),
                "http://" + DAEMON_IP + ":8085/big.bin").assertOk("curl big.bin");
            assertEquals(bigSha256, sha256(out), "downloaded file differs");
            assertEquals(fileBytes, counter(FILE_BYTES), "no SEND_FILE with --copy");
            Files.delete(out);
        }
        finally
        {
            stopApp(app);
        }
    }

    /**
     * A daemon that will not read the app's file (here: it lies on ramfs, a filesystem the daemon does not read from)
     * refuses SEND_FILE; the app says so once, copies the body itself, and curl gets the same bytes.
     */
    @Test
    void aRefusedSendFileFallsBackToCopying() throws Exception
    {
        final Path ram = Files.createDirectory(www.resolve("ram"));
        Netns.run(10, "mount", "-t", "ramfs", "nicstack-test-ramfs", ram.toString()).assertOk("mount ramfs");
        final AppProcess app = startHttp(8086);
        try
        {
            final String sha = writeRandomFile(ram.resolve("r.bin"), 20L << 20, 17);
            final long refused = counter("pipes: SEND_FILE refused");
            final long fileBytes = counter(FILE_BYTES);
            final Path out = work.resolve("fallback.bin");
            for (int i = 0; i < 2; i++)
            {
                ns.exec(60, "curl", "-sS", "--fail", "--max-time", "50", "-o", out.toString(),
                    "http://" + DAEMON_IP + ":8086/ram/r.bin").assertOk("curl ram/r.bin");
                assertEquals(sha, sha256(out), "downloaded file differs (" + i + ")");
            }
            assertEquals(1, counter("pipes: SEND_FILE refused") - refused, "asked once, then copied without asking");
            assertEquals(fileBytes, counter(FILE_BYTES));
            assertNotNull(app.awaitLine(l -> l.contains("the daemon refused SEND_FILE"), 5), app.text());
            Files.delete(out);
        }
        finally
        {
            // The ramfs is mounted in the host's mount namespace: unmount it even when stopApp throws.
            try
            {
                stopApp(app);
            }
            finally
            {
                Netns.Result umount = Netns.run(10, "umount", ram.toString());
                if (umount.exitCode() != 0)
                {
                    umount = Netns.run(10, "umount", "-l", ram.toString());
                }
                if (umount.exitCode() == 0)
                {
                    Files.deleteIfExists(ram);
                }
                else
                {
                    System.err.println("[kernel app] WARNING: could not unmount the ramfs at " + ram + ": " + umount.output());
                }
            }
        }
    }

    @Test
    void fiveHundredConcurrentKeepAliveConnections() throws Exception
    {
        final AppProcess app = startHttp(8000);
        try
        {
            final Netns.Result wrk = ns.exec(60, "wrk", "-t2", "-c500", "-d5s", "--timeout", "10s",
                "http://" + DAEMON_IP + ":8000/small.txt").assertOk("wrk");
            final String text = wrk.output();
            assertFalse(text.contains("Socket errors"), "socket errors:\n" + text);
            assertFalse(text.contains("Non-2xx"), "non-2xx responses:\n" + text);
            final Matcher m = Pattern.compile("(\\d+) requests in").matcher(text);
            assertTrue(m.find(), text);
            assertTrue(Long.parseLong(m.group(1)) >= 500, "every connection made requests:\n" + text);
            System.out.println("wrk -t2 -c500 -d5s against the HTTP app:\n" + text);
        }
        finally
        {
            stopApp(app);
        }
    }

    /** Kernel side: sends SIZE seeded bytes to the stalled sink, samples ss while it stalls. */
    static final String SLOW_PEER = String.join("\n",
        "import hashlib, json, random, socket, subprocess, sys, threading, time",
        "host, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])",
        "def probes():",
        "    lines = open('/proc/net/netstat').read().splitlines()",
        "    for i in range(0, len(lines), 2):",
        "        if lines[i].startswith('TcpExt:'):",
        "            d = dict(zip(lines[i].split()[1:], lines[i + 1].split()[1:]))",
        "            return int(d.get('TCPWinProbe', 0))",
        "    return 0",
        "data = random.Random(7).randbytes(size)",
        "before = probes()",
        "s = socket.socket()",
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)",
        "s.settimeout(60)",
        "s.connect((host, port))",
        "sent = {'done': False}",
        "def send():",
        "    s.sendall(data)",
        "    s.shutdown(socket.SHUT_WR)",
        "    sent['done'] = True",
        "t = threading.Thread(target=send)",
        "t.start()",
        "samples = []",
        "for _ in range(6):",
        "    time.sleep(0.4)",
        "    samples.append(subprocess.run(['ss', '-tino', 'dst', host + ':' + str(port)],",
        "                                  capture_output=True, text=True).stdout)",
        "t.join(120)",
        "while s.recv(65536):",
        "    pass",
        "s.close()",
        "sendq = 0",
        "for out in samples:",
        "    for line in out.splitlines():",
        "        f = line.split()",
        "        if len(f) >= 3 and f[0] == 'ESTAB':",
        "            sendq = max(sendq, int(f[2]))",
        "print(json.dumps({'sha256': hashlib.sha256(data).hexdigest(), 'done': sent['done'], 'maxSendQ': sendq,",
        "                  'persist': any('persist' in o for o in samples), 'winProbes': probes() - before,",
        "                  'samples': samples}))");

    @Test
    void slowAppMakesTheKernelSeeAZeroWindowAndNothingIsLost() throws Exception
    {
        final int size = 8 << 20;
        final AppProcess app = new AppProcess(shm, "bulk", "--mode", "sink", "--port", "5001", "--digest",
            "--pause-ms", "3000", "--pipe-kb", "64");
        try
        {
            app.awaitReady();
            final Netns.Result peer = ns.exec(150, PYTHON, "-c", SLOW_PEER, DAEMON_IP, "5001", String.valueOf(size))
                .assertOk("slow peer");
            final String json = peer.output().strip();
            final String line = app.awaitLine(l -> l.startsWith("bulk sink"), 30);
            assertNotNull(line, "no report from the sink:\n" + app.text());
            System.out.println("kernel sender vs stalled app: " + json.replaceAll(", \"samples\".*", "}")
                + "\n" + line);
            assertTrue(json.contains("\"done\": true"), json);
            assertTrue(line.contains(" bytes=" + size + " "), line);
            final Matcher sha = Pattern.compile("\"sha256\": \"([0-9a-f]+)\"").matcher(json);
            assertTrue(sha.find(), json);
            assertTrue(line.contains("sha256=" + sha.group(1)), "nothing lost, nothing changed: " + line);
            // The 64 KiB RX pipe is the receive window: while the app stalls, the kernel's send queue builds
            // up and it probes a zero window (persist timer, TCPWinProbe).
            final Matcher q = Pattern.compile("\"maxSendQ\": (\\d+)").matcher(json);
            assertTrue(q.find());
            assertTrue(Long.parseLong(q.group(1)) > 32 * 1024, "send queue should build up: " + json);
            assertTrue(json.contains("\"persist\": true") || !json.contains("\"winProbes\": 0"),
                "kernel should see a zero window (persist timer or window probes): " + json);
        }
        finally
        {
            stopApp(app);
        }
    }

    @Test
    void killingTheAppResetsThePeerAndANewAppServes() throws Exception
    {
        AppProcess app = startHttp(8080);
        final long deadPid = app.pid();
        final Process curl;
        try
        {
            curl = ns.start("curl", "-sS", "--limit-rate", "2M", "--max-time", "60", "-o", "/dev/null",
                "http://" + DAEMON_IP + ":8080/big.bin");
            Thread.sleep(2000);
            assertTrue(curl.isAlive(), "the transfer should still be running");
        }
        finally
        {
            app.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            app.close();
        }
        assertTrue(curl.waitFor(30, TimeUnit.SECONDS), "curl should fail soon after the app died");
        final String curlOut = new String(curl.getInputStream().readAllBytes());
        assertNotEquals(0, curl.exitValue(), curlOut);
        assertTrue(curlOut.contains("reset") || curlOut.contains("Recv failure"), "expected a reset: " + curlOut);

        // The daemon reclaims the dead app's file and its listener; a new app attaches and serves.
        final Path appsDir = shm.resolve("apps");
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        boolean gone = false;
        while (!gone && System.nanoTime() < deadline)
        {
            try (var files = Files.list(appsDir))
            {
                gone = files.noneMatch(p -> p.getFileName().toString().contains("-" + deadPid + "."));
            }
            Thread.sleep(100);
        }
        assertTrue(gone, "the dead app's shared memory should be reclaimed");
        String ready = null;
        for (int attempt = 0; attempt < 20 && ready == null; attempt++)
        {
            app = new AppProcess(shm, "http", "--port", "8080", "--root", www.toString());
            ready = app.awaitReadyOrExit();
            if (ready == null)
            {
                app.close();
                Thread.sleep(500); // the old listener may not be released yet
            }
        }
        assertNotNull(ready, "no new app could listen on 8080: " + app.text());
        try
        {
            final String body = ns.exec(20, "curl", "-sS", "--fail", "http://" + DAEMON_IP + ":8080/small.txt")
                .assertOk("curl after restart").output();
            assertEquals("hello from a host app on nicstack\n", body);
        }
        finally
        {
            stopApp(app);
        }
    }

    /**
     * A file truncated while it is served (from the app's open-file cache): that transfer is reset, everything
     * the client got before is the file's beginning byte for byte (nothing that is not the file went out),
     * and the app serves on, the file's new content included.
     */
    @Test
    void truncatingAFileWhileItIsServedResetsThatTransferAndTheAppServesOn() throws Exception
    {
        final long size = 32L << 20; // small enough for the app's file cache; large enough for SEND_FILE
        final Path file = www.resolve("shrink.bin");
        writeRandomFile(file, size, 9);
        final Path out = work.resolve("shrink.out");
        final AppProcess app = startHttp(8082);
        try
        {
            final Process curl = ns.start("curl", "-sS", "--limit-rate", "2M", "--max-time", "60", "-o", out.toString(),
                "http://" + DAEMON_IP + ":8082/shrink.bin");
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (curl.isAlive() && System.nanoTime() < deadline && (!Files.exists(out) || Files.size(out) < (1 << 20)))
            {
                Thread.sleep(50);
            }
            assertTrue(curl.isAlive() && Files.size(out) >= 1 << 20, "the transfer should be under way");
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
            {
                raf.setLength(0);
            }
            assertTrue(curl.waitFor(30, TimeUnit.SECONDS), "curl should fail soon after the truncation");
            final String curlOut = new String(curl.getInputStream().readAllBytes());
            assertNotEquals(0, curl.exitValue(), "the response cannot be complete: " + curlOut);
            final long got = Files.size(out);
            assertTrue(got >= 1 << 20 && got < size, "got " + got);
            assertTrue(isPrefixOfRandomFile(out, 9), "the bytes received are the file's first " + got);

            Files.writeString(file, "after the truncation\n");
            final String body = ns.exec(20, "curl", "-sS", "--fail", "http://" + DAEMON_IP + ":8082/shrink.bin")
                .assertOk("curl after the truncation").output();
            assertEquals("after the truncation\n", body);
        }
        finally
        {
            stopApp(app);
            Files.deleteIfExists(out);
            Files.deleteIfExists(file);
        }
    }

    /**
     * An HTTP app with 4 connection slots answers 20 sequential {@code Connection: close} requests: the app closes
     * first each time, so the daemon's side of every connection sits in TIME-WAIT for a minute, but the slot comes
     * back when TIME-WAIT starts, not when it ends.
     */
    @Test
    void closingFirstDoesNotRunAnAppOutOfSlots() throws Exception
    {
        final Path file = www.resolve("close-first.txt"); // its own file: small.txt belongs to the other tests
        Files.writeString(file, "small\n");
        final AppProcess app = new AppProcess(shm, "http", "--port", "8084", "--root", www.toString(), "--max-connections", "4");
        try
        {
            assertEquals("nicstack app ready http 8084", app.awaitReady());
            for (int i = 0; i < 20; i++)
            {
                final String body = ns.exec(20, "curl", "-sS", "--fail", "-H", "Connection: close",
                    "http://" + DAEMON_IP + ":8084/close-first.txt").assertOk("request " + i).output();
                assertEquals("small\n", body, "request " + i);
            }
        }
        finally
        {
            stopApp(app);
            Files.deleteIfExists(file);
        }
    }

    /** Whether {@code file} holds the first bytes of {@link #writeRandomFile}'s output for {@code seed}. */
    static boolean isPrefixOfRandomFile(final Path file, final long seed) throws IOException
    {
        final Random rnd = new Random(seed);
        final byte[] expected = new byte[1 << 20];
        final byte[] actual = new byte[1 << 20];
        try (InputStream in = Files.newInputStream(file))
        {
            while (true)
            {
                final int n = in.readNBytes(actual, 0, actual.length);
                if (n == 0)
                {
                    return true;
                }
                rnd.nextBytes(expected);
                if (!Arrays.equals(expected, 0, n, actual, 0, n))
                {
                    return false;
                }
            }
        }
    }

    /** The app caches files for a short while: a replaced file, then a removed one, are noticed within seconds. */
    @Test
    void aReplacedOrRemovedFileIsNoticed() throws Exception
    {
        final Path file = www.resolve("swap.txt");
        Files.writeString(file, "first version\n");
        final String url = "http://" + DAEMON_IP + ":8083/swap.txt";
        final AppProcess app = startHttp(8083);
        try
        {
            assertEquals("first version\n", ns.exec(20, "curl", "-sS", "--fail", url).assertOk("curl").output());
            final Path next = www.resolve(".swap.tmp");
            Files.writeString(next, "the second, longer version\n");
            Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            assertEquals("the second, longer version\n", awaitBody(url, "the second, longer version\n"));
            Files.delete(file);
            assertEquals("404", awaitBody(url, "404"));
        }
        finally
        {
            stopApp(app);
            Files.deleteIfExists(file);
        }
    }

    /** GET {@code url} (body, or the status code if not 2xx) until it is {@code expected}, for up to 5 s; the last answer. */
    private String awaitBody(final String url, final String expected) throws Exception
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        String last;
        do
        {
            final Netns.Result r = ns.exec(20, "curl", "-sS", "-w", "%{http_code}", url);
            final String code = r.output().substring(Math.max(0, r.output().length() - 3));
            last = code.startsWith("2") ? r.output().substring(0, r.output().length() - 3) : code;
            if (last.equals(expected))
            {
                break;
            }
            Thread.sleep(20);
        }
        while (System.nanoTime() < deadline);
        return last;
    }

    static final String RAW_HTTP = String.join("\n",
        "import socket, sys",
        "host, port = sys.argv[1], int(sys.argv[2])",
        "def ask(raw):",
        "    s = socket.create_connection((host, port), timeout=10)",
        "    s.sendall(raw)",
        "    out = b''",
        "    try:",
        "        while True:",
        "            b = s.recv(65536)",
        "            if not b:",
        "                break",
        "            out += b",
        "    except ConnectionResetError:",
        "        out += b'<reset>'",
        "    s.close()",
        "    return out.split(b'\\r\\n', 1)[0].decode('latin-1')",
        "cases = [",
        "    b'GARBAGE\\r\\n\\r\\n',",
        "    b'GET / HTTP/1.1\\r\\n\\r\\n',",
        "    b'GET /small.txt HTTP/1.1\\r\\nHost: x\\r\\nBad Header: y\\r\\n\\r\\n',",
        "    b'GET / HTTP/1.1\\r\\nHost: x\\r\\nX: ' + b'a' * 10000 + b'\\r\\n\\r\\n',",
        "    b'\\x00\\xff\\x13garbage\\xfe\\r\\n\\r\\n',",
        "    b'POST / HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 0\\r\\n\\r\\n',",
        "    b'GET /../secret.txt HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n',",
        "    b'GET /%2e%2e/secret.txt HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n',",
        "    b'GET /small.txt HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n',",
        "    b'GET /small.txt HTTP/1.1\\r\\nHost: x\\r\\n\\r\\nGET /index.html HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n',",
        "]",
        "for c in cases:",
        "    print(ask(c))");

    @Test
    void malformedHttpGets400() throws Exception
    {
        final AppProcess app = startHttp(8081);
        try
        {
            final String[] lines = ns.exec(60, PYTHON, "-c", RAW_HTTP, DAEMON_IP, "8081").assertOk("raw http")
                .output().strip().split("\n");
            assertEquals(10, lines.length, String.join("\n", lines));
            assertEquals("HTTP/1.1 400 Bad Request", lines[0]);
            assertEquals("HTTP/1.1 400 Bad Request", lines[1]);
            assertEquals("HTTP/1.1 400 Bad Request", lines[2]);
            assertEquals("HTTP/1.1 431 Request Header Fields Too Large", lines[3]);
            assertEquals("HTTP/1.1 400 Bad Request", lines[4]);
            assertEquals("HTTP/1.1 501 Not Implemented", lines[5]);
            assertTrue(lines[6].equals("HTTP/1.1 403 Forbidden") || lines[6].equals("HTTP/1.1 404 Not Found"), lines[6]);
            assertTrue(lines[7].equals("HTTP/1.1 403 Forbidden") || lines[7].equals("HTTP/1.1 404 Not Found"), lines[7]);
            assertEquals("HTTP/1.1 200 OK", lines[8]);
            assertEquals("HTTP/1.1 200 OK", lines[9]);
            // And the app is still serving.
            ns.exec(20, "curl", "-sS", "--fail", "-o", "/dev/null", "http://" + DAEMON_IP + ":8081/small.txt")
                .assertOk("curl after malformed requests");
        }
        finally
        {
            stopApp(app);
        }
    }

    @Test
    void echoAndBulkSource() throws Exception
    {
        final AppProcess echo = new AppProcess(shm, "echo", "--port", "7007");
        final AppProcess source = new AppProcess(shm, "bulk", "--mode", "source", "--port", "5002");
        try
        {
            echo.awaitReady();
            source.awaitReady();
            final String script = String.join("\n",
                "import random, socket, sys, threading",
                "host = sys.argv[1]",
                "data = random.Random(3).randbytes(3_000_000)",
                "s = socket.create_connection((host, 7007), timeout=30)",
                "def send():",
                "    s.sendall(data)",
                "    s.shutdown(socket.SHUT_WR)",
                "t = threading.Thread(target=send); t.start()",
                "back = bytearray()",
                "while True:",
                "    b = s.recv(65536)",
                "    if not b: break",
                "    back += b",
                "t.join()",
                "print('echo', 'exact' if bytes(back) == data else 'WRONG %d' % len(back))",
                "s = socket.create_connection((host, 5002), timeout=30)",
                "got = bytearray()",
                "while len(got) < 5_000_000:",
                "    b = s.recv(65536)",
                "    if not b: break",
                "    got += b",
                "s.close()",
                "ok = all(got[i] == i % 251 for i in range(len(got)))",
                "print('source', len(got) >= 5_000_000 and ok)");
            final String out = ns.exec(60, PYTHON, "-c", script, DAEMON_IP).assertOk("echo/source peer").output();
            assertTrue(out.contains("echo exact"), out);
            assertTrue(out.contains("source True"), out);
            assertNotNull(source.awaitLine(l -> l.startsWith("bulk source"), 20), source.text());
        }
        finally
        {
            stopApp(echo);
            stopApp(source);
        }
    }
}
