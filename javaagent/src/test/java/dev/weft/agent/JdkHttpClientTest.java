package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.sun.net.httpserver.HttpServer;
import dev.weft.agent.bootstrap.Audit;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * java.net.http.HttpClient: the request's bytes are written under the id of
 * the thread that called send/sendAsync, whichever thread writes them, and
 * a request made under no id is written under none.
 */
class JdkHttpClientTest {
  static HttpServer server;
  static int port;
  static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", ex -> {
      byte[] body = "ok".getBytes(StandardCharsets.US_ASCII);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    server.start();
    port = server.getAddress().getPort();
  }

  @AfterAll
  static void stop() {
    server.stop(0);
  }

  static HttpRequest request(int i) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/r" + i)).build();
  }

  /** Slots of the client's writes to the server since the last clear. */
  static List<Long> clientWrites() {
    List<Long> slots = new ArrayList<>();
    for (Audit.Record r : Audit.snapshot()) {
      if (r.write && r.remotePort == port) {
        slots.add(r.slot);
      }
    }
    return slots;
  }

  void check(boolean async) throws Exception {
    // Several in a row: kept-alive connections, and exchanges completed from
    // the client's own threads, are covered too.
    for (int i = 0; i < 20; i++) {
      Audit.clear();
      long id = Slots.freshId();
      int n = i;
      Object[] result = new Object[1];
      Slots.under(id, () -> {
        try {
          if (async) {
            result[0] = CLIENT.sendAsync(request(n), HttpResponse.BodyHandlers.ofString());
          } else {
            result[0] = CLIENT.send(request(n), HttpResponse.BodyHandlers.ofString()).body();
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      if (async) {
        result[0] = ((CompletableFuture<?>) result[0]).get();
        result[0] = ((HttpResponse<?>) result[0]).body();
      }
      assertEquals("ok", result[0]);
      List<Long> writes = clientWrites();
      assertFalse(writes.isEmpty(), "no client write seen");
      for (long slot : writes) {
        assertEquals(id, slot, "request " + i + ": " + Audit.snapshot());
      }
    }
  }

  @Test
  void send() throws Exception {
    check(false);
  }

  @Test
  void sendAsync() throws Exception {
    check(true);
  }

  @Test
  void noIdNoneLent() throws Exception {
    // The client's threads have served requests with ids above: a request
    // made under none is written under none.
    check(true);
    Audit.clear();
    assertEquals("ok", CLIENT.send(request(99), HttpResponse.BodyHandlers.ofString()).body());
    for (long slot : clientWrites()) {
      assertEquals(0, slot);
    }
  }
}
