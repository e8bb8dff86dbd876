package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.H2Streams;
import dev.weft.agent.bootstrap.Tls;
import java.nio.ByteBuffer;
import javax.net.ssl.SSLEngineResult;
import net.bytebuddy.asm.Advice;

/**
 * The JDK's TLS (sun.security.ssl), and netty-tcnative's engine: plaintext
 * to the kernel side (Tls). The advice names no sun.security.ssl or Netty
 * type: it is inlined there, and the helpers live in the bootstrap
 * loader's unnamed module.
 */
public final class TlsAdvice {
  private TlsAdvice() {}

  /** SSLSocketImpl$AppOutputStream.write(byte[], int, int): before it is encrypted. */
  public static final class SocketWrite {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static void enter(@Advice.FieldValue("this$0") Object socket, @Advice.Argument(0) byte[] b,
        @Advice.Argument(1) int off, @Advice.Argument(2) int len) {
      Tls.socketWrite(socket, b, off, len);
    }
  }

  /** SSLSocketImpl$AppInputStream.read(byte[], int, int): what it decrypted. */
  public static final class SocketRead {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.FieldValue("this$0") Object socket, @Advice.Argument(0) byte[] b,
        @Advice.Argument(1) int off, @Advice.Return int n) {
      Tls.socketRead(socket, b, off, n);
    }
  }

  /**
   * SSLEngineImpl.wrap(ByteBuffer[] srcs, int off, int len, ByteBuffer dst):
   * one record; ReferenceCountedOpenSslEngine's (netty-tcnative), the same.
   */
  public static final class EngineWrap {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static int[] enter(@Advice.Argument(0) ByteBuffer[] srcs, @Advice.Argument(1) int off,
        @Advice.Argument(2) int len, @Advice.Argument(3) ByteBuffer dst) {
      H2Streams.wrapping(srcs, off, len);
      return Tls.wrapEntry(srcs, off, len, dst);
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object engine, @Advice.Argument(0) ByteBuffer[] srcs, @Advice.Argument(1) int off,
        @Advice.Argument(3) ByteBuffer dst, @Advice.Return SSLEngineResult r, @Advice.Enter int[] entry) {
      if (entry != null && r != null) {
        Tls.wrapped(engine, srcs, off, entry, r.bytesConsumed(), dst, r.bytesProduced());
      }
    }
  }

  /** SSLEngineImpl.unwrap(ByteBuffer src, ByteBuffer[] dsts, int off, int len): one record. */
  public static final class EngineUnwrap {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static Object[] enter(@Advice.Argument(0) ByteBuffer src, @Advice.Argument(1) ByteBuffer[] dsts,
        @Advice.Argument(2) int off, @Advice.Argument(3) int len) {
      // The record is decrypted in place: its first bytes are taken now.
      return new Object[] {Tls.recordStart(src, src.position(), src.remaining()), Tls.positions(dsts, off, len, 0)};
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object engine, @Advice.Argument(1) ByteBuffer[] dsts, @Advice.Argument(2) int off,
        @Advice.Return SSLEngineResult r, @Advice.Enter Object[] at) {
      if (at != null && r != null && r.bytesConsumed() > 0) {
        Tls.unwrapped(engine, (byte[]) at[0], dsts, off, (int[]) at[1], r.bytesProduced());
      }
    }
  }

  /**
   * ReferenceCountedOpenSslEngine.unwrap(ByteBuffer[] srcs, int srcsOff, int srcsLen,
   * ByteBuffer[] dsts, int off, int len) (netty-tcnative), which every other
   * unwrap of that engine calls: the records it is given (several at once,
   * copied into BoringSSL's buffer, srcs left as they are), decrypted
   * into dsts.
   */
  public static final class OpenSslUnwrap {
    @Advice.OnMethodEnter(suppress = Throwable.class)
    static Object[] enter(@Advice.Argument(0) ByteBuffer[] srcs, @Advice.Argument(1) int srcsOff,
        @Advice.Argument(2) int srcsLen, @Advice.Argument(3) ByteBuffer[] dsts, @Advice.Argument(4) int off,
        @Advice.Argument(5) int len) {
      return new Object[] {Tls.firstRecordStart(srcs, srcsOff, srcsLen), Tls.positions(dsts, off, len, 0)};
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object engine, @Advice.Argument(3) ByteBuffer[] dsts, @Advice.Argument(4) int off,
        @Advice.Return SSLEngineResult r, @Advice.Enter Object[] at) {
      if (at != null && r != null && r.bytesConsumed() > 0) {
        Tls.unwrapped(engine, (byte[]) at[0], dsts, off, (int[]) at[1], r.bytesProduced());
      }
    }
  }
}
