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

  /** A server's pass over a connection goes on to its next request (see Context.renew). */
  public static final class NextRequest {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit() {
      Context.renew();
    }
  }

  /** Ktor CIO: a server accepted a socket (argument 0), before its reader coroutine exists. */
  public static final class ServerAccepted {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(0) Object socket) {
      ServerStreams.accepted(socket);
    }
  }

  /** Ktor CIO: readFrom(channel, socket), one socket read of a connection's reader. */
  public static final class ServerSocketRead {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.Argument(0) Object channel, @Advice.Argument(1) Object socket) {
      return ServerStreams.beforeRead(channel, socket);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Context.restore(prev);
    }
  }

  /** Ktor CIO: a step of the pooled-buffer reader coroutine, which reads inline. */
  public static final class ServerStreamRead {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.FieldValue("$channel") Object channel,
        @Advice.FieldValue("$nioChannel") Object socket) {
      return ServerStreams.beforeRead(channel, socket);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Context.restore(prev);
    }
  }

  /**
   * Ktor CIO: a step of a request's handler coroutine. Its first step (label
   * 0) runs right after the pipeline parsed the request head: it runs under
   * the request's id, and so does everything it creates or dispatches.
   */
  public static final class ServerRequestStart {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.FieldValue("label") int label, @Advice.FieldValue("$connection") Object connection) {
      return label == 0 ? ServerStreams.requestStarted(connection) : -1L;
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      if (prev >= 0) {
        Context.restore(prev);
      }
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
