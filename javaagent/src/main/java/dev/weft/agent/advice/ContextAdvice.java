package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.Context;
import dev.weft.agent.bootstrap.ServerStreams;
import dev.weft.agent.bootstrap.VirtualThreads;
import net.bytebuddy.asm.Advice;

/** Advice that sets the thread's id around a whole method. */
public final class ContextAdvice {
  private ContextAdvice() {}

  /** A server is about to read a request: a fresh id, mounted before the socket read. */
  public static final class ServerRead {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter() {
      return Context.begin();
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Context.restore(prev);
    }
  }

  /** Ktor CIO server: a step of the socket-reader coroutine that fills a connection's input channel. */
  public static final class ServerStreamRead {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.FieldValue("$channel") Object channel) {
      return ServerStreams.beforeRead(channel);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Context.restore(prev);
    }
  }

  /** Ktor CIO server: a connection is set up (its input channel is argument 0). */
  public static final class ServerConnection {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object connection, @Advice.Argument(0) Object input) {
      ServerStreams.connection(connection, input);
    }
  }

  /** Ktor CIO server: a step of the connection's pipeline coroutine. */
  public static final class PipelineStep {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.FieldValue("$connection") Object connection) {
      ServerStreams.pipelineStep(connection);
    }
  }

  /** A loop that serves many requests (a selector): it works for none of them. */
  public static final class NoRequest {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter() {
      return Context.swap(0);
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Context.restore(prev);
    }
  }

  /** Same, for methods that may throw (restore on the way out too). */
  public static final class NoRequestGuarded {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter() {
      return Context.swap(0);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Context.restore(prev);
    }
  }

  /** VirtualThread.mount(): the carrier's slot takes the virtual thread's id. */
  public static final class VirtualMount {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter() {
      return VirtualThreads.beforeMount();
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Enter long carrierId) {
      VirtualThreads.mounted(carrierId);
    }
  }

  /** VirtualThread.unmount(): the carrier's slot gets its own id back. */
  public static final class VirtualUnmount {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter() {
      return VirtualThreads.beforeUnmount();
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Enter long virtualId) {
      VirtualThreads.unmounted(virtualId);
    }
  }
}
