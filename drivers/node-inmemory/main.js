#!/usr/bin/env node
'use strict';
// Start the machina in-memory driver in Node.js.
//
// Usage: node main.js [--endpoint unix:///path/driver.sock] (or set
// MACHINA_DRIVER_ENDPOINT). Needs the packages of package-lock.json:
// `npm ci` in this directory.

// Before anything else: take SIGTERM and SIGINT, so that a signal that
// arrives while the driver still loads and binds is acted on once it serves
// rather than ending the process. Later signals are ignored: the first one
// started the graceful stop.
let requestStop;
const stopRequested = new Promise((resolve) => {
  requestStop = resolve;
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => requestStop(signal));
}

let server;
try {
  server = require('./lib/server');
} catch (err) {
  if (err.code === 'MODULE_NOT_FOUND' && /'(@grpc\/[^']+|protobufjs[^']*)'/.test(err.message)) {
    process.stderr.write(`node-inmemory: ${err.message.split('\n')[0]}\n` +
      `install the driver's dependencies first: (cd ${__dirname} && npm ci)\n`);
    process.exit(1);
  }
  throw err;
}

server.main(process.argv.slice(2), stopRequested).then(
  (status) => process.exit(status),
  (err) => {
    process.stderr.write(`node-inmemory: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
