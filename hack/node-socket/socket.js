'use strict';
// The socket lifecycle of a machina driver on @grpc/grpc-js
// (docs/driver-api.md §2.2, §2.7): remove a stale socket, listen with mode
// 0600, and on stop remove the socket only if it is still this process's.
// docs/writing-a-driver.md §2.2 shows this file; check.js tests it.

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');

const MAX_SOCKET_PATH = 107; // sun_path minus the terminating NUL

// checkFree resolves when socketPath is free to take: nothing there, or a
// stale socket (connection refused). It rejects for a socket another
// process serves, and for a file that is not a socket.
function checkFree(socketPath) {
  return new Promise((resolve, reject) => {
    let info;
    try {
      info = fs.lstatSync(socketPath);
    } catch (err) {
      return err.code === 'ENOENT' ? resolve() : reject(err);
    }
    if (!info.isSocket()) {
      return reject(new Error(`${socketPath} exists and is not a socket; not removing it`));
    }
    const probe = net.connect(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      reject(new Error(`${socketPath} is served by another process; refusing to take it over`));
    });
    probe.once('error', (err) => (err.code === 'ECONNREFUSED' ? resolve() : reject(err)));
  });
}

// listen binds server to the Unix socket socketPath with mode 0600 and
// returns a function that removes the socket if it is still this one.
//
// Node's runtime unlinks the path a listener was bound to when the listener
// closes (grpc-js closes it in tryShutdown and forceShutdown), whatever file
// is at that path by then: possibly the socket of a driver started since.
// So the socket is bound in a private directory and renamed into place; the
// runtime then unlinks a path that no longer exists, and removing the real
// path is left to the function returned here.
async function listen(server, socketPath) {
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    throw new Error(`socket path ${socketPath} is longer than ${MAX_SOCKET_PATH} bytes`);
  }
  const dir = path.dirname(socketPath);
  fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
  await checkFree(socketPath);
  // mkdtemp creates the directory with mode 0700: nobody else can connect
  // to the socket before it has mode 0600.
  const privateDir = fs.mkdtempSync(path.join(dir, '.bind-'));
  const bound = path.join(privateDir, 's');
  try {
    await new Promise((resolve, reject) => {
      server.bindAsync('unix:' + bound, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
    });
    fs.chmodSync(bound, 0o600);
    fs.renameSync(bound, socketPath); // replaces a stale socket atomically
  } finally {
    fs.rmSync(privateDir, { recursive: true, force: true });
  }
  const own = fs.lstatSync(socketPath);
  return function removeSocket() {
    try {
      const now = fs.lstatSync(socketPath);
      if (now.ino === own.ino && now.dev === own.dev) {
        fs.unlinkSync(socketPath);
      }
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  };
}

// stopOnSignals stops server gracefully on SIGTERM and SIGINT: no new
// calls, calls in flight finish (at most graceMs), the socket is removed,
// exit status 0.
function stopOnSignals(server, removeSocket, graceMs = 25000) {
  const stop = () => {
    const force = setTimeout(() => server.forceShutdown(), graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      removeSocket();
      process.exit(0);
    });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

module.exports = { listen, stopOnSignals };
