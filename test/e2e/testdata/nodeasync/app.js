'use strict';
// The Node.js front service of the async-parents tests: handlers wait,
// then call a backend, so that one thread holds many live requests.
//
//   node app.js BACKEND_HOST:PORT [http|express]
//   node app.js BACKEND_HOST:PORT https CERT_FILE KEY_FILE
//   node app.js BACKEND_HOST:PORT h2|h2-tls [CALL_PATH]
//
// https: the front serves HTTPS and calls the backend over HTTPS (the
// backend's certificate is not checked: NODE_TLS_REJECT_UNAUTHORIZED=0).
// h2, h2-tls: the front serves HTTP/1.1 and makes every call on one
// HTTP/2 session (node:http2), h2c or over TLS, opened at the first call,
// so that the streams of concurrent requests interleave on it.
//
//   /req/N    waits 0-10 ms, then GETs BACKEND/work/N with http.get
//             (a keep-alive agent of 8 sockets: calls queue for a socket
//             that another request frees)
//   /fan/N    waits 0-10 ms, then GETs /work/N/a and /work/N/b at once
//   /fetch/N  waits 0-10 ms, then GETs /work/N with fetch (undici)
//   /spawn/N  answers at once, then GETs /work/late-N 50 ms later, when
//             its request is over
//
// It prints its address on the first line.
const fs = require('fs');
const http = require('http');
const https = require('https');

const [backend, flavour = 'http', certFile, keyFile] = process.argv.slice(2);
// h2, h2-tls: what /req/N calls begin with (/req/ has an h2app server
// call its own backend, and answer 404 to every tenth, as h2app's
// statusOf says).
const callPath = (flavour.startsWith('h2') && certFile) || '/work/';
const wantStatus = (n) => (callPath === '/req/' && Number(n) % 10 === 7 ? 404 : 200);
const [host, port] = backend.split(':');
const scheme = flavour === 'https' ? 'https' : 'http';
const client = scheme === 'https' ? https : http;
const agent = new client.Agent({ keepAlive: true, maxSockets: 8 });

const wait = () => new Promise((r) => setTimeout(r, Math.floor(Math.random() * 11)));

function call(path) {
  return new Promise((resolve, reject) => {
    client.get({ host, port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${path}: ${res.statusCode}`))));
    }).on('error', reject);
  });
}

let session = null;
function h2Session() {
  if (session && !session.closed && !session.destroyed) return session;
  const http2 = require('http2');
  const url = `${flavour === 'h2-tls' ? 'https' : 'http'}://${backend}`;
  session = http2.connect(url, { rejectUnauthorized: false });
  session.on('error', () => { session = null; });
  // H2_IDLE_CLOSE_MS: the session closes once idle that long, and the
  // next call opens another (the benchmark's runs each start a weft, which
  // follows only connections opened after it started).
  const idle = Number(process.env.H2_IDLE_CLOSE_MS || 0);
  if (idle > 0) {
    const s = session;
    s.setTimeout(idle, () => s.close());
  }
  return session;
}

function h2Call(path, want = 200) {
  return new Promise((resolve, reject) => {
    const stream = h2Session().request({ ':path': path });
    let status = 0;
    stream.on('response', (h) => { status = h[':status']; });
    stream.on('error', reject);
    stream.resume();
    stream.on('end', () => (status === want ? resolve() : reject(new Error(`${path}: ${status}`))));
  });
}

async function fetchCall(path) {
  const res = await fetch(`${scheme}://${backend}${path}`);
  await res.text();
  if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
}

const get = flavour.startsWith('h2') ? h2Call : call;
const routes = {
  req: async (n) => { await wait(); await get(`${callPath}${n}`, wantStatus(n)); },
  fan: async (n) => { await wait(); await Promise.all([get(`/work/${n}/a`), get(`/work/${n}/b`)]); },
  fetch: async (n) => { await wait(); await fetchCall(`/work/${n}`); },
  spawn: async (n) => { setTimeout(() => call(`/work/late-${n}`).catch(() => {}), 50); },
};

async function serve(route, n, res) {
  try {
    await routes[route](n);
    res.end('ok\n');
  } catch (e) {
    res.statusCode = 502;
    res.end(`${e.message}\n`);
  }
}

let server;
if (flavour === 'express') {
  const express = require('express');
  const app = express();
  app.get('/:route/:n', (req, res, next) => {
    if (!routes[req.params.route]) return next();
    serve(req.params.route, req.params.n, res);
  });
  server = http.createServer(app);
} else {
  const handler = (req, res) => {
    const [, route, n] = req.url.split('/');
    if (!routes[route]) {
      res.statusCode = 404;
      res.end();
      return;
    }
    serve(route, n, res);
  };
  server = scheme === 'https'
    ? https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, handler)
    : http.createServer(handler);
}
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${a.address}:${a.port}\n`);
});
