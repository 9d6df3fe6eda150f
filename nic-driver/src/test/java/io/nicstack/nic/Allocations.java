package io.nicstack.nic;

import java.lang.management.ManagementFactory;

/** Bytes allocated by the current thread, from HotSpot's per-thread TLAB accounting. */
public final class Allocations
{
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();

    @SuppressWarnings("unused")
    private static volatile Object sink;

    static
    {
        final long before = THREADS.getCurrentThreadAllocatedBytes();
        sink = new byte[10_000];
        if (THREADS.getCurrentThreadAllocatedBytes() - before < 10_000)
        {
            throw new IllegalStateException("this JVM does not account per-thread allocations");
        }
    }

    private Allocations()
    {
    }

    public static long currentThread()
    {
        return THREADS.getCurrentThreadAllocatedBytes();
    }
}
