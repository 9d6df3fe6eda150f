package io.nicstack.stack.tcp;

/** Connection states of RFC 9293 §3.3.2. */
public enum TcpState
{
    CLOSED,
    LISTEN,
    SYN_SENT,
    SYN_RECEIVED,
    ESTABLISHED,
    FIN_WAIT_1,
    FIN_WAIT_2,
    CLOSE_WAIT,
    CLOSING,
    LAST_ACK,
    TIME_WAIT;

    /** RFC 9293 "synchronized" states: SYN exchanged both ways. */
    public boolean isSynchronized()
    {
        return ordinal() >= ESTABLISHED.ordinal();
    }

    /**
     * Synchronized and not yet in TIME-WAIT: the peer may still need a segment from us. In TIME-WAIT both ends are
     * done, and only the 2*MSL wait is left (no reset, no keep-alive, no probe).
     */
    public boolean isSynchronizedBeforeTimeWait()
    {
        return isSynchronized() && this != TIME_WAIT;
    }

    /** States in which received payload is delivered to the application. */
    public boolean receivesData()
    {
        return this == ESTABLISHED || this == FIN_WAIT_1 || this == FIN_WAIT_2;
    }

    /** States in which the application may still send. */
    public boolean sendsData()
    {
        return this == ESTABLISHED || this == CLOSE_WAIT;
    }
}
