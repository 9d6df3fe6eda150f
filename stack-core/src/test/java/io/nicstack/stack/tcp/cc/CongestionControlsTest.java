package io.nicstack.stack.tcp.cc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.nicstack.stack.tcp.CongestionControl;
import org.junit.jupiter.api.Test;

class CongestionControlsTest
{
    @Test
    void createsByName()
    {
        final CongestionControl cubic = CongestionControls.create("cubic");
        final CongestionControl newReno = CongestionControls.create("newreno");

        assertInstanceOf(Cubic.class, cubic);
        assertInstanceOf(NewReno.class, newReno);
        assertEquals("cubic", cubic.name());
        assertEquals("newreno", newReno.name());
        assertNotSame(cubic, CongestionControls.create("cubic"));
    }

    @Test
    void defaultIsCubic()
    {
        assertEquals("cubic", CongestionControls.DEFAULT);
        assertInstanceOf(Cubic.class, CongestionControls.create(CongestionControls.DEFAULT));
    }

    @Test
    void rejectsUnknownNames()
    {
        assertThrows(IllegalArgumentException.class, () -> CongestionControls.create("bbr"));
        assertThrows(IllegalArgumentException.class, () -> CongestionControls.create(""));
        assertThrows(IllegalArgumentException.class, () -> CongestionControls.create(null));
    }

    @Test
    void rfc6928_initialWindowIsMin10MssMax2Mss14600()
    {
        assertEquals(14_600, CongestionControls.initialWindow(1460));
        assertEquals(5_360, CongestionControls.initialWindow(536));
        assertEquals(14_600, CongestionControls.initialWindow(4000));
        assertEquals(18_000, CongestionControls.initialWindow(9000));
    }

    @Test
    void rfc6928_bothControllersStartWithTheInitialWindowAndHighSsthresh()
    {
        for (final String name : new String[]{ "cubic", "newreno" })
        {
            final CongestionControl cc = CongestionControls.create(name);
            cc.init(1460, 0);
            assertEquals(14_600, cc.cwnd(), name);
            assertEquals(CongestionControls.INITIAL_SSTHRESH, cc.ssthresh(), name);
        }
    }
}
