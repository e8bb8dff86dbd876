package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.weft.agent.bootstrap.Audit;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A plain Netty server (no framework on top), on the oldest Netty 4.1 tested
 * and on the 4.2 of the tests' class path, with its handler on the event
 * loop, on a DefaultEventExecutorGroup, and on an application pool that
 * answers from there: each request is read, handled and answered under an
 * id of its own, one connection after another and many at once.
 */
class NettyServerTest {
  static final int SEQUENTIAL = 10;
  static final int CONNECTIONS = 4;
  static final int PER_CONNECTION = 20;

  @ParameterizedTest
  @CsvSource({
      "4.1.50.Final, loop", "4.1.50.Final, executor-group", "4.1.50.Final, pool",
      "class path, loop", "class path, executor-group", "class path, pool"})
  void eachRequestGetsItsOwnId(String version, String mode) throws Exception {
    Map<String, Long> servedUnder = new ConcurrentHashMap<>();
    String what = "Netty " + version + ", handler on " + mode;
    try (URLClassLoader loader = version.equals("class path") ? null : nettyLoader(version);
        AutoCloseable server = start(loader, mode, servedUnder)) {
      int port = (int) Isolated.call(server, "port");
      Set<Long> seen = new HashSet<>();
      Map<String, Long> answered = new HashMap<>();
      for (int i = 0; i < SEQUENTIAL; i++) {
        Audit.clear();
        String path = "/r/" + i;
        get(port, path);
        long slot = servedUnder.get(path);
        assertNotEquals(0, slot, what + ": request " + i + " served under no id");
        assertTrue(seen.add(slot), what + ": request " + i + " served under an earlier one's id");
        boolean read = false;
        for (Audit.Record r : Audit.snapshot()) {
          if (r.localPort == port && !r.write) {
            assertEquals(slot, r.slot, what + ", request " + i + ": " + Audit.snapshot());
            read = true;
          }
        }
        assertTrue(read, what + ": no server read seen: " + Audit.snapshot());
        answered.put(path, slot);
      }

      // Many connections at once, each a run of kept-alive requests.
      Audit.clear();
      ExecutorService clients = Executors.newFixedThreadPool(CONNECTIONS);
      List<Future<?>> done = new ArrayList<>();
      for (int c = 0; c < CONNECTIONS; c++) {
        int conn = c;
        done.add(clients.submit(() -> {
          for (int i = 0; i < PER_CONNECTION; i++) {
            get(port, "/c/" + conn + "/" + i);
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
      clients.shutdown();
      for (int c = 0; c < CONNECTIONS; c++) {
        for (int i = 0; i < PER_CONNECTION; i++) {
          String path = "/c/" + c + "/" + i;
          long slot = servedUnder.get(path);
          assertNotEquals(0, slot, what + ": " + path + " served under no id");
          assertTrue(seen.add(slot), what + ": " + path + " served under another request's id");
          answered.put(path, slot);
        }
      }
      // Every answer went out under its request's id (its write may be
      // recorded just after the client read it: wait for the last ones).
      long deadline = System.nanoTime() + 5_000_000_000L;
      Map<String, Long> written;
      do {
        written = answers(port);
      } while (written.size() < CONNECTIONS * PER_CONNECTION && System.nanoTime() < deadline && pause());
      assertEquals(CONNECTIONS * PER_CONNECTION, written.size(), what + ": answers seen " + written.keySet());
      for (Map.Entry<String, Long> e : written.entrySet()) {
        assertEquals(answered.get(e.getKey()), e.getValue(), what + ": the answer to " + e.getKey());
      }
    }
  }

  private static boolean pause() {
    try {
      Thread.sleep(20);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }

  static void get(int port, String path) throws Exception {
    HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + path).toURL().openConnection();
    try (InputStream in = c.getInputStream()) {
      assertEquals("ok", new String(in.readAllBytes(), StandardCharsets.US_ASCII));
    }
  }

  /**
   * The answers to the concurrent requests (/c/...) the audit saw the server
   * write, by the path each names, with their slots.
   */
  static Map<String, Long> answers(int port) {
    Map<String, Long> out = new HashMap<>();
    for (Audit.Record r : Audit.snapshot()) {
      int at = r.head.indexOf("X-R: /c/");
      if (r.localPort == port && r.write && at >= 0) {
        out.put(r.head.substring(at + 5, r.head.indexOf('\r', at)), r.slot);
      }
    }
    return out;
  }

  static AutoCloseable start(ClassLoader loader, String mode, Map<String, Long> servedUnder) throws Exception {
    if (loader == null) {
      return new NettyServer(mode, servedUnder);
    }
    return (AutoCloseable) loader.loadClass(NettyServer.class.getName())
        .getConstructor(String.class, Map.class).newInstance(mode, servedUnder);
  }

  /**
   * Netty version's jars, and NettyServer (compiled against the class
   * path's Netty 4.2, to the 4.1 API) loaded again next to them.
   */
  static URLClassLoader nettyLoader(String version) throws Exception {
    return Isolated.childFirst("weft.test.netty", version, "io.netty.", NettyServer.class.getName());
  }
}
