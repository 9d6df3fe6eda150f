package io.nicstack.pipes.client;

import io.nicstack.pipes.Protocol;

/**
 * The daemon stopped: it wrote DAEMON_GONE, or its process is dead (a zombie too) or nobody holds its daemon.lock any
 * more ({@link #reason()} NONE), or its heartbeat has not
 * moved for the daemon timeout (NONE too; while its process lives this one is not final until the heartbeat has not
 * moved for {@link ClientOptions#daemonLossMillis}, see {@link NicstackClient#poll()}); or it reaped this app, writing REJECTED with the {@link #reason()} (BAD_MESSAGE: the app
 * broke the ring protocol, or fell so far behind on its event ring that the events owed it overflowed); or a ring
 * from the daemon to this app, or an RX pipe, is corrupt (BAD_MESSAGE too): in each case the session is lost.
 *
 * <p>A lost session ({@link NicstackClient#isGone()}) is not resumed: the client never reconnects. The app must
 * {@link NicstackClient#close()} the lost client (which frees its app file, and so its name) and
 * {@link NicstackClient#attach} again, once a daemon runs; an attach of the same name before that close is refused,
 * saying to close the lost client first.
 */
public final class DaemonGoneException extends NicstackException
{
    private static final long serialVersionUID = 1L;

    public DaemonGoneException(final String message)
    {
        super(Protocol.Reason.NONE, message);
    }

    public DaemonGoneException(final int reason, final String message)
    {
        super(reason, message);
    }
}
