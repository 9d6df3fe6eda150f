package io.nicstack.stack.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SeqTest
{
    @Test
    void comparesAcrossTheWrap()
    {
        final int beforeWrap = 0xFFFF_FFF0;
        final int afterWrap = 0x0000_0010;

        assertTrue(Seq.lt(beforeWrap, afterWrap));
        assertTrue(Seq.le(beforeWrap, afterWrap));
        assertTrue(Seq.gt(afterWrap, beforeWrap));
        assertTrue(Seq.ge(afterWrap, beforeWrap));
        assertFalse(Seq.lt(afterWrap, beforeWrap));
        assertFalse(Seq.gt(beforeWrap, afterWrap));
        assertTrue(Seq.le(5, 5));
        assertTrue(Seq.ge(5, 5));
        assertFalse(Seq.lt(5, 5));
        assertFalse(Seq.gt(5, 5));
    }

    @Test
    void arithmeticWraps()
    {
        assertEquals(0x0000_000F, Seq.add(0xFFFF_FFF0, 0x1F));
        assertEquals(0x20, Seq.diff(0x0000_0010, 0xFFFF_FFF0));
        assertEquals(-0x20, Seq.diff(0xFFFF_FFF0, 0x0000_0010));
        assertEquals(0x0000_0010, Seq.max(0xFFFF_FFF0, 0x0000_0010));
        assertEquals(0xFFFF_FFF0, Seq.min(0xFFFF_FFF0, 0x0000_0010));
        assertEquals(0x0000_0010, Seq.max(0x0000_0010, 0xFFFF_FFF0));
        assertEquals(0xFFFF_FFF0, Seq.min(0x0000_0010, 0xFFFF_FFF0));
    }

    @Test
    void inRangeIsHalfOpenAndWraps()
    {
        final int lo = 0xFFFF_FFFE;
        final int hi = 0x0000_0002;

        assertTrue(Seq.inRange(0xFFFF_FFFE, lo, hi));
        assertTrue(Seq.inRange(0xFFFF_FFFF, lo, hi));
        assertTrue(Seq.inRange(0, lo, hi));
        assertTrue(Seq.inRange(1, lo, hi));
        assertFalse(Seq.inRange(2, lo, hi));
        assertFalse(Seq.inRange(0xFFFF_FFFD, lo, hi));
        assertFalse(Seq.inRange(7, 7, 7));
        assertFalse(Seq.inRange(7, 10, 5));
        assertFalse(Seq.inRange(0x8000_0000, 10, 5));
    }
}
