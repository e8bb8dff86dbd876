package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.Coroutines;
import dev.weft.agent.bootstrap.Elements;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/** kotlinx.coroutines: DispatchedTask life cycle and channel hand-offs. */
public final class CoroutineAdvice {
  private CoroutineAdvice() {}

  /** DispatchedTask constructor, CancellableContinuationImpl.resetStateReusable. */
  public static final class Created {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object task) {
      Coroutines.created(task);
    }
  }

  /** safeDispatch(dispatcher, context, task). */
  public static final class Dispatched {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(2) Object task) {
      Coroutines.dispatched(task);
    }
  }

  /** DispatchedContinuation.dispatchYield: yield() re-dispatches the frame from its own step. */
  public static final class Yielded {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.This Object continuation) {
      Coroutines.continuationDispatched(continuation);
    }
  }

  /** DispatchedTask.run(): one step of a coroutine on a dispatcher thread. */
  public static final class Run {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.This Object task, @Advice.Local("weftTask") Object prevTask) {
      prevTask = Coroutines.currentTask();
      return Coroutines.enter(task);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev, @Advice.Local("weftTask") Object prevTask) {
      Coroutines.exit(prev, prevTask);
    }
  }

  /** DispatchedTaskKt.resume(task, delegate, undispatched): a step run inline by the resumer. */
  public static final class ResumeInline {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.Argument(0) Object task, @Advice.Local("weftTask") Object prevTask) {
      prevTask = Coroutines.currentTask();
      return Coroutines.enter(task);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev, @Advice.Local("weftTask") Object prevTask) {
      Coroutines.exit(prev, prevTask);
    }
  }

  /** Channel send/trySend: the element carries the sender's id. */
  public static final class Sent {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(0) Object element) {
      Elements.sent(element);
    }
  }

  /** A sender hands its element straight to a suspended receiver: that receiver resumes for the sender. */
  public static final class ResumeReceiver {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(0) Object receiver, @Advice.Argument(1) Object element) {
      Coroutines.assign(receiver, Elements.peek(element));
    }
  }

  /** receive/receiveCatching/tryReceive/iterator next: the worker adopts the sender's id. */
  public static final class Received {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Return(typing = Assigner.Typing.DYNAMIC) Object element) {
      Coroutines.adopt(Elements.received(element));
    }
  }
}
