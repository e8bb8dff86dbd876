package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.weft.agent.bootstrap.Audit;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Tomcat, on the oldest and newest versions the agent supports (9 with
 * javax.servlet, 11 with jakarta.servlet): each request over a kept-alive
 * connection is read, served and answered under an id of its own, which
 * the servlet's code sees too (so its executor hand-offs and asynchronous
 * clients can carry it), pipelined requests served in one pass included.
 */
class TomcatTest {
  static final int REQUESTS = 10;

  @ParameterizedTest
  @ValueSource(strings = {"9.0.124", "11.0.29"})
  void eachRequestGetsItsOwnId(String version, @TempDir Path base) throws Exception {
    Map<String, Long> servedUnder = new ConcurrentHashMap<>();
    try (URLClassLoader loader = Isolated.loader("weft.test.tomcat", version)) {
      ClassLoader previous = Thread.currentThread().getContextClassLoader();
      Thread.currentThread().setContextClassLoader(loader);
      Object tomcat;
      int port;
      try {
        // Each version would install its URL handlers JVM-wide, and only one may.
        Isolated.call(loader.loadClass("org.apache.catalina.webresources.TomcatURLStreamHandlerFactory"), "disable");
        Class<?> tomcatClass = loader.loadClass("org.apache.catalina.startup.Tomcat");
        tomcat = tomcatClass.getConstructor().newInstance();
        Isolated.call(tomcat, "setBaseDir", base.toString());
        Isolated.call(tomcat, "setPort", 0);
        Object connector = Isolated.call(tomcat, "getConnector");
        Isolated.call(connector, "setProperty", "address", "127.0.0.1");
        Object context = Isolated.call(tomcat, "addContext", "", base.toString());
        Class<?> servletClass = loader.loadClass(
            (version.startsWith("9.") ? "javax" : "jakarta") + ".servlet.Servlet");
        Object[] config = new Object[1];
        Object servlet = Proxy.newProxyInstance(loader, new Class<?>[] {servletClass}, (proxy, m, args) -> {
          switch (m.getName()) {
            case "init":
              config[0] = args[0];
              return null;
            case "getServletConfig":
              return config[0];
            case "service":
              String uri = (String) Isolated.call(args[0], "getRequestURI");
              servedUnder.put(uri, Slots.now());
              // Names the request in the response head, for the audit's records.
              Isolated.call(args[1], "setHeader", "X-R", uri);
              byte[] body = "ok".getBytes(StandardCharsets.US_ASCII);
              Isolated.call(args[1], "setContentLength", body.length);
              ((OutputStream) Isolated.call(args[1], "getOutputStream")).write(body);
              return null;
            case "hashCode":
              return System.identityHashCode(proxy);
            case "equals":
              return proxy == args[0];
            case "toString":
              return "test servlet";
            default:
              return m.getReturnType() == String.class ? "" : null;
          }
        });
        tomcatClass.getMethod("addServlet", loader.loadClass("org.apache.catalina.Context"), String.class, servletClass)
            .invoke(null, context, "s", servlet);
        Isolated.call(context, "addServletMappingDecoded", "/*", "s");
        Isolated.call(tomcat, "start");
        port = (int) Isolated.call(connector, "getLocalPort");
      } finally {
        Thread.currentThread().setContextClassLoader(previous);
      }
      try {
        Set<Long> seen = new HashSet<>();
        Map<String, Long> answered = new HashMap<>();
        for (int i = 0; i < REQUESTS; i++) {
          checkAnswers(version, port, answered);
          Audit.clear();
          HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/r/" + i).toURL()
              .openConnection();
          try (InputStream in = c.getInputStream()) {
            assertEquals("ok", new String(in.readAllBytes(), StandardCharsets.US_ASCII));
          }
          long slot = servedUnder.get("/r/" + i);
          assertNotEquals(0, slot, "Tomcat " + version + ": request " + i + " served under no id");
          assertTrue(seen.add(slot), "Tomcat " + version + ": request " + i + " served under an earlier one's id");
          // The server's reads since the request was sent are its own.
          boolean read = false;
          for (Audit.Record r : Audit.snapshot()) {
            if (r.localPort == port && !r.write) {
              assertEquals(slot, r.slot, "Tomcat " + version + ", request " + i + ": " + Audit.snapshot());
              read = true;
            }
          }
          assertTrue(read, "no server read seen: " + Audit.snapshot());
          answered.put("/r/" + i, slot);
          checkAnswers(version, port, answered);
        }
        Thread.sleep(100);
        checkAnswers(version, port, answered);

        // Two requests in one write: Tomcat serves both in one pass.
        try (Socket pipelined = new Socket("127.0.0.1", port)) {
          String two = "GET /r/first HTTP/1.1\r\nHost: t\r\n\r\nGET /r/second HTTP/1.1\r\nHost: t\r\n\r\n";
          pipelined.getOutputStream().write(two.getBytes(StandardCharsets.US_ASCII));
          InputStream in = pipelined.getInputStream();
          int oks = 0;
          StringBuilder got = new StringBuilder();
          while (oks < 2) {
            int b = in.read();
            assertTrue(b >= 0, "Tomcat " + version + ": the pipelined answers ended early: " + got);
            got.append((char) b);
            if (got.toString().endsWith("\r\n\r\nok")) {
              oks++;
              got.setLength(0);
            }
          }
        }
        long first = servedUnder.get("/r/first");
        long second = servedUnder.get("/r/second");
        assertNotEquals(0, first);
        assertNotEquals(0, second);
        assertNotEquals(first, second, "Tomcat " + version + ": two pipelined requests served under one id");
        assertTrue(seen.add(first) && seen.add(second), "Tomcat " + version + ": a pipelined request under an earlier id");
      } finally {
        Isolated.call(tomcat, "stop");
        Isolated.call(tomcat, "destroy");
      }
    }
  }

  /**
   * Every answer the audit saw was written under the id its request was
   * served under (an answer may be recorded after the client read it, so it
   * is matched by the request it names, in this window or the next).
   */
  static void checkAnswers(String version, int port, Map<String, Long> answered) {
    for (Audit.Record r : Audit.snapshot()) {
      int at = r.head.indexOf("X-R: ");
      if (r.localPort == port && r.write && at >= 0) {
        String path = r.head.substring(at + 5, r.head.indexOf('\r', at));
        if (answered.containsKey(path)) {
          assertEquals(answered.get(path), Long.valueOf(r.slot), "Tomcat " + version + ": the answer to " + path);
        }
      }
    }
  }
}
