/**
 * Wire formats: one flyweight view per header over an Agrona buffer, checksums, addresses and
 * sequence-number arithmetic. Nothing here allocates on the fast path or keeps protocol state.
 *
 * <p>Length-check contract (smoltcp {@code wire/mod.rs}): untrusted input goes through
 * {@code wrapChecked}, which returns true only when no accessor of the view can read outside the
 * wrapped region or the buffer; emitting into a freshly claimed buffer uses the plain {@code wrap}.
 * All multi-byte fields are in network byte order (big endian); unsigned fields are widened to
 * {@code int} (or {@code long} for MAC addresses) so callers never see a negative port or length.
 */
package io.nicstack.stack.wire;
