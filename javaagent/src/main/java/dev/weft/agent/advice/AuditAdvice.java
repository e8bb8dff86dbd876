package dev.weft.agent.advice;

import dev.weft.agent.bootstrap.Audit;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/** Test aid: SocketChannelImpl reads and writes, with the slot the kernel would see. */
public final class AuditAdvice {
  private AuditAdvice() {}

  public static final class Read {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object ch, @Advice.Return(typing = Assigner.Typing.DYNAMIC) Object n) {
      Audit.io(ch, false, ((Number) n).longValue(), null);
    }
  }

  public static final class Write {
    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.This Object ch, @Advice.Argument(0) Object src,
        @Advice.Return(typing = Assigner.Typing.DYNAMIC) Object n) {
      Audit.io(ch, true, ((Number) n).longValue(), src);
    }
  }
}
