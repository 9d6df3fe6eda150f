package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Options of {@code nicstack daemon}: a configuration that cannot work is refused up front with a one-line
 * {@link UsageException} (Main prints it, exit 2). Only the constructor runs: no device is opened.
 */
class DaemonOptionsTest
{
    private static String[] args(final String options)
    {
        return ("daemon --device tap:x " + options).trim().split(" ");
    }

    /** Each: the options after --device, and a word the message must contain (the option's name). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--ip 198.18.0.255/24                          | --ip 198.18.0.255/24: the broadcast address",
        "--ip 198.18.0.0/24                            | --ip 198.18.0.0/24: the network address",
        "--ip 0.0.0.0/24                               | --ip 0.0.0.0/24",
        "--ip 224.0.0.1/24                             | multicast",
        "--ip 127.0.0.1/8                              | loopback",
        "--ip 240.0.0.1/8                              | reserved",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.2/24    | --host-ip 198.18.0.2/24: the daemon's own address",
        "--ip 198.18.0.2/24 --host-ip 10.1.1.1/8       | --host-ip 10.1.1.1/8: not on the daemon's subnet",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.255/24  | --host-ip 198.18.0.255/24: the broadcast address",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.1/16    | --host-ip 198.18.0.1/16: prefix /16, but the daemon's subnet (--ip) is 198.18.0.0/24",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.1/30    | --host-ip 198.18.0.1/30: prefix /30, but the daemon's subnet (--ip) is 198.18.0.0/24",
        "--ip 198.18.0.2/24 --gateway 10.9.9.9         | --gateway 10.9.9.9: not on the daemon's subnet",
        "--ip 198.18.0.2/24 --gateway 198.18.0.2       | --gateway 198.18.0.2: the daemon's own address",
        "--ip 198.18.0.2/24 --gateway 198.18.0.0       | --gateway 198.18.0.0: the network address",
        "--ip 198.18.0.2/24 --ip 198.19.7.7/16         | option --ip given twice",
        "--ip 198.18.0.2/24 --no-offload --no-offload  | option --no-offload given twice",
        "--ip 198.18.0.2/24 --mac 00:00:00:00:00:00    | --mac 00:00:00:00:00:00: must be a unicast address",
        "--ip 198.18.0.2/24 --mac 01:00:5e:00:00:01    | --mac 01:00:5e:00:00:01: must be a unicast address",
        "--ip 198.18.0.2/24 --mac ff:ff:ff:ff:ff:ff    | --mac ff:ff:ff:ff:ff:ff: must be a unicast address",
        "--ip 198.18.0.2/24 --shm=                     | option --shm needs a value (got an empty one)",
        "--ip 198.18.0.2/24 --services echo,echo       | --services echo,echo: echo given twice",
        "--ip 198.18.0.2/24 --services ,               | --services ,: an empty name between commas",
        "--ip 198.18.0.2/24 --services echo,           | --services echo,: an empty name between commas",
        "--ip 198.18.0.2/24 --faults ,                 | --faults ,: an empty setting between commas",
        "--ip 198.18.0.2/24 --faults loss=0.1,,dup=0.1 | --faults loss=0.1,,dup=0.1: an empty setting between commas",
    })
    void wrongConfigurationIsRefused(final String options, final String expected)
    {
        assertRefused(args(options), expected);
    }

    private static void assertRefused(final String[] args, final String expected)
    {
        final UsageException e = assertThrows(UsageException.class, () -> new DaemonCommand(args));
        assertTrue(e.getMessage().startsWith("daemon: ") && e.getMessage().contains(expected), e.getMessage());
        assertTrue(e.getMessage().indexOf('\n') < 0, e.getMessage());
    }

    /** A value that does not parse: the message names the option and the form expected, not Java's parser. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--ip 198.18.0.2/24 --mtu abc         | --mtu abc: expected a number of bytes, 576..9000",
        "--ip 198.18.0.2/24 --mtu 100         | --mtu 100: expected a number of bytes, 576..9000",
        "--ip 198.18.0.2/24 --ttl 0           | --ttl 0: expected a number of hops, 1..255",
        "--ip 198.18.0.2/24 --ttl 256         | --ttl 256: expected a number of hops, 1..255",
        "--ip 198.18.0.2/24 --ttl x           | --ttl x: expected a number of hops, 1..255",
        "--ip 198.18.0.2/                     | --ip 198.18.0.2/: expected A.B.C.D/N, N a prefix length 1..30",
        "--ip 198.18.0.2/33                   | --ip 198.18.0.2/33: expected A.B.C.D/N",
        "--ip 198.18.0/24                     | --ip 198.18.0/24: expected A.B.C.D/N",
        "--ip 198.18.0.2/+24                  | --ip 198.18.0.2/+24: expected A.B.C.D/N, N a prefix length 1..30",
        "--ip 198.18.0.2/\u0662\u0664          | --ip 198.18.0.2/\u0662\u0664: expected A.B.C.D/N, N a prefix length 1..30",
        "--ip 198.18.0.2/024                  | --ip 198.18.0.2/024: expected A.B.C.D/N, N a prefix length 1..30",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.1/\uff12\uff14 | --host-ip 198.18.0.1/\uff12\uff14: expected A.B.C.D/N",
        "--ip 198.18.0.2/24 --host-ip 1.2.3/8 | --host-ip 1.2.3/8: expected A.B.C.D/N",
        "--ip 198.18.0.2/24 --gateway 1.2.3   | --gateway 1.2.3: expected A.B.C.D",
        "--ip 198.18.0.2/24 --mac zz          | --mac zz: expected aa:bb:cc:dd:ee:ff",
        "--ip 198.18.0.2/24 --faults loss=2   | --faults loss=2: fault loss must be a probability",
    })
    void unparsableValueNamesTheOptionAndTheForm(final String options, final String expected)
    {
        assertRefused(args(options), expected);
    }

    /**
     * A number of bytes or hops is ASCII digits alone: Integer.valueOf and parseInt also took a plus sign and digits of
     * any script (Arabic-Indic, fullwidth), which no other tool reading the same command line would.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--mtu +1500                  | --mtu +1500: expected a number of bytes, 576..9000",
        "--mtu \u0661\u0665\u0660\u0660 | --mtu \u0661\u0665\u0660\u0660: expected a number of bytes, 576..9000",
        "--mtu \uff11\uff15\uff10\uff10 | --mtu \uff11\uff15\uff10\uff10: expected a number of bytes, 576..9000",
        "--mtu 1500.0                 | --mtu 1500.0: expected a number of bytes, 576..9000",
        "--mtu=-1500                  | --mtu -1500: expected a number of bytes, 576..9000",
        "--ttl +64                    | --ttl +64: expected a number of hops, 1..255",
        "--ttl \u0666\u0664            | --ttl \u0666\u0664: expected a number of hops, 1..255",
        "--ttl 99999999999            | --ttl 99999999999: expected a number of hops, 1..255",
    })
    void aNumberIsAsciiDigitsAlone(final String options, final String expected)
    {
        assertRefused(args("--ip 198.18.0.2/24 " + options), expected);
    }

    /** Found while parsing (exit 2), not when the tap is opened (exit 1). */
    @ParameterizedTest
    @CsvSource({"tap:averyveryverylongname", "tap:a/b", "tap:a:b", "tap:..", "tap:nst%d"})
    void interfaceNameLinuxRefusesIsAUsageError(final String device)
    {
        assertRefused(new String[] {"daemon", "--device", device, "--ip", "198.18.0.2/24"}, "--device " + device + ": an interface name");
    }

    /**
     * A --shm or --pcap value that cannot be a path is a bad option, one line naming it, found before anything is made.
     * Before, Path.of's InvalidPathException escaped: a stack trace and exit 1. A NUL is in no file name; an unpaired
     * surrogate has no bytes in any locale's encoding (a non-ASCII name has none under a POSIX locale either, see
     * DaemonPathLocaleKernelTest).
     */
    @Test
    void aPathOptionThatCannotBeAPathIsAUsageError()
    {
        for (final String option : new String[] {"--shm", "--pcap"})
        {
            final UsageException nul = assertThrows(UsageException.class, () -> new DaemonCommand(
                args("--ip 198.18.0.2/24 " + option + " /tmp/a\0b"), DaemonOptionsTest::noLink));
            assertEquals("daemon: " + option + " must not contain a NUL character", nul.getMessage());
            assertRefused(args("--ip 198.18.0.2/24 " + option + "=/tmp/a\0b"), option + " must not contain a NUL character");
            final UsageException unpaired = assertThrows(UsageException.class, () -> new DaemonCommand(
                args("--ip 198.18.0.2/24 " + option + " /tmp/a\ud800"), DaemonOptionsTest::noLink));
            assertTrue(unpaired.getMessage().startsWith("daemon: " + option + " /tmp/a\ud800: the path cannot be represented"
                + " in the current locale's encoding (" + System.getProperty("sun.jnu.encoding") + ")"), unpaired.getMessage());
            assertTrue(unpaired.getMessage().indexOf('\n') < 0, unpaired.getMessage());
        }
    }

    private static DaemonCommand.Link noLink(final String name, final boolean offload, final Integer mtu, final String hostIp)
    {
        throw new AssertionError("the options opened a link");
    }

    @Test
    void fileErrorsAreSaidInWords()
    {
        assertEquals("no such file or directory: /x/y", DaemonCommand.describe(new NoSuchFileException("/x/y")));
        assertEquals("permission denied: /x/y", DaemonCommand.describe(new AccessDeniedException("/x/y")));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--ip 198.18.0.2/24",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.1/24 --gateway 198.18.0.1 --mac 02:00:00:00:00:01",
        "--ip 198.18.0.254/24 --host-ip 198.18.0.1/24",
        "--ip 198.19.255.1/15 --gateway 198.18.0.1",
        "--ip 198.18.0.2/24 --ttl 1",
        "--ip 198.18.0.2/24 --ttl 255",
        "--ip 198.18.0.2/24 --ttl 064 --mtu 01500",
    })
    void usualConfigurationIsAccepted(final String options)
    {
        assertDoesNotThrow(() -> new DaemonCommand(args(options)));
    }
}
