import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * The last service of weft's propagation chain: JDK HttpServer, a thread per request. With
 * LOG_TRACEPARENT=1 it prints the traceparent of every request to stderr, for tests that check what
 * was injected.
 */
public class Leaf {
    public static void main(String[] args) throws Exception {
        boolean logTraceparent = "1".equals(System.getenv("LOG_TRACEPARENT"));
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        server.createContext("/", exchange -> {
            if (logTraceparent) {
                System.err.println("traceparent " + exchange.getRequestHeaders().getFirst("traceparent"));
            }
            byte[] body = "leaf\n".getBytes(StandardCharsets.UTF_8);
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newCachedThreadPool());
        server.start();
        System.out.println("127.0.0.1:" + server.getAddress().getPort());
        System.out.flush();
    }
}
