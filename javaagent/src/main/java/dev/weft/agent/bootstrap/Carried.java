package dev.weft.agent.bootstrap;

/**
 * Ids carried by a library's own request objects (an OkHttp AsyncCall, a JDK
 * HttpClient exchange) from where the request was made to where its bytes are
 * written. Unlike Tasks, the object's id wins over whatever the running
 * thread has mounted: a library that runs one caller's work from another
 * caller's thread (OkHttp's Dispatcher promotes queued calls from the thread
 * of the call that finished) would otherwise lend it the wrong request.
 */
public final class Carried {
  private Carried() {}

  private static final IdTable IDS = new IdTable(1 << 16);

  /** The request object was made here: it works for the id mounted now (if any). */
  public static void capture(Object request) {
    long id = Context.current();
    if (id != 0) {
      IDS.put(request, id);
    }
  }

  /** child (e.g. an exchange) works for what parent (its multi-exchange) works for. */
  public static void inherit(Object child, Object parent) {
    long id = IDS.get(parent);
    if (id != 0) {
      IDS.put(child, id);
    }
  }

  /**
   * child works for what parent works for now, or for no request when parent
   * has none: a reused object (a connection) must not keep the id of the
   * request it worked for before.
   */
  public static void follow(Object child, Object parent) {
    IDS.put(child, IDS.get(parent));
  }

  /**
   * holder now holds bytes of the request mounted now, or of none: like
   * follow, it must not keep the id of a request it held bytes for before.
   */
  public static void takeMounted(Object holder) {
    IDS.put(holder, Context.current());
  }

  /**
   * Mounts request's id for the code that writes it, or nothing (0) when it
   * has none: no request is better than the running thread's, which may be
   * another request's. Returns what to restore.
   */
  public static long mount(Object request) {
    return Context.swap(IDS.get(request));
  }

  /** The id request works for, or 0. */
  static long idOf(Object request) {
    return IDS.get(request);
  }

  /** Puts back what mount returned. */
  public static void restore(long prev) {
    Context.restore(prev);
  }
}
