package io.nicstack.stack.storage;

/**
 * Supplies the buffers of a connection instead of the stack's own rings, e.g. the shared-memory
 * pipes of a host application (DESIGN.md, the fast path: the pipes are the TCP buffers).
 *
 * <p>Called on the event loop thread only. The stack never reuses provided buffers itself: it hands
 * them back through {@link #release} when the connection leaves the connection table, and the
 * provider decides when they may serve another connection (a pipe slot only once the application
 * has let go of it too).
 */
public interface BufferProvider
{
    /**
     * Buffers for one new connection, both streams starting at offset 0, or null when none is free:
     * then a passive open is answered with a SYN cookie (as when the stack's buffer budget is spent)
     * and an active open fails.
     */
    ConnectionBuffers allocate();

    /**
     * The capacity of the receive buffer of every connection {@link #allocate} serves: a SYN cookie's SYN,ACK, sent
     * before any buffer is allocated, offers no more window than this.
     */
    int receiveCapacity();

    /** The connection that used {@code buffers} is gone from TCP; it touches them no more. */
    void release(ConnectionBuffers buffers);

    /** A send and a receive buffer allocated together (one pipe slot: its TX and its RX pipe). */
    interface ConnectionBuffers
    {
        SendBuffer sendBuffer();

        ReceiveBuffer receiveBuffer();
    }
}
