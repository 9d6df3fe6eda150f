package io.nicstack.examples;

import java.util.concurrent.TimeUnit;

/**
 * When an {@link AppServer} loop parks, and for how long. Pure logic, no clock: the loop reports each
 * pass and parks for what {@link #afterPass} answers.
 *
 * <p>Nothing in the daemon can wake the app's thread, so it parks for a bounded time and polls again,
 * and each park is host CPU: the timer, the futex and two context switches cost 20–40 µs of CPU time
 * per wake-up on the 2-core benchmark VM, whether the park lasted 50 µs or 1 ms. An exponential
 * back-off that restarts from a short park after every bit of work therefore pays several wake-ups per
 * request. Here work does not shorten the park; only a connection that {@linkplain
 * ConnectionHandler#hurry() hurries} does (halved: a stream's pipe drained or filled too far during the
 * last park), and the park grows back by a quarter per park otherwise. Under load each wake-up then
 * serves a batch (every request that arrived, every TX pipe with enough free space), and a single fast
 * stream still gets parks short enough to keep its pipe from running dry.
 *
 * <p>{@link #MAX_PARK_NANOS} bounds how long a new connection or request waits, as the old back-off's
 * longest park did at idle.
 */
final class ParkPolicy
{
    /** Passes without work before the loop parks (a pass costs about a microsecond, a park tens). */
    static final int SPINS = 2;
    static final long MIN_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private long parkNanos = MAX_PARK_NANOS;
    private int idlePasses;

    /**
     * After a pass of the loop: how long to park now, 0 to go on at once.
     *
     * @param work    what the pass did (0: nothing).
     * @param hurried whether a connection hurried during the pass.
     */
    long afterPass(final int work, final boolean hurried)
    {
        if (hurried)
        {
            parkNanos = Math.max(MIN_PARK_NANOS, parkNanos / 2);
        }
        if (work > 0)
        {
            idlePasses = 0;
            return 0;
        }
        if (++idlePasses <= SPINS)
        {
            return 0;
        }
        final long park = parkNanos;
        parkNanos = Math.min(MAX_PARK_NANOS, park + park / 4);
        return park;
    }

    /** The next park's length (for tests and diagnostics). */
    long parkNanos()
    {
        return parkNanos;
    }
}
