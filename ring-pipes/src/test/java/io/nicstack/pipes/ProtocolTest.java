package io.nicstack.pipes;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ProtocolTest
{
    @Test
    void aTimeoutAfterAnUnreachableOrTimeExceededErrorIsReportedAsUnreachable()
    {
        assertEquals(Protocol.Reason.TIMED_OUT, Protocol.Reason.ofTimeout(0), "no ICMP error");
        assertEquals(Protocol.Reason.UNREACHABLE, Protocol.Reason.ofTimeout(0x0300), "net unreachable");
        assertEquals(Protocol.Reason.UNREACHABLE, Protocol.Reason.ofTimeout(0x0301), "host unreachable");
        assertEquals(Protocol.Reason.UNREACHABLE, Protocol.Reason.ofTimeout(0x030D), "administratively prohibited");
        assertEquals(Protocol.Reason.TIMED_OUT, Protocol.Reason.ofTimeout(0x0304), "fragmentation needed is PMTUD");
        assertEquals(Protocol.Reason.UNREACHABLE, Protocol.Reason.ofTimeout(0x0B00), "time exceeded in transit");
        assertEquals(Protocol.Reason.TIMED_OUT, Protocol.Reason.ofTimeout(0x0C00), "parameter problem");
        assertEquals("host or network unreachable", Protocol.Reason.describe(Protocol.Reason.UNREACHABLE));
    }
}
