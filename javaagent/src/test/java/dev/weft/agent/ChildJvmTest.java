package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Agent start-up paths that need a JVM of their own. */
class ChildJvmTest {
  static final String JAR = System.getProperty("weft.agent.jar");

  /**
   * Drops the JVM's own warnings (JDK 17 warns whenever an agent extends the
   * bootstrap class path; a failed dlopen warns about stack guards): they are
   * the JVM's lines, not the agent's.
   */
  static String jvmWarnings(String err) {
    StringBuilder b = new StringBuilder();
    for (String line : err.split("\n", -1)) {
      if (!line.startsWith("OpenJDK 64-Bit Server VM warning:")) {
        b.append(line).append('\n');
      }
    }
    return b.toString().replaceAll("\n+$", b.length() > 1 ? "\n" : "");
  }

  /** The agent's status lines (not the modules' "applied" lines). */
  static List<String> agentLines(String err) {
    List<String> ours = new ArrayList<>();
    for (String line : err.split("\n")) {
      if (line.startsWith("weft-agent") && !line.startsWith("weft-agent: module ")) {
        ours.add(line);
      }
    }
    return ours;
  }

  static final class Result {
    final int exit;
    final String out;
    final String err;

    Result(int exit, String out, String err) {
      this.exit = exit;
      this.out = out;
      this.err = err;
    }
  }

  static Result run(List<String> jvmArgs, String... mainArgs) throws Exception {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    String classes = Paths.get(ChildMain.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    List<String> cmd = new ArrayList<>();
    cmd.add(java);
    cmd.addAll(jvmArgs);
    cmd.add("-cp");
    cmd.add(classes);
    cmd.add(ChildMain.class.getName());
    cmd.addAll(Arrays.asList(mainArgs));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().remove("JAVA_TOOL_OPTIONS");
    File out = File.createTempFile("child", ".out");
    File err = File.createTempFile("child", ".err");
    pb.redirectOutput(out).redirectError(err);
    Process p = pb.start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM timed out");
    String errText = new String(Files.readAllBytes(err.toPath()), StandardCharsets.UTF_8);
    Result r = new Result(p.exitValue(),
        new String(Files.readAllBytes(out.toPath()), StandardCharsets.UTF_8),
        jvmWarnings(errText));
    out.delete();
    err.delete();
    return r;
  }

  @Test
  void failsOpenWithoutTheNativeLibrary() throws Exception {
    Result r = run(List.of("-javaagent:" + JAR, "-Dweft.agent.native=/nonexistent/libweft_jni.so"), "plain");
    assertTrue(r.out.contains("agent classes false"), "nothing installed: " + r.out);
    assertEquals(0, r.exit, r.err);
    assertTrue(r.out.contains("result 42"), r.out);
    String[] lines = r.err.strip().split("\n");
    assertEquals(1, lines.length, "exactly one line on stderr: " + r.err);
    assertTrue(lines[0].startsWith("weft-agent: inactive: "), lines[0]);
  }

  @Test
  void failsOpenWithALibraryThatIsNotOne() throws Exception {
    File bogus = File.createTempFile("not-a-library", ".so");
    Files.write(bogus.toPath(), "not an ELF file".getBytes(StandardCharsets.UTF_8));
    try {
      Result r = run(List.of("-javaagent:" + JAR, "-Dweft.agent.native=" + bogus), "plain");
      assertEquals(0, r.exit, r.err);
      assertTrue(r.out.contains("result 42"), r.out);
      // The JVM itself complains about the file; of the agent, one line.
      List<String> ours = agentLines(r.err);
      assertEquals(1, ours.size(), "exactly one agent line on stderr: " + r.err);
      assertTrue(ours.get(0).startsWith("weft-agent: inactive: UnsatisfiedLinkError"), ours.get(0));
    } finally {
      bogus.delete();
    }
  }

  @Test
  void failsOpenOnBadArguments() throws Exception {
    Result r = run(List.of("-javaagent:" + JAR + "=mode=bogus"), "plain");
    assertEquals(0, r.exit, r.err);
    assertTrue(r.out.contains("result 42"), r.out);
    assertEquals("weft-agent: inactive: IllegalArgumentException: mode must be slot or ioctl, not bogus", r.err.strip());
  }

  @Test
  void quietWhenActive() throws Exception {
    Result r = run(List.of("-javaagent:" + JAR), "plain");
    assertEquals(0, r.exit, r.err);
    // JDK 22+ adds its own four WARNING lines about System.load from an
    // unnamed module unless --enable-native-access=ALL-UNNAMED is given.
    assertEquals(List.of(), agentLines(r.err), "no status output without debug=true");
    assertTrue(r.out.contains("result 42"), r.out);
  }

  @Test
  void modulesSayWhatApplied() throws Exception {
    Result r = run(List.of("-javaagent:" + JAR), "requests", "10");
    assertEquals(0, r.exit, r.err);
    String jdk = "JDK " + System.getProperty("java.version");
    assertTrue(r.err.contains("weft-agent: module jdk-executors (java.util.concurrent executors and ForkJoin (JDK)) applied: "
        + jdk + "\n"), r.err);
    for (String line : r.err.split("\n")) {
      assertTrue(!line.startsWith("weft-agent: module okhttp") && !line.startsWith("weft-agent: could not"),
          "no library here but the JDK's: " + r.err);
    }
  }

  @Test
  void slotModeCostsNoSyscallPerRequest() throws Exception {
    Result r = run(List.of("-javaagent:" + JAR + "=count=true"), "requests", "200");
    assertEquals(0, r.exit, r.err);
    // Both threads registered their slot before counting began.
    assertTrue(r.out.contains("packets 0\n"), r.out);
    // Per request: mount + unmount on this thread, mount + unmount on the worker.
    assertTrue(r.out.contains("writes 800\n"), r.out);
  }

  @Test
  void ioctlModeSendsOnlyChanges() throws Exception {
    Result r = run(List.of("-javaagent:" + JAR + "=mode=ioctl,count=true"), "requests", "200");
    assertEquals(0, r.exit, r.err);
    // Each request: op 4 + op 5 on this thread, op 4 + op 5 on the worker; nothing when nothing changes.
    assertTrue(r.out.contains("packets 800\n"), r.out);
  }

  @Test
  void runtimeAttach() throws Exception {
    Result r = run(List.of("-Djdk.attach.allowAttachSelf=true"), "attach", JAR);
    assertEquals(0, r.exit, r.out + r.err);
    assertTrue(r.out.contains("attached task slot 777 after 0"), r.out + r.err);
    // JDK 21+ adds its own lines about dynamically loaded agents (JEP 451).
    List<String> ours = agentLines(r.err);
    assertEquals(1, ours.size(), r.err);
    assertTrue(ours.get(0).startsWith("weft-agent: active: mode=slot (attached)"), r.err);
  }

  @Test
  void aClassThatCannotBeInstrumentedLeavesTheRestWorking(@TempDir Path dir) throws Exception {
    List<JavaFileObject> sources = new ArrayList<>();
    for (Map.Entry<String, String> e : ChildMain.IMPOSTOR.entrySet()) {
      String file = e.getKey().substring(e.getKey().lastIndexOf('.') + 1) + ".java";
      sources.add(new SimpleJavaFileObject(URI.create("string:///" + file), JavaFileObject.Kind.SOURCE) {
        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
          return e.getValue();
        }
      });
    }
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertTrue(javac.getTask(null, null, null, List.of("-d", dir.toString()), null, sources).call(), "javac");

    Result r = run(List.of("-javaagent:" + JAR), "impostor", dir.toString());
    assertEquals(0, r.exit, r.out + r.err);
    assertTrue(r.err.contains("weft-agent: could not instrument "
        + "io.ktor.server.cio.backend.ServerPipelineKt$startServerConnectionPipeline$1$1 (module ktor-cio): "), r.err);
    assertTrue(r.err.contains("weft-agent: module ktor-cio (") && r.err.contains("weft-agent: module jdk-executors ("), r.err);
    // The app ran on, and the other modules work.
    assertTrue(r.out.contains("task slot 777 after 0"), r.out + r.err);
  }
}
