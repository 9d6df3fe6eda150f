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
