package dev.weft.agent;

import java.io.File;
import java.io.IOException;
import java.util.Locale;
import java.util.jar.JarFile;

/**
 * The checks that can fail before the jar is put on the bootstrap class path:
 * once it is, a JDK 17 JVM prints a class-sharing warning of its own, and a
 * failed start must show only the agent's one line.
 */
final class Preflight {
  private Preflight() {}

  static final String LIBRARY = "dev/weft/agent/native/linux-x86_64/libweft_jni.so";

  /** Throws with the reason the agent cannot start here. */
  static void check(String args, File jar) throws IOException {
    AgentArgs.parse(args);
    String override = System.getProperty("weft.agent.native");
    if (override != null) {
      File f = new File(override);
      if (!f.isFile() || !f.canRead()) {
        throw new IOException("native library not found: " + override);
      }
      return;
    }
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "");
    if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
      throw new UnsupportedOperationException("no native library for " + os + "/" + arch);
    }
    try (JarFile j = new JarFile(jar)) {
      if (j.getEntry(LIBRARY) == null) {
        throw new IOException("agent jar has no " + LIBRARY);
      }
    }
  }
}
