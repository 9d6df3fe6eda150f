package io.nicstack.stack.tcp;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.nicstack.stack.stats.StackCounter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.nicstack.stack.tcp.TcpTestHarness.bytes;
import static io.nicstack.stack.wire.TcpHeader.ACK;
import static io.nicstack.stack.wire.TcpHeader.FIN;
import static io.nicstack.stack.wire.TcpHeader.PSH;

/**
 * Header prediction ({@code TcpConnection.predicted}) changes how fast a segment is taken, never what happens to it.
 * The same transfer runs twice ({@link FastPathRuns}), once with prediction and once with every segment through the
 * general path of RFC 9293 §3.10.7.4, and both runs must send the very same frames and end with the same counters.
 * Segment-level tests cover what random runs rarely produce (an old ACK at RCV.NXT).
 */
class TcpHeaderPredictionTest
{
    /**
     * {@code minShare}: the least fraction of segments in that must be predicted. A clean bulk transfer is nearly all
     * predicted; with loss most segments arrive while out-of-order data is held or the sender is in recovery, which
     * the general path handles, so there the two paths alternate, which is what this test is after.
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {
        "clean wire                     | seed=1                                      | default | 0.80",
        "1% loss, reorder, dup          | loss=0.01,reorder=0.02,dup=0.01,seed=11     | default | 0.01",
        "5% loss, reorder, dup          | loss=0.05,reorder=0.02,dup=0.01,seed=12     | default | 0.01",
        "10% loss, reorder, dup         | loss=0.10,reorder=0.02,dup=0.01,seed=13     | default | 0.01",
        "small buffers, 2% loss         | loss=0.02,reorder=0.03,dup=0.01,seed=14     | small | 0.05",
        "no timestamps, no SACK, loss   | loss=0.02,reorder=0.02,dup=0.01,seed=15     | bare | 0.15",
        "NewReno, Nagle off, loss       | loss=0.03,reorder=0.02,dup=0.02,seed=16     | newreno | 0.01",
    })
    void predictionSendsWhatTheGeneralPathSends(final String name, final String faults, final String profile,
        final double minShare) throws Exception
    {
        FastPathRuns.assertFastPathChangesNothing(name, faults, profile, (tcp, on) -> tcp.headerPrediction = on,
            StackCounter.TCP_PREDICTED, minShare);
    }

    // ------------------------------------------------------------------------------------------
    // Segment level: which segments are predicted, and the guards random runs seldom reach
    // ------------------------------------------------------------------------------------------

    @Test
    void inOrderDataAndNewAcksArePredicted()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        final long before = t.counter(StackCounter.TCP_PREDICTED);
        // Two full segments in one burst: both predicted, one ACK for the pair (RFC 9293 §3.8.6.3 MUST-58).
        t.sendBurst(t.in().payload(bytes(1448, 1)), t.in().seq(t.irs + 1 + 1448).payload(bytes(1448, 2)));
        assertEquals(before + 2, t.counter(StackCounter.TCP_PREDICTED));
        t.recv(t.out().ack(t.irs + 1 + 2 * 1448));
        assertEquals(2 * 1448, t.read().length);
        // The stack sends (the data carries the wider window the read earned); the peer's new ACK of it is predicted too.
        t.write(bytes(100, 3));
        t.recv(t.out().ack(t.irs + 1 + 2 * 1448).flags(ACK | PSH).payload(bytes(100, 3)));
        t.send(t.in().seq(t.irs + 1 + 2 * 1448).ack(t.iss + 101));
        assertEquals(before + 3, t.counter(StackCounter.TCP_PREDICTED));
        assertEquals(101, t.conn.bytesAcked());
    }

    @Test
    void anOldAckAtRcvNxtIsNotTakenAsNew()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        t.conn.settings().noDelay = true;
        t.write(bytes(200, 4));
        t.recv(t.out().flags(ACK | PSH).payload(bytes(200, 4)));
        t.send(t.in().ack(t.iss + 201));
        final long acked = t.conn.bytesAcked();
        final long predicted = t.counter(StackCounter.TCP_PREDICTED);
        // Same sequence number, same window, a timestamp PAWS lets through: only the ACK is old (SEG.ACK < SND.UNA).
        t.send(t.in().ack(t.iss + 101));
        t.recvNothing();
        assertEquals(predicted, t.counter(StackCounter.TCP_PREDICTED), "an old ACK takes the general path");
        assertEquals(acked, t.conn.bytesAcked(), "an old ACK releases nothing");
        t.write(bytes(50, 5));
        t.recv(t.out().seq(t.iss + 201).flags(ACK | PSH).payload(bytes(50, 5)));
    }

    @Test
    void aChangedWindowOrAFinTakesTheGeneralPath()
    {
        final TcpTestHarness t = new TcpTestHarness().peerOffersAll();
        t.passiveOpen();
        final long predicted = t.counter(StackCounter.TCP_PREDICTED);
        t.send(t.in().window(1000).payload(bytes(10, 6)));
        assertEquals(predicted, t.counter(StackCounter.TCP_PREDICTED), "a window update is not predicted");
        t.send(t.in().seq(t.irs + 11).window(1000).flags(ACK | FIN).payload(bytes(10, 7)));
        assertEquals(predicted, t.counter(StackCounter.TCP_PREDICTED), "a FIN is not predicted");
        assertEquals(TcpState.CLOSE_WAIT, t.conn.state());
        assertEquals(20, t.read().length);
    }
}
