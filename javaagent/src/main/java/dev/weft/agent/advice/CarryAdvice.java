package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.Carried;
import net.bytebuddy.asm.Advice;

/** A library's request objects carry the id of the request that made them (see Carried). */
public final class CarryAdvice {
  private CarryAdvice() {}

  /** Constructor of a request object (OkHttp's AsyncCall, the JDK's MultiExchange). */
  public static final class Capture {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object request) {
      Carried.capture(request);
    }
  }

  /**
   * The JDK's MultiExchange constructor: it builds its first Exchange inside
   * (before this exit), so that one takes the id here too.
   */
  public static final class CaptureWithExchange {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object multi, @Advice.FieldValue("exchange") Object exchange) {
      Carried.capture(multi);
      Carried.inherit(exchange, multi);
    }
  }

  /**
   * The JDK's Http1Exchange(Exchange, HttpConnection) constructor: it works
   * for its Exchange, and so does the publisher of its request bytes, built
   * inside it.
   */
  public static final class InheritWithPublisher {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object exchange, @Advice.Argument(0) Object parent,
        @Advice.FieldValue("writePublisher") Object publisher) {
      Carried.inherit(exchange, parent);
      Carried.inherit(publisher, exchange);
    }
  }

  /**
   * An object that holds bytes for whichever request gave it some last (the
   * JDK's SSL writer of a connection, argument 1 false: not its end): it
   * works for the request mounted now, or for none.
   */
  public static final class TakeMounted {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.This Object holder, @Advice.Argument(1) boolean complete) {
      if (!complete) {
        Carried.takeMounted(holder);
      }
    }
  }

  /** Constructor whose second argument is the object it works for (Exchange(request, MultiExchange, ..)). */
  public static final class InheritArgument1 {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object child, @Advice.Argument(1) Object parent) {
      Carried.inherit(child, parent);
    }
  }

  /** Constructor whose only argument is the object it works for (a retry's copy of its original). */
  public static final class InheritArgument0 {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object child, @Advice.Argument(0) Object parent) {
      Carried.inherit(child, parent);
    }
  }

  /**
   * Apache HttpClient 5 async: an execution's scope, built on the caller's
   * thread; its context object goes along to the I/O reactor with the request.
   */
  public static final class CaptureClientContext {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.FieldValue("clientContext") Object context) {
      Carried.capture(context);
    }
  }

  /** Apache HttpCore 5: a request's execution command works for its context's request. */
  public static final class InheritContext {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object command, @Advice.FieldValue("context") Object context) {
      Carried.inherit(command, context);
    }
  }

  /**
   * Apache HttpCore 5: an HTTP/1.1 connection starts a request's exchange
   * (argument 0, its command) and writes its head. The connection works for
   * that request until the next one, so later writes of its body find it too.
   */
  public static final class MountCommand {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.This Object connection, @Advice.Argument(0) Object command) {
      Carried.follow(connection, command);
      return Carried.mount(command);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Carried.restore(prev);
    }
  }

  /**
   * The run() of an inner class whose outer object carries the id (the
   * JDK's Http1Publisher$WriteTask, which its client's executor runs).
   */
  public static final class MountOuter {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.FieldValue("this$1") Object outer) {
      return Carried.mount(outer);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Carried.restore(prev);
    }
  }

  /** A method that runs or writes the request: its id is mounted around it. */
  public static final class Mount {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.This Object request) {
      return Carried.mount(request);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Enter long prev) {
      Carried.restore(prev);
    }
  }
}
