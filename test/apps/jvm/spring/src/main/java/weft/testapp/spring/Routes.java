package weft.testapp.spring;

import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/** What the MVC and WebFlux routes share. */
final class Routes {
  private Routes() {}

  /** The fan-out route's clients, called at once. */
  static final List<String> FAN = List.of("okhttp-enqueue", "jdk-sendasync", "webclient");

  static String backend() {
    return App.env("BACKEND_URL", "http://127.0.0.1:8082").replaceAll("/+$", "");
  }

  static String url(String n, String what) {
    return backend() + "/work/" + n + "/" + what;
  }

  /** The wait before each call, 0-10 ms. */
  static long waitMillis() {
    return ThreadLocalRandom.current().nextLong(0, 11);
  }
}
