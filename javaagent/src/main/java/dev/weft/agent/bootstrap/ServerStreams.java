package dev.weft.agent.bootstrap;

import java.lang.ref.WeakReference;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Ktor's CIO server: a socket-reader coroutine reads the connection's bytes
 * into a byte channel, and the connection's pipeline coroutine parses requests
 * out of it. A fresh id is mounted around the socket read (so the kernel sees
 * the request under it) and left pending on the connection; the pipeline
 * adopts it when it next runs, before it launches the request's handler. One
 * id covers every read until the pipeline takes it, so a request read in
 * several pieces keeps a single id.
 */
public final class ServerStreams {
  private ServerStreams() {}

  /** input byte channel -> its connection (weakly both ways). */
  private static final Map<Object, WeakReference<Object>> CONNECTIONS =
      Collections.synchronizedMap(new WeakHashMap<Object, WeakReference<Object>>());
  private static final IdTable PENDING = new IdTable(1 << 12);

  /** A server connection was set up with this input channel. */
  public static void connection(Object connection, Object input) {
    if (connection != null && input != null) {
      CONNECTIONS.put(input, new WeakReference<>(connection));
    }
  }

  /** Before a socket read into channel: mounts the connection's pending id; returns the id to restore. */
  public static long beforeRead(Object channel) {
    if (channel == null) {
      return Context.current();
    }
    WeakReference<Object> ref = CONNECTIONS.get(channel);
    Object connection = ref == null ? null : ref.get();
    if (connection == null) {
      return Context.current();
    }
    long id = PENDING.get(connection);
    if (id == 0) {
      id = Ids.next();
      PENDING.put(connection, id);
    }
    return Context.swap(id);
  }

  /** The connection's pipeline coroutine runs a step: it takes the pending request id, if any. */
  public static void pipelineStep(Object connection) {
    Coroutines.adopt(PENDING.take(connection));
  }
}
