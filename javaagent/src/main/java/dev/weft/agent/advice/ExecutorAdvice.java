package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.Tasks;
import net.bytebuddy.asm.Advice;

/** java.util.concurrent and Netty executors: capture at submit, mount at run. */
public final class ExecutorAdvice {
  private ExecutorAdvice() {}

  /** execute(Runnable, ...), delayedExecute(task): the task is argument 0. */
  public static final class CaptureArgument {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(0) Object task) {
      Tasks.capture(task);
    }
  }

  /** A task constructor (ForkJoinTask): it is built where it is submitted. */
  public static final class CaptureConstructed {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object task) {
      Tasks.captureConstructed(task);
    }
  }

  /** static run helpers taking the task (Netty's safeExecute/runTask). */
  public static final class RunArgument {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.Argument(0) Object task) {
      return Tasks.enter(task);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Tasks.exit(prev);
    }
  }

  /** The task's own run method (ForkJoinTask.doExec, VirtualThread.run). */
  public static final class RunThis {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.This Object task) {
      return Tasks.enter(task);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Tasks.exit(prev);
    }
  }
}
