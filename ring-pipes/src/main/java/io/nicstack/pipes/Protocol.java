package io.nicstack.pipes;

/**
 * Message types and layouts of the control ring (app → daemon) and the event ring (daemon → app).
 * Every message is an Agrona ring record whose type id is one of the constants below; fields are
 * little-endian at the given offsets within the record. Connection ids are
 * {@code (generation << 16) | slot}; a stale id (old generation) is an error, never another app's data.
 */
public final class Protocol
{
    // ---- control ring: app -> daemon --------------------------------------------------------
    /** LISTEN: long requestId @0, int port @8, int backlog @12. Answer: LISTENING or ERROR. */
    public static final int LISTEN = 1;
    /** CONNECT: long requestId @0, int address @8 (IPv4, first octet most significant), int port @12. Answer: CONNECTED or ERROR. */
    public static final int CONNECT = 2;
    /**
     * SHUTDOWN (half-close, FIN after queued bytes, a file being sent included: behind a SEND_FILE in progress it takes
     * effect after the whole file): long connectionId @0.
     */
    public static final int SHUTDOWN = 3;
    /**
     * CLOSE: long connectionId @0; after it the app never touches the slot again (the daemon frees it). FIN after
     * queued bytes and a file being sent, as SHUTDOWN (no FILE_SENT comes for that file); a file refused or cut short
     * resets the connection instead.
     */
    public static final int CLOSE = 4;
    /** SET_OPTION: long connectionId @0, int option @8, long value @16. */
    public static final int SET_OPTION = 5;
    /** UNLISTEN: long requestId @0, int port @8. */
    public static final int UNLISTEN = 6;
    /**
     * SEND_FILE: long connectionId @0, int fd @8 (a descriptor of the app's, open for reading, of a regular
     * file), long position @16, long length @24. The daemon appends {@code length} bytes of the file from
     * {@code position} to the TX pipe after what the app committed before this message, reading them itself
     * (pidfd_getfd(2), then pread(2)); until FILE_SENT the daemon writes the TX tail and the app must not.
     * Answer: FILE_SENT.
     */
    public static final int SEND_FILE = 7;
    /**
     * ABORT: long connectionId @0. RFC 9293 ABORT: the daemon resets the connection (RST) at once, dropping what is
     * queued, and frees the slot; after it the app never touches the slot again (as after CLOSE).
     */
    public static final int ABORT = 8;
    /** Reserved for the TLS issue: keys for the inline record engine. */
    public static final int TLS_INSTALL = 16;
    /** Reserved for the TLS issue: the host's answer to a resync request. */
    public static final int RESYNC_RESPONSE = 17;

    public static final int CONTROL_LENGTH = 32;

    // ---- event ring: daemon -> app ----------------------------------------------------------
    /** LISTENING: long requestId @0, int port @8. */
    public static final int LISTENING = 101;
    /** ACCEPTED: long connectionId @0, int localPort @8, int remoteAddress @12, int remotePort @16. */
    public static final int ACCEPTED = 102;
    /** CONNECTED: long requestId @0, long connectionId @8, int localPort @16, int remoteAddress @20, int remotePort @24. */
    public static final int CONNECTED = 103;
    /** PEER_CLOSED (FIN received; RX pipe ends at its tail): long connectionId @0. */
    public static final int PEER_CLOSED = 104;
    /**
     * CLOSED (the connection is gone): long connectionId @0, int reason @8 (as in TcpConnection.CLOSE_*), int icmpError
     * @12 (the last ICMP error believed for the connection that did not end it, {@code type << 8 | code}, 0 if none;
     * see {@link Reason#ofTimeout}).
     */
    public static final int CLOSED = 105;
    /** RESET (the peer reset it): long connectionId @0. */
    public static final int RESET = 106;
    /** ERROR: long requestId-or-connectionId @0, int reason @8 (see {@link Reason}). */
    public static final int ERROR = 107;

    /**
     * FILE_SENT: long connectionId @0, int reason @8, long bytes @16. The TX tail is the app's again. Reason NONE:
     * all {@code length} bytes are in the pipe. Otherwise {@code bytes} is what was appended before it failed:
     * 0 when the request was refused or not a byte could be read (the connection is unharmed; the app may send
     * the bytes itself), more when the file could not be read to the end (the daemon resets the connection: the
     * stream promised more).
     */
    public static final int FILE_SENT = 108;

    /**
     * DELIVERY_PROBLEM (RFC 9293 §3.8.3, R1): long connectionId @0. The connection has retransmitted R1 times without
     * an answer; advice only, it keeps trying until R2 ends it (CLOSED, TIMED_OUT). Sent once per such episode. A
     * client that does not know the type ignores it.
     */
    public static final int DELIVERY_PROBLEM = 109;

    public static final int EVENT_LENGTH = 32;

    // ---- notification ring: daemon -> app ---------------------------------------------------
    /** NOTIFY: long connectionId @0, long rxTail @8 (the new contiguous tail). */
    public static final int NOTIFY = 201;
    public static final int NOTIFY_LENGTH = 16;

    // ---- options ----------------------------------------------------------------------------
    public static final int OPTION_NO_DELAY = 1;
    public static final int OPTION_KEEP_ALIVE = 2;
    /** The DiffServ code point of the connection's segments, 0..63 (TcpSettings.dscp; RFC 9293 MUST-48). */
    public static final int OPTION_DSCP = 3;

    private Protocol()
    {
    }

    public static int slotOf(final long connectionId)
    {
        return (int)(connectionId & 0xFFFF);
    }

    public static long connectionId(final int slot, final int generation)
    {
        return ((long)generation << 16) | slot;
    }

    /** Reason codes of ERROR events and client exceptions. */
    public static final class Reason
    {
        public static final int NONE = 0;
        public static final int PORT_IN_USE = 1;
        public static final int REFUSED = 2;
        public static final int RESET = 3;
        public static final int TIMED_OUT = 4;
        public static final int LIMIT_CONNECTIONS = 5;
        public static final int LIMIT_MEMORY = 6;
        public static final int BAD_MESSAGE = 7;
        public static final int UNKNOWN_CONNECTION = 8;
        public static final int VERSION_MISMATCH = 9;
        public static final int BAD_ARGUMENT = 10;
        public static final int NO_ROUTE = 11;
        public static final int FILE_UNREADABLE = 12;
        public static final int UNREACHABLE = 13;
        /** A LISTEN on a port below 1024 by an app whose app file root does not own (Linux's EACCES from bind(2)). */
        public static final int PERMISSION_DENIED = 14;

        private Reason()
        {
        }

        /**
         * Why a connection (or an attempt) that timed out failed, given the last ICMP error believed for it
         * ({@code type << 8 | code}, 0 if none): {@link #UNREACHABLE} after destination unreachable (other than
         * "fragmentation needed", which is path MTU discovery) or time exceeded, as Linux reports such a soft error
         * (EHOSTUNREACH) instead of ETIMEDOUT; else {@link #TIMED_OUT}.
         */
        public static int ofTimeout(final int icmpError)
        {
            final int type = icmpError >>> 8;
            final int code = icmpError & 0xFF;
            final boolean destinationUnreachable = type == 3 && code != 4;
            final boolean timeExceeded = type == 11;
            return destinationUnreachable || timeExceeded ? UNREACHABLE : TIMED_OUT;
        }

        public static String describe(final int reason)
        {
            switch (reason)
            {
                case NONE: return "none";
                case PORT_IN_USE: return "listener port in use";
                case REFUSED: return "connection refused";
                case RESET: return "connection reset by peer";
                case TIMED_OUT: return "connection timed out";
                case LIMIT_CONNECTIONS: return "connection limit of this app reached";
                case LIMIT_MEMORY: return "memory limit reached (this app's shared memory, or the daemon's for attached apps)";
                case BAD_MESSAGE: return "malformed control message";
                case UNKNOWN_CONNECTION: return "unknown or stale connection id";
                case VERSION_MISMATCH: return "layout version mismatch between app and daemon";
                case BAD_ARGUMENT: return "bad argument";
                case NO_ROUTE: return "no route to host";
                case FILE_UNREADABLE: return "the daemon cannot read the file";
                case UNREACHABLE: return "host or network unreachable";
                case PERMISSION_DENIED: return "permission denied (ports below 1024 are for apps of root)";
                default: return "reason " + reason;
            }
        }
    }
}
