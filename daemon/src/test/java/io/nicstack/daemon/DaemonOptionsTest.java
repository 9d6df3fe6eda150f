package io.nicstack.daemon;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        "--ip 198.18.0.2/24 --gateway 10.9.9.9         | --gateway 10.9.9.9: not on the daemon's subnet",
        "--ip 198.18.0.2/24 --gateway 198.18.0.2       | --gateway 198.18.0.2: the daemon's own address",
        "--ip 198.18.0.2/24 --gateway 198.18.0.0       | --gateway 198.18.0.0: the network address",
        "--ip 198.18.0.2/24 --ip 198.19.7.7/16         | option --ip given twice",
        "--ip 198.18.0.2/24 --no-offload --no-offload  | option --no-offload given twice",
        "--ip 198.18.0.2/24 --mac 00:00:00:00:00:00    | --mac 00:00:00:00:00:00: must be a unicast address",
        "--ip 198.18.0.2/24 --mac 01:00:5e:00:00:01    | --mac 01:00:5e:00:00:01: must be a unicast address",
        "--ip 198.18.0.2/24 --mac ff:ff:ff:ff:ff:ff    | --mac ff:ff:ff:ff:ff:ff: must be a unicast address",
        "--ip 198.18.0.2/24 --shm=                     | option --shm needs a value (got an empty one)",
    })
    void wrongConfigurationIsRefused(final String options, final String expected)
    {
        final UsageException e = assertThrows(UsageException.class, () -> new DaemonCommand(args(options)));
        assertTrue(e.getMessage().startsWith("daemon: ") && e.getMessage().contains(expected), e.getMessage());
        assertTrue(e.getMessage().indexOf('\n') < 0, e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--ip 198.18.0.2/24",
        "--ip 198.18.0.2/24 --host-ip 198.18.0.1/24 --gateway 198.18.0.1 --mac 02:00:00:00:00:01",
        "--ip 198.18.0.254/24 --host-ip 198.18.0.1/24",
        "--ip 198.19.255.1/15 --gateway 198.18.0.1",
    })
    void usualConfigurationIsAccepted(final String options)
    {
        assertDoesNotThrow(() -> new DaemonCommand(args(options)));
    }
}
