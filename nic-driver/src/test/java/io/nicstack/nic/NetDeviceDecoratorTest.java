package io.nicstack.nic;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.SystemEpochNanoClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.nicstack.nic.fault.FaultConfig;
import io.nicstack.nic.fault.FaultInjectingDevice;
import io.nicstack.nic.pcap.PcapWritingDevice;

import static org.junit.jupiter.api.Assertions.*;

/** A decorator forwards every call it does not override, and never passes checksum offload through. */
class NetDeviceDecoratorTest
{
    /** An inner device that records each call and answers each method with a value of its own. */
    private static final class Inner
    {
        final List<String> calls = new ArrayList<>();
        final UnsafeBuffer claimBuffer = new UnsafeBuffer(new byte[64]);
        final NetDevice device = (NetDevice)Proxy.newProxyInstance(
            NetDevice.class.getClassLoader(), new Class<?>[] {NetDevice.class}, (proxy, method, args) ->
            {
                calls.add(signature(method));
                return answer(method);
            });

        Object answer(final Method method)
        {
            final Class<?> type = method.getReturnType();
            final int distinct = 1000 + Math.abs(signature(method).hashCode() % 1000);
            if (type == long.class)
            {
                return (long)distinct;
            }
            if (type == int.class)
            {
                return distinct;
            }
            if (type == boolean.class)
            {
                return true;
            }
            if (type == String.class)
            {
                return "inner-" + distinct;
            }
            if (type == MutableDirectBuffer.class)
            {
                return claimBuffer;
            }
            return null;
        }
    }

    private static String signature(final Method method)
    {
        return method.getName() + List.of(method.getParameterTypes());
    }

    private static Object[] arguments(final Method method)
    {
        final Class<?>[] types = method.getParameterTypes();
        final Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++)
        {
            args[i] = types[i] == int.class ? (Object)0 : types[i] == long.class ? (Object)0L : null;
        }
        return args;
    }

    /** Forwarded on purpose: everything but the checksum offload pair (see the class comment). */
    private static boolean forwarded(final Method method)
    {
        return !method.getName().equals("transmitChecksumOffload")
            && !(method.getName().equals("commit") && method.getParameterCount() == 2);
    }

    @Test
    void everyCallButTheOffloadPairReachesTheInnerDeviceAndItsAnswerComesBack() throws Exception
    {
        int checked = 0;
        for (final Method method : NetDevice.class.getMethods())
        {
            if (Modifier.isStatic(method.getModifiers()) || !forwarded(method))
            {
                continue;
            }
            final Inner inner = new Inner();
            final NetDeviceDecorator decorator = new NetDeviceDecorator(inner.device)
            {
            };
            final Object result = method.invoke(decorator, arguments(method));
            assertEquals(List.of(signature(method)), inner.calls, "inner calls for " + signature(method));
            assertEquals(inner.answer(method), result, "answer of " + signature(method));
            checked++;
        }
        assertTrue(checked >= 15, "checked " + checked + " methods");
    }

    @Test
    void checksumOffloadIsNotOfferedThroughADecoratorAndFlagsAreRefused()
    {
        final Inner inner = new Inner();
        final NetDeviceDecorator decorator = new NetDeviceDecorator(inner.device)
        {
        };

        assertFalse(decorator.transmitChecksumOffload(), "the inner device offers it; the decorator must not");
        final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
            () -> decorator.commit(60, NetDevice.TX_L4_CHECKSUM_PARTIAL));
        assertTrue(refused.getMessage().contains("does not offload"), refused.getMessage());
        assertFalse(inner.calls.stream().anyMatch(c -> c.startsWith("commit")), inner.calls.toString());

        decorator.commit(60, 0);
        assertTrue(inner.calls.contains("commit[int]"), "no flags: a plain commit reaches the inner device");
    }

    @Test
    void theFaultAndPcapDecoratorsPassTheSuperframeCountersThrough(@TempDir final Path dir) throws Exception
    {
        final Inner inner = new Inner();
        final FaultInjectingDevice faults =
            new FaultInjectingDevice(inner.device, FaultConfig.NONE, FaultConfig.NONE, System::nanoTime);
        try (PcapWritingDevice pcap =
            new PcapWritingDevice(inner.device, dir.resolve("capture.pcap"), new SystemEpochNanoClock()))
        {
            for (final NetDevice decorator : List.of(faults, pcap))
            {
                for (final String name : List.of(
                    "receiveSuperframes", "receiveSuperframeSegments", "transmitSuperframes", "transmitSuperframeSegments"))
                {
                    final Method method = NetDevice.class.getMethod(name);
                    assertEquals(inner.answer(method), method.invoke(decorator), name + " of " + decorator);
                }
            }
        }
    }
}
