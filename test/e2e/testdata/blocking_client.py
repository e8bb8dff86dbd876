"""A client that reads with blocking calls, the Python default without a
timeout, while a signal arrives: weft's injection tests run it to check
that weft does not make such a read fail.

Waits for a line on stdin (so weft can be started on its pid first), sends
GET <path> to host:port over a blocking socket, has SIGALRM (handled, as
any Python handler would) arrive while it waits for the response, and
prints the status line. A failed read is an exception and exit status 1.
"""
import signal
import socket
import sys


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    path = sys.argv[2]
    signal.signal(signal.SIGALRM, lambda *_: None)
    sys.stdin.readline()
    s = socket.create_connection((host, int(port)))  # blocking: no timeout
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path.encode(), host.encode()))
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    response = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        response += chunk
    print(response.split(b"\r\n", 1)[0].decode())


if __name__ == "__main__":
    main()
