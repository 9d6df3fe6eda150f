package io.nicstack.stack.storage;

import org.junit.jupiter.api.Test;

/**
 * {@link RandomizedReassembly} over a {@link RingReceiveBuffer}.
 * Rerun one case with {@code -Dnicstack.ringSeed=<seed>}.
 */
class RingReceiveBufferRandomizedTest
{
    @Test
    void randomSegmentsReassembleByteExact()
    {
        RandomizedReassembly.run("nicstack.ringSeed", (capacity, maxRanges) ->
        {
            final RingReceiveBuffer buffer = new RingReceiveBuffer(capacity, maxRanges);
            return () -> buffer;
        });
    }
}
