package io.nicstack.nic.tap;

import io.nicstack.nic.NicException;
import io.nicstack.nic.linux.Linux;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Errors that need no kernel interface; see {@link TapDeviceKernelTest} for the real thing. */
class TapDeviceTest
{
    @Test
    void nameLongerThanFifteenCharactersIsRejected()
    {
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> TapDevice.open("nst-much-too-long0"));
        assertEquals("tap name 'nst-much-too-long0' is longer than 15 characters (IFNAMSIZ - 1)", ex.getMessage());
    }

    @Test
    void namesTheKernelWouldRefuseAreRejected()
    {
        for (final String name : new String[]{ "", ".", "..", "a/b", "a:1", "a b", "tap\u00e9" })
        {
            assertThrows(IllegalArgumentException.class, () -> TapDevice.validateName(name), name);
        }
        TapDevice.validateName("nsttap0-x.1_y");
    }

    @Test
    void missingCloneDeviceSaysWhatToDo()
    {
        final NicException ex =
            assertThrows(NicException.class, () -> TapDevice.open("nsttap0", "/nonexistent/net/tun"));
        assertEquals("/nonexistent/net/tun is missing (load the tun module)", ex.getMessage());
    }

    @Test
    void errnoBecomesAOneLineMessage()
    {
        assertEquals("/dev/net/tun is missing (load the tun module)",
            TapDevice.openError("t0", TapDevice.TUN_PATH, Linux.ENXIO).getMessage());
        assertEquals("not permitted to open tap t0: need root or CAP_NET_ADMIN",
            TapDevice.openError("t0", TapDevice.TUN_PATH, Linux.EACCES).getMessage());
        assertEquals("not permitted to open tap t0: need root or CAP_NET_ADMIN",
            TapDevice.attachError("t0", Linux.EPERM).getMessage());
        assertEquals("ioctl(TUNSETIFF) for tap t0 failed: EMFILE (Too many open files)",
            TapDevice.attachError("t0", Linux.EMFILE).getMessage());
    }
}
