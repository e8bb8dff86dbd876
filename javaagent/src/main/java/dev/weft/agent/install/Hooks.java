package dev.weft.agent.install;

import static net.bytebuddy.matcher.ElementMatchers.declaresField;
import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.isDeclaredBy;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import dev.weft.agent.advice.AuditAdvice;
import dev.weft.agent.advice.CarryAdvice;
import dev.weft.agent.advice.ContextAdvice;
import dev.weft.agent.advice.CoroutineAdvice;
import dev.weft.agent.advice.ExecutorAdvice;
import dev.weft.agent.advice.H2Advice;
import dev.weft.agent.advice.TlsAdvice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.matcher.ElementMatcher;

/** Every method the agent instruments, and the advice it gets, by module. */
final class Hooks {
  private Hooks() {}

  /**
   * One advice on the methods of one class; or, for a task loop (advice
   * null), its calls of Runnable.run() inside those methods become
   * Tasks.run(task), which mounts the task's captured id around it.
   */
  static final class Hook {
    final String type;
    final ElementMatcher<? super MethodDescription> methods;
    final String advice;
    final String what;

    Hook(String type, ElementMatcher<? super MethodDescription> methods, Class<?> advice, String what) {
      this.type = type;
      this.methods = methods;
      this.advice = advice == null ? null : advice.getName();
      this.what = what;
    }

    /**
     * A loop that lives as long as its worker and runs each task it takes
     * with a plain task.run() (hooking the tasks' classes instead would miss
     * lambdas, which cannot be retransformed).
     */
    static Hook taskLoop(String type, String method) {
      return new Hook(type, named(method), null, method + ": task.run() -> Tasks.run(task)");
    }

    boolean isTaskLoop() {
      return advice == null;
    }
  }

  static List<Module> all(boolean audit) {
    List<Module> m = new ArrayList<>();

    // Servers: a fresh id before the socket read of a request. Netty event-loop
    // tasks: the id travels with them (a write from a coroutine thread runs on the loop).
    m.add(new Module("netty", "Netty 4.1-4.2", "io.netty.channel.nio.AbstractNioByteChannel",
            Module.resourceProperty("META-INF/io.netty.versions.properties", "netty-transport.version"))
        .hook(new Hook("io.netty.channel.nio.AbstractNioByteChannel$NioByteUnsafe",
            named("read").and(takesArguments(0)), ContextAdvice.ServerRead.class, "read()"))
        .hook(new Hook("io.netty.channel.epoll.AbstractEpollStreamChannel$EpollStreamUnsafe",
            named("epollInReady").and(takesArguments(0)), ContextAdvice.ServerRead.class, "epollInReady()"))
        .hook(new Hook("io.netty.util.concurrent.SingleThreadEventExecutor",
            named("execute").and(takesArgument(0, Runnable.class)), ExecutorAdvice.CaptureArgument.class,
            "execute(Runnable[, boolean])"))
        .hook(new Hook("io.netty.util.concurrent.AbstractEventExecutor",
            named("safeExecute").or(named("runTask")).and(takesArguments(Runnable.class)),
            ExecutorAdvice.RunArgument.class, "safeExecute/runTask(Runnable)"))
        // DefaultEventExecutor (a handler's own executor, pipeline.addLast(group, ...))
        // ran its tasks with a plain task.run() before Netty 4.1.6x.
        .hook(Hook.taskLoop("io.netty.util.concurrent.DefaultEventExecutor", "run")));

    // Tomcat (Spring MVC's server): a pass of a connection's HTTP/1.1
    // processor reads a request and runs its servlet on the same thread, and
    // goes on to the next request when its bytes are already there.
    m.add(new Module("tomcat", "Tomcat 9-11, HTTP/1.1 connectors", "org.apache.coyote.http11.Http11Processor",
            loader -> (String) Class.forName("org.apache.catalina.util.ServerInfo", true, loader)
                .getMethod("getServerNumber").invoke(null))
        .hook(new Hook("org.apache.coyote.http11.Http11Processor",
            named("service").and(takesArguments(1)), ContextAdvice.ServerRead.class, "service(SocketWrapperBase)"))
        .hook(new Hook("org.apache.coyote.http11.Http11InputBuffer",
            named("nextRequest").and(takesArguments(0)), ContextAdvice.NextRequest.class, "nextRequest()")));

    m.add(new Module("jdk-httpserver", "com.sun.net.httpserver (JDK)", null, Module.JDK)
        .hook(new Hook("sun.net.httpserver.ServerImpl$Exchange",
            named("run").and(takesArguments(0)), ContextAdvice.ServerRead.class, "run()")));

    // The lambda that handles one request is $1$1 of the connection's pipeline
    // in Ktor 3 and $1$2 in Ktor 2, where $1$1 is the connection's writer
    // loop: the handler is the one that holds the request.
    String pipeline = "io.ktor.server.cio.backend.ServerPipelineKt$startServerConnectionPipeline";
    ElementMatcher.Junction<MethodDescription> requestHandlerStep = named("invokeSuspend")
        .and(isDeclaredBy(declaresField(named("$request"))));
    // Ktor CIO server: accepted socket -> reader coroutine's reads (under the
    // connection's pending id) -> the request's handler coroutine (takes it).
    // Ktor's selector loop resumes every socket's coroutines: it must lend none its id.
    m.add(new Module("ktor-cio", "Ktor 2.3-3.x network and CIO server", "io.ktor.network.selector.SelectorManagerSupport",
            Module.packageVersion("io.ktor.network.selector.SelectorManagerSupport"))
        .hook(new Hook("io.ktor.network.sockets.ServerSocketImpl",
            named("accepted").and(takesArguments(1)), ContextAdvice.ServerAccepted.class, "accepted(SocketChannel)"))
        .hook(new Hook("io.ktor.network.sockets.CIOReaderKt",
            named("readFrom").and(takesArguments(3)), ContextAdvice.ServerSocketRead.class,
            "readFrom(channel, socket, cont) (direct reader)"))
        .hook(new Hook("io.ktor.network.sockets.CIOReaderKt$attachForReadingImpl$1",
            named("invokeSuspend"), ContextAdvice.ServerStreamRead.class, "invokeSuspend (pooled reader step)"))
        .hook(new Hook(pipeline + "$1$1", requestHandlerStep, ContextAdvice.ServerRequestStart.class,
            "invokeSuspend (request handler step, Ktor 3)"))
        .hook(new Hook(pipeline + "$1$2", requestHandlerStep, ContextAdvice.ServerRequestStart.class,
            "invokeSuspend (request handler step, Ktor 2)"))
        .hook(new Hook("io.ktor.network.selector.ActorSelectorManager",
            isConstructor(), ContextAdvice.NoRequest.class, "<init> (launches the selector loop)"))
        .hook(new Hook("io.ktor.network.selector.SelectorManagerSupport",
            named("handleSelectedKeys"), ContextAdvice.NoRequestGuarded.class, "handleSelectedKeys")));

    // java.util.concurrent. Workers that were already looping when the agent
    // attached keep the old runWorker: the task's own run() covers submit() for them.
    m.add(new Module("jdk-executors", "java.util.concurrent executors and ForkJoin (JDK)", null, Module.JDK)
        .hook(new Hook("java.util.concurrent.ThreadPoolExecutor",
            named("execute").and(takesArguments(Runnable.class)), ExecutorAdvice.CaptureArgument.class,
            "execute(Runnable)"))
        .hook(Hook.taskLoop("java.util.concurrent.ThreadPoolExecutor", "runWorker"))
        .hook(new Hook("java.util.concurrent.ScheduledThreadPoolExecutor",
            named("delayedExecute").and(takesArguments(1)), ExecutorAdvice.CaptureArgument.class,
            "delayedExecute(task) (schedule*, submit, execute)"))
        .hook(new Hook("java.util.concurrent.FutureTask",
            named("run").and(takesArguments(0)), ExecutorAdvice.RunThis.class, "run()"))
        .hook(new Hook("java.util.concurrent.ForkJoinTask",
            isConstructor(), ExecutorAdvice.CaptureConstructed.class, "<init>"))
        .hook(new Hook("java.util.concurrent.ForkJoinTask",
            named("doExec").and(takesArguments(0)), ExecutorAdvice.RunThis.class, "doExec()")));

    // Virtual threads (JDK 21+; absent on older JDKs, so nothing matches there).
    m.add(new Module("jdk-virtual-threads", "java.lang.VirtualThread (JDK 21+)", null, Module.JDK)
        .hook(new Hook("java.lang.VirtualThread",
            named("mount").and(takesArguments(0)), ContextAdvice.VirtualMount.class, "mount()"))
        .hook(new Hook("java.lang.VirtualThread",
            named("unmount").and(takesArguments(0)), ContextAdvice.VirtualUnmount.class, "unmount()"))
        .hook(new Hook("java.lang.VirtualThread",
            isConstructor(), ExecutorAdvice.CaptureConstructed.class, "<init>"))
        .hook(new Hook("java.lang.VirtualThread",
            named("run").and(takesArguments(Runnable.class)), ExecutorAdvice.RunThis.class, "run(Runnable)")));

    // kotlinx.coroutines; in channels the element carries the sender's id.
    String channel = "kotlinx.coroutines.channels.BufferedChannel";
    m.add(new Module("kotlinx-coroutines", "kotlinx.coroutines 1.7+", "kotlinx.coroutines.DispatchedTask",
            Module.packageVersion("kotlinx.coroutines.DispatchedTask"))
        .hook(new Hook("kotlinx.coroutines.DispatchedTask",
            isConstructor(), CoroutineAdvice.Created.class, "<init>"))
        .hook(new Hook("kotlinx.coroutines.DispatchedTask",
            named("run").and(takesArguments(0)), CoroutineAdvice.Run.class, "run()"))
        .hook(new Hook("kotlinx.coroutines.CancellableContinuationImpl",
            named("resetStateReusable"), CoroutineAdvice.Created.class, "resetStateReusable()"))
        .hook(new Hook("kotlinx.coroutines.internal.DispatchedContinuationKt",
            named("safeDispatch").and(takesArguments(3)), CoroutineAdvice.Dispatched.class, "safeDispatch(..)"))
        .hook(new Hook("kotlinx.coroutines.internal.DispatchedContinuation",
            named("dispatchYield$kotlinx_coroutines_core").or(named("dispatchYield")), CoroutineAdvice.Yielded.class,
            "dispatchYield(..)"))
        .hook(new Hook("kotlinx.coroutines.DispatchedTaskKt",
            named("resume").and(takesArguments(3)), CoroutineAdvice.ResumeInline.class,
            "resume(task, delegate, undispatched)"))
        .hook(new Hook(channel, named("send").and(takesArguments(2)).or(named("trySend-JP2dKIU")),
            CoroutineAdvice.Sent.class, "send/trySend"))
        .hook(new Hook(channel, named("tryResumeReceiver").and(takesArguments(2)),
            CoroutineAdvice.ResumeReceiver.class, "tryResumeReceiver"))
        .hook(new Hook(channel,
            named("receive").and(takesArguments(1))
                .or(named("receiveCatching-JP2dKIU").and(takesArguments(1)))
                .or(named("tryReceive-PtdJZtk")),
            CoroutineAdvice.Received.class, "receive/receiveCatching/tryReceive"))
        .hook(new Hook(channel + "$BufferedChannelIterator", named("next").and(takesArguments(0)),
            CoroutineAdvice.Received.class, "next()"))
        .hook(new Hook("kotlinx.coroutines.channels.ConflatedBufferedChannel",
            named("send").and(takesArguments(2)).or(named("trySend-JP2dKIU")),
            CoroutineAdvice.Sent.class, "send/trySend")));

    // OkHttp's Dispatcher (5 calls per host by default) starts a queued call
    // from the thread of the call that just finished: the call carries the
    // id of the request that enqueued it, which wins over that thread's.
    m.add(new Module("okhttp-4", "OkHttp 4.4-5.x", "okhttp3.internal.connection.RealCall",
            Module.staticField("okhttp3.OkHttp", "VERSION"))
        .hook(new Hook("okhttp3.internal.connection.RealCall$AsyncCall",
            isConstructor(), CarryAdvice.Capture.class, "<init> (enqueue)"))
        .hook(new Hook("okhttp3.internal.connection.RealCall$AsyncCall",
            named("run").and(takesArguments(0)), CarryAdvice.Mount.class, "run()"))
        // HTTP/2: a request's thread buffers its stream's HEADERS; the next
        // flush, by whichever thread, sends them.
        .hook(new Hook("okhttp3.internal.http2.Http2Writer",
            named("headers").and(takesArguments(boolean.class, int.class, List.class)), H2Advice.OkHttpHeaders.class,
            "headers(outFinished, streamId, headerBlock) (HTTP/2)"))
        .hook(new Hook("okhttp3.internal.http2.Http2Writer",
            named("flush").and(takesArguments(0)), H2Advice.OkHttpFlush.class, "flush() (HTTP/2)")));
    // OkHttp 4.0-4.3 kept RealCall in okhttp3, as a Kotlin class whose
    // AsyncCall runs in run() (3.x: execute(), under NamedRunnable's run()).
    m.add(new Module("okhttp-3", "OkHttp 3.x, 4.0-4.3", "okhttp3.RealCall", loader -> {
      try {
        return (String) Class.forName("okhttp3.internal.Version", true, loader).getMethod("userAgent").invoke(null);
      } catch (ClassNotFoundException e) {
        return (String) Class.forName("okhttp3.OkHttp", true, loader).getField("VERSION").get(null);
      }
    })
        .hook(new Hook("okhttp3.RealCall$AsyncCall",
            isConstructor(), CarryAdvice.Capture.class, "<init> (enqueue)"))
        .hook(new Hook("okhttp3.RealCall$AsyncCall",
            named("execute").and(takesArguments(0)), CarryAdvice.Mount.class, "execute() (3.x)"))
        .hook(new Hook("okhttp3.RealCall$AsyncCall",
            named("run").and(takesArguments(0)), CarryAdvice.Mount.class, "run() (4.0-4.3)")));

    // The JDK's java.net.http client: send and sendAsync make a
    // MultiExchange on the caller's thread; the id goes from it to its
    // exchanges and their request publisher, whose write task runs on the
    // client's executor: the request's id is mounted there.
    String http = "jdk.internal.net.http.";
    m.add(new Module("jdk-httpclient", "java.net.http.HttpClient, HTTP/1.1 and HTTP/2 (JDK 11+)", null, Module.JDK)
        .hook(new Hook(http + "MultiExchange", isConstructor(), CarryAdvice.CaptureWithExchange.class,
            "<init> (and its first Exchange)"))
        .hook(new Hook(http + "Exchange", isConstructor().and(takesArgument(1, named(http + "MultiExchange"))),
            CarryAdvice.InheritArgument1.class, "<init>(request, MultiExchange[, acc])"))
        .hook(new Hook(http + "Http1Exchange", isConstructor().and(takesArgument(0, named(http + "Exchange"))),
            CarryAdvice.InheritWithPublisher.class, "<init>(Exchange, HttpConnection) (and its writePublisher)"))
        .hook(new Hook(http + "Http1Exchange$Http1Publisher$WriteTask", named("run").and(takesArguments(0)),
            CarryAdvice.MountOuter.class, "run() (writes the request)"))
        // Over TLS the request's bytes wait in the connection's SSL writer
        // until its handshake ends, and are wrapped by whichever thread ends
        // it: the writer works for the request whose bytes it took last.
        .hook(new Hook(http + "common.SSLFlowDelegate$Writer", named("incoming").and(takesArguments(2)),
            CarryAdvice.TakeMounted.class, "incoming(buffers, complete) (takes a request's bytes)"))
        // (Around each wrap, not the writer's run: a run's socket write may
        // hand it the next request's bytes, which that same run wraps.)
        .hook(new Hook(http + "common.SSLFlowDelegate$Writer", named("wrapBuffers").and(takesArguments(1)),
            CarryAdvice.Mount.class, "wrapBuffers(srcs) (wraps them)"))
        // HTTP/2: a stream works for its exchange; its HEADERS, encoded on
        // the request's side, are claimed where the SSL writer wraps them
        // (TlsAdvice.EngineWrap, H2Streams), or, without TLS, where the
        // socket tube writes them.
        .hook(new Hook(http + "Stream", isConstructor().and(takesArgument(1, named(http + "Exchange"))),
            CarryAdvice.InheritArgument1.class, "<init>(Http2Connection, Exchange, WindowController)"))
        .hook(new Hook(http + "Stream", named("registerStream").and(takesArguments(int.class, boolean.class)),
            H2Advice.JdkRegister.class, "registerStream(id, registerIfCancelled) (HTTP/2)"))
        .hook(new Hook(http + "Http2Connection",
            named("encodeHeaders").and(takesArguments(2)).and(takesArgument(1, named(http + "Stream"))),
            H2Advice.JdkEncoded.class, "encodeHeaders(OutgoingHeaders, Stream) (HTTP/2)"))
        .hook(new Hook("sun.nio.ch.SocketChannelImpl",
            named("write").and(takesArguments(ByteBuffer[].class, int.class, int.class)),
            H2Advice.JdkSocketWrite.class, "SocketChannelImpl.write(ByteBuffer[], int, int) (HTTP/2 without TLS)")));

    // The JDK's TLS, for weft to see HTTPS in clear (TlsAdvice): SSLSocket's
    // application streams (OkHttp, HttpsURLConnection, Apache's classic
    // client) and SSLEngine's wrap and unwrap, every overload's way (the
    // JDK's HttpClient, Netty, Apache's async client).
    String ssl = "sun.security.ssl.";
    m.add(new Module("jdk-tls", "JDK TLS: SSLSocket and SSLEngine (JDK 11+)", null, Module.JDK)
        .hook(new Hook(ssl + "SSLSocketImpl$AppOutputStream",
            named("write").and(takesArguments(byte[].class, int.class, int.class)), TlsAdvice.SocketWrite.class,
            "write(byte[], int, int)"))
        .hook(new Hook(ssl + "SSLSocketImpl$AppInputStream",
            named("read").and(takesArguments(byte[].class, int.class, int.class)), TlsAdvice.SocketRead.class,
            "read(byte[], int, int)"))
        .hook(new Hook(ssl + "SSLEngineImpl",
            named("wrap").and(takesArguments(ByteBuffer[].class, int.class, int.class, ByteBuffer.class)),
            TlsAdvice.EngineWrap.class, "wrap(ByteBuffer[], int, int, ByteBuffer)"))
        .hook(new Hook(ssl + "SSLEngineImpl",
            named("unwrap").and(takesArguments(ByteBuffer.class, ByteBuffer[].class, int.class, int.class)),
            TlsAdvice.EngineUnwrap.class, "unwrap(ByteBuffer, ByteBuffer[], int, int)")));

    // netty-tcnative's engine (BoringSSL or OpenSSL through JNI, Netty's
    // SslProvider.OPENSSL): the same hand-over as the JDK's SSLEngine. Its
    // every wrap and unwrap ends in the two methods hooked.
    String openSslEngine = "io.netty.handler.ssl.ReferenceCountedOpenSslEngine";
    m.add(new Module("netty-tcnative", "Netty 4.1-4.2 OpenSSL engine (netty-tcnative)", openSslEngine,
            Module.resourceProperty("META-INF/io.netty.versions.properties", "netty-handler.version"))
        .hook(new Hook(openSslEngine,
            named("wrap").and(takesArguments(ByteBuffer[].class, int.class, int.class, ByteBuffer.class)),
            TlsAdvice.EngineWrap.class, "wrap(ByteBuffer[], int, int, ByteBuffer)"))
        .hook(new Hook(openSslEngine,
            named("unwrap").and(takesArguments(ByteBuffer[].class, int.class, int.class, ByteBuffer[].class,
                int.class, int.class)),
            TlsAdvice.OpenSslUnwrap.class, "unwrap(ByteBuffer[], int, int, ByteBuffer[], int, int)")));

    // Apache HttpClient 5 async: the request leaves the caller's thread with
    // its context; the I/O reactor writes it from the connection's duplexer.
    // (The classic client writes on the caller's thread: nothing to carry.)
    String core = "org.apache.hc.core5.http.impl.nio.";
    String h2 = "org.apache.hc.core5.http2.impl.nio.";
    m.add(new Module("apache-httpclient-5", "Apache HttpClient 5.1-5.6 async, HTTP/1.1 and HTTP/2",
            "org.apache.hc.client5.http.impl.async.InternalAbstractHttpAsyncClient",
            Module.resourceProperty("org/apache/hc/client5/version.properties", "info.release"))
        .hook(new Hook("org.apache.hc.client5.http.async.AsyncExecChain$Scope", isConstructor(),
            CarryAdvice.CaptureClientContext.class, "<init> (on the caller's thread)"))
        .hook(new Hook("org.apache.hc.core5.http.nio.command.RequestExecutionCommand", isConstructor(),
            CarryAdvice.InheritContext.class, "<init>"))
        .hook(new Hook(core + "ClientHttp1StreamDuplexer",
            named("execute").and(takesArguments(1)), CarryAdvice.MountCommand.class,
            "execute(RequestExecutionCommand) (writes the head)"))
        .hook(new Hook(core + "AbstractHttp1StreamDuplexer",
            named("onOutput").and(takesArguments(0)), CarryAdvice.Mount.class, "onOutput() (later writes)"))
        // HTTP/2: a stream's handler works for its command's (5.1-5.3) or its
        // context's (5.4) request, mounted while it produces; the reactor
        // claims each stream as it commits its HEADERS (H2Streams).
        .hook(new Hook(h2 + "ClientH2StreamMultiplexer", named("createLocallyInitiatedStream").and(takesArguments(4)),
            H2Advice.ApacheStreamOfCommand.class, "createLocallyInitiatedStream(command, ...) (HTTP/2, 5.1-5.3)"))
        .hook(new Hook(h2 + "ClientH2StreamMultiplexer", named("outgoingRequest").and(takesArguments(4)),
            H2Advice.ApacheStreamOfContext.class, "outgoingRequest(..., context) (HTTP/2, 5.4)"))
        .hook(new Hook(h2 + "ClientH2StreamHandler", named("produceOutput").and(takesArguments(0)),
            CarryAdvice.Mount.class, "produceOutput() (HTTP/2)"))
        .hook(new Hook(h2 + "AbstractH2StreamMultiplexer",
            named("commitHeaders").and(takesArguments(int.class, List.class, boolean.class)),
            H2Advice.ApacheCommitHeaders.class, "commitHeaders(streamId, headers, endStream) (HTTP/2)")));

    // Reactor Netty's HttpClient (Spring's WebClient): an acquire of a pooled
    // connection is made on the subscriber's thread; the pool delivers the
    // connection, and the request is written, from whatever thread released
    // or connected it (another request's read, a connect on the event loop).
    m.add(reactorAcquire(new Module("reactor-netty-client", "Reactor Netty 1.2-1.3 HttpClient, HTTP/1.1",
            "reactor.netty.resources.DefaultPooledConnectionProvider",
            Module.packageVersion("reactor.netty.resources.DefaultPooledConnectionProvider")),
        "reactor.netty.resources.DefaultPooledConnectionProvider$DisposableAcquire", "run"));

    // Reactor Netty over HTTP/2: the same, with the HTTP/2 pool's acquire,
    // whose callbacks open the request's stream channel and write its
    // HEADERS, on the event loop.
    m.add(reactorAcquire(new Module("reactor-netty-http2-client", "Reactor Netty 1.2-1.3 HttpClient, HTTP/2",
            "reactor.netty.http.client.Http2ConnectionProvider",
            Module.packageVersion("reactor.netty.http.client.Http2ConnectionProvider")),
        "reactor.netty.http.client.Http2ConnectionProvider$DisposableAcquire", "operationComplete"));

    // Netty's HTTP/2 codec (Reactor Netty over HTTP/2): a client's stream
    // is made with its stream channel, under its request; its HEADERS are
    // encoded, and the stream numbered, on the event loop into the
    // connection's outbound buffer, other streams' with them; the
    // connection's streams are claimed where that buffer is written
    // (SslHandler's wrap, the head's flush), by that thread (H2Streams).
    String codec = "io.netty.handler.codec.http2.Http2FrameCodec";
    m.add(new Module("netty-http2-client", "Netty 4.1-4.2 HTTP/2 codec, client streams", codec,
            Module.resourceProperty("META-INF/io.netty.versions.properties", "netty-codec-http2.version"))
        .hook(new Hook(codec + "$DefaultHttp2FrameStream", isConstructor(), CarryAdvice.Capture.class,
            "<init> (with its stream channel)"))
        .hook(new Hook(codec, named("writeHeadersFrame").and(takesArguments(3)), H2Advice.NettyHeadersFrame.class,
            "writeHeadersFrame(ctx, headersFrame, promise) (HTTP/2)"))
        .hook(new Hook("io.netty.handler.ssl.SslHandler", named("wrap").and(takesArguments(2)).and(takesArgument(1, boolean.class)),
            H2Advice.NettyWrite.class, "wrap(ctx, inUnwrap) (HTTP/2 over TLS)"))
        .hook(new Hook("io.netty.channel.DefaultChannelPipeline$HeadContext", named("flush").and(takesArguments(1)),
            H2Advice.NettyWrite.class, "flush(ctx) (HTTP/2)")));

    if (audit) {
      m.add(new Module("audit", "socket reads and writes (audit=true)", null, Module.JDK)
          .hook(new Hook("sun.nio.ch.SocketChannelImpl", named("read").and(takesArgument(0, java.nio.ByteBuffer.class).or(takesArgument(0, java.nio.ByteBuffer[].class))),
              AuditAdvice.Read.class, "read (audit)"))
          .hook(new Hook("sun.nio.ch.SocketChannelImpl", named("write").and(takesArgument(0, java.nio.ByteBuffer.class).or(takesArgument(0, java.nio.ByteBuffer[].class))),
              AuditAdvice.Write.class, "write (audit)")));
    }
    return m;
  }

  /**
   * Reactor Netty's DisposableAcquire (acquire): made on the subscriber's
   * thread (a retry copies the one it retries), mounted in the callbacks
   * through which the pool delivers its connection, and in deliver, the
   * one that goes on to write the request.
   */
  private static Module reactorAcquire(Module module, String acquire, String deliver) {
    return module
        .hook(new Hook(acquire, isConstructor().and(takesArguments(1)), CarryAdvice.InheritArgument0.class,
            "<init>(DisposableAcquire) (a retry)"))
        .hook(new Hook(acquire, isConstructor().and(not(takesArguments(1))), CarryAdvice.Capture.class,
            "<init> (on the subscriber's thread)"))
        .hook(new Hook(acquire,
            named("onNext").or(named(deliver)).or(named("onStateChange")).or(named("onUncaughtException"))
                .or(named("onError")),
            CarryAdvice.Mount.class, "onNext/" + deliver + "/onStateChange/onUncaughtException/onError"));
  }
}
