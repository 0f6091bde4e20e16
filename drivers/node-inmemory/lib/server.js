'use strict';
// gRPC server of the driver: identity, call logging, endpoint, shutdown.
//
// Implements the process rules of docs/driver-api.md §2: the endpoint from
// --endpoint, else MACHINA_DRIVER_ENDPOINT, else the default; a Unix socket
// with mode 0600 after a stale socket is removed; TCP only when asked for;
// on SIGTERM or SIGINT a graceful stop in which calls in flight finish, then
// the socket is removed and the process exits with status 0.

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { parseArgs } = require('node:util');
const grpc = require('@grpc/grpc-js');
const protobufPackage = require('protobufjs/package.json');
const grpcPackage = require('@grpc/grpc-js/package.json');
const proto = require('./proto');
const { InMemoryDriver } = require('./driver');
const { DriverError, codeName, quote } = require('./errors');
const { Sanitizer } = require('./sanitize');

const NAME = 'node-inmemory.driver.machina.io';
const VERSION = 'v0.1.0';
const ENDPOINT_ENV = 'MACHINA_DRIVER_ENDPOINT';
const DEFAULT_ENDPOINT = 'unix:///var/run/machina/driver.sock';
// The MachineClass provider values the driver serves: a manager with
// several drivers routes a class to the driver that lists its provider.
const PROVIDERS = ['node-inmemory'];

// sun_path holds 108 bytes including the terminating NUL (§2.2).
const MAX_SOCKET_PATH = 107;

const CAPABILITIES = ['TYPE_LIST_MACHINES', 'TYPE_GET_VOLUME_IDS', 'TYPE_UPDATE_MACHINE'];

const DEFAULT_SHUTDOWN_GRACE = 25;

// --- logging ---------------------------------------------------------------

const LEVELS = { debug: 10, info: 20, warning: 30, error: 40 };
const LOGGER = 'machina.node-inmemory';

/**
 * The driver's log: one line per event on standard error (which Node.js
 * writes synchronously to a pipe or file, so nothing is lost at exit).
 */
const log = {
  level: LEVELS.info,
  enabled(level) {
    return LEVELS[level] >= this.level;
  },
  write(level, message) {
    if (this.enabled(level)) {
      process.stderr.write(`${new Date().toISOString()} level=${level.toUpperCase()} logger=${LOGGER} ${message}\n`);
    }
  },
  debug(message) { this.write('debug', message); },
  info(message) { this.write('info', message); },
  warning(message) { this.write('warning', message); },
  error(message) { this.write('error', message); },
};

// --- services --------------------------------------------------------------

/** IdentityService (§5): fixed name, version and capabilities; always ready. */
function identityService() {
  return {
    GetPluginInfo(_call, callback) {
      callback(null, {
        name: NAME,
        vendor_version: VERSION,
        providers: PROVIDERS,
        manifest: {
          language: 'javascript',
          node: process.versions.node,
          'grpc-js': grpcPackage.version,
          protobufjs: protobufPackage.version,
        },
      });
    },
    GetPluginCapabilities(_call, callback) {
      callback(null, { capabilities: CAPABILITIES.map((type) => ({ type })) });
    },
    Probe(_call, callback) {
      // An in-memory provider has nothing to wait for; unset means ready.
      callback(null, {});
    },
  };
}

/**
 * MachineService: logs each call, stripped of secrets, and maps errors to
 * statuses. root is the loaded proto Root, for the request types.
 */
function machineService(driver, root, sanitizer) {
  const requestType = (method) => root.lookupType(`${proto.PACKAGE}.${method}Request`);
  const handler = (method, fn) => {
    const type = requestType(method);
    return (call, callback) => {
      const start = process.hrtime.bigint();
      const request = call.request;
      const finish = (response, code, message) => {
        // As the Go SDK and the core: the call at info, its request
        // (stripped of secrets) only at debug level.
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        const m = request.machine ? ` machine=${request.machine.namespace ?? ''}/${request.machine.name ?? ''}` : '';
        let payload = '';
        if (log.enabled('debug')) {
          try {
            payload = ` request=${sanitizer.toText(type, request)}`;
          } catch (err) {
            payload = ` request=<cannot render: ${err.message}>`;
          }
        }
        const error = message ? ` error=${quote(message)}` : '';
        log.info(`method=${method} code=${codeName(code)} duration=${seconds.toFixed(3)}s${m}${payload}${error}`);
        if (code === grpc.status.OK) callback(null, response);
        else callback({ code, details: message });
      };
      const internal = (err) => {
        // A bug must not kill the server; the core retries. The exception's
        // text may quote the request: it goes to the log only, and the
        // caller gets a message of ours.
        log.error(`method=${method} panic: ${err && err.stack ? err.stack : err}`);
        return finish(null, grpc.status.INTERNAL, `internal error in ${method}`);
      };
      Promise.resolve()
        .then(() => fn(request))
        .then(
          (response) => finish(response, grpc.status.OK, ''),
          (err) => (err instanceof DriverError ? finish(null, err.code, err.message) : internal(err)),
        )
        .catch(internal)
        .catch((err) => log.error(`method=${method} cannot answer: ${err && err.stack ? err.stack : err}`));
    };
  };
  return {
    CreateMachine: handler('CreateMachine', (r) => driver.createMachine(r)),
    DeleteMachine: handler('DeleteMachine', (r) => driver.deleteMachine(r)),
    GetMachineStatus: handler('GetMachineStatus', (r) => driver.getMachineStatus(r)),
    ListMachines: handler('ListMachines', (r) => driver.listMachines(r)),
    GetVolumeIDs: handler('GetVolumeIDs', (r) => driver.getVolumeIds(r)),
    UpdateMachine: handler('UpdateMachine', (r) => driver.updateMachine(r)),
    InitializeMachine(_call, callback) {
      // Not advertised, so UNIMPLEMENTED (§3.5).
      callback({
        code: grpc.status.UNIMPLEMENTED,
        details: 'InitializeMachine: the driver does not advertise TYPE_INITIALIZE_MACHINE',
      });
    },
  };
}

/** Create the gRPC server with both services registered. */
function buildServer(driver, loaded = proto.load()) {
  const server = new grpc.Server();
  server.addService(loaded.api.IdentityService.service, identityService());
  server.addService(loaded.api.MachineService.service, machineService(driver, loaded.root, new Sanitizer(loaded.secretOption)));
  return server;
}

// --- endpoint and socket ---------------------------------------------------

/** The endpoint cannot be used; the message names the value. */
class EndpointError extends Error {}

/** Split an endpoint into ['unix', path] or ['tcp', 'host:port'] (§2.1). */
function parseEndpoint(value) {
  if (value.startsWith('/')) return ['unix', value];
  if (value.startsWith('unix://')) {
    const p = value.slice('unix://'.length);
    if (!p.startsWith('/')) {
      throw new EndpointError(`endpoint ${quote(value)}: a unix:// endpoint needs an absolute path, e.g. unix:///run/driver.sock`);
    }
    return ['unix', p];
  }
  if (value.startsWith('tcp://')) {
    const address = value.slice('tcp://'.length);
    const colon = address.lastIndexOf(':');
    const host = colon < 0 ? '' : address.slice(0, colon);
    const port = address.slice(colon + 1);
    if (!host || !/^[0-9]+$/.test(port)) {
      throw new EndpointError(`endpoint ${quote(value)}: a tcp:// endpoint needs host:port, e.g. tcp://127.0.0.1:7654`);
    }
    return ['tcp', address];
  }
  throw new EndpointError(`endpoint ${quote(value)}: use unix:///absolute/path or, for development only, tcp://host:port`);
}

/**
 * Resolve whether a socket file at socketPath is served: true when a
 * connection is accepted, false when refused (a stale socket).
 */
function socketServed(socketPath) {
  return new Promise((resolve, reject) => {
    const probe = net.connect(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (err) => {
      probe.destroy();
      if (err.code === 'ECONNREFUSED') resolve(false);
      else reject(new EndpointError(`socket path ${quote(socketPath)}: cannot tell whether it is in use: ${err.message}`));
    });
  });
}

/**
 * Create dir and its missing ancestors with mode 0750; a directory that
 * exists keeps its mode. (Not fs.mkdirSync's recursive option: on a path
 * where mkdir answers ENOENT although the parent exists, such as under
 * /proc, Node.js 20 retries it forever.)
 */
function makeParents(dir) {
  const missing = [];
  for (let d = dir; !fs.existsSync(d); d = path.dirname(d)) {
    missing.push(d);
    if (path.dirname(d) === d) break;
  }
  for (const d of missing.reverse()) fs.mkdirSync(d, { mode: 0o750 });
}

/**
 * Make socketPath ready to bind (§2.2): create missing parent directories
 * with mode 0750, remove a stale socket, and refuse a path that another
 * process serves or that holds anything other than a socket.
 */
async function prepareSocketPath(socketPath) {
  const n = Buffer.byteLength(socketPath);
  if (n > MAX_SOCKET_PATH) {
    throw new EndpointError(`socket path ${quote(socketPath)} is ${n} bytes, at most ${MAX_SOCKET_PATH} are possible`);
  }
  makeParents(path.dirname(socketPath));
  let info;
  try {
    info = fs.lstatSync(socketPath);
  } catch (err) {
    if (err.code === 'ENOENT') return;
    throw err;
  }
  if (!info.isSocket()) {
    throw new EndpointError(`socket path ${quote(socketPath)} exists and is not a socket; not removing it`);
  }
  if (await socketServed(socketPath)) {
    throw new EndpointError(`socket path ${quote(socketPath)} is served by another process; refusing to take it over`);
  }
  log.info(`removing stale socket ${socketPath}`);
  fs.unlinkSync(socketPath);
}

function bind(server, address) {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
}

/**
 * Bind server to endpoint; resolve to a function that cleans up after it
 * (removes the socket, if it is still this process's).
 */
async function listen(server, endpoint) {
  const [scheme, address] = parseEndpoint(endpoint);
  if (scheme === 'tcp') {
    log.warning(`listening on ${endpoint}: TCP is for development only, with no authentication and secrets in clear text`);
    try {
      await bind(server, address);
    } catch (err) {
      throw new EndpointError(`endpoint ${quote(endpoint)}: cannot listen: ${err.message}`);
    }
    return () => {};
  }
  await prepareSocketPath(address);
  // Node's runtime unlinks the path a listener was bound to when grpc-js
  // closes it at stop, whatever file is there by then: possibly the socket
  // of a driver started since. And bindAsync creates the socket with the
  // umask's mode, so a chmod afterwards would leave a window. So the socket
  // is bound in a private directory next to the path (mode 0700: nobody can
  // connect before the chmod) and renamed into place, which also replaces a
  // stale socket atomically. At stop the runtime unlinks the private path,
  // which is gone; removeSocket decides about the real one.
  const privateDir = fs.mkdtempSync(path.join(path.dirname(address), '.bind-'));
  const bindPath = path.join(privateDir, 's');
  try {
    if (Buffer.byteLength(bindPath) > MAX_SOCKET_PATH) {
      throw new EndpointError(
        `socket path ${quote(address)}: binding needs ${quote(bindPath)}, over ${MAX_SOCKET_PATH} bytes; use a shorter path`,
      );
    }
    try {
      await bind(server, 'unix:' + bindPath);
    } catch (err) {
      throw new EndpointError(`endpoint ${quote(endpoint)}: cannot listen: ${err.message}`);
    }
    fs.chmodSync(bindPath, 0o600);
    fs.renameSync(bindPath, address);
  } finally {
    fs.rmSync(privateDir, { recursive: true, force: true });
  }
  const own = fs.lstatSync(address);
  return function removeSocket() {
    // Only our own socket: a new driver may already have replaced it.
    try {
      const now = fs.lstatSync(address);
      if (now.ino === own.ino && now.dev === own.dev) fs.unlinkSync(address);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  };
}

// --- command line and main -------------------------------------------------

const USAGE = `usage: node-inmemory [--endpoint ENDPOINT] [--shutdown-grace SECONDS] [--log-level LEVEL]

machina in-memory driver in Node.js

options:
  --endpoint ENDPOINT       unix:///path or tcp://host:port (default: $${ENDPOINT_ENV}, else ${DEFAULT_ENDPOINT})
  --shutdown-grace SECONDS  seconds calls in flight may take after SIGTERM (default ${DEFAULT_SHUTDOWN_GRACE})
  --log-level LEVEL         debug, info, warning or error (default info)
  -h, --help                show this help and exit
`;

/** A command line the driver cannot run with; exit status 2, as argparse. */
class UsageError extends Error {}

/** Parse the command line; the endpoint falls back to the environment. */
function parseCommandLine(argv, env = process.env) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        endpoint: { type: 'string' },
        'shutdown-grace': { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(err.message);
  }
  const grace = values['shutdown-grace'] === undefined ? DEFAULT_SHUTDOWN_GRACE : Number(values['shutdown-grace']);
  if (values['shutdown-grace'] !== undefined && (values['shutdown-grace'].trim() === '' || !Number.isFinite(grace) || grace < 0)) {
    throw new UsageError(`--shutdown-grace ${quote(values['shutdown-grace'])}: want a number of seconds, 0 or more`);
  }
  const level = values['log-level'] ?? 'info';
  if (!Object.hasOwn(LEVELS, level)) {
    throw new UsageError(`--log-level ${quote(level)}: want one of ${Object.keys(LEVELS).join(', ')}`);
  }
  return {
    help: values.help === true,
    endpoint: values.endpoint ?? (env[ENDPOINT_ENV] || DEFAULT_ENDPOINT),
    shutdownGrace: grace,
    logLevel: level,
  };
}

/**
 * Run the driver until stopRequested resolves (to the name of the signal
 * that asked for it); resolve to the exit status.
 *
 * main.js takes SIGTERM and SIGINT before it loads anything, so a signal
 * that arrives while the driver starts is acted on once it serves.
 */
async function main(argv, stopRequested) {
  let args;
  try {
    args = parseCommandLine(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${USAGE}node-inmemory: error: ${err.message}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  log.level = LEVELS[args.logLevel];
  log.info(`starting name=${NAME} version=${VERSION} pid=${process.pid}`);

  const server = buildServer(new InMemoryDriver());
  let cleanup;
  try {
    cleanup = await listen(server, args.endpoint);
  } catch (err) {
    log.error(`cannot serve: ${err.message}`);
    server.forceShutdown();
    return 1;
  }
  log.info(`serving name=${NAME} version=${VERSION} endpoint=${args.endpoint}`);
  const signal = await stopRequested;
  log.info(`received ${signal}, stopping gracefully`);
  const deadline = Date.now() + args.shutdownGrace * 1000;
  await destroyedSessionsClosed(server, args.shutdownGrace * 1000);
  // New calls are refused at once; calls in flight get what is left of the
  // grace period.
  await new Promise((resolve) => {
    const force = setTimeout(() => {
      log.warning(`calls still in flight after ${args.shutdownGrace}s; cancelling them`);
      server.forceShutdown();
      resolve();
    }, Math.max(0, deadline - Date.now()));
    // tryShutdown ends when every client session has closed, which can
    // take the whole grace period when a client keeps its connection. A
    // shortcut that cut the connections once no call was in flight lost
    // answers not yet written (a handler has returned before its answer
    // is flushed), so the stop waits.
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
  cleanup();
  log.info('stopped');
  return 0;
}

// destroyedSessionsClosed waits (at most ms) until the HTTP/2 sessions that
// are already destroyed, because their client closed the connection just
// before the signal, have emitted 'close'. grpc-js (1.14) drops a session
// from its list on 'close', but its tryShutdown asks such a session to
// close gracefully, and Node never calls that back for a destroyed
// session: the stop would wait out the whole grace period. The list is not
// part of grpc-js's API; without it the stop just waits as before.
async function destroyedSessionsClosed(server, ms) {
  const pending = [];
  const servers = server.http2Servers instanceof Map ? server.http2Servers.values() : [];
  for (const info of servers) {
    for (const session of info.sessions || []) {
      if (session.destroyed && !session.closed) {
        pending.push(new Promise((resolve) => session.once('close', resolve)));
      }
    }
  }
  if (pending.length === 0) return;
  let timer;
  await Promise.race([
    Promise.all(pending),
    new Promise((resolve) => { timer = setTimeout(resolve, ms); }),
  ]);
  clearTimeout(timer);
}

module.exports = {
  NAME, VERSION, ENDPOINT_ENV, DEFAULT_ENDPOINT, PROVIDERS, CAPABILITIES, MAX_SOCKET_PATH,
  EndpointError, UsageError, parseEndpoint, prepareSocketPath, listen, buildServer, parseCommandLine, main, log,
};
