package dev.weft.agent;

import dev.weft.agent.bootstrap.Context;
import dev.weft.agent.bootstrap.Ids;
import dev.weft.agent.bootstrap.WeftNative;

/** Test helpers: what the kernel would read on this OS thread, and running code under an id. */
public final class Slots {
  private Slots() {}

  /** The slot of the calling OS thread (a virtual thread's carrier). */
  public static long now() {
    return WeftNative.currentSlot();
  }

  public static long freshId() {
    return Ids.next();
  }

  /** Runs body with id mounted on this thread, then puts back what was there. */
  public static void under(long id, Runnable body) {
    long prev = Context.swap(id);
    try {
      body.run();
    } finally {
      Context.restore(prev);
    }
  }
}
