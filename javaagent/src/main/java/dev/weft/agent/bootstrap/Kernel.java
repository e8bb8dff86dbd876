package dev.weft.agent.bootstrap;

import java.util.concurrent.atomic.AtomicLong;

/** Tells the kernel what the calling OS thread now works for. Callers only call it on a change. */
public final class Kernel {
  private Kernel() {}

  // Set once by the installer before any advice can run.
  private static boolean ioctl;
  private static boolean counting;
  private static final AtomicLong WRITES = new AtomicLong();

  public static void configure(boolean ioctlMode, boolean count) {
    ioctl = ioctlMode;
    counting = count;
  }

  public static boolean ioctlMode() {
    return ioctl;
  }

  /** id 0 means nothing mounted: the thread is its own key again. */
  public static void write(long id) {
    if (counting) {
      WRITES.incrementAndGet();
    }
    if (!ioctl) {
      WeftNative.mount(id);
    } else if (id == 0) {
      WeftNative.unmountIoctl();
    } else {
      WeftNative.mountIoctl(id);
    }
  }

  /** Native calls made by write() since start (only with count=true). */
  public static long writes() {
    return WRITES.get();
  }
}
