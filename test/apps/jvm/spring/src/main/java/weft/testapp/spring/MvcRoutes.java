package weft.testapp.spring;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/** Spring MVC: the handler runs on Tomcat's request thread and blocks. */
@RestController
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
class MvcRoutes {
  private final Clients clients;
  // The fan-out's calls start on pool threads: an executor hand-off.
  private final ExecutorService pool = Executors.newFixedThreadPool(8);

  MvcRoutes(Clients clients) {
    this.clients = clients;
  }

  @GetMapping("/health")
  String health() {
    return "ok";
  }

  @GetMapping("/{client}/{n}")
  ResponseEntity<String> call(@PathVariable("client") String client, @PathVariable("n") String n) throws Exception {
    if (!Clients.known(client)) {
      return ResponseEntity.status(404).body("no client " + client);
    }
    Thread.sleep(Routes.waitMillis());
    return ResponseEntity.ok(clients.fetch(client, Routes.url(n, client)));
  }

  @GetMapping("/fan/{n}")
  String fan(@PathVariable("n") String n) {
    CompletableFuture<?>[] calls = Routes.FAN.stream()
        .map(c -> CompletableFuture.supplyAsync(() -> {
          try {
            Thread.sleep(Routes.waitMillis());
            return clients.fetchAsync(c, Routes.url(n, "fan-" + c));
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        }, pool).thenCompose(f -> f))
        .toArray(CompletableFuture<?>[]::new);
    CompletableFuture.allOf(calls).join();
    StringBuilder b = new StringBuilder();
    for (CompletableFuture<?> c : calls) {
      b.append(c.join()).append(' ');
    }
    return b.toString().trim();
  }
}
