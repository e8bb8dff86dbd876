package weft.testapp.spring;

import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.Response;
import org.apache.hc.client5.http.async.methods.SimpleHttpRequest;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.Http2SslContextSpec;
import reactor.netty.http.HttpProtocol;

/**
 * Every JVM HTTP client the app calls its backend through, by the name its
 * route uses. Blocking clients write on the calling thread; the others hand
 * the request to a thread of their own, which is what the agent must follow.
 */
final class Clients {
  static final List<String> BLOCKING =
      List.of("okhttp-execute", "jdk-send", "urlconnection", "apache5-classic", "jdk2-send", "okhttp-h2c");
  static final List<String> ASYNC = List.of("okhttp-enqueue", "jdk-sendasync", "apache5-async", "webclient", "jdk2-sendasync", "webclient2", "webclient2c", "apache5-h2c",
      "webclient-openssl", "webclient2-openssl",
      "ktor-cio", "ktor-okhttp", "ktor-java", "ktor-apache5");

  // Default limits everywhere: OkHttp's dispatcher runs 5 calls per host, so
  // at concurrency 32 most enqueued calls wait and start on another call's
  // thread. (OKHTTP_MAX_PER_HOST raises it for the benchmark, whose rate
  // 5 calls at a time could not carry.)
  private final OkHttpClient okhttp = okhttp();
  private final HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  // HTTP/2 where the server offers it by ALPN (over TLS), else HTTP/1.1.
  private final HttpClient jdk2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
  private final CloseableHttpClient apacheClassic = HttpClients.createDefault();
  private final CloseableHttpAsyncClient apacheAsync = HttpAsyncClients.createDefault();
  // HTTP/2 without TLS, by prior knowledge (h2c).
  private final OkHttpClient okhttpH2c = okhttp.newBuilder().protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE)).build();
  private final CloseableHttpAsyncClient apacheH2c = HttpAsyncClients.createHttp2Default();
  // Reactor Netty's TLS engine: the JDK's, which Netty picks without
  // netty-tcnative; the "-openssl" routes take netty-tcnative's (BoringSSL
  // through JNI), which Netty would pick by default now that the app has it.
  private final WebClient webClient = webClient(false, SslProvider.JDK);
  // HTTP/2 where the server offers it by ALPN (over TLS), else HTTP/1.1.
  private final WebClient webClient2 = webClient(true, SslProvider.JDK);
  private final WebClient webClientOpenSsl = webClient(false, SslProvider.OPENSSL);
  private final WebClient webClient2OpenSsl = webClient(true, SslProvider.OPENSSL);
  // HTTP/2 without TLS, by prior knowledge (h2c).
  private final WebClient webClient2c = WebClient.builder()
      .clientConnector(new ReactorClientHttpConnector(
          reactor.netty.http.client.HttpClient.create().protocol(HttpProtocol.H2C)))
      .build();

  Clients() {
    apacheAsync.start();
    apacheH2c.start();
  }

  /**
   * A WebClient on HTTP/1.1, or (h2) on HTTP/2 where the server offers it by
   * ALPN, whose https calls use provider's TLS engine.
   */
  private static WebClient webClient(boolean h2, SslProvider provider) {
    reactor.netty.http.client.HttpClient client = h2
        ? reactor.netty.http.client.HttpClient.create().protocol(HttpProtocol.H2, HttpProtocol.HTTP11)
            .secure(s -> s.sslContext(Http2SslContextSpec.forClient().configure(b -> b.sslProvider(provider))))
        : reactor.netty.http.client.HttpClient.create()
            .secure(s -> s.sslContext(Http11SslContextSpec.forClient().configure(b -> b.sslProvider(provider))));
    return WebClient.builder().clientConnector(new ReactorClientHttpConnector(client)).build();
  }

  private static OkHttpClient okhttp() {
    OkHttpClient c = new OkHttpClient();
    String perHost = App.env("OKHTTP_MAX_PER_HOST", "");
    if (!perHost.isEmpty()) {
      c.dispatcher().setMaxRequestsPerHost(Integer.parseInt(perHost));
      c.dispatcher().setMaxRequests(Math.max(c.dispatcher().getMaxRequests(), Integer.parseInt(perHost)));
    }
    return c;
  }

  static boolean known(String client) {
    return BLOCKING.contains(client) || ASYNC.contains(client);
  }

  /** Calls url with a blocking client on this thread, and returns the body. */
  String fetch(String client, String url) throws Exception {
    switch (client) {
      case "okhttp-execute":
        try (Response r = okhttp.newCall(new Request.Builder().url(url).build()).execute()) {
          return body(r.code(), r.body().string());
        }
      case "okhttp-h2c":
        try (Response r = okhttpH2c.newCall(new Request.Builder().url(url).build()).execute()) {
          return body(r.code(), r.body().string());
        }
      case "jdk-send": {
        HttpResponse<String> r = jdk.send(jdkRequest(url), HttpResponse.BodyHandlers.ofString());
        return body(r.statusCode(), r.body());
      }
      case "jdk2-send": {
        HttpResponse<String> r = jdk2.send(jdkRequest(url), HttpResponse.BodyHandlers.ofString());
        return body(r.statusCode(), r.body());
      }
      case "urlconnection": {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        try (InputStream in = c.getInputStream()) {
          return body(c.getResponseCode(), new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
      }
      case "apache5-classic":
        return apacheClassic.execute(new HttpGet(url),
            r -> body(r.getCode(), EntityUtils.toString(r.getEntity(), StandardCharsets.UTF_8)));
      default:
        return fetchAsync(client, url).get();
    }
  }

  /** Calls url with an asynchronous client; the body completes the future. */
  CompletableFuture<String> fetchAsync(String client, String url) {
    switch (client) {
      case "okhttp-enqueue": {
        CompletableFuture<String> f = new CompletableFuture<>();
        okhttp.newCall(new Request.Builder().url(url).build()).enqueue(new Callback() {
          @Override
          public void onFailure(Call call, IOException e) {
            f.completeExceptionally(e);
          }

          @Override
          public void onResponse(Call call, Response response) {
            try (Response r = response) {
              f.complete(body(r.code(), r.body().string()));
            } catch (Exception e) {
              f.completeExceptionally(e);
            }
          }
        });
        return f;
      }
      case "jdk-sendasync":
        return jdk.sendAsync(jdkRequest(url), HttpResponse.BodyHandlers.ofString())
            .thenApply(r -> body(r.statusCode(), r.body()));
      case "jdk2-sendasync":
        return jdk2.sendAsync(jdkRequest(url), HttpResponse.BodyHandlers.ofString())
            .thenApply(r -> body(r.statusCode(), r.body()));
      case "apache5-async":
        return apache(apacheAsync, url);
      case "apache5-h2c":
        return apache(apacheH2c, url);
      case "webclient":
        return webclient(url).toFuture();
      case "webclient2":
        return webClient2.get().uri(url).retrieve().bodyToMono(String.class).toFuture();
      case "webclient2c":
        return webClient2c.get().uri(url).retrieve().bodyToMono(String.class).toFuture();
      case "webclient-openssl":
        return webClientOpenSsl.get().uri(url).retrieve().bodyToMono(String.class).toFuture();
      case "webclient2-openssl":
        return webClient2OpenSsl.get().uri(url).retrieve().bodyToMono(String.class).toFuture();
      case "ktor-cio":
      case "ktor-okhttp":
      case "ktor-java":
      case "ktor-apache5":
        return KtorClients.fetch(client, url);
      default:
        return CompletableFuture.failedFuture(new IllegalArgumentException("no async client " + client));
    }
  }

  /** An Apache async client's GET of url. */
  private static CompletableFuture<String> apache(CloseableHttpAsyncClient client, String url) {
    CompletableFuture<String> f = new CompletableFuture<>();
    SimpleHttpRequest req = SimpleRequestBuilder.get(url).build();
    client.execute(req, new FutureCallback<SimpleHttpResponse>() {
      @Override
      public void completed(SimpleHttpResponse r) {
        try {
          f.complete(body(r.getCode(), r.getBodyText()));
        } catch (RuntimeException e) {
          f.completeExceptionally(e);
        }
      }

      @Override
      public void failed(Exception e) {
        f.completeExceptionally(e);
      }

      @Override
      public void cancelled() {
        f.cancel(false);
      }
    });
    return f;
  }

  /** WebClient (Reactor Netty's HttpClient underneath), left as a Mono for WebFlux handlers. */
  Mono<String> webclient(String url) {
    return webClient.get().uri(url).retrieve().bodyToMono(String.class);
  }

  private static HttpRequest jdkRequest(String url) {
    return HttpRequest.newBuilder(URI.create(url)).GET().build();
  }

  private static String body(int status, String text) {
    if (status != 200) {
      throw new IllegalStateException("backend answered " + status);
    }
    return text;
  }
}
