// spring: a Spring Boot service whose routes call the backend through each JVM
// HTTP client (Clients), so the agent's parent for every client can be checked.
// WEB_STACK=mvc serves with Spring MVC on Tomcat (a thread per request),
// WEB_STACK=webflux with WebFlux on Reactor Netty (event loops, Mono chains).
// GET /{client}/{n} waits 0-10 ms, then calls BACKEND_URL/work/{n}/{client};
// GET /fan/{n} calls three asynchronous clients at once
// (/work/{n}/fan-{client}). The request number n in both paths makes a span
// under the wrong request visible.
package weft.testapp.spring;

import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

@SpringBootApplication
public class App {
  static String env(String name, String dflt) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? dflt : v;
  }

  @Bean
  Clients clients() {
    return new Clients();
  }

  public static void main(String[] args) {
    String stack = env("WEB_STACK", "mvc");
    SpringApplication app = new SpringApplication(App.class);
    switch (stack) {
      case "mvc":
        app.setWebApplicationType(WebApplicationType.SERVLET);
        break;
      case "webflux":
        app.setWebApplicationType(WebApplicationType.REACTIVE);
        break;
      default:
        throw new IllegalArgumentException("WEB_STACK " + stack + ": want mvc or webflux");
    }
    app.setDefaultProperties(Map.of(
        "server.address", env("BIND", "127.0.0.1"),
        "server.port", env("PORT", "8080"),
        "spring.main.banner-mode", "off"));
    app.run(args);
    System.out.println("spring (" + stack + "): listening on http://" + env("BIND", "127.0.0.1") + ":"
        + env("PORT", "8080") + ", backend " + Routes.backend());
  }
}
