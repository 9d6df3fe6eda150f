package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.NetDevice;
import io.nicstack.nic.mem.MemoryWire;

/** The daemon's startup on a memory device (no interface, no ip commands): what it refuses, and how it says so. */
class DaemonCommandTest
{
    @TempDir
    Path dir;

    private final MemoryWire wire = MemoryWire.pair(1500, 16);
    private boolean linkOpened;

    private String[] daemon(final String... options)
    {
        final String[] args = new String[options.length + 5];
        args[0] = "daemon";
        args[1] = "--device";
        args[2] = "tap:nstest0";
        args[3] = "--ip";
        args[4] = "198.18.0.2/24";
        System.arraycopy(options, 0, args, 5, options.length);
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = new DaemonCommand(args, (name, offload, mtu, hostIp) ->
        {
            linkOpened = true;
            return new DaemonCommand.Link()
            {
                @Override
                public NetDevice device()
                {
                    return wire.a();
                }

                @Override
                public void remove()
                {
                }
            };
        }).run(new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {String.valueOf(status), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    private static void assertOneLine(final String err)
    {
        assertTrue(err.startsWith("daemon: ") && err.indexOf('\n') == err.length() - 1, "not one line: " + err);
    }

    @Test
    void pcapInAMissingDirectoryIsOneLineBeforeTheLinkIsOpened() throws Exception
    {
        final String[] r = daemon("--shm", dir.resolve("shm").toString(), "--pcap", dir.resolve("no/such/dir/x.pcap").toString());
        assertEquals("1", r[0], r[2]);
        assertOneLine(r[2]);
        assertTrue(r[2].contains("--pcap"), r[2]);
        assertFalse(linkOpened);
    }

    @Test
    void pcapThatIsADirectoryIsOneLine() throws Exception
    {
        final String[] r = daemon("--shm", dir.resolve("shm").toString(), "--pcap", Files.createDirectory(dir.resolve("p")).toString());
        assertEquals("1", r[0], r[2]);
        assertOneLine(r[2]);
        assertTrue(r[2].contains("--pcap"), r[2]);
        assertFalse(linkOpened);
    }

    /**
     * A --pcap that is a symbolic link is refused before anything is opened: root's daemon followed a link planted at
     * /tmp/lab.pcap and created (a dangling link) or truncated its target. The capture itself refuses links
     * (PcapSymlinkTest); this check runs first, before the tap exists.
     */
    @Test
    void pcapThatIsASymbolicLinkIsRefusedAndItsTargetUntouched() throws Exception
    {
        final Path victim = dir.resolve("victim");
        final Path dangling = Files.createSymbolicLink(dir.resolve("dangling.pcap"), victim);
        String[] r = daemon("--shm", dir.resolve("shm").toString(), "--pcap", dangling.toString());
        assertEquals("1", r[0], r[2]);
        assertOneLine(r[2]);
        assertTrue(r[2].contains("symbolic link"), r[2]);
        assertFalse(Files.exists(victim), "the dangling link's target was created");
        assertFalse(linkOpened);

        Files.writeString(victim, "keep");
        final Path link = Files.createSymbolicLink(dir.resolve("link.pcap"), victim);
        r = daemon("--shm", dir.resolve("shm").toString(), "--pcap", link.toString());
        assertEquals("1", r[0], r[2]);
        assertTrue(r[2].contains("symbolic link"), r[2]);
        assertEquals("keep", Files.readString(victim));
        assertFalse(linkOpened);
    }

    /**
     * A named pipe (a live capture: tcpdump -r, wireshark -k -i) is not opened by the up-front check: without a reader
     * that open would block the daemon's start, and with one it would end the reader's capture before the pcap header.
     */
    @Test
    void pcapThatIsANamedPipeIsNotOpenedByTheCheck() throws Exception
    {
        final Path fifo = dir.resolve("live.pcap");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        try
        {
            org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(10),
                () -> DaemonCommand.checkWritable(fifo));
        }
        finally
        {
            // A check that did open it waits for a reader: opening for reading and writing never blocks, and frees it.
            new java.io.RandomAccessFile(fifo.toFile(), "rw").close();
        }
    }

    @Test
    void plantedShmIsRefusedBeforeTheLinkIsOpened() throws Exception
    {
        final Path target = Files.createDirectory(dir.resolve("target"));
        final Path link = Files.createSymbolicLink(dir.resolve("shm"), target);
        final String[] r = daemon("--shm", link.toString());
        assertEquals("1", r[0], r[2]);
        assertOneLine(r[2]);
        assertFalse(linkOpened);
    }

    /** The address {@link DaemonCommand#openTap} gives {@code ip addr replace} for the kernel side, with {@code options}. */
    private String kernelSideAddress(final String... options) throws Exception
    {
        final String[] args = new String[options.length + 5];
        args[0] = "daemon";
        args[1] = "--device";
        args[2] = "tap:nstest0";
        args[3] = "--shm";
        args[4] = dir.resolve("shm").toString();
        System.arraycopy(options, 0, args, 5, options.length);
        final String[] given = new String[1];
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = new DaemonCommand(args, (name, offload, mtu, hostIp) ->
        {
            given[0] = hostIp;
            throw new java.io.IOException("not opened: a test");
        }).run(new PrintStream(new ByteArrayOutputStream(), true), new PrintStream(err, true));
        assertEquals(1, status, err.toString(StandardCharsets.UTF_8));
        return given[0];
    }

    /**
     * A --host-ip without a prefix takes the daemon's (--ip's): the kernel side is on the same subnet. Before, the bare
     * address went to {@code ip addr replace} as it was, which makes it a /32: the kernel had no route to the daemon
     * ("Network is unreachable"), while the option was documented as a /24.
     */
    @Test
    void aHostIpWithoutPrefixTakesTheDaemonsPrefix() throws Exception
    {
        assertEquals("198.18.0.1/24", kernelSideAddress("--ip", "198.18.0.2/24", "--host-ip", "198.18.0.1"));
        assertEquals("198.18.0.1/15", kernelSideAddress("--ip", "198.19.255.1/15", "--host-ip", "198.18.0.1"));
        assertEquals("198.18.0.1/24", kernelSideAddress("--ip", "198.18.0.2", "--host-ip", "198.18.0.1"));
        assertEquals("198.18.0.1/24", kernelSideAddress("--ip", "198.18.0.2/24", "--host-ip", "198.18.0.1/24"));
        assertEquals(null, kernelSideAddress("--ip", "198.18.0.2/24"));
    }
}
