package dev.weft.agent.install;

import dev.weft.agent.bootstrap.WeftNative;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

/** Loads libweft_jni from the agent jar, or from -Dweft.agent.native=PATH. */
final class NativeLibrary {
  private NativeLibrary() {}

  static final String RESOURCE = "dev/weft/agent/native/linux-x86_64/libweft_jni.so";

  /** Loads and checks the library; throws with a one-line reason if it cannot be used. */
  static void load(File agentJar) throws IOException {
    String override = System.getProperty("weft.agent.native");
    if (override != null) {
      System.load(new File(override).getAbsolutePath());
    } else {
      String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
      String arch = System.getProperty("os.arch", "");
      if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
        throw new UnsupportedOperationException("no native library for " + os + "/" + arch);
      }
      Path lib = extract(agentJar);
      try {
        System.load(lib.toString());
      } finally {
        forget(lib);
      }
    }
    WeftNative.gettid(); // binds the natives now: a wrong library fails here, not mid-request
  }

  /** Copies the library to a private temp file; it is unlinked once loaded (the mapping stays). */
  private static Path extract(File agentJar) throws IOException {
    Path tmp = Files.createTempFile("weft-jni-", ".so",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    try (JarFile jar = new JarFile(agentJar)) {
      ZipEntry e = jar.getEntry(RESOURCE);
      if (e == null) {
        throw new IOException("agent jar has no " + RESOURCE);
      }
      try (InputStream in = jar.getInputStream(e)) {
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException | RuntimeException ex) {
      Files.deleteIfExists(tmp);
      throw ex;
    }
    return tmp;
  }

  static void forget(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException ignored) {
      // a stray file in the temp directory, nothing worse
    }
  }
}
