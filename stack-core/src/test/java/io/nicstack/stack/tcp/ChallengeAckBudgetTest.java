package io.nicstack.stack.tcp;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class ChallengeAckBudgetTest
{
    private static final long SECOND = 1_000_000_000L;

    @Test
    void eachSecondGivesItsOwnBudgetThenRefuses()
    {
        final ChallengeAckBudget budget = new ChallengeAckBudget(1000, 1, 2);
        for (long window = 1; window <= 3; window++)
        {
            final long start = window * SECOND;
            int granted = 0;
            while (budget.tryAcquire(start + granted) && granted < 10_000)
            {
                granted++;
            }
            assertEquals(budget.budget(window), granted, "window " + window);
            assertFalse(budget.tryAcquire(start + SECOND - 1), "spent until the second is over");
        }
    }

    @Test
    void budgetsLieInHalfToOneAndAHalfTimesTheLimitAndVary()
    {
        final ChallengeAckBudget budget = new ChallengeAckBudget(1000, 0x1234_5678L, 0x9ABC_DEF0L);
        final Set<Integer> seen = new HashSet<>();
        long sum = 0;
        for (long n = 1; n <= 10_000; n++)
        {
            final int b = budget.budget(n);
            assertTrue(b >= 500 && b < 1500, "window " + n + ": " + b);
            seen.add(b);
            sum += b;
        }
        assertTrue(seen.size() > 900, "most values of the range drawn: " + seen.size());
        assertEquals(1000, sum / 10_000.0, 10, "the mean is the limit");
    }

    @Test
    void theKeyDecidesTheBudgets()
    {
        final ChallengeAckBudget a = new ChallengeAckBudget(1000, 1, 2);
        final ChallengeAckBudget same = new ChallengeAckBudget(1000, 1, 2);
        final ChallengeAckBudget other = new ChallengeAckBudget(1000, 1, 3);
        int differ = 0;
        for (long n = 1; n <= 100; n++)
        {
            assertEquals(a.budget(n), same.budget(n));
            differ += a.budget(n) != other.budget(n) ? 1 : 0;
        }
        assertTrue(differ > 90, "another key, other budgets: " + differ);
    }

    @Test
    void aLimitOfOneStillAnswersOncePerSecond()
    {
        final ChallengeAckBudget budget = new ChallengeAckBudget(1, 5, 6);
        assertTrue(budget.tryAcquire(0));
        assertFalse(budget.tryAcquire(1));
        assertTrue(budget.tryAcquire(SECOND));
        assertThrows(IllegalArgumentException.class, () -> new ChallengeAckBudget(0, 1, 2));
    }
}
