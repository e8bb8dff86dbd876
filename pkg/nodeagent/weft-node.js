'use strict';
// weft's Node.js companion. One thread serves every request in Node.js, so
// the kernel cannot tell which incoming request an outgoing one works for.
// This script can: it keeps the incoming request in an AsyncLocalStorage,
// and just before each outgoing HTTP request leaves it names the pair of
// sockets to weft's kernel side by calling fs.accessSync on a path that
// cannot exist (/dev/null/… fails at once); a uprobe on libuv's
// uv_fs_access reads it (bpf/include/announce.h). No syscall tracepoint, no
// change to the bytes the application sends.
//
// Load it with NODE_OPTIONS="--require /path/weft-node.js", or into a
// running process with `weft node attach PID`. It never throws into the
// application: if anything it needs is missing, it does nothing.
(function weftNodeCompanion() {
  const loaded = Symbol.for('weft.node.companion');
  if (globalThis[loaded]) return;
  const load = (typeof process.getBuiltinModule === 'function')
    ? process.getBuiltinModule
    : (typeof require === 'function' ? require : null);
  if (!load) return;
  try {
    const { AsyncLocalStorage } = load('async_hooks');
    const dc = load('diagnostics_channel');
    const fs = load('fs');
    const http = load('http');
    const https = load('https');

    const PREFIX = '/dev/null/weft/';
    const NO_REQUEST = 'ffffffff';
    const ANSWERED = 'fffffffe';
    const incoming = new AsyncLocalStorage();
    const kTracked = Symbol('weft.tracked');
    const undiciRequests = new WeakMap();

    const fdOf = (sock) => {
      const h = sock && sock._handle;
      return h && typeof h.fd === 'number' && h.fd >= 0 ? h.fd : -1;
    };
    const hex8 = (n) => n.toString(16).padStart(8, '0');

    // The incoming request's socket while its response has not begun;
    // after that the kernel may see the next request on the same
    // connection, and naming the socket would name that one.
    const parentOf = (store) => {
      if (!store) return NO_REQUEST;
      const { socket, response } = store;
      const fd = fdOf(socket);
      if (fd < 0 || response.headersSent || response.writableEnded || response.socket !== socket) return ANSWERED;
      return hex8(fd);
    };

    const announce = (store, sock) => {
      const out = fdOf(sock);
      if (out < 0) return; // TLS or not connected: the kernel sees no plaintext request
      try {
        fs.accessSync(PREFIX + parentOf(store) + hex8(out));
      } catch (_) {
        // ENOTDIR, always: the path only carries the announcement.
      }
    };

    const onServerRequest = (msg) => {
      incoming.enterWith({ socket: msg.socket, response: msg.response });
    };
    dc.subscribe('http.server.request.start', onServerRequest);

    // An http(s) ClientRequest: the request it works for is the one
    // current when it was made (not when a pooled socket frees up); its
    // bytes leave on the 'socket' event's next step, or at 'connect' for a
    // fresh socket (this listener runs before the queued write's).
    const track = (req) => {
      if (!req || req[kTracked] || typeof req.once !== 'function') return;
      const store = incoming.getStore();
      req[kTracked] = true;
      req.once('socket', (sock) => {
        if (sock.connecting || fdOf(sock) < 0) sock.once('connect', () => announce(store, sock));
        else announce(store, sock);
      });
    };
    for (const mod of [http, https]) {
      for (const name of ['request', 'get']) {
        const orig = mod[name];
        if (typeof orig !== 'function') continue;
        mod[name] = function weftTracked(...args) {
          const req = orig.apply(this, args);
          try { track(req); } catch (_) { /* never break the caller */ }
          return req;
        };
        Object.defineProperty(mod[name], 'name', { value: orig.name });
      }
    }

    // HTTP/2 (node:http2): a session carries many requests' streams, so
    // a stream is announced by its id, which request() assigns at once on
    // a connected session (else at the stream's 'ready', when the session
    // connects), before its HEADERS leave in a later step of the loop.
    // The request it works for is the one current at request().
    const announceStream = (store, stream) => {
      if (typeof stream.id !== 'number') return;
      try {
        fs.accessSync(PREFIX + 'h2/' + parentOf(store) + hex8(stream.id));
      } catch (_) {
        // ENOTDIR, always.
      }
    };
    const trackStream = (stream) => {
      if (!stream || typeof stream.once !== 'function') return;
      const store = incoming.getStore();
      if (typeof stream.id === 'number') announceStream(store, stream);
      else stream.once('ready', () => announceStream(store, stream));
    };
    // ClientHttp2Session is not exported: its prototype's request is
    // wrapped when the first session is made.
    const kStreamsTracked = Symbol.for('weft.http2.tracked');
    const trackSessions = (session) => {
      const proto = session && Object.getPrototypeOf(session);
      if (!proto || proto[kStreamsTracked] || typeof proto.request !== 'function') return;
      const orig = proto.request;
      proto.request = function request(...args) {
        const stream = orig.apply(this, args);
        try { trackStream(stream); } catch (_) { /* never break the caller */ }
        return stream;
      };
      proto[kStreamsTracked] = true;
    };
    let http2 = null;
    try { http2 = load('http2'); } catch (_) { /* built without it */ }
    if (http2 && typeof http2.connect === 'function') {
      const connect = http2.connect;
      http2.connect = function connect_(...args) {
        const session = connect.apply(this, args);
        try { trackSessions(session); } catch (_) { /* never break the caller */ }
        return session;
      };
      Object.defineProperty(http2.connect, 'name', { value: connect.name });
    }

    // ES modules' named imports of node:http see the wrapped functions.
    const mod = load('module');
    if (typeof mod.syncBuiltinESMExports === 'function') mod.syncBuiltinESMExports();

    // fetch (undici): the request is created in the caller's context, its
    // headers go out right after sendHeaders.
    dc.subscribe('undici:request:create', ({ request }) => {
      undiciRequests.set(request, incoming.getStore());
    });
    dc.subscribe('undici:client:sendHeaders', ({ request, socket }) => {
      announce(undiciRequests.get(request), socket);
    });

    globalThis[loaded] = true;
  } catch (_) {
    // An older or unusual runtime: leave the application alone.
  }
})();
