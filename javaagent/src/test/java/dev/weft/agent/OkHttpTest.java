package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import javax.net.SocketFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * OkHttp's enqueue, on the oldest and newest versions of each module's
 * range (okhttp-3: 3.0 to 4.3, whose RealCall is okhttp3.RealCall; okhttp-4:
 * 4.4 on), each in a class loader of its own, driven by reflection. With one call
 * per host at a time, every queued call is started by the thread of the call
 * before it: each must still write its request under the id of the code that
 * enqueued it.
 */
class OkHttpTest {
  static final int CALLS = 12;

  @ParameterizedTest
  @ValueSource(strings = {"3.0.0", "3.14.9", "4.0.0", "4.3.1", "4.4.0", "4.12.0", "5.3.2"})
  void queuedCallsWriteUnderTheirEnqueuersId(String version) throws Exception {
    File dir = new File(System.getProperty("weft.test.okhttp"), version);
    File[] jars = dir.listFiles((d, n) -> n.endsWith(".jar"));
    assertTrue(jars != null && jars.length == 2, "OkHttp and Okio jars in " + dir);
    List<URL> urls = new ArrayList<>();
    for (File j : jars) {
      urls.add(j.toURI().toURL());
    }
    // The parent brings the Kotlin standard library (OkHttp 4+, Okio 3), not OkHttp.
    URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), OkHttpTest.class.getClassLoader());

    // What the kernel would read on the thread that writes each request: the
    // client's sockets record it with the request's path.
    Map<Long, Long> seen = new ConcurrentHashMap<>();
    SocketFactory recording = new SocketFactory() {
      @Override
      public Socket createSocket() {
        return new RecordingSocket(seen);
      }

      @Override
      public Socket createSocket(String host, int port) {
        throw new UnsupportedOperationException();
      }

      @Override
      public Socket createSocket(String host, int port, InetAddress local, int localPort) {
        throw new UnsupportedOperationException();
      }

      @Override
      public Socket createSocket(InetAddress host, int port) {
        throw new UnsupportedOperationException();
      }

      @Override
      public Socket createSocket(InetAddress host, int port, InetAddress local, int localPort) {
        throw new UnsupportedOperationException();
      }
    };
    HttpServer server = Servers.slowOk();
    int[] port = {server.getAddress().getPort()};
    try {
      Class<?> clientBuilder = loader.loadClass("okhttp3.OkHttpClient$Builder");
      Object cbuilder = clientBuilder.getConstructor().newInstance();
      clientBuilder.getMethod("socketFactory", SocketFactory.class).invoke(cbuilder, recording);
      Object client = clientBuilder.getMethod("build").invoke(cbuilder);
      Object dispatcher = client.getClass().getMethod("dispatcher").invoke(client);
      dispatcher.getClass().getMethod("setMaxRequestsPerHost", int.class).invoke(dispatcher, 1);
      Class<?> callback = loader.loadClass("okhttp3.Callback");
      Class<?> builderClass = loader.loadClass("okhttp3.Request$Builder");
      Method newCall = client.getClass().getMethod("newCall", loader.loadClass("okhttp3.Request"));
      Method enqueue = loader.loadClass("okhttp3.Call").getMethod("enqueue", callback);
      Method code = loader.loadClass("okhttp3.Response").getMethod("code");

      List<CompletableFuture<Integer>> done = new ArrayList<>();
      List<Long> ids = new ArrayList<>();
      for (int i = 0; i < CALLS; i++) {
        long id = Slots.freshId();
        ids.add(id);
        CompletableFuture<Integer> f = new CompletableFuture<>();
        done.add(f);
        Object builder = builderClass.getConstructor().newInstance();
        builderClass.getMethod("url", String.class).invoke(builder, "http://127.0.0.1:" + port[0] + "/r/" + id);
        Object request = builderClass.getMethod("build").invoke(builder);
        Object call = newCall.invoke(client, request);
        Object cb = Proxy.newProxyInstance(loader, new Class<?>[] {callback}, (proxy, m, args) -> {
          if (m.getName().equals("onResponse")) {
            Object response = args[1];
            int status = (int) code.invoke(response);
            ((java.io.Closeable) Isolated.call(response, "body")).close(); // Response is Closeable only from 3.x later versions
            f.complete(status);
          } else if (m.getName().equals("onFailure")) {
            f.completeExceptionally((Throwable) args[1]);
          }
          return null;
        });
        Slots.under(id, () -> {
          try {
            enqueue.invoke(call, cb);
          } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
          }
        });
      }
      for (CompletableFuture<Integer> f : done) {
        assertEquals(200, f.get(10, TimeUnit.SECONDS));
      }
      for (long id : ids) {
        assertEquals(Long.valueOf(id), seen.get(id), "OkHttp " + version + ": the write of call " + id
            + " (all: " + seen + ")");
      }
      Object pool = client.getClass().getMethod("connectionPool").invoke(client);
      loader.loadClass("okhttp3.ConnectionPool").getMethod("evictAll").invoke(pool);
    } finally {
      server.stop(0);
      loader.close();
    }
  }

  /** A client socket that records the slot of the thread writing each request (GET /r/<id>). */
  static final class RecordingSocket extends Socket {
    private final Map<Long, Long> seen;

    RecordingSocket(Map<Long, Long> seen) {
      this.seen = seen;
    }

    @Override
    public OutputStream getOutputStream() throws IOException {
      OutputStream out = super.getOutputStream();
      return new FilterOutputStream(out) {
        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          String head = new String(b, off, Math.min(len, 64), StandardCharsets.US_ASCII);
          if (head.startsWith("GET /r/")) {
            int end = head.indexOf(' ', 4);
            seen.put(Long.parseLong(head.substring(7, end)), Slots.now());
          }
          out.write(b, off, len);
        }
      };
    }
  }
}
