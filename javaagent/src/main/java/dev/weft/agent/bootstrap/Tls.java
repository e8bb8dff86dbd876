package dev.weft.agent.bootstrap;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The JVM's TLS in clear, for weft (jni/weft_tls.c, bpf/include/jvmtls.h):
 * each SSLSocket read or write and each SSLEngine wrap or unwrap hands its
 * plaintext to one native call. Writes go before they are encrypted, so the
 * kernel side decides the client span before any byte leaves.
 */
public final class Tls {
  private Tls() {}

  static final int EGRESS = 0;
  static final int INGRESS = 1;
  /** Plaintext bytes the kernel side copies (jni's WEFT_TLS_COPY). */
  static final int COPY = 4096;
  /** Bytes of a record that tie an engine to its socket (jni's WEFT_TLS_FP_LEN). */
  static final int FP = 24;

  /** SSLSocket: b[off, off+len) is about to be encrypted and sent. */
  public static void socketWrite(Object sslSocket, byte[] b, int off, int len) {
    if (len > 0) {
      WeftNative.tlsSocket(sslSocket, EGRESS, b, off, len);
    }
  }

  /** SSLSocket: a read put n bytes of plaintext at b[off]. */
  public static void socketRead(Object sslSocket, byte[] b, int off, int n) {
    if (n > 0) {
      WeftNative.tlsSocket(sslSocket, INGRESS, b, off, n);
    }
  }

  // An engine's id: unique in the process for its whole life, unlike an
  // address, so a tie the kernel side keeps can never name another engine.
  private static final Map<Object, Long> ENGINE_IDS = new WeakHashMap<>();
  private static final AtomicLong NEXT_ID = new AtomicLong(1);

  static long engineId(Object engine) {
    synchronized (ENGINE_IDS) {
      Long id = ENGINE_IDS.get(engine);
      if (id == null) {
        id = NEXT_ID.getAndIncrement();
        ENGINE_IDS.put(engine, id);
      }
      return id;
    }
  }

  /** The positions of buffers[off, off+len), after skip free slots. */
  public static int[] positions(ByteBuffer[] buffers, int off, int len, int skip) {
    int[] pos = new int[skip + len];
    for (int i = 0; i < len; i++) {
      pos[skip + i] = buffers[off + i].position();
    }
    return pos;
  }

  /** At a wrap's entry: dst's position, then its sources'. */
  public static int[] wrapEntry(ByteBuffer[] srcs, int off, int len, ByteBuffer dst) {
    int[] entry = positions(srcs, off, len, 1);
    entry[0] = dst.position();
    return entry;
  }

  /** The first FP bytes of buffer b from index at, if it has them and they begin a TLS record. */
  public static byte[] recordStart(ByteBuffer b, int at, int avail) {
    if (avail < FP) {
      return null;
    }
    int type = b.get(at);
    if (type < 20 || type > 23 || b.get(at + 1) != 3) {
      return null;
    }
    byte[] fp = new byte[FP];
    for (int i = 0; i < FP; i++) {
      fp[i] = b.get(at + i);
    }
    return fp;
  }

  /**
   * The first FP bytes of the first of buffers[off, off+len) with bytes
   * left, if it has them and they begin a TLS record.
   */
  public static byte[] firstRecordStart(ByteBuffer[] buffers, int off, int len) {
    for (int i = off; i < off + len; i++) {
      ByteBuffer b = buffers[i];
      if (b.hasRemaining()) {
        return recordStart(b, b.position(), b.remaining());
      }
    }
    return null;
  }

  /**
   * An engine's wrap consumed consumed bytes of srcs[off, ...) from the
   * positions in entry (wrapEntry) and made produced bytes (one record) in dst.
   */
  public static void wrapped(Object engine, ByteBuffer[] srcs, int off, int[] entry, int consumed, ByteBuffer dst,
      int produced) {
    if (produced <= 0) {
      return;
    }
    byte[] fp = recordStart(dst, entry[0], produced);
    if (fp == null && consumed == 0) {
      return;
    }
    report(engineId(engine), EGRESS, srcs, off, entry, 1, consumed, fp);
  }

  /**
   * An engine's unwrap read the record whose first bytes are fp (null:
   * unknown) and put produced bytes of plaintext in dsts[off, ...) from
   * the positions pos.
   */
  public static void unwrapped(Object engine, byte[] fp, ByteBuffer[] dsts, int off, int[] pos, int produced) {
    if (fp == null && produced <= 0) {
      return;
    }
    report(engineId(engine), INGRESS, dsts, off, pos, 0, produced, fp);
  }

  /**
   * Hands n bytes of plaintext, between the positions pos[from...] of
   * buffers[off, ...] and their positions now, to the kernel side: from the
   * array of the one heap buffer that holds them all, when one does, else
   * from a copy.
   */
  static void report(long id, int dir, ByteBuffer[] buffers, int off, int[] pos, int from, int n, byte[] fp) {
    int moved = soleMoved(buffers, off, pos, from);
    if (moved >= 0) {
      ByteBuffer b = buffers[off + moved - from];
      if (b.hasArray()) {
        WeftNative.tlsEngine(id, dir, b.array(), b.arrayOffset() + pos[moved], n, fp);
        return;
      }
    }
    WeftNative.tlsEngine(id, dir, n > 0 ? gather(buffers, off, pos, from, n) : null, 0, n, fp);
  }

  /**
   * The index in pos of the only buffer of buffers[off, ...] whose position
   * moved from pos[from...], or -1 when none or several did.
   */
  public static int soleMoved(ByteBuffer[] buffers, int off, int[] pos, int from) {
    int moved = -1;
    for (int i = from; i < pos.length; i++) {
      if (buffers[off + i - from].position() > pos[i]) {
        if (moved >= 0) {
          return -1;
        }
        moved = i;
      }
    }
    return moved;
  }

  /**
   * The first min(n, COPY) bytes between the positions pos[from...] of
   * buffers[off, ...] and their positions now, in order.
   */
  public static byte[] gather(ByteBuffer[] buffers, int off, int[] pos, int from, int n) {
    byte[] out = new byte[Math.min(Math.max(n, 0), COPY)];
    int at = 0;
    for (int i = from; i < pos.length && at < out.length; i++) {
      ByteBuffer b = buffers[off + i - from];
      int k = Math.min(b.position() - pos[i], out.length - at);
      if (k > 0) {
        ByteBuffer d = b.duplicate();
        d.position(pos[i]);
        d.get(out, at, k);
        at += k;
      }
    }
    return out;
  }
}
