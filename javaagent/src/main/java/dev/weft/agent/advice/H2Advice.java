package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.Carried;
import dev.weft.agent.bootstrap.H2Streams;
import java.util.List;
import net.bytebuddy.asm.Advice;

/**
 * HTTP/2 clients: which request each stream they open is for (H2Streams).
 * Without it, a stream's client span starts a trace of its own: the
 * connection's writes say nothing of a stream.
 */
public final class H2Advice {
  private H2Advice() {}

  /** OkHttp 4.x-5.x's Http2Writer.headers(outFinished, streamId, headerBlock), under newStream's lock. */
  public static final class OkHttpHeaders {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.This Object writer, @Advice.Argument(1) int streamId) {
      H2Streams.buffered(writer, streamId);
    }
  }

  /** OkHttp's Http2Writer.flush(): what was buffered is about to be written. */
  public static final class OkHttpFlush {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.This Object writer) {
      H2Streams.flushing(writer);
    }
  }

  /** The JDK's Stream.registerStream(id, registerIfCancelled), under the connection's send lock. */
  public static final class JdkRegister {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.This Object stream, @Advice.Argument(0) int id) {
      H2Streams.registered(stream, id);
    }
  }

  /** The JDK's Http2Connection.encodeHeaders(OutgoingHeaders, Stream): the buffers to be queued. */
  public static final class JdkEncoded {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Argument(1) Object stream, @Advice.Return List<?> buffers) {
      H2Streams.encoded(stream, buffers);
    }
  }

  /** SocketChannelImpl.write(ByteBuffer[] srcs, int off, int len): the JDK HttpClient's socket tube, without TLS. */
  public static final class JdkSocketWrite {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(0) Object[] srcs, @Advice.Argument(1) int off, @Advice.Argument(2) int len) {
      H2Streams.wrapping(srcs, off, len);
    }
  }

  /** Apache HttpCore 5.1-5.3's ClientH2StreamMultiplexer.createLocallyInitiatedStream(command, ...): the stream's handler works for the command's request. */
  public static final class ApacheStreamOfCommand {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Argument(0) Object command, @Advice.Return Object handler) {
      Carried.inherit(handler, command);
    }
  }

  /** Apache HttpCore 5.4's ClientH2StreamMultiplexer.outgoingRequest(channel, exchange, push, context). */
  public static final class ApacheStreamOfContext {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Argument(3) Object context, @Advice.Return Object handler) {
      Carried.inherit(handler, context);
    }
  }

  /** Apache HttpCore 5's AbstractH2StreamMultiplexer.commitHeaders(streamId, headers, endStream): about to be written. */
  public static final class ApacheCommitHeaders {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.This Object multiplexer, @Advice.Argument(0) int streamId) {
      H2Streams.committing(multiplexer, streamId);
    }
  }

  /** Netty's Http2FrameCodec.writeHeadersFrame(ctx, headersFrame, promise): a frame of a stream without an id opens one. */
  public static final class NettyHeadersFrame {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static int enter(@Advice.Argument(1) Object headersFrame) {
      return H2Streams.nettyStreamId(headersFrame);
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Enter int idBefore, @Advice.Argument(0) Object ctx, @Advice.Argument(1) Object headersFrame) {
      if (idBefore <= 0) {
        H2Streams.nettyOpened(ctx, headersFrame);
      }
    }
  }

  /** Netty's SslHandler.wrap(ctx, inUnwrap) and the pipeline head's flush(ctx): the channel's outbound buffer is about to be written. */
  public static final class NettyWrite {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.Argument(0) Object ctx) {
      H2Streams.nettyWriting(ctx);
    }
  }
}
