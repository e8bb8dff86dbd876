package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import dev.weft.agent.bootstrap.Audit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

/**
 * Reactor Netty's HttpClient (under Spring's WebClient), its newest version
 * (Spring Boot's 1.2 is covered end to end). With one pooled connection, a
 * pending acquire gets the connection, and writes its request, on the event
 * loop that released it, inside the read of the previous response (which the
 * Netty module gives an id of its own): each request must still be written
 * under the id of the code that subscribed, and one made under no id under none.
 */
class ReactorNettyClientTest {
  static final int CALLS = 12;

  @Test
  void pendingAcquiresWriteUnderTheirSubscribersId() throws Exception {
    HttpServer server = Servers.slowOk();
    int port = server.getAddress().getPort();
    ConnectionProvider pool = ConnectionProvider.builder("weft-test").maxConnections(1).pendingAcquireMaxCount(-1).build();
    // NIO rather than epoll, so that the audit sees the socket writes.
    LoopResources loops = LoopResources.create("weft-test", 1, true);
    HttpClient client = HttpClient.create(pool).runOn(loops, false);
    try {
      Audit.clear();
      List<Long> ids = new ArrayList<>();
      List<CompletableFuture<String>> done = new ArrayList<>();
      for (int i = 0; i <= CALLS; i++) {
        long id = i < CALLS ? Slots.freshId() : 0;
        String url = "http://127.0.0.1:" + port + "/r/" + id;
        Slots.under(id, () -> done.add(client.get().uri(url).responseContent().aggregate().asString().toFuture()));
        ids.add(id);
      }
      for (CompletableFuture<String> f : done) {
        assertEquals("ok", f.get(10, TimeUnit.SECONDS));
      }
      Map<Long, Long> seen = Isolated.requestWrites(port);
      for (long id : ids) {
        assertEquals(Long.valueOf(id), seen.get(id),
            "the write of request " + id + " (all: " + Audit.snapshot() + ")");
      }
    } finally {
      pool.disposeLater().block();
      loops.disposeLater().block();
      server.stop(0);
    }
  }
}
