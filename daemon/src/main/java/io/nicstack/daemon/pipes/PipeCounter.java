package io.nicstack.daemon.pipes;

/** What the pipe server counts; shown by {@code nicstack stats} next to the stack's counters. */
public enum PipeCounter
{
    APPS_ATTACHED("pipes: apps attached"),
    APPS_REJECTED("pipes: apps rejected"),
    APPS_DETACHED("pipes: apps detached"),
    APPS_REAPED_DEAD("pipes: apps reaped (dead)"),
    APPS_REAPED_BROKEN("pipes: apps reaped (protocol violation)"),
    /** Files the daemon answered REJECTED whose app's process is gone (it died before it was attached). */
    APP_FILES_ABANDONED("pipes: files of apps gone before their attach deleted"),
    CONTROL_MESSAGES("pipes: control messages"),
    BAD_CONTROL_MESSAGES("pipes: bad control messages"),
    UNKNOWN_CONNECTION_IDS("pipes: unknown connection ids"),
    EVENTS_SENT("pipes: events sent"),
    EVENTS_DEFERRED("pipes: events deferred (event ring full)"),
    NOTIFICATIONS_SENT("pipes: notifications sent"),
    DOORBELLS("pipes: doorbells"),
    /**
     * Doorbell bits an app set for a slot the daemon does not serve (not in use, or beyond its slots): ignored. Not only
     * hostile apps: one that reads what is left in a connection's RX pipe after CLOSED rings a slot no longer served.
     */
    DOORBELLS_IGNORED("pipes: doorbell bits ignored (slot not in use)"),
    /**
     * Positions (TX tail, RX head) the safety net's full scan found moved without their doorbell bit, and no bit came
     * by the next full scan: an app that does not ring. 0 with the client library.
     */
    DOORBELLS_MISSED("pipes: doorbells missed (found by the full scan)"),
    CONNECTIONS_ACCEPTED("pipes: connections accepted"),
    CONNECTIONS_OPENED("pipes: connections opened"),
    SLOTS_EXHAUSTED("pipes: no free slot"),
    CONNECTIONS_RESET_APP_GONE("pipes: connections reset (app gone)"),
    FILES_SENT("pipes: files sent (SEND_FILE)"),
    FILE_BYTES("pipes: file bytes read into TX pipes"),
    FILES_REFUSED("pipes: SEND_FILE refused"),
    FILE_DESCRIPTORS_REUSED("pipes: SEND_FILE descriptors reused (kcmp)"),
    FILES_FAILED("pipes: SEND_FILE failed mid-file (connection reset)"),
    /** A CLOSE or SHUTDOWN the app wrote behind a SEND_FILE before it could see the SEND_FILE refused. */
    FILES_CLOSED_UNSEEN("pipes: closed behind a refused SEND_FILE (connection reset)");

    private final String label;

    PipeCounter(final String label)
    {
        this.label = label;
    }

    public String label()
    {
        return label;
    }
}
