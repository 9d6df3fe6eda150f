package io.nicstack.stack.iface;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.nicstack.stack.NetStack;
import io.nicstack.stack.TestDevice;
import io.nicstack.stack.stats.StackCounters;
import io.nicstack.stack.wire.Ipv4Address;

class StackConfigTest
{
    @Test
    void subnetBroadcastFollowsTheAddressAndThePrefix()
    {
        final StackConfig config = StackConfig.of("198.18.0.2/24");
        assertEquals(Ipv4Address.parse("198.18.0.255"), config.subnetBroadcast());
        config.prefixLength(16);
        assertEquals(Ipv4Address.parse("198.18.255.255"), config.subnetBroadcast());
        config.address(Ipv4Address.parse("198.19.7.9"));
        assertEquals(Ipv4Address.parse("198.19.255.255"), config.subnetBroadcast());
        config.prefixLength(30);
        assertEquals(Ipv4Address.parse("198.19.7.11"), config.subnetBroadcast());
        assertThrows(IllegalArgumentException.class, () -> config.prefixLength(31));
        assertEquals(Ipv4Address.parse("198.19.7.11"), config.subnetBroadcast());
    }

    /**
     * The prefix length of A.B.C.D/N is ASCII digits alone, as every number on the command line: Integer.parseInt took
     * "+24" and digits of any script (Arabic-Indic, fullwidth), and said what was wrong with others in Java's words
     * ("For input string: ..."). Each refusal names the text and says what a prefix length is.
     */
    @Test
    void aPrefixLengthIsAsciiDigitsAlone()
    {
        for (final String prefix : new String[] {
            "+24", "\u0662\u0664", "\uff12\uff14", "2\u0664", "-24", " 24", "24 ", "", "2e1", "24.0", "0x18", "24/8",
            "99999999999", "0", "31", "032"})
        {
            final IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> StackConfig.of("198.18.0.2/" + prefix), prefix);
            assertTrue(e.getMessage().contains("'198.18.0.2/" + prefix + "'") && e.getMessage().contains("prefix length"),
                e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
        }
        assertEquals(24, StackConfig.of("198.18.0.2/24").prefixLength());
        assertEquals(24, StackConfig.of("198.18.0.2").prefixLength(), "no prefix: /24");
        assertEquals(8, StackConfig.of("198.18.0.2/08").prefixLength());
        assertEquals(1, StackConfig.of("198.18.0.2/1").prefixLength());
        assertEquals(30, StackConfig.of("198.18.0.2/30").prefixLength());
    }

    /**
     * Mutated prefixes (digits, signs, points, exponents, blanks, other scripts' digits, long runs): each is refused with
     * an IllegalArgumentException, or is ASCII digits of a length 1..30 that the config then has. The seed is printed;
     * {@code -Dnicstack.fuzz.seed=S} repeats a run.
     */
    @Test
    void aMutatedPrefixIsRefusedOrIsAsciiDigitsInRange()
    {
        final long seed = Long.getLong("nicstack.fuzz.seed", System.nanoTime());
        final SplittableRandom random = new SplittableRandom(seed);
        final String alphabet = "0123456789+-.eEx /\t\u0660\u0662\u0664\u06f4\u0968\uff12\uff14";
        final Pattern digits = Pattern.compile("[0-9]+");
        int accepted = 0;
        for (int i = 0; i < 20_000; i++)
        {
            final StringBuilder b = new StringBuilder(random.nextBoolean() ? "24" : "");
            final int length = random.nextInt(4);
            for (int k = 0; k < length; k++)
            {
                final char c = random.nextBoolean() ? (char)('0' + random.nextInt(10))
                    : alphabet.charAt(random.nextInt(alphabet.length()));
                b.insert(random.nextInt(b.length() + 1), c);
            }
            final String prefix = b.toString();
            final StackConfig config;
            try
            {
                config = StackConfig.of("198.18.0.2/" + prefix);
            }
            catch (final IllegalArgumentException e)
            {
                assertFalse(e.getMessage().contains("\n"), e.getMessage());
                continue;
            }
            accepted++;
            assertTrue(digits.matcher(prefix).matches(), () -> "accepted the prefix '" + prefix + "', seed " + seed);
            assertEquals(Integer.parseInt(prefix), config.prefixLength(), () -> "'" + prefix + "', seed " + seed);
        }
        assertTrue(accepted > 0, "seed " + seed);
    }

    /**
     * A size, count, rate or timeout that leaves a layer nothing to work with (an ARP cache of no entries, a negative
     * ARP queue (0 is allowed: no frame waits for resolution), no reassembly context or no time for one, a zero ICMP
     * error rate) or that would take memory without bound is refused when it is set, with a message naming it; before,
     * an ARP cache of size 0 made the stack's first send throw, and the ICMP rates were silently raised to 1. The value
     * before stays.
     */
    @Test
    void sizesCountsRatesAndTimeoutsOutOfRangeAreRefusedWhenSet()
    {
        final StackConfig config = StackConfig.of("198.18.0.2/24");
        assertRefused(() -> config.arpCacheSize(0), "ARP cache");
        assertRefused(() -> config.arpCacheSize(1 << 20), "ARP cache");
        assertRefused(() -> config.arpQueueFrames(-1), "ARP queue");
        assertRefused(() -> config.arpQueueFrames(1 << 20), "ARP queue");
        assertRefused(() -> config.reassemblyMaxDatagrams(0), "reassembly");
        assertRefused(() -> config.reassemblyTimeoutNanos(0), "reassembly timeout");
        assertRefused(() -> config.icmpErrorRate(0, 10), "ICMP error rate");
        assertRefused(() -> config.icmpErrorRate(10, 0), "ICMP error rate");
        assertEquals(256, config.arpCacheSize());
        assertEquals(64, config.arpQueueFrames());
        assertEquals(64, config.reassemblyMaxDatagrams());
        assertTrue(config.reassemblyTimeoutNanos() > 0);
        assertTrue(config.icmpErrorsPerSecond() > 0 && config.icmpErrorBurst() > 0);

        config.arpCacheSize(1).arpQueueFrames(1).reassemblyMaxDatagrams(1).reassemblyTimeoutNanos(1).icmpErrorRate(1, 1);
        final TestDevice device = new TestDevice(1500);
        final NetStack stack = new NetStack(device, config, StackCounters.inMemory(), 0);
        stack.start(0);
        assertEquals(1, device.takeSent().size(), "the smallest sizes make a working stack");
    }

    /**
     * The gateway is the next hop for every off-link destination, so it must be another host on our subnet: one off the
     * subnet, our own address, or the subnet's network or broadcast address is refused when a stack takes the config
     * (the setters may come in any order), naming the gateway. Before, such a stack started and sent ARP requests for an
     * address that can never answer on this link, and every off-link datagram waited in vain.
     */
    @Test
    void aGatewayThatIsNoNeighbourIsRefusedWhenAStackTakesTheConfig()
    {
        for (final String gateway : new String[] {"198.19.0.1", "198.18.0.2", "198.18.0.0", "198.18.0.255"})
        {
            final StackConfig config = StackConfig.of("198.18.0.2/24").gateway(Ipv4Address.parse(gateway));
            assertRefused(() -> new NetStack(new TestDevice(1500), config, StackCounters.inMemory(), 0), "gateway " + gateway);
            assertFalse(config.sealed(), "a refused config stays open to be corrected");
        }
        final StackConfig corrected = StackConfig.of("198.19.0.2/24").gateway(Ipv4Address.parse("198.18.0.1"))
            .address(Ipv4Address.parse("198.18.0.2"));
        new NetStack(new TestDevice(1500), corrected, StackCounters.inMemory(), 0);
        assertTrue(corrected.sealed(), "a gateway set before the address it neighbours");
    }

    private static void assertRefused(final org.junit.jupiter.api.function.Executable set, final String named)
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, set);
        assertTrue(e.getMessage().contains(named), e.getMessage());
    }

    /**
     * A stack reads its config once and parts of it keep what they read (early demultiplexing keeps the address), so a
     * change afterwards would reach some layers and not others: the stack seals its config, and every setter, found
     * by reflection so that one added later is covered too, then throws and changes nothing.
     */
    @Test
    void aStackSealsItsConfigAndEverySetterThenThrows() throws Exception
    {
        final StackConfig config = StackConfig.of("198.18.0.2/24");
        assertFalse(config.sealed());
        new NetStack(new TestDevice(1500), config, StackCounters.inMemory(), 0);
        assertTrue(config.sealed());

        final List<String> before = getters(config);
        int setters = 0;
        for (final Method m : StackConfig.class.getMethods())
        {
            if (m.getReturnType() != StackConfig.class || Modifier.isStatic(m.getModifiers()) || m.getParameterCount() == 0)
            {
                continue;
            }
            setters++;
            final Object[] args = new Object[m.getParameterCount()];
            for (int i = 0; i < args.length; i++)
            {
                args[i] = m.getParameterTypes()[i] == long.class ? (Object)1L : (Object)1;
            }
            final InvocationTargetException e = assertThrows(InvocationTargetException.class, () -> m.invoke(config, args),
                m.getName() + " on a sealed config");
            assertInstanceOf(IllegalStateException.class, e.getCause(), m.getName() + ": " + e.getCause());
            assertTrue(e.getCause().getMessage().contains("sealed"), e.getCause().getMessage());
        }
        assertTrue(setters >= 10, "setters found: " + setters);
        assertEquals(before, getters(config), "a refused setter changed nothing");
    }

    private static List<String> getters(final StackConfig config) throws Exception
    {
        final List<String> values = new ArrayList<>();
        for (final Method m : StackConfig.class.getMethods())
        {
            if (m.getParameterCount() == 0 && m.getReturnType() != void.class && m.getReturnType() != StackConfig.class
                && !Modifier.isStatic(m.getModifiers()) && m.getDeclaringClass() == StackConfig.class)
            {
                values.add(m.getName() + "=" + m.invoke(config));
            }
        }
        values.sort(null);
        return values;
    }
}
