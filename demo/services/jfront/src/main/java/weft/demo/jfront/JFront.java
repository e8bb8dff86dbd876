// jfront: a plain-Java front (JDK HttpServer, blocking HttpURLConnection) that
// calls the backend. JFRONT_MODE picks which thread makes the backend call:
//   thread  - the request's own thread (the control),
//   pool    - a fixed pool the request hands the call to, waiting on a Future,
//   virtual - the request's virtual thread (JDK 21+).
package weft.demo.jfront;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

public final class JFront {
    private final URL workUrl;
    private final ExecutorService backendPool; // only in pool mode, else null

    private JFront(URL workUrl, ExecutorService backendPool) {
        this.workUrl = workUrl;
        this.backendPool = backendPool;
    }

    private static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : v;
    }

    /** Signals that the backend could not be used; the handler answers 502. */
    private static final class BackendException extends Exception {
        BackendException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Burns CPU for about {@code millis} of wall-clock time. The name is distinctive
     * on purpose: profiles must show it under the request that ran it. Returns a
     * value the caller puts in the response, so the JIT cannot drop the loop.
     */
    static long burnCpuJfrontHotLoop(long millis) {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        long h = 0xcbf29ce484222325L; // FNV-1a offset basis; the mixing is cheap and not foldable.
        long i = 0;
        while (System.nanoTime() < deadline) {
            for (int k = 0; k < 10_000; k++) {
                h = (h ^ i) * 0x100000001b3L;
                h ^= h >>> 29;
                i++;
            }
        }
        return h;
    }

    /** One blocking GET of backend /work on the calling thread. */
    private String callBackendHere() throws BackendException {
        HttpURLConnection conn = null;
        try {
            conn = (HttpURLConnection) workUrl.openConnection();
            conn.setConnectTimeout(2_000);
            conn.setReadTimeout(10_000);
            int status = conn.getResponseCode();
            InputStream in = status < 400 ? conn.getInputStream() : conn.getErrorStream();
            // Reading the body to the end and closing the stream (not disconnect())
            // lets HttpURLConnection keep the connection alive for the next call.
            String body = in == null ? "" : readAll(in);
            if (status != 200) {
                throw new BackendException("backend answered " + status, null);
            }
            return body;
        } catch (IOException e) {
            if (conn != null) {
                conn.disconnect();
            }
            throw new BackendException("backend unreachable: " + e, e);
        }
    }

    /** Calls the backend on the thread the mode asks for. */
    private String callBackend() throws BackendException {
        if (backendPool == null) {
            return callBackendHere();
        }
        Future<String> f = backendPool.submit(this::callBackendHere);
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof BackendException) {
                throw (BackendException) c;
            }
            throw new BackendException("backend call failed: " + c, c);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new BackendException("interrupted", e);
        }
    }

    private static String readAll(InputStream in) throws IOException {
        try (in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    private static void respond(HttpExchange ex, int status, String text) throws IOException {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            // Drain the request body so the connection can be reused.
            ex.getRequestBody().transferTo(OutputStream.nullOutputStream());
            String path = ex.getRequestURI().getPath();
            if (!"GET".equals(ex.getRequestMethod())) {
                respond(ex, 405, "method not allowed\n");
                return;
            }
            try {
                switch (path) {
                    case "/health":
                        respond(ex, 200, "ok");
                        return;
                    case "/call":
                        respond(ex, 200, "jfront call: " + callBackend() + "\n");
                        return;
                    case "/cpu": {
                        // On the request's own thread, so its CPU samples belong to this request.
                        long sum = burnCpuJfrontHotLoop(200);
                        String body = callBackend();
                        respond(ex, 200, "jfront cpu: checksum=" + Long.toHexString(sum) + " " + body + "\n");
                        return;
                    }
                    default:
                        respond(ex, 404, "not found\n");
                }
            } catch (BackendException e) {
                respond(ex, 502, "bad gateway: " + e.getMessage() + "\n");
            }
        }
    }

    /** Virtual-thread executor by reflection, so this compiles for release 17. */
    private static ExecutorService virtualExecutor() {
        try {
            return (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (ReflectiveOperationException e) {
            System.err.println("jfront: JFRONT_MODE=virtual needs virtual threads (JDK 21+); this is Java "
                    + Runtime.version().feature());
            System.exit(2);
            return null;
        }
    }

    public static void main(String[] args) throws IOException {
        String bind = env("BIND", "127.0.0.1");
        int port = Integer.parseInt(env("PORT", "8081"));
        String backendUrl = env("BACKEND_URL", "http://127.0.0.1:8082");
        String mode = env("JFRONT_MODE", "thread");

        ExecutorService serverExecutor;
        ExecutorService backendPool = null;
        switch (mode) {
            case "thread":
                serverExecutor = Executors.newCachedThreadPool();
                break;
            case "pool":
                serverExecutor = Executors.newCachedThreadPool();
                backendPool = Executors.newFixedThreadPool(4);
                break;
            case "virtual":
                serverExecutor = virtualExecutor();
                break;
            default:
                System.err.println("jfront: JFRONT_MODE must be thread, pool or virtual, not '" + mode + "'");
                System.exit(2);
                return;
        }

        URL workUrl = new URL(backendUrl.replaceAll("/+$", "") + "/work");
        JFront app = new JFront(workUrl, backendPool);
        HttpServer server = HttpServer.create(new InetSocketAddress(bind, port), 256);
        server.createContext("/", app::handle);
        server.setExecutor(serverExecutor);
        server.start();

        ExecutorService pool = backendPool;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Stop accepting, give in-flight exchanges up to a second, then stop the pools.
            server.stop(1);
            serverExecutor.shutdown();
            if (pool != null) {
                pool.shutdown();
            }
            try {
                serverExecutor.awaitTermination(2, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }, "jfront-shutdown"));

        System.out.println("jfront: listening on http://" + bind + ":" + server.getAddress().getPort()
                + ", mode " + mode + ", backend " + backendUrl);
    }
}
