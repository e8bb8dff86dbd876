package dev.weft.agent;

import java.io.File;
import java.lang.instrument.Instrumentation;
import java.util.jar.JarFile;

/**
 * Entry point (-javaagent, JAVA_TOOL_OPTIONS, or runtime attach). Advice is
 * inlined into JDK classes, which only see the bootstrap class loader, so the
 * whole jar goes on the bootstrap search path and the rest of the agent is
 * loaded from there; this class touches nothing else of it directly.
 */
public final class Premain {
  private Premain() {}

  public static void premain(String args, Instrumentation inst) {
    start(args, inst, false);
  }

  public static void agentmain(String args, Instrumentation inst) {
    start(args, inst, true);
  }

  private static void start(String args, Instrumentation inst, boolean attached) {
    try {
      File jar = new File(Premain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      Preflight.check(args, jar);
      inst.appendToBootstrapClassLoaderSearch(new JarFile(jar));
      Class<?> installer = Class.forName("dev.weft.agent.install.Installer", true, null);
      installer
          .getMethod("install", String.class, Instrumentation.class, File.class, boolean.class)
          .invoke(null, args, inst, jar, attached);
    } catch (Throwable t) {
      Throwable cause = t.getCause() != null ? t.getCause() : t;
      String m = cause.getMessage();
      String line = cause.getClass().getSimpleName() + (m == null ? "" : ": " + m);
      System.err.println("weft-agent: inactive: " + line.replace('\n', ' '));
    }
  }
}
