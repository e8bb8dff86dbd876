package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.weft.agent.bootstrap.Audit;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/** com.sun.net.httpserver (jfront's server): each exchange reads and answers under a fresh id. */
class HttpServerTest {
  static String get(int port, String path) throws Exception {
    try (Socket s = new Socket("127.0.0.1", port)) {
      OutputStream out = s.getOutputStream();
      out.write(("GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      String all = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
      return all.substring(all.indexOf("\r\n\r\n") + 4);
    }
  }

  void check(ExecutorService executor) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    ExecutorService helper = Executors.newFixedThreadPool(2);
    server.createContext("/", ex -> {
      long here = Slots.now();
      long there;
      try {
        there = helper.submit(Slots::now).get(); // a hop to another pool keeps it
      } catch (Exception e) {
        there = -1;
      }
      byte[] body = (here + " " + there).getBytes(StandardCharsets.US_ASCII);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    server.setExecutor(executor);
    server.start();
    int port = server.getAddress().getPort();
    try {
      List<Long> ids = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        Audit.clear();
        String[] r = get(port, "/x" + i).split(" ");
        long here = Long.parseLong(r[0]);
        assertNotEquals(0, here);
        assertEquals(here, Long.parseLong(r[1]));
        ids.add(here);
        // What the kernel would see on the server side of this connection.
        for (Audit.Record rec : Audit.snapshot()) {
          if (rec.localPort == port) {
            assertEquals(here, rec.slot, rec.toString());
          }
        }
      }
      assertEquals(ids.size(), ids.stream().distinct().count(), "a fresh id per request: " + ids);
    } finally {
      server.stop(0);
      helper.shutdownNow();
    }
  }

  @Test
  void defaultExecutor() throws Exception {
    check(null);
  }

  @Test
  void poolExecutor() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      check(pool);
    } finally {
      pool.shutdownNow();
    }
    assertTrue(true);
  }
}
