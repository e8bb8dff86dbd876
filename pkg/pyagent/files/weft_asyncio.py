"""weft's Python asyncio companion.

One thread serves every request of an asyncio server, so the kernel cannot
tell which incoming request an outgoing one works for. This module can: a
server framework's per-request task holds the incoming request in a
context variable (tasks copy it at creation), and just before a request
line leaves on an asyncio socket transport it names the pair of sockets to
weft's kernel side by calling os.access on a path that cannot exist
(/dev/null/... fails at once); a uprobe on libc's access() reads it
(bpf/include/announce.h). No syscall tracepoint; the bytes the
application sends are left alone.

Servers: aiohttp's web server, uvicorn (h11 and httptools protocols).
Clients: anything writing HTTP/1.x through asyncio's selector transports
(aiohttp's client, httpx/httpcore on asyncio), and httpx's HTTP/2
(httpcore's), whose streams are announced by their ids. Over TLS: asyncio's SSL
transports and anyio's TLS streams (httpx), whose writes carry the
plaintext. uvloop's transports are not followed: their calls start traces
of their own.

Loaded by sitecustomize.py (PYTHONPATH=<dir of `weft python path`>). It
never raises into the application: whatever is missing, it does nothing.
"""

import contextvars
import os
import sys

_PREFIX = "/dev/null/weft/"
_NO_REQUEST = "ffffffff"
_ANSWERED = "fffffffe"
_METHODS = (b"GET ", b"POST ", b"PUT ", b"DELETE ", b"HEAD ", b"OPTIONS ", b"PATCH ", b"TRACE ")

_current = contextvars.ContextVar("weft_incoming_request", default=None)


class _Incoming:
    """One incoming request: its connection's socket, and whether its
    response has begun (after which the kernel may already see the next
    request on that connection, so naming the socket would name that one)."""

    __slots__ = ("fd", "answered")

    def __init__(self, fd):
        self.fd = fd
        self.answered = False


def _fd_of(transport):
    try:
        sock = transport.get_extra_info("socket")
        return sock.fileno() if sock is not None else -1
    except Exception:
        return -1


def begin(transport):
    """Marks the current task as working for the request just read on
    transport: called by the server hooks where a request's handling
    starts, in the task that runs it (the tasks it creates inherit it)."""
    fd = _fd_of(transport)
    if fd < 0:
        _current.set(None)
        return
    req = _Incoming(fd)
    try:
        transport._weft_incoming = req
    except Exception:
        return
    _current.set(req)


def _parent():
    """The incoming request the current task works for, as announced."""
    req = _current.get()
    if req is None:
        return _NO_REQUEST
    if req.answered:
        return _ANSWERED
    return "%08x" % req.fd


def _announce(transport):
    out = _fd_of(transport)
    if out < 0:
        return
    try:
        os.access(_PREFIX + _parent() + "%08x" % out, os.F_OK)
    except Exception:
        pass


def _announce_stream(stream_id):
    """An HTTP/2 stream about to be opened: its connection carries other
    requests' streams, so it is announced by its id, before its HEADERS
    are written (on this thread, the loop's)."""
    try:
        os.access(_PREFIX + "h2/" + _parent() + "%08x" % stream_id, os.F_OK)
    except Exception:
        pass


def _saw_write(transport, data):
    """A request line leaving: announce it. A response beginning (not an
    interim 1xx): its request is answered."""
    try:
        head = bytes(data[:10])
    except Exception:
        return
    if head.startswith(b"HTTP/1."):
        if head[9:10] != b"1":
            req = getattr(transport, "_weft_incoming", None)
            if req is not None:
                req.answered = True
    elif head.startswith(_METHODS):
        _announce(transport)


def _wrap_writes(cls):
    write = cls.write

    def weft_write(self, data):
        try:
            _saw_write(self, data)
        except Exception:
            pass
        return write(self, data)

    cls.write = weft_write
    # Python 3.12+ sends a list with sendmsg; before, writelines joins and
    # calls write, which is wrapped already.
    if "writelines" in cls.__dict__:
        writelines = cls.writelines

        def weft_writelines(self, list_of_data):
            try:
                list_of_data = list(list_of_data)
                if list_of_data:
                    _saw_write(self, list_of_data[0])
            except Exception:
                pass
            return writelines(self, list_of_data)

        cls.writelines = weft_writelines


class _AnyioTransport:
    """An anyio stream seen as an asyncio transport: its socket."""

    __slots__ = ("_stream",)

    def __init__(self, stream):
        self._stream = stream

    def get_extra_info(self, name):
        if name != "socket":
            return None
        from anyio.abc import SocketAttribute

        return self._stream.extra(SocketAttribute.raw_socket, None)


def _patch_anyio_tls(mod):
    """Announces requests leaving on anyio's TLS streams (httpx over
    TLS): the plaintext goes to the stream's send, the socket sees
    ciphertext only."""
    send = mod.TLSStream.send
    if getattr(send, "_weft", False):
        return

    async def weft_send(self, item):
        try:
            _saw_write(_AnyioTransport(self), item)
        except Exception:
            pass
        return await send(self, item)

    weft_send._weft = True
    mod.TLSStream.send = weft_send


def _wrap_begin(cls, name, transport_of):
    """Wraps coroutine method cls.name so that the request it handles is
    begun in its task."""
    orig = getattr(cls, name, None)
    if orig is None or getattr(orig, "_weft", False):
        return

    async def weft_handling(self, *args, **kwargs):
        try:
            begin(transport_of(self))
        except Exception:
            pass
        return await orig(self, *args, **kwargs)

    setattr(cls, name, _standing_in(weft_handling, orig))


def _standing_in(wrapper, orig):
    """wrapper, marked as weft's and named as orig, which it wraps."""
    wrapper._weft = True
    wrapper.__name__ = orig.__name__
    wrapper.__qualname__ = getattr(orig, "__qualname__", orig.__name__)
    return wrapper


def _patch_aiohttp(mod):
    _wrap_begin(mod.RequestHandler, "_handle_request", lambda h: h.transport)


def _patch_uvicorn(mod):
    _wrap_begin(mod.RequestResponseCycle, "run_asgi", lambda c: c.transport)


def _patch_httpcore_h2(mod):
    """httpx's HTTP/2 (httpcore): each stream's HEADERS are sent by
    _send_request_headers(request, stream_id), in the request's task."""
    cls = mod.AsyncHTTP2Connection
    orig = getattr(cls, "_send_request_headers", None)
    if orig is None or getattr(orig, "_weft", False):
        return

    async def weft_send_request_headers(self, *args, **kwargs):
        try:
            stream_id = kwargs["stream_id"] if "stream_id" in kwargs else args[1]
            if isinstance(stream_id, int) and stream_id > 0:
                _announce_stream(stream_id)
        except Exception:
            pass
        return await orig(self, *args, **kwargs)

    cls._send_request_headers = _standing_in(weft_send_request_headers, orig)


_PATCHES = {
    "aiohttp.web_protocol": _patch_aiohttp,
    "uvicorn.protocols.http.h11_impl": _patch_uvicorn,
    "uvicorn.protocols.http.httptools_impl": _patch_uvicorn,
    "anyio.streams.tls": _patch_anyio_tls,
    "httpcore._async.http2": _patch_httpcore_h2,
}


class _PatchingLoader:
    """Runs a module's loader, then weft's patch for it."""

    def __init__(self, inner, patch):
        self._inner = inner
        self._patch = patch

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._patch(module)
        except Exception:
            pass

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _PostImportFinder:
    """Patches the server frameworks' modules when they are imported."""

    def find_spec(self, fullname, path=None, target=None):
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def install():
    if getattr(sys, "_weft_asyncio", False):
        return
    sys._weft_asyncio = True
    from asyncio import selector_events, sslproto

    _wrap_writes(selector_events._SelectorSocketTransport)
    _wrap_writes(sslproto._SSLProtocolTransport)
    for name, patch in _PATCHES.items():
        mod = sys.modules.get(name)
        if mod is not None:
            patch(mod)
    sys.meta_path.insert(0, _PostImportFinder())


try:
    install()
except Exception:
    pass
