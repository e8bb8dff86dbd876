package dev.weft.agent.bootstrap;

/**
 * Executor hand-offs: a task submitted while an id is mounted runs under that
 * id, once. Loops that never return (event-loop thread bodies) would pin the
 * id to a thread for good, so they are never captured.
 */
public final class Tasks {
  private Tasks() {}

  private static final IdTable PENDING = new IdTable(1 << 16);

  /** Class-name prefixes of runnables that are thread bodies, not tasks. */
  private static final String[] LOOPS = {
    "io.netty.util.internal.ThreadExecutorMap",
    "io.netty.util.concurrent.SingleThreadEventExecutor",
    "io.netty.util.concurrent.ThreadPerTaskExecutor",
    "io.netty.util.concurrent.FastThreadLocalRunnable",
    "kotlinx.coroutines.scheduling.",
    "java.lang.VirtualThread$", // continuations of a custom scheduler
  };

  /** At submit: remember the submitter's id for task. */
  public static void capture(Object task) {
    if (task == null) {
      return;
    }
    long id = Context.current();
    if (id != 0 && !isLoop(task)) {
      PENDING.put(task, id);
    }
  }

  /**
   * A ForkJoinTask was built here (ForkJoinPool wraps a submitted Runnable in
   * one; CompletableFuture's async tasks are ones). CompletableFuture's
   * dependent-stage objects are ForkJoinTasks too but mostly never run as
   * tasks: they are skipped rather than filling the table.
   */
  public static void captureConstructed(Object task) {
    if (Context.current() == 0) {
      return;
    }
    String name = task.getClass().getName();
    if (name.startsWith("java.util.concurrent.CompletableFuture$") && !name.contains("$Async")) {
      return;
    }
    capture(task);
  }

  private static boolean isLoop(Object task) {
    String name = task.getClass().getName();
    for (String p : LOOPS) {
      if (name.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  /** Before task runs: mounts its captured id, if any; returns the id to restore. */
  public static long enter(Object task) {
    Context.State s = Context.state();
    long id = PENDING.take(task);
    long prev = s.id;
    if (id == 0 || id == prev || s.carrier) {
      return prev;
    }
    s.id = id;
    Kernel.write(id);
    return prev;
  }

  /** After task ran, normally or not. */
  public static void exit(long prev) {
    Context.restore(prev);
  }

  /** Runs r under its captured id: stands in for r.run() inside pool worker loops. */
  public static void run(Runnable r) {
    long prev = enter(r);
    try {
      r.run();
    } finally {
      exit(prev);
    }
  }

  /** Tasks waiting to run with an id (diagnostics). */
  public static int pending() {
    return PENDING.size();
  }
}
