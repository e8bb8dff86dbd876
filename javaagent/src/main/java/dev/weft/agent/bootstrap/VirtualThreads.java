package dev.weft.agent.bootstrap;

/**
 * A virtual thread keeps its own id (Context is per Java thread); the kernel
 * sees its carrier, whose slot must follow each mount and unmount.
 */
public final class VirtualThreads {
  private VirtualThreads() {}

  /** Entering mount(): still on the carrier. */
  public static long beforeMount() {
    return Context.current();
  }

  /** Leaving mount(): now the virtual thread. */
  public static void mounted(long carrierId) {
    long id = Context.current();
    if (id != carrierId) {
      Kernel.write(id);
    }
  }

  /** Entering unmount(): still the virtual thread. */
  public static long beforeUnmount() {
    return Context.current();
  }

  /** Leaving unmount(): the carrier again. */
  public static void unmounted(long virtualId) {
    long id = Context.current();
    if (id != virtualId) {
      Kernel.write(id);
    }
  }
}
