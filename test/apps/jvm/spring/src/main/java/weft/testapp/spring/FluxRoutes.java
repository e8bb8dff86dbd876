package weft.testapp.spring;

import java.time.Duration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.embedded.netty.NettyReactiveWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * WebFlux: the handler returns at once; the wait runs on Reactor's parallel
 * scheduler, blocking clients on boundedElastic (as WebFlux apps must call
 * them), asynchronous ones from wherever the chain is.
 */
@RestController
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
class FluxRoutes {
  private final Clients clients;

  FluxRoutes(Clients clients) {
    this.clients = clients;
  }

  /** Reactor Netty serves, although Tomcat (for the MVC stack) is on the class path too and would be chosen first. */
  @Bean
  static NettyReactiveWebServerFactory reactorNetty() {
    return new NettyReactiveWebServerFactory();
  }

  @GetMapping("/health")
  String health() {
    return "ok";
  }

  @GetMapping("/{client}/{n}")
  Mono<ResponseEntity<String>> call(@PathVariable("client") String client, @PathVariable("n") String n) {
    if (!Clients.known(client)) {
      return Mono.just(ResponseEntity.status(404).body("no client " + client));
    }
    return Mono.delay(Duration.ofMillis(Routes.waitMillis()))
        .then(fetch(client, Routes.url(n, client)))
        .map(ResponseEntity::ok);
  }

  @GetMapping("/fan/{n}")
  Mono<String> fan(@PathVariable("n") String n) {
    return Flux.fromIterable(Routes.FAN)
        .flatMapSequential(c -> Mono.delay(Duration.ofMillis(Routes.waitMillis()))
            .then(fetch(c, Routes.url(n, "fan-" + c))))
        .collectList()
        .map(parts -> String.join(" ", parts));
  }

  private Mono<String> fetch(String client, String url) {
    if (client.equals("webclient")) {
      return clients.webclient(url);
    }
    if (Clients.BLOCKING.contains(client)) {
      return Mono.fromCallable(() -> clients.fetch(client, url)).subscribeOn(Schedulers.boundedElastic());
    }
    return Mono.defer(() -> Mono.fromFuture(clients.fetchAsync(client, url)));
  }
}
