package io.nicstack.stack.tcp;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.stats.StackCounter;

import static io.nicstack.stack.tcp.TcpTestHarness.*;
import static io.nicstack.stack.wire.TcpHeader.*;
import static org.junit.jupiter.api.Assertions.*;

/** RFC 5961: blind reset, SYN and data injection mitigations (RFC 9293 MAY-12). */
class Rfc5961Test
{
    private final TcpTestHarness t = new TcpTestHarness();

    @Test
    void rfc5961_rstExactlyAtRcvNxtResets()
    {
        t.passiveOpen();
        t.send(t.in().flags(RST).ack(0));
        assertEquals(TcpState.CLOSED, t.conn.state());
        assertEquals(TcpConnection.CLOSE_RESET, t.events.closedReason);
        t.recvNothing();
    }

    @Test
    void rfc5961_rstInWindowNotExactSendsChallengeAck()
    {
        t.passiveOpen();
        t.send(t.in().seq(t.irs + 1 + 1000).flags(RST).ack(0));
        // §3.2: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, the connection stays.
        t.recv(t.out());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        assertEquals(1, t.counter(StackCounter.TCP_CHALLENGE_ACKS));
        // The genuine peer answers the challenge with an exact RST.
        t.send(t.in().flags(RST).ack(0));
        assertEquals(TcpState.CLOSED, t.conn.state());
    }

    @Test
    void rfc5961_rstOutsideWindowSilentlyDropped()
    {
        t.passiveOpen();
        t.send(t.in().seq(t.irs + 1 + 100_000).flags(RST).ack(0));
        t.send(t.in().seq(t.irs).flags(RST).ack(0));
        t.recvNothing();
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc5961_synInEstablishedSendsChallengeAck()
    {
        t.passiveOpen();
        // §4.2: a SYN in a synchronized state, in window or not, gets a challenge ACK and changes nothing (§7: one per
        // interval on a connection).
        t.send(t.in().flags(SYN).seq(t.irs + 1 + 500).ack(0));
        t.recv(t.out());
        t.advanceMs(500);
        t.send(t.in().flags(SYN).seq(t.irs - 100_000).ack(0));
        t.recv(t.out());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
        t.send(t.in().flags(ACK | PSH).payload(bytes(5, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 6));
    }

    @Test
    void rfc5961_ackAboveSndNxtDroppedWithAck()
    {
        t.passiveOpen();
        // SEG.ACK > SND.NXT: send an ACK, drop the segment (its data too).
        t.send(t.in().ack(t.iss + 1 + 1000).flags(ACK | PSH).payload(bytes(10, 2)));
        t.recv(t.out());
        assertEquals(0, t.conn.readable());
    }

    @Test
    void rfc5961_ackBelowSndUnaMinusMaxSndWndDroppedWithAck()
    {
        t.passiveOpen();
        // §5.2: acceptable only in [SND.UNA - MAX.SND.WND, SND.NXT].
        t.send(t.in().ack(t.iss + 1 - 70_000).flags(ACK | PSH).payload(bytes(10, 3)));
        t.recv(t.out());
        assertEquals(0, t.conn.readable());
        // An old but acceptable ACK (within MAX.SND.WND below SND.UNA) carries its data in.
        t.send(t.in().ack(t.iss + 1 - 1000).flags(ACK | PSH).payload(bytes(10, 3)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 11));
        assertEquals(10, t.conn.readable());
    }

    @Test
    void rfc5961_oneChallengeAckPerConnectionPerIntervalForRstsAndSyns()
    {
        t.passiveOpen();
        t.send(t.in().seq(t.irs + 1 + 10).flags(RST).ack(0));
        t.recv(t.out());
        // §7: a flood of spoofed RSTs and SYNs draws one challenge per interval from this connection, not one each.
        t.advanceMs(499);
        t.send(t.in().seq(t.irs + 1 + 20).flags(RST).ack(0));
        t.send(t.in().seq(t.irs + 1 + 30).flags(SYN).ack(0));
        t.recvNothing();
        assertEquals(2, t.counter(StackCounter.TCP_CHALLENGE_ACKS_LIMITED));
        // A segment with data is no part of an ACK loop: its invalid ACK is still answered.
        t.send(t.in().ack(t.iss + 1 + 1000).flags(ACK | PSH).payload(bytes(10, 2)));
        t.recv(t.out());
        t.advanceMs(1);
        t.send(t.in().seq(t.irs + 1 + 40).flags(SYN).ack(0));
        t.recv(t.out());
        assertEquals(3, t.counter(StackCounter.TCP_CHALLENGE_ACKS));
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc5961_theHostWideBudgetIsDrawnAfreshEachSecond()
    {
        // CVE-2016-5696: a fixed host-wide budget lets an off-path attacker count its own challenge ACKs to learn
        // whether spoofed segments hit someone else's window. The budget is drawn from [500, 1500) each second.
        t.settings().challengeAckIntervalNanos = 0;
        t.passiveOpen();
        final Set<Long> budgets = new HashSet<>();
        for (int second = 0; second < 5; second++)
        {
            final long before = t.counter(StackCounter.TCP_CHALLENGE_ACKS);
            for (int i = 0; i < 1600; i++)
            {
                t.send(t.in().seq(t.irs + 1 + 10 + i).flags(RST).ack(0));
            }
            final long answered = t.counter(StackCounter.TCP_CHALLENGE_ACKS) - before;
            assertEquals(answered, t.recv().size());
            assertTrue(answered >= 500 && answered < 1500, "second " + second + ": " + answered);
            budgets.add(answered);
            t.advance(SECOND);
        }
        assertTrue(budgets.size() > 1, "the same budget five seconds running: " + budgets);
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void rfc5961_outOfWindowSynsGetChallengeAcksWithTheirLimits()
    {
        t.passiveOpen();
        // §4.2 "regardless of the sequence number", so §7's limits too: one per interval on this connection.
        for (int i = 0; i < 200; i++)
        {
            t.send(t.in().flags(SYN).seq(t.irs - 100_000 - i).ack(0));
        }
        t.recv(t.out());
        assertEquals(1, t.counter(StackCounter.TCP_CHALLENGE_ACKS));
        assertEquals(199, t.counter(StackCounter.TCP_CHALLENGE_ACKS_LIMITED));
        t.advanceMs(500);
        t.send(t.in().flags(SYN).seq(t.irs - 200_000).ack(0));
        t.recv(t.out());
        assertEquals(TcpState.ESTABLISHED, t.conn.state());
    }

    @Test
    void linux_oowRateLimit_segmentsWithoutDataOutsideTheWindowAreAnsweredOncePerInterval()
    {
        t.passiveOpen();
        // Linux's tcp_invalid_ratelimit: a flood of pure ACKs outside the window (or an ACK loop) draws one ACK.
        for (int i = 0; i < 200; i++)
        {
            t.send(t.in().seq(t.irs - 100_000 - i));
        }
        t.recv(t.out());
        t.advanceMs(499);
        t.send(t.in().seq(t.irs - 100_000));
        t.recvNothing();
        t.advanceMs(1);
        t.send(t.in().seq(t.irs - 100_000));
        t.recv(t.out());
        assertEquals(202, t.counter(StackCounter.TCP_OUT_OF_WINDOW));
    }

    @Test
    void linux_oowRateLimit_keepAliveProbesFromThePeerAreAnsweredAtTheirInterval()
    {
        t.passiveOpen();
        // A keep-alive probe (SEG.SEQ = RCV.NXT - 1, no data) is unacceptable, and answered: probes come a second or
        // more apart, longer than the limit's interval, even after junk used it up.
        t.send(t.in().seq(t.irs - 100_000));
        t.recv(t.out());
        for (int i = 0; i < 5; i++)
        {
            t.advance(SECOND);
            t.send(t.in().seq(t.irs));
            t.recv(t.out());
        }
    }

    @Test
    void linux_oowRateLimit_dataAlreadyReceivedIsAlwaysAnsweredWithItsDsack()
    {
        t.peerSackPermitted = true;
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(100, 1)));
        t.advanceMs(40);
        t.recv(t.out().ack(t.irs + 101));
        // The peer's retransmissions of what we hold (its ACKs were lost): each needs its ACK and D-SACK (RFC 2883)
        // for the peer's recovery, and data is no part of an ACK loop.
        for (int i = 0; i < 5; i++)
        {
            t.send(t.in().flags(ACK | PSH).payload(bytes(100, 1)));
            t.recv(t.out().ack(t.irs + 101).sack(t.irs + 1, t.irs + 101));
        }
    }

    @Test
    void linux_oowRateLimit_zeroWindowProbesAreAlwaysAnswered()
    {
        t.settings().receiveBufferBytes = 4096;
        t.settings().windowScaling = false;
        t.passiveOpen();
        t.send(t.in().flags(ACK | PSH).payload(bytes(1460, 1)));
        t.send(t.in().seq(t.irs + 1 + 1460).flags(ACK | PSH).payload(bytes(1460, 2)));
        t.send(t.in().seq(t.irs + 1 + 2920).flags(ACK | PSH).payload(bytes(4096 - 2920, 3)));
        t.recv();
        // Our window is closed; the peer probes it with one octet at RCV.NXT, as often as it likes: each probe has its
        // answer, which says the window is still closed.
        for (int i = 0; i < 5; i++)
        {
            t.send(t.in().seq(t.irs + 1 + 4096).payload(bytes(1, 4)));
            t.recv(t.out().ack(t.irs + 1 + 4096).window(0));
        }
    }
}
