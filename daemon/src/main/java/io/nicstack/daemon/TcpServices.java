package io.nicstack.daemon;

import java.nio.ByteBuffer;

import org.agrona.concurrent.UnsafeBuffer;

import io.nicstack.stack.tcp.Tcp;
import io.nicstack.stack.tcp.TcpConnection;
import io.nicstack.stack.tcp.TcpHandler;
import io.nicstack.stack.tcp.TcpListener;

/**
 * The daemon's built-in TCP services on the in-process API: echo (RFC 862, port 7), discard
 * (RFC 863, port 9) and chargen (RFC 864, port 19). All run inline on the event loop and respect
 * flow control: echo reads only what it can write back, chargen writes only into free space.
 */
public final class TcpServices
{
    static final int ECHO_PORT = 7;
    static final int DISCARD_PORT = 9;
    static final int CHARGEN_PORT = 19;
    static final int BACKLOG = 1024;

    /** RFC 864: lines of 72 printable ASCII characters, each starting one character later, ended by CR LF. */
    static final int CHARGEN_LINE = 74;
    private static final int PRINTABLE = 95;
    /** 95 lines make the pattern repeat; precompute one period. */
    static final byte[] CHARGEN_PATTERN = chargenPattern();

    private final UnsafeBuffer scratch = new UnsafeBuffer(ByteBuffer.allocateDirect(64 * 1024));
    private final UnsafeBuffer pattern = new UnsafeBuffer(ByteBuffer.allocateDirect(CHARGEN_PATTERN.length * 2));

    public TcpServices()
    {
        pattern.putBytes(0, CHARGEN_PATTERN);
        pattern.putBytes(CHARGEN_PATTERN.length, CHARGEN_PATTERN);
    }

    static byte[] chargenPattern()
    {
        final byte[] p = new byte[PRINTABLE * CHARGEN_LINE];
        for (int line = 0; line < PRINTABLE; line++)
        {
            for (int i = 0; i < 72; i++)
            {
                p[line * CHARGEN_LINE + i] = (byte)(' ' + (line + i) % PRINTABLE);
            }
            p[line * CHARGEN_LINE + 72] = '\r';
            p[line * CHARGEN_LINE + 73] = '\n';
        }
        return p;
    }

    /** The flow-controlled echo handler, for any connection (benchmarks use it on their own listeners). */
    public TcpHandler echoHandler()
    {
        return echoHandler;
    }

    public void start(final Tcp tcp, final boolean echo, final boolean discard, final boolean chargen)
    {
        if (echo)
        {
            tcp.listen(ECHO_PORT, BACKLOG, l -> acceptAll(l, echoHandler));
        }
        if (discard)
        {
            tcp.listen(DISCARD_PORT, BACKLOG, l -> acceptAll(l, discardHandler));
        }
        if (chargen)
        {
            tcp.listen(CHARGEN_PORT, BACKLOG, this::acceptChargen);
        }
    }

    private static void acceptAll(final TcpListener listener, final TcpHandler handler)
    {
        TcpConnection c;
        while ((c = listener.accept()) != null)
        {
            c.handler(handler);
        }
    }

    private void acceptChargen(final TcpListener listener)
    {
        TcpConnection c;
        while ((c = listener.accept()) != null)
        {
            final Chargen generator = new Chargen();
            c.handler(generator);
            generator.onWritable(c);
        }
    }

    /** Echo: move min(readable, writable) bytes at a time; FIN after the last byte went back. */
    private final TcpHandler echoHandler = new TcpHandler()
    {
        @Override
        public void onReadable(final TcpConnection c)
        {
            pump(c);
        }

        @Override
        public void onWritable(final TcpConnection c)
        {
            pump(c);
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            pump(c);
        }

        private void pump(final TcpConnection c)
        {
            int room;
            while ((room = Math.min(c.writable(), scratch.capacity())) > 0)
            {
                final int n = c.read(scratch, 0, Math.min(room, c.readable()));
                if (n <= 0)
                {
                    break;
                }
                c.write(scratch, 0, n);
            }
            if (c.isInputShutdown() && c.writable() > 0)
            {
                c.close();
            }
        }
    };

    /** Discard: read and drop everything; close when the peer does. */
    private final TcpHandler discardHandler = new TcpHandler()
    {
        @Override
        public void onReadable(final TcpConnection c)
        {
            while (c.read(scratch, 0, scratch.capacity()) > 0)
            {
                // RFC 863: throw it away.
            }
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            onReadable(c);
            c.close();
        }
    };

    /** Chargen: keep the send buffer full of the RFC 864 pattern; input is discarded. */
    private final class Chargen implements TcpHandler
    {
        private int position;

        @Override
        public void onWritable(final TcpConnection c)
        {
            int room;
            while ((room = c.writable()) > 0)
            {
                final int n = Math.min(room, CHARGEN_PATTERN.length);
                final int written = c.write(pattern, position, n);
                position = (position + written) % CHARGEN_PATTERN.length;
                if (written < n)
                {
                    break;
                }
            }
        }

        @Override
        public void onReadable(final TcpConnection c)
        {
            discardHandler.onReadable(c);
        }

        @Override
        public void onPeerClosed(final TcpConnection c)
        {
            c.close();
        }
    }
}
