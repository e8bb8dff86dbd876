import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A JVM client on a socket connected without a timeout, so in blocking
 * mode, the way HttpURLConnection connects by default: weft's injection
 * tests check that its requests still get a traceparent (the JDK's sockets
 * retry a read that fails with EAGAIN).
 *
 * Waits for a line on stdin (so weft can be started on its pid first),
 * then sends two GET /headers over one connection and prints each
 * response body.
 */
public class BlockingClient {
    public static void main(String[] args) throws Exception {
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        String[] hostPort = args[0].split(":");
        try (Socket s = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            for (int i = 0; i < 2; i++) {
                out.write(("GET /headers HTTP/1.1\r\nHost: " + hostPort[0] + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                System.out.print(readBody(in));
            }
        }
    }

    /** Reads one response with a Content-Length and returns its body. */
    private static String readBody(InputStream in) throws Exception {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int c = in.read();
            if (c < 0) {
                throw new IllegalStateException("connection closed in the head: " + head);
            }
            head.append((char) c);
        }
        int length = -1;
        for (String line : head.toString().split("\r\n")) {
            if (line.toLowerCase().startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        if (length < 0) {
            throw new IllegalStateException("no Content-Length: " + head);
        }
        return new String(in.readNBytes(length), StandardCharsets.US_ASCII);
    }
}
