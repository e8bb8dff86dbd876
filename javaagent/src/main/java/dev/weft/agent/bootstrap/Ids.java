package dev.weft.agent.bootstrap;

import java.util.concurrent.atomic.AtomicInteger;

/** Per-process logical request ids: 1..0x7fffffff, wrapping, never 0 (the kernel keeps the low 31 bits). */
public final class Ids {
  private Ids() {}

  private static final AtomicInteger COUNTER = new AtomicInteger();

  public static long next() {
    for (;;) {
      int v = COUNTER.incrementAndGet() & 0x7fffffff;
      if (v != 0) {
        return v;
      }
    }
  }
}
