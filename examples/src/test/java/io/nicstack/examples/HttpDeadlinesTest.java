package io.nicstack.examples;

import static io.nicstack.examples.HttpDeadlines.BODY_TIMEOUT_NANOS;
import static io.nicstack.examples.HttpDeadlines.HEADER_TIMEOUT_NANOS;
import static io.nicstack.examples.HttpDeadlines.SEND_TIMEOUT_NANOS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class HttpDeadlinesTest
{
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    /** Any start: the clock is compared modulo 2^64. */
    private static final long T0 = Long.MAX_VALUE - 10 * S;

    private final HttpDeadlines d = new HttpDeadlines();

    @Test
    void requestHeadDeadlineRunsFromTheFirstByteHoweverTheBytesTrickle()
    {
        for (long t = 0; t <= HEADER_TIMEOUT_NANOS; t += S)
        {
            d.requestBytes(T0 + t); // one byte a second, slowloris
            assertNull(d.expired(T0 + t));
        }
        assertEquals(HttpDeadlines.Expired.REQUEST_HEAD, d.expired(T0 + HEADER_TIMEOUT_NANOS + 1));
    }

    @Test
    void completeHeadEndsItsDeadline()
    {
        d.requestBytes(T0);
        d.requestDone();
        assertNull(d.expired(T0 + 10 * HEADER_TIMEOUT_NANOS));
        d.requestBytes(T0 + 10 * HEADER_TIMEOUT_NANOS); // the next request's first byte starts a new one
        assertEquals(HttpDeadlines.Expired.REQUEST_HEAD, d.expired(T0 + 11 * HEADER_TIMEOUT_NANOS + 1));
    }

    /** A request body, read after its response: one deadline from its start to its end, however the bytes trickle. */
    @Test
    void requestBodyDeadlineRunsFromItsStartToItsEnd()
    {
        d.bodyStarted(T0);
        assertNull(d.expired(T0 + BODY_TIMEOUT_NANOS));
        assertEquals(HttpDeadlines.Expired.REQUEST_BODY, d.expired(T0 + BODY_TIMEOUT_NANOS + 1));
        d.bodyDone();
        assertNull(d.expired(T0 + 10 * BODY_TIMEOUT_NANOS));
        d.bodyStarted(T0 + 10 * BODY_TIMEOUT_NANOS); // the next request's body starts a new one
        assertEquals(HttpDeadlines.Expired.REQUEST_BODY, d.expired(T0 + 11 * BODY_TIMEOUT_NANOS + 1));
    }

    @Test
    void responseDeadlineIsTimeWithoutProgressNotTheWholeTransfer()
    {
        d.responseStarted(T0);
        for (long t = 0; t < 10 * SEND_TIMEOUT_NANOS; t += SEND_TIMEOUT_NANOS / 2)
        {
            d.progress(T0 + t); // slow, but moving
            assertNull(d.expired(T0 + t + SEND_TIMEOUT_NANOS));
        }
        d.progress(T0);
        assertEquals(HttpDeadlines.Expired.RESPONSE, d.expired(T0 + SEND_TIMEOUT_NANOS + 1));
        d.responseDone();
        assertNull(d.expired(T0 + 100 * SEND_TIMEOUT_NANOS));
    }

    /** A body the daemon sends (SEND_FILE): the released position (the TX pipe's head) moving is the progress. */
    @Test
    void aReleasedPositionThatMovesIsProgressOneThatStandsStillIsNot()
    {
        d.responseStarted(T0);
        d.released(1000, T0);
        d.released(1000, T0 + SEND_TIMEOUT_NANOS); // where it was: no progress
        assertEquals(HttpDeadlines.Expired.RESPONSE, d.expired(T0 + SEND_TIMEOUT_NANOS + 1));
        d.released(1500, T0 + SEND_TIMEOUT_NANOS);
        assertNull(d.expired(T0 + 2 * SEND_TIMEOUT_NANOS));
        assertEquals(HttpDeadlines.Expired.RESPONSE, d.expired(T0 + 2 * SEND_TIMEOUT_NANOS + 1));
    }
}
