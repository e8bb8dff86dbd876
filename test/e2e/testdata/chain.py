"""A thread-per-request Python service for weft's propagation tests.

GET /call calls the downstream URL from the handling thread and answers
with the status it got; any other path answers 200. Prints its port.
"""
import http.server
import sys
import urllib.request


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    downstream = ""

    def do_GET(self):
        status, body = 200, b"ok\n"
        if self.path.startswith("/call") and self.downstream:
            with urllib.request.urlopen(self.downstream, timeout=10) as resp:
                body = b"downstream said %d\n" % resp.status
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    Handler.downstream = sys.argv[1] if len(sys.argv) > 1 else ""
    # A deep accept queue: the default of 5 overflows under the tests' load.
    http.server.ThreadingHTTPServer.request_queue_size = 128
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
