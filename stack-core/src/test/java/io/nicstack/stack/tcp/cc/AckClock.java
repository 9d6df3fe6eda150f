package io.nicstack.stack.tcp.cc;

import io.nicstack.stack.tcp.CongestionControl;

/** A simulated sender that keeps its window full and gets one ACK per segment, evenly over an RTT. */
final class AckClock
{
    final CongestionControl cc;
    final int mss;
    final long rttNanos;
    long nowNanos;

    AckClock(final CongestionControl cc, final int mss, final long rttNanos, final long startNanos)
    {
        this.cc = cc;
        this.mss = mss;
        this.rttNanos = rttNanos;
        this.nowNanos = startNanos;
    }

    /**
     * Acknowledge one window's worth of full segments, {@code segmentsPerAck} per ACK (the last ACK
     * may cover fewer), spread evenly over one RTT.
     */
    void roundTrip(final int segmentsPerAck)
    {
        long segments = Math.max(1, cc.cwnd() / mss);
        final long acks = (segments + segmentsPerAck - 1) / segmentsPerAck;
        final long step = rttNanos / acks;
        while (segments > 0)
        {
            final long acked = Math.min(segments, segmentsPerAck);
            segments -= acked;
            nowNanos += step;
            cc.onAck(acked * mss, cc.cwnd(), rttNanos, nowNanos);
        }
    }

    void roundTrip()
    {
        roundTrip(1);
    }

    void roundTrips(final int n)
    {
        for (int i = 0; i < n; i++)
        {
            roundTrip();
        }
    }
}
