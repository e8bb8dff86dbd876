package dev.weft.agent;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/** Test servers. */
final class Servers {
  private Servers() {}

  /** Answers "ok" to everything after 5 ms, so that a client's next calls queue up behind the one in flight. */
  static HttpServer slowOk() throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", ex -> {
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      byte[] body = "ok".getBytes(StandardCharsets.US_ASCII);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    server.start();
    return server;
  }
}
