package dev.weft.agent.bootstrap;

/**
 * kotlinx.coroutines tasks (DispatchedTask: a continuation to resume). A
 * suspension (CancellableContinuationImpl) keeps the id it was made under,
 * whoever resumes it: timers, selectors and other requests resume coroutines
 * that are not theirs. A coroutine frame's DispatchedContinuation is long
 * lived and is dispatched from the coroutine's own work (launch, yield, the
 * end of a withContext block), so it takes the id it is dispatched under.
 * A task with no id runs with none. Ids stay until the task is collected or
 * re-keyed.
 */
public final class Coroutines {
  private Coroutines() {}

  private static final IdTable TASKS = new IdTable(1 << 16);

  /** A task was created (or reset for reuse) on this thread. */
  public static void created(Object task) {
    TASKS.put(task, Context.current());
  }

  private static final String CONTINUATION = "kotlinx.coroutines.internal.DispatchedContinuation";

  /** A task is being dispatched from this thread: a frame continuation takes the current id. */
  public static void dispatched(Object task) {
    if (task != null && CONTINUATION.equals(task.getClass().getName())) {
      continuationDispatched(task);
    }
  }

  /** A DispatchedContinuation is dispatched (or yields) from this thread. */
  public static void continuationDispatched(Object task) {
    long id = Context.current();
    if (id != 0) {
      TASKS.put(task, id);
    }
  }

  /** The task's id from now on (a channel handed it a request's element). */
  public static void assign(Object task, long id) {
    if (id != 0 && task != null) {
      TASKS.put(unwrap(task), id);
    }
  }

  private static final String RECEIVE_CATCHING = "kotlinx.coroutines.channels.ReceiveCatching";
  private static volatile java.lang.reflect.Field receiveCatchingCont;

  /**
   * receiveCatching() waits as a ReceiveCatching holding its continuation in
   * field cont. The field is public but its class is not, so reading it needs
   * setAccessible (without it every suspended receiveCatching lost its id).
   */
  private static Object unwrap(Object waiter) {
    Class<?> c = waiter.getClass();
    if (!RECEIVE_CATCHING.equals(c.getName())) {
      return waiter;
    }
    try {
      java.lang.reflect.Field f = receiveCatchingCont;
      if (f == null || f.getDeclaringClass() != c) {
        f = c.getDeclaredField("cont");
        f.setAccessible(true);
        receiveCatchingCont = f;
      }
      Object cont = f.get(waiter);
      return cont != null ? cont : waiter;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return waiter;
    }
  }

  /** Before a task's continuation runs here; returns the id to restore. */
  public static long enter(Object task) {
    Context.State s = Context.state();
    long prev = s.id;
    s.task = task;
    long id = TASKS.get(task);
    if (id != prev) {
      s.id = id;
      Kernel.write(id);
    }
    return prev;
  }

  /** After the continuation suspended, finished or threw. */
  public static void exit(long prev, Object prevTask) {
    Context.state().task = prevTask;
    Context.restore(prev);
  }

  /** The task running on this thread now (for exit's bookkeeping). */
  public static Object currentTask() {
    return Context.state().task;
  }

  /**
   * The running coroutine took over work for request id (a received element):
   * mount it for the rest of this step and keep it on the task, so that the
   * coroutine's next suspensions carry it too.
   */
  public static void adopt(long id) {
    if (id == 0) {
      return;
    }
    Context.State s = Context.state();
    if (s.task != null) {
      TASKS.put(s.task, id);
    }
    if (s.id != id) {
      s.id = id;
      Kernel.write(id);
    }
  }

  /** Tasks holding an id (diagnostics). */
  public static int tracked() {
    return TASKS.size();
  }
}
