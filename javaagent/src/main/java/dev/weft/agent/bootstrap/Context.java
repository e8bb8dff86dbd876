package dev.weft.agent.bootstrap;

/**
 * The logical id each Java thread works for, platform or virtual. A change is
 * passed to the kernel at once; setting the value it already has costs nothing.
 * For a virtual thread the kernel sees its carrier, which VirtualThreads keeps
 * in step at mount and unmount.
 */
public final class Context {
  private Context() {}

  /** Per Java thread; fields touched only by the owning thread. */
  static final class State {
    long id;
    /** The coroutine task this thread runs now, so a receive can re-key it. */
    Object task;
    /** A virtual-thread carrier: its own pool tasks are only continuations. */
    final boolean carrier =
        "jdk.internal.misc.CarrierThread".equals(Thread.currentThread().getClass().getName());
  }

  private static final ThreadLocal<State> STATE =
      new ThreadLocal<State>() {
        @Override
        protected State initialValue() {
          return new State();
        }
      };

  static State state() {
    return STATE.get();
  }

  public static long current() {
    return STATE.get().id;
  }

  /** Mounts id (0 = none) on this thread and returns what was mounted before. */
  public static long swap(long id) {
    State s = STATE.get();
    long prev = s.id;
    if (prev != id) {
      s.id = id;
      Kernel.write(id);
    }
    return prev;
  }

  /** Puts back what swap returned. */
  public static void restore(long prev) {
    swap(prev);
  }

  /**
   * The request this thread reads for has ended and the server reads the next
   * one in the same pass (a kept-alive connection whose next request had
   * arrived): a fresh id for it, so that work the first left behind never
   * takes the second for its parent. Only under an id a server hook mounted:
   * after a run-time attach, a pass already running has none to renew.
   */
  public static void renew() {
    if (STATE.get().id != 0) {
      swap(Ids.next());
    }
  }

  /** Starts a new request on this thread (a server is about to read one); returns the previous id. */
  public static long begin() {
    return swap(Ids.next());
  }
}
