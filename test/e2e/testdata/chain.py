"""A thread-per-request Python service for weft's propagation tests.

GET /call calls the downstream URL from the handling thread, GET /spawn
from a thread the handling thread creates, and both answer with the status
they got; GET /slow/N waits N % 10 ms; any other path answers 200. Prints
its port.
"""
import http.server
import os
import sys
import threading
import time
import urllib.request

# Tests that check what weft injected read every request's traceparent.
LOG_TRACEPARENT = os.environ.get("LOG_TRACEPARENT") == "1"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    downstream = ""

    def do_GET(self):
        if LOG_TRACEPARENT:
            # One write per line: print's pieces interleave across threads.
            sys.stderr.write("traceparent %s\n" % self.headers.get("traceparent"))
            sys.stderr.flush()
        status, body = 200, b"ok\n"
        if self.path.startswith("/call") and self.downstream:
            body = self.call()
        elif self.path.startswith("/spawn") and self.downstream:
            result = []
            helper = threading.Thread(target=lambda: result.append(self.call()))
            helper.start()
            helper.join()
            body = result[0] if result else b"helper failed\n"
        elif self.path.startswith("/slow/"):
            time.sleep(int(self.path.split("/")[2]) % 10 / 1000)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def call(self):
        with urllib.request.urlopen(self.downstream, timeout=10) as resp:
            resp.read()  # all of it: a client that stops early aborts the leaf's reply
            return b"downstream said %d\n" % resp.status

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
