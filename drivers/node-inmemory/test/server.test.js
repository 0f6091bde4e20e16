'use strict';
// Tests of the endpoint rules and command line in lib/server.js
// (docs/driver-api.md §2).

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { describe, test } = require('node:test');
const grpc = require('@grpc/grpc-js');
const server = require('../lib/server');
const { InMemoryDriver } = require('../lib/driver');
const { quote } = require('../lib/errors');

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'nsrv-'));

describe('parseEndpoint', () => {
  test('accepted forms', () => {
    assert.deepEqual(server.parseEndpoint('unix:///run/machina/d.sock'), ['unix', '/run/machina/d.sock']);
    assert.deepEqual(server.parseEndpoint('/run/d.sock'), ['unix', '/run/d.sock']);
    assert.deepEqual(server.parseEndpoint('tcp://127.0.0.1:7654'), ['tcp', '127.0.0.1:7654']);
  });

  test('refused forms name the value', () => {
    for (const value of ['unix://relative.sock', 'http://x:1', 'tcp://nohost', 'tcp://:80', 'tcp://h:8x', 'd.sock', '']) {
      assert.throws(() => server.parseEndpoint(value), (err) => err instanceof server.EndpointError && err.message.includes(quote(value)), value);
    }
  });
});

describe('parseCommandLine', () => {
  const env = { MACHINA_DRIVER_ENDPOINT: 'unix:///env/d.sock' };
  test('the flag wins over the environment, which wins over the default', () => {
    assert.equal(server.parseCommandLine(['--endpoint', 'unix:///flag/d.sock'], env).endpoint, 'unix:///flag/d.sock');
    assert.equal(server.parseCommandLine(['--endpoint=unix:///flag/d.sock'], env).endpoint, 'unix:///flag/d.sock');
    assert.equal(server.parseCommandLine([], env).endpoint, 'unix:///env/d.sock');
    assert.equal(server.parseCommandLine([], { MACHINA_DRIVER_ENDPOINT: '' }).endpoint, server.DEFAULT_ENDPOINT);
    assert.equal(server.parseCommandLine([], {}).endpoint, 'unix:///var/run/machina/driver.sock');
  });

  test('options and their defaults', () => {
    assert.deepEqual(server.parseCommandLine([], {}), {
      help: false, endpoint: server.DEFAULT_ENDPOINT, shutdownGrace: 25, logLevel: 'info',
    });
    const args = server.parseCommandLine(['--shutdown-grace', '2.5', '--log-level', 'debug'], {});
    assert.equal(args.shutdownGrace, 2.5);
    assert.equal(args.logLevel, 'debug');
  });

  test('bad command lines are usage errors', () => {
    for (const argv of [['--nope'], ['positional'], ['--shutdown-grace', 'soon'], ['--shutdown-grace', '-1'], ['--shutdown-grace', ''], ['--log-level', 'loud']]) {
      assert.throws(() => server.parseCommandLine(argv, {}), server.UsageError, argv.join(' '));
    }
  });
});

describe('identity', () => {
  test('GetPluginInfo lists the providers and the capabilities include no InitializeMachine', async () => {
    const dir = tempDir();
    const s = server.buildServer(new InMemoryDriver());
    const remove = await server.listen(s, `unix://${path.join(dir, 'd.sock')}`);
    const api = require('../lib/proto').load().api;
    const client = new api.IdentityService(`unix:${path.join(dir, 'd.sock')}`, grpc.credentials.createInsecure());
    try {
      const info = await new Promise((resolve, reject) => client.GetPluginInfo({}, (err, r) => (err ? reject(err) : resolve(r))));
      assert.equal(info.name, server.NAME);
      assert.deepEqual(info.providers, ['node-inmemory']);
      const caps = await new Promise((resolve, reject) => client.GetPluginCapabilities({}, (err, r) => (err ? reject(err) : resolve(r))));
      assert.deepEqual(caps.capabilities.map((c) => c.type), ['TYPE_LIST_MACHINES', 'TYPE_GET_VOLUME_IDS', 'TYPE_UPDATE_MACHINE']);
    } finally {
      client.close();
      await new Promise((resolve) => s.tryShutdown(resolve));
      remove();
    }
    assert.deepEqual(fs.readdirSync(dir), [], 'the socket is removed');
  });
});

// listenElsewhere starts another process that listens on socketPath; with
// kill set it is killed at once with SIGKILL, which leaves a stale socket.
async function listenElsewhere(socketPath, kill = false) {
  const child = spawn(process.execPath, ['-e', `
    require('node:net').createServer().listen(${JSON.stringify(socketPath)}, () => console.log('listening'));`]);
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`listener exited with ${code}`)));
  });
  if (kill) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  return child;
}

describe('prepareSocketPath', () => {
  test('a stale socket is removed', async () => {
    const p = path.join(tempDir(), 'd.sock');
    await listenElsewhere(p, true);
    assert.ok(fs.lstatSync(p).isSocket());
    await server.prepareSocketPath(p);
    assert.equal(fs.existsSync(p), false);
  });

  test('a live socket is refused and kept', async () => {
    const p = path.join(tempDir(), 'd.sock');
    const live = await listenElsewhere(p);
    try {
      await assert.rejects(server.prepareSocketPath(p), /served by another process/);
      assert.ok(fs.lstatSync(p).isSocket());
    } finally {
      live.kill();
    }
  });

  test('another file is refused and kept', async () => {
    const dir = tempDir();
    const p = path.join(dir, 'd.sock');
    fs.writeFileSync(p, 'keep me');
    await assert.rejects(server.prepareSocketPath(p), /not a socket/);
    assert.equal(fs.readFileSync(p, 'utf8'), 'keep me');
    fs.rmSync(p);
    fs.symlinkSync(path.join(dir, 'target'), p);
    await assert.rejects(server.prepareSocketPath(p), /not a socket/);
    assert.ok(fs.lstatSync(p).isSymbolicLink());
  });

  test('missing parents are created for owner and group only', async () => {
    const dir = tempDir();
    await server.prepareSocketPath(path.join(dir, 'a', 'b', 'd.sock'));
    for (const d of [path.join(dir, 'a'), path.join(dir, 'a', 'b')]) {
      assert.equal(fs.statSync(d).mode & 0o007, 0, d);
    }
  });

  test('a directory that cannot be made is an error, not a hang', async () => {
    // Under /proc mkdir answers ENOENT although the parent exists; Node's
    // recursive mkdirSync retries that forever.
    await assert.rejects(server.prepareSocketPath('/proc/machina-nope/d.sock'), { code: 'ENOENT' });
  });

  test('an existing directory keeps its mode', async () => {
    const dir = tempDir();
    fs.chmodSync(dir, 0o755);
    await server.prepareSocketPath(path.join(dir, 'd.sock'));
    assert.equal(fs.statSync(dir).mode & 0o777, 0o755);
  });

  test('a too long path names the path', async () => {
    const p = '/' + 'x'.repeat(107) + '.sock';
    await assert.rejects(server.prepareSocketPath(p), (err) => err.message.includes(p) && err.message.includes('at most 107'));
  });
});

describe('listen', () => {
  test('the socket has mode 0600 and nothing else is left next to it', async () => {
    const dir = tempDir();
    const p = path.join(dir, 'd.sock');
    const s = server.buildServer(new InMemoryDriver());
    const remove = await server.listen(s, `unix://${p}`);
    try {
      const info = fs.lstatSync(p);
      assert.ok(info.isSocket());
      assert.equal(info.mode & 0o777, 0o600);
      assert.deepEqual(fs.readdirSync(dir), ['d.sock'], 'the private bind directory is gone');
    } finally {
      await new Promise((resolve) => s.tryShutdown(resolve));
      remove();
    }
  });

  test('a stopping server leaves a successor\'s socket alone', async () => {
    const dir = tempDir();
    const p = path.join(dir, 'd.sock');
    const s = server.buildServer(new InMemoryDriver());
    const remove = await server.listen(s, `unix://${p}`);
    // A successor removes the socket and listens at the path.
    fs.unlinkSync(p);
    const successor = await listenElsewhere(p);
    try {
      const theirs = fs.lstatSync(p);
      await new Promise((resolve) => s.tryShutdown(resolve));
      remove();
      const now = fs.lstatSync(p);
      assert.equal(now.ino, theirs.ino, 'the successor\'s socket survives');
      await new Promise((resolve, reject) => {
        const c = net.connect(p, () => { c.destroy(); resolve(); });
        c.once('error', reject);
      });
    } finally {
      successor.kill();
    }
  });
});
