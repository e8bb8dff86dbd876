package dev.weft.agent.install;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import dev.weft.agent.advice.AuditAdvice;
import dev.weft.agent.advice.ContextAdvice;
import dev.weft.agent.advice.CoroutineAdvice;
import dev.weft.agent.advice.ExecutorAdvice;
import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.matcher.ElementMatcher;

/** Every method the agent instruments, and the advice it gets. */
final class Hooks {
  private Hooks() {}

  /** One advice on the methods of one class. */
  static final class Hook {
    final String type;
    final ElementMatcher<? super MethodDescription> methods;
    final String advice;
    final String what;

    Hook(String type, ElementMatcher<? super MethodDescription> methods, Class<?> advice, String what) {
      this.type = type;
      this.methods = methods;
      this.advice = advice.getName();
      this.what = what;
    }
  }

  static List<Hook> all(boolean audit) {
    List<Hook> h = new ArrayList<>();

    // Servers: a fresh id before the socket read of a request.
    h.add(new Hook("io.netty.channel.nio.AbstractNioByteChannel$NioByteUnsafe",
        named("read").and(takesArguments(0)), ContextAdvice.ServerRead.class, "read()"));
    h.add(new Hook("io.netty.channel.epoll.AbstractEpollStreamChannel$EpollStreamUnsafe",
        named("epollInReady").and(takesArguments(0)), ContextAdvice.ServerRead.class, "epollInReady()"));
    h.add(new Hook("sun.net.httpserver.ServerImpl$Exchange",
        named("run").and(takesArguments(0)), ContextAdvice.ServerRead.class, "run()"));

    // Ktor CIO server: accepted socket -> reader coroutine's reads (under the
    // connection's pending id) -> the request's handler coroutine (takes it).
    h.add(new Hook("io.ktor.network.sockets.ServerSocketImpl",
        named("accepted").and(takesArguments(1)), ContextAdvice.ServerAccepted.class, "accepted(SocketChannel)"));
    h.add(new Hook("io.ktor.network.sockets.CIOReaderKt",
        named("readFrom").and(takesArguments(3)), ContextAdvice.ServerSocketRead.class,
        "readFrom(channel, socket, cont) (direct reader)"));
    h.add(new Hook("io.ktor.network.sockets.CIOReaderKt$attachForReadingImpl$1",
        named("invokeSuspend"), ContextAdvice.ServerStreamRead.class, "invokeSuspend (pooled reader step)"));
    h.add(new Hook("io.ktor.server.cio.backend.ServerPipelineKt$startServerConnectionPipeline$1$1",
        named("invokeSuspend"), ContextAdvice.ServerRequestStart.class, "invokeSuspend (request handler step)"));

    // Netty event-loop tasks (a write from a coroutine thread runs on the loop).
    h.add(new Hook("io.netty.util.concurrent.SingleThreadEventExecutor",
        named("execute").and(takesArgument(0, Runnable.class)), ExecutorAdvice.CaptureArgument.class,
        "execute(Runnable[, boolean])"));
    h.add(new Hook("io.netty.util.concurrent.AbstractEventExecutor",
        named("safeExecute").or(named("runTask")).and(takesArguments(Runnable.class)),
        ExecutorAdvice.RunArgument.class, "safeExecute/runTask(Runnable)"));

    // java.util.concurrent.
    h.add(new Hook("java.util.concurrent.ThreadPoolExecutor",
        named("execute").and(takesArguments(Runnable.class)), ExecutorAdvice.CaptureArgument.class,
        "execute(Runnable)"));
    h.add(new Hook("java.util.concurrent.ScheduledThreadPoolExecutor",
        named("delayedExecute").and(takesArguments(1)), ExecutorAdvice.CaptureArgument.class,
        "delayedExecute(task) (schedule*, submit, execute)"));
    // Workers that were already looping when the agent attached keep the old
    // runWorker: the task's own run() covers submit() for them.
    h.add(new Hook("java.util.concurrent.FutureTask",
        named("run").and(takesArguments(0)), ExecutorAdvice.RunThis.class, "run()"));
    h.add(new Hook("java.util.concurrent.ForkJoinTask",
        isConstructor(), ExecutorAdvice.CaptureConstructed.class, "<init>"));
    h.add(new Hook("java.util.concurrent.ForkJoinTask",
        named("doExec").and(takesArguments(0)), ExecutorAdvice.RunThis.class, "doExec()"));

    // Virtual threads (JDK 21+; absent on older JDKs, so nothing matches there).
    h.add(new Hook("java.lang.VirtualThread",
        named("mount").and(takesArguments(0)), ContextAdvice.VirtualMount.class, "mount()"));
    h.add(new Hook("java.lang.VirtualThread",
        named("unmount").and(takesArguments(0)), ContextAdvice.VirtualUnmount.class, "unmount()"));
    h.add(new Hook("java.lang.VirtualThread",
        isConstructor(), ExecutorAdvice.CaptureConstructed.class, "<init>"));
    h.add(new Hook("java.lang.VirtualThread",
        named("run").and(takesArguments(Runnable.class)), ExecutorAdvice.RunThis.class, "run(Runnable)"));

    // kotlinx.coroutines.
    h.add(new Hook("kotlinx.coroutines.DispatchedTask",
        isConstructor(), CoroutineAdvice.Created.class, "<init>"));
    h.add(new Hook("kotlinx.coroutines.DispatchedTask",
        named("run").and(takesArguments(0)), CoroutineAdvice.Run.class, "run()"));
    h.add(new Hook("kotlinx.coroutines.CancellableContinuationImpl",
        named("resetStateReusable"), CoroutineAdvice.Created.class, "resetStateReusable()"));
    h.add(new Hook("kotlinx.coroutines.internal.DispatchedContinuationKt",
        named("safeDispatch").and(takesArguments(3)), CoroutineAdvice.Dispatched.class, "safeDispatch(..)"));
    h.add(new Hook("kotlinx.coroutines.internal.DispatchedContinuation",
        named("dispatchYield$kotlinx_coroutines_core").or(named("dispatchYield")), CoroutineAdvice.Yielded.class,
        "dispatchYield(..)"));
    h.add(new Hook("kotlinx.coroutines.DispatchedTaskKt",
        named("resume").and(takesArguments(3)), CoroutineAdvice.ResumeInline.class, "resume(task, delegate, undispatched)"));

    // kotlinx.coroutines channels: the element carries the sender's id.
    String channel = "kotlinx.coroutines.channels.BufferedChannel";
    h.add(new Hook(channel, named("send").and(takesArguments(2)).or(named("trySend-JP2dKIU")),
        CoroutineAdvice.Sent.class, "send/trySend"));
    h.add(new Hook(channel, named("tryResumeReceiver").and(takesArguments(2)),
        CoroutineAdvice.ResumeReceiver.class, "tryResumeReceiver"));
    h.add(new Hook(channel,
        named("receive").and(takesArguments(1))
            .or(named("receiveCatching-JP2dKIU").and(takesArguments(1)))
            .or(named("tryReceive-PtdJZtk")),
        CoroutineAdvice.Received.class, "receive/receiveCatching/tryReceive"));
    h.add(new Hook(channel + "$BufferedChannelIterator", named("next").and(takesArguments(0)),
        CoroutineAdvice.Received.class, "next()"));
    h.add(new Hook("kotlinx.coroutines.channels.ConflatedBufferedChannel",
        named("send").and(takesArguments(2)).or(named("trySend-JP2dKIU")),
        CoroutineAdvice.Sent.class, "send/trySend"));

    // Ktor's selector loop resumes every socket's coroutines: it must lend none its id.
    h.add(new Hook("io.ktor.network.selector.ActorSelectorManager",
        isConstructor(), ContextAdvice.NoRequest.class, "<init> (launches the selector loop)"));
    h.add(new Hook("io.ktor.network.selector.SelectorManagerSupport",
        named("handleSelectedKeys"), ContextAdvice.NoRequestGuarded.class, "handleSelectedKeys"));

    if (audit) {
      h.add(new Hook("sun.nio.ch.SocketChannelImpl", named("read").and(takesArgument(0, java.nio.ByteBuffer.class).or(takesArgument(0, java.nio.ByteBuffer[].class))),
          AuditAdvice.Read.class, "read (audit)"));
      h.add(new Hook("sun.nio.ch.SocketChannelImpl", named("write").and(takesArgument(0, java.nio.ByteBuffer.class).or(takesArgument(0, java.nio.ByteBuffer[].class))),
          AuditAdvice.Write.class, "write (audit)"));
    }
    return h;
  }
}
