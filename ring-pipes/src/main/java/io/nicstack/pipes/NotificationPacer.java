package io.nicstack.pipes;

import java.util.Arrays;

/**
 * Producer-side (daemon) pacing of RX notifications, the Enso rule: a pipe gets a further NOTIFY only once the
 * consumer has consumed up to the tail of the last one, so a busy app gets one notification per batch it drains,
 * not one per segment, and an idle app gets one as soon as data arrives.
 *
 * <p>Call {@link #shouldNotify} after publishing a tail, and again for pipes that have {@link #isPending} data
 * when the consumer may have moved its head (each event-loop pass): a tail published while a notification was
 * outstanding is only announced then. One instance per notification ring, used by its producer thread only.
 */
public final class NotificationPacer
{
    private final long[] lastNotifiedTail;

    public NotificationPacer(final int pipes)
    {
        lastNotifiedTail = new long[pipes];
    }

    /**
     * Whether to send NOTIFY(pipe, tail) now; when it answers true it records {@code tail} as notified.
     *
     * @param pipe the slot.
     * @param tail the published contiguous tail.
     * @param head the consumer's head (read with {@code getLongVolatile}).
     */
    public boolean shouldNotify(final int pipe, final long tail, final long head)
    {
        final long last = lastNotifiedTail[pipe];
        if (tail > last && head >= last)
        {
            lastNotifiedTail[pipe] = tail;
            return true;
        }
        return false;
    }

    /** Whether the pipe has a published tail that was not yet announced. */
    public boolean isPending(final int pipe, final long tail)
    {
        return tail > lastNotifiedTail[pipe];
    }

    /** Forget a pipe's state (its slot is reused, positions restart at zero). */
    public void reset(final int pipe)
    {
        lastNotifiedTail[pipe] = 0;
    }

    public void resetAll()
    {
        Arrays.fill(lastNotifiedTail, 0);
    }
}
