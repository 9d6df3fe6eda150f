package io.nicstack.stack.tcp;

/**
 * Events of one connection, delivered on the event loop thread after each receive burst (never in
 * the middle of segment processing, so handlers may read, write and close freely).
 */
public interface TcpHandler
{
    /** Active open completed (SYN-SENT → ESTABLISHED). */
    default void onConnected(final TcpConnection connection)
    {
    }

    /** In-order bytes are ready to read. */
    default void onReadable(final TcpConnection connection)
    {
    }

    /** Send buffer space was freed by acknowledgments. */
    default void onWritable(final TcpConnection connection)
    {
    }

    /** The peer sent FIN: after the readable bytes, the stream ends. */
    default void onPeerClosed(final TcpConnection connection)
    {
    }

    /**
     * R1 reached (RFC 9293 §3.8.3, SHLD-9): the connection has retransmitted {@code TcpSettings.r1Retransmits} times
     * without an answer. Advice only: it lives on, and keeps retrying, until R2 ends it with {@link #onClosed}.
     */
    default void onDeliveryProblem(final TcpConnection connection)
    {
    }

    /** The connection is gone; {@code reason} is one of {@link TcpConnection}'s CLOSE_ constants. */
    default void onClosed(final TcpConnection connection, final int reason)
    {
    }
}
