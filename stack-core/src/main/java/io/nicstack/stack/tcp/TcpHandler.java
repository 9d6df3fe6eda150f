package io.nicstack.stack.tcp;

/**
 * Events of one connection, on the event loop thread. All but {@link #onClosed} come after each receive burst (never
 * in the middle of segment processing, so handlers may read, write and close freely), each at most once per burst, and
 * none once the connection closed. A handler that throws loses that call only: the stack counts it as an internal
 * error and goes on (the connection's ACKs and the other connections' events too).
 */
public interface TcpHandler
{
    /** Active open completed: SYN-SENT → ESTABLISHED, or FIN-WAIT-1 when the application half-closed meanwhile. */
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

    /**
     * The connection is gone; {@code reason} is one of {@link TcpConnection}'s CLOSE_ constants. Called when it
     * leaves the stack's table: while a segment (a RST) or a timer is processed, or inside the application's own
     * close or abort call. Bytes received before a reset can still be read here; the next read after them returns -1.
     */
    default void onClosed(final TcpConnection connection, final int reason)
    {
    }
}
