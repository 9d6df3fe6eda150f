package io.nicstack.daemon.pipes;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import io.nicstack.pipes.PipeDescriptor;
import io.nicstack.stack.storage.RandomizedReassembly;

/**
 * stack-core's {@link RandomizedReassembly} (from its test jar) over an RX pipe: the reader moves the pipe head
 * as the app would, and the published tail and head must always equal contiguousEnd and the read position.
 * Rerun one case with {@code -Dnicstack.pipeSeed=<seed>}.
 */
class PipeReceiveBufferRandomizedTest
{
    @Test
    void randomSegmentsReassembleByteExact()
    {
        RandomizedReassembly.run("nicstack.pipeSeed", (capacity, maxRanges) ->
        {
            final UnsafeBuffer pipe = new UnsafeBuffer(new byte[PipeDescriptor.length(capacity)]);
            final PipeReceiveBuffer buffer = new PipeReceiveBuffer(pipe, capacity, maxRanges);
            return new RandomizedReassembly.Subject()
            {
                @Override
                public PipeReceiveBuffer buffer()
                {
                    return buffer;
                }

                @Override
                public void checkPublished()
                {
                    assertEquals(buffer.contiguousEnd(), pipe.getLongVolatile(PipeDescriptor.TAIL_OFFSET), "published tail");
                    assertEquals(buffer.readPosition(), pipe.getLongVolatile(PipeDescriptor.HEAD_OFFSET), "published head");
                }
            };
        });
    }
}
