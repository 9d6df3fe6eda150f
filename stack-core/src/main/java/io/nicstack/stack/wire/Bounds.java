package io.nicstack.stack.wire;

import org.agrona.DirectBuffer;

/** Region checks shared by the {@code wrapChecked} methods. */
final class Bounds
{
    private Bounds()
    {
    }

    /** {@code [offset, offset + length)} is non-negative and inside the buffer, without int overflow. */
    static boolean regionFits(final DirectBuffer buffer, final int offset, final int length)
    {
        return buffer != null && offset >= 0 && length >= 0 && (long)offset + length <= buffer.capacity();
    }
}
