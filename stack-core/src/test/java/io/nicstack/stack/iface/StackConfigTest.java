package io.nicstack.stack.iface;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

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
}
