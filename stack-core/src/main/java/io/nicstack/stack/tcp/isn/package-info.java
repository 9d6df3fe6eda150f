/**
 * Initial sequence numbers (RFC 6528) and SYN cookies (RFC 4987 (3.6)), both keyed with
 * SipHash-2-4 so that an off-path attacker can neither predict nor forge them.
 */
package io.nicstack.stack.tcp.isn;
