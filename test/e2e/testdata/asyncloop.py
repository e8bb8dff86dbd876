"""An asyncio front service with no runtime support in weft: one thread
serves every request, so while two are live weft cannot tell which one a
backend call works for (the fail-closed case of the async-parents tests).

GET /req/N waits 0-10 ms, then calls GET /work/N on the backend over a
fresh connection, and answers 200. Prints its address.
"""
import asyncio
import random
import sys


async def call(host, port, n):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /work/{n} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    resp = await reader.read()
    writer.close()
    await writer.wait_closed()
    return resp.split(b" ", 2)[1]


async def main():
    host, port = sys.argv[1].rsplit(":", 1)

    async def handle(reader, writer):
        while True:
            line = await reader.readline()
            if not line:
                break
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            n = line.split()[1].decode().rsplit("/", 1)[1]
            await asyncio.sleep(random.random() * 0.01)
            status = await call(host, int(port), n)
            body = b"downstream said " + status + b"\n"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    addr = server.sockets[0].getsockname()
    print(f"{addr[0]}:{addr[1]}", flush=True)
    await server.serve_forever()


asyncio.run(main())
