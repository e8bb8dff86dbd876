"""The Python asyncio front service of the async-parents tests: handlers
wait, then call a backend, so that one thread holds many live requests.

    python app.py BACKEND_HOST:PORT aiohttp|fastapi aiohttp|httpx|httpx-h2|httpx-h2-tls [CERT KEY]

    /req/N    waits 0-10 ms, then GETs BACKEND/work/N (a pool of 8
              connections: calls wait for one that another request frees)
    /fan/N    waits 0-10 ms, then GETs /work/N/a and /work/N/b at once
    /spawn/N  answers at once, leaving a task that GETs /work/late-N 50 ms
              later, when its request is over

The server is aiohttp's, or FastAPI on uvicorn (asyncio loop, h11); the
client aiohttp's or httpx's. With CERT and KEY it serves HTTPS and calls
the backend over HTTPS (asyncio's ssl: memory BIOs), not checking the
backend's certificate. httpx-h2 makes every call over HTTP/2 with prior
knowledge, httpx-h2-tls over HTTPS with HTTP/2 only: one connection,
whose streams interleave. It prints its address on the first line.
CALL_PATH in the environment replaces /req/N's /work/ (/req/ has an h2app
server call its own backend, and answer 404 to every tenth, as h2app's
statusOf says).
"""

import asyncio
import os
import random
import ssl
import sys

backend, server_kind, client_kind = sys.argv[1:4]
cert = sys.argv[4:6]
base = ("https://" if cert or client_kind == "httpx-h2-tls" else "http://") + backend
call_path = os.environ.get("CALL_PATH", "/work/")
_client = None


def want_status(n):
    return 404 if call_path == "/req/" and int(n) % 10 == 7 else 200


def client():
    global _client
    if _client is None:
        if client_kind == "aiohttp":
            import aiohttp

            _client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8, ssl=False))
        elif client_kind.startswith("httpx-h2"):
            import httpx

            _client = httpx.AsyncClient(http1=False, http2=True, verify=False)
        else:
            import httpx

            _client = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=8, max_keepalive_connections=8), verify=False
            )
    return _client


async def call(path, want=200):
    c = client()
    if client_kind == "aiohttp":
        async with c.get(base + path) as r:
            await r.read()
            status = r.status
    else:
        r = await c.get(base + path)
        status = r.status_code
    if status != want:
        raise RuntimeError("%s: %d" % (path, status))


async def wait():
    await asyncio.sleep(random.randint(0, 10) / 1000)


_late = set()


async def late(n):
    await asyncio.sleep(0.05)
    try:
        await call("/work/late-%s" % n)
    except Exception:
        pass


async def handle(route, n):
    if route == "req":
        await wait()
        await call("%s%s" % (call_path, n), want_status(n))
    elif route == "fan":
        await wait()
        await asyncio.gather(call("/work/%s/a" % n), call("/work/%s/b" % n))
    elif route == "spawn":
        t = asyncio.get_running_loop().create_task(late(n))
        _late.add(t)
        t.add_done_callback(_late.discard)
    else:
        return False
    return True


def serve_aiohttp():
    from aiohttp import web

    async def view(request):
        try:
            ok = await handle(request.match_info["route"], request.match_info["n"])
        except Exception as e:
            return web.Response(status=502, text=str(e))
        return web.Response(text="ok\n") if ok else web.Response(status=404)

    async def main():
        app = web.Application()
        app.router.add_get("/{route}/{n}", view)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        ctx = None
        if cert:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(*cert)
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        host, port = runner.addresses[0][:2]
        print("%s:%d" % (host, port), flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_fastapi():
    import uvicorn
    from fastapi import FastAPI, Response

    app = FastAPI()

    @app.get("/{route}/{n}")
    async def view(route: str, n: str):
        try:
            ok = await handle(route, n)
        except Exception as e:
            return Response(status_code=502, content=str(e))
        return Response(content="ok\n") if ok else Response(status_code=404)

    async def main():
        tls = {"ssl_certfile": cert[0], "ssl_keyfile": cert[1]} if cert else {}
        config = uvicorn.Config(app, host="127.0.0.1", port=0, loop="asyncio", http="h11", log_level="warning", **tls)
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        print("%s:%d" % (host, port), flush=True)
        await task

    asyncio.run(main())


if server_kind == "aiohttp":
    serve_aiohttp()
else:
    serve_fastapi()
