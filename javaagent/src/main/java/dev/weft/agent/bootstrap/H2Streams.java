package dev.weft.agent.bootstrap;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * HTTP/2 client streams opened by a writer that buffers frames (OkHttp's
 * Http2Writer): a request's thread buffers its stream's HEADERS, and
 * whichever thread flushes the writer next sends them, with other
 * requests' HEADERS buffered in between. Each stream is noted with its
 * request when its HEADERS are buffered, and claimed for that request by
 * the thread that flushes them, just before it writes (jni/weft_tls.c,
 * bpf/include/h2claim.h): the kernel side gives each stream the write
 * opens the claim its writer left for it.
 */
public final class H2Streams {
  private H2Streams() {}

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
}
