package dev.weft.agent.bootstrap;

/**
 * Channel elements in flight: element -> id of the request that sent it, so
 * that a long-lived worker coroutine receiving it works for that request.
 * Keyed by identity; the same instance sent twice keeps the later sender.
 */
public final class Elements {
  private Elements() {}

  private static final IdTable SENT = new IdTable(1 << 14);

  /** At send: the element carries the sender's id. */
  public static void sent(Object element) {
    long id = Context.current();
    if (id != 0) {
      SENT.put(element, id);
    }
  }

  /** The sender's id, leaving the record (the receiver may still look). */
  public static long peek(Object element) {
    return SENT.get(element);
  }

  /** At receive: the sender's id, or 0; the record goes. */
  public static long received(Object element) {
    return element == null ? 0 : SENT.take(unbox(element));
  }

  private static final String CHANNEL_RESULT = "kotlinx.coroutines.channels.ChannelResult";
  private static volatile java.lang.reflect.Field holder;

  /** receiveCatching (a suspend function) returns its inline-class result boxed: the element is inside. */
  private static Object unbox(Object r) {
    Class<?> c = r.getClass();
    if (!CHANNEL_RESULT.equals(c.getName())) {
      return r;
    }
    try {
      java.lang.reflect.Field f = holder;
      if (f == null || f.getDeclaringClass() != c) {
        f = c.getDeclaredField("holder");
        f.setAccessible(true);
        holder = f;
      }
      Object e = f.get(r);
      return e != null ? e : r;
    } catch (ReflectiveOperationException | RuntimeException ex) {
      return r;
    }
  }
}
