package dev.weft.agent.bootstrap;

/** The natives of libweft_jni (jni/weft_jni.c). Bound once the installer has loaded the library. */
public final class WeftNative {
  private WeftNative() {}

  /** Writes id into this OS thread's slot (0 = nothing mounted); registers the slot on first use. */
  public static native void mount(long id);

  /** Sends op 4: mount id on this OS thread (for kernels that only watch the ioctl). */
  public static native void mountIoctl(long id);

  /** Sends op 5: unmount. */
  public static native void unmountIoctl();

  /** Sends op 3: this OS thread works for thread tid. */
  public static native void parentIoctl(long tid);

  /** The Linux id of the calling OS thread. */
  public static native int gettid();

  /** Reads back this OS thread's slot: what the kernel would see now (slot mode). */
  public static native long currentSlot();

  /** Makes every thread register its slot again at its next mount. */
  public static native void refresh();

  /**
   * TLS plaintext of an SSLSocket (its socket's descriptor is read from it):
   * dir 0 = b[off, off+len) about to be sent, 1 = just received.
   */
  public static native void tlsSocket(Object sslSocket, int dir, byte[] b, int off, int len);

  /**
   * TLS plaintext of engine id: len bytes, the first min(len, 4096) of which
   * are plain[off, ...); fp, when not null, the first 24 bytes of the record
   * made (dir 0) or read (1).
   */
  public static native void tlsEngine(long id, int dir, byte[] plain, int off, int len, byte[] fp);

  /**
   * This OS thread is about to write buffered HEADERS that open HTTP/2
   * stream streamId for the request of logical id (0: of thread tid, which
   * buffered them).
   */
  public static native void h2Claim(int streamId, long id, int tid);

  /** Packets sent since the library loaded (all ops). */
  public static native long packets();
}
