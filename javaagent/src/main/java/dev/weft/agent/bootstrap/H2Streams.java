package dev.weft.agent.bootstrap;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * HTTP/2 client streams whose HEADERS are written by another thread than
 * their request's, maybe with other requests' HEADERS in one write. Each
 * stream is noted with its request where its HEADERS are made, and
 * claimed for that request by the thread that writes them, just before it
 * does (jni/weft_tls.c, bpf/include/h2claim.h): the kernel side gives each
 * stream the write opens the claim its writer left for it. A stream of no
 * request is claimed too, as no request's: a claim left unused by an
 * earlier write of the thread must never go to it.
 * <ul>
 *   <li>OkHttp's Http2Writer: a request's thread buffers its stream's
 *       HEADERS; whichever thread flushes the writer next sends them.
 *   <li>The JDK's HttpClient: a request's stream is registered and its
 *       HEADERS encoded into buffers, which the connection's SSL writer
 *       wraps, or its socket tube writes, on whichever thread drives it.
 *   <li>Apache's async client: the I/O reactor makes and writes every
 *       stream's HEADERS, under the id of the request whose stream handler
 *       produces them (mounted by the agent), and claims each as it
 *       commits it; its write follows, on the same thread.
 *   <li>Netty's HTTP/2 codec (Reactor Netty): a client's stream is made
 *       with its stream channel, under its request, but has its id only
 *       when its HEADERS are encoded, on the connection's event loop, into
 *       the connection's outbound buffer, which the event loop wraps (TLS)
 *       or flushes later, other streams' HEADERS with them.
 * </ul>
 */
public final class H2Streams {
  private H2Streams() {}

  /** JDK: stream object -> its id, between registration and encoding. */
  private static final IdTable STREAM_IDS = new IdTable(1 << 12);

  /** JDK: encoded HEADERS buffer -> request id << 32 | stream id, until wrapped. */
  private static final IdTable ENCODED = new IdTable(1 << 12);

  /**
   * Buffers put in ENCODED and not taken yet: while none, a wrap looks for
   * nothing. Entries the table drops (collected, or a full stripe) are not
   * subtracted, so it may stay above 0: a wrap then looks in vain.
   */
  private static final AtomicInteger ENCODED_COUNT = new AtomicInteger();

  /** Writer -> {stream, logical id, tid} of the HEADERS it buffered, not flushed yet. */
  private static final Map<Object, List<long[]>> PENDING = Collections.synchronizedMap(new WeakHashMap<>());

  /** writer buffers the HEADERS that open stream, for the request of this thread. */
  public static void buffered(Object writer, int stream) {
    long id = Context.current();
    long[] s = {stream, id, id == 0 ? WeftNative.gettid() : 0};
    PENDING.computeIfAbsent(writer, w -> new ArrayList<>(2)).add(s);
  }

  /** writer is about to send what it buffered: each stream opened there is claimed now. */
  public static void flushing(Object writer) {
    if (PENDING.isEmpty()) {
      return;
    }
    List<long[]> streams = PENDING.remove(writer);
    if (streams == null) {
      return;
    }
    for (long[] s : streams) {
      WeftNative.h2Claim((int) s[0], s[1], (int) s[2]);
    }
  }

  /** JDK: stream (a jdk.internal.net.http.Stream) takes HTTP/2 stream id. */
  public static void registered(Object stream, int id) {
    STREAM_IDS.put(stream, id);
  }

  /** JDK: stream's HEADERS are encoded into buffers, to be queued for the SSL writer. */
  public static void encoded(Object stream, List<?> buffers) {
    long sid = STREAM_IDS.take(stream);
    long rid = Carried.idOf(stream); // 0: claimed as no request's
    if (sid <= 0 || buffers == null || buffers.isEmpty()) {
      return;
    }
    // The first buffer only: one claim per stream (a second would make
    // both unusable), made where the HEADERS begin to be wrapped.
    ENCODED.put(buffers.get(0), rid << 32 | sid);
    ENCODED_COUNT.incrementAndGet();
  }

  /** JDK: srcs[off, off+len) are about to be wrapped (TLS) or written (without) by this thread: their streams are claimed now. */
  public static void wrapping(Object[] srcs, int off, int len) {
    if (ENCODED_COUNT.get() <= 0 || srcs == null) {
      return;
    }
    for (int i = off; i < off + len && i < srcs.length; i++) {
      long v = ENCODED.take(srcs[i]);
      if (v != 0) { // a stream id, at least
        ENCODED_COUNT.decrementAndGet();
        WeftNative.h2Claim((int) v, v >>> 32, 0);
      }
    }
  }

  private static final String APACHE_CLIENT = "org.apache.hc.core5.http2.impl.nio.ClientH2StreamMultiplexer";

  /** Apache: multiplexer commits the HEADERS of streamId now, for the request mounted here. */
  public static void committing(Object multiplexer, int streamId) {
    if (!APACHE_CLIENT.equals(multiplexer.getClass().getName())) {
      return; // a server's answer, on a stream it did not open
    }
    long id = Context.current();
    WeftNative.h2Claim(streamId, id, id == 0 ? WeftNative.gettid() : 0);
  }

  private static final InterfaceCall STREAM_OF_FRAME = new InterfaceCall("io.netty.handler.codec.http2.Http2StreamFrame", "stream");
  private static final InterfaceCall STREAM_ID = new InterfaceCall("io.netty.handler.codec.http2.Http2FrameStream", "id");

  /** Netty: the id of the stream a HEADERS frame is for, or 0 while it has none (a new stream). */
  public static int nettyStreamId(Object headersFrame) {
    Object id = STREAM_ID.call(STREAM_OF_FRAME.call(headersFrame));
    return id instanceof Integer ? (Integer) id : 0;
  }

  private static final InterfaceCall CHANNEL = new InterfaceCall("io.netty.channel.ChannelHandlerContext", "channel");

  /**
   * Netty: headersFrame, whose stream had no id before, opened a stream of
   * ctx's channel: its HEADERS are in the channel's outbound buffer, for
   * the request its stream was made for (Carried: a client's stream
   * channel is made under its request).
   */
  public static void nettyOpened(Object ctx, Object headersFrame) {
    Object stream = STREAM_OF_FRAME.call(headersFrame);
    Object id = STREAM_ID.call(stream);
    Object channel = CHANNEL.call(ctx);
    if (!(id instanceof Integer) || (Integer) id <= 0 || channel == null) {
      return;
    }
    long rid = Carried.idOf(stream);
    PENDING.computeIfAbsent(channel, w -> new ArrayList<>(2)).add(new long[] {(Integer) id, rid, rid == 0 ? WeftNative.gettid() : 0});
  }

  /**
   * Netty: ctx's channel is about to write its outbound buffer: SslHandler
   * wraps it (TLS), or the pipeline's head flushes it. Its streams opened
   * there are claimed now, by the event loop that writes them.
   */
  public static void nettyWriting(Object ctx) {
    if (PENDING.isEmpty()) {
      return;
    }
    Object channel = CHANNEL.call(ctx);
    if (channel != null) {
      flushing(channel);
    }
  }
}
