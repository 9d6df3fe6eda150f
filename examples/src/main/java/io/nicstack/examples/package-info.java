/** Host applications built only on the ring client library (io.nicstack.pipes.client). */
package io.nicstack.examples;
