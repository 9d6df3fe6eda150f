/**
 * Congestion controllers behind {@link io.nicstack.stack.tcp.CongestionControl}: {@link
 * io.nicstack.stack.tcp.cc.NewReno} (RFC 5681, RFC 3465, RFC 6582) and {@link
 * io.nicstack.stack.tcp.cc.Cubic} (RFC 9438), chosen by name through {@link
 * io.nicstack.stack.tcp.cc.CongestionControls}.
 */
package io.nicstack.stack.tcp.cc;
