package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import dev.weft.agent.bootstrap.Audit;
import java.lang.reflect.Method;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Apache HttpClient 5 async, on the oldest and newest versions the agent
 * supports. With one connection in the pool, a queued request's lease is
 * completed, and its request written, by the I/O thread that released the
 * connection after the request before it: each request must still be
 * written under the id of the code that executed it, and a request made
 * under no id under none.
 */
class ApacheAsyncClientTest {
  static final int CALLS = 12;

  @ParameterizedTest
  @ValueSource(strings = {"5.1.4", "5.6.5"})
  void queuedRequestsWriteUnderTheirCallersId(String version) throws Exception {
    HttpServer server = Servers.slowOk();
    int port = server.getAddress().getPort();
    try (URLClassLoader loader = Isolated.loader("weft.test.apache5", version)) {
      Object pool = Isolated.call(
          loader.loadClass("org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManagerBuilder"), "create");
      Isolated.call(pool, "setMaxConnPerRoute", 1);
      Isolated.call(pool, "setMaxConnTotal", 1);
      Object builder = Isolated.call(loader.loadClass("org.apache.hc.client5.http.impl.async.HttpAsyncClients"), "custom");
      Isolated.call(builder, "setConnectionManager", Isolated.call(pool, "build"));
      Object client = Isolated.call(builder, "build");
      Isolated.call(client, "start");
      Class<?> requests = loader.loadClass("org.apache.hc.client5.http.async.methods.SimpleRequestBuilder");
      Method execute = loader.loadClass("org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient").getMethod(
          "execute", loader.loadClass("org.apache.hc.client5.http.async.methods.SimpleHttpRequest"),
          loader.loadClass("org.apache.hc.core5.concurrent.FutureCallback"));
      try {
        Audit.clear();
        List<Long> ids = new ArrayList<>();
        List<Future<?>> done = new ArrayList<>();
        for (int i = 0; i <= CALLS; i++) {
          // The last request is made under no id.
          long id = i < CALLS ? Slots.freshId() : 0;
          Object request = Isolated.call(
              Isolated.call(requests, "get", "http://127.0.0.1:" + port + "/r/" + id), "build");
          Slots.under(id, () -> {
            try {
              done.add((Future<?>) execute.invoke(client, request, null));
            } catch (ReflectiveOperationException e) {
              throw new RuntimeException(e);
            }
          });
          ids.add(id);
        }
        for (Future<?> f : done) {
          assertEquals(200, Isolated.call(f.get(10, TimeUnit.SECONDS), "getCode"));
        }
        Map<Long, Long> seen = Isolated.requestWrites(port);
        for (long id : ids) {
          assertEquals(Long.valueOf(id), seen.get(id),
              "Apache HttpClient " + version + ": the write of request " + id + " (all: " + Audit.snapshot() + ")");
        }
      } finally {
        Isolated.call(client, "close");
      }
    } finally {
      server.stop(0);
    }
  }
}
