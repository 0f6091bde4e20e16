'use strict';
// Checks socket.js, the Node.js socket lifecycle of
// docs/writing-a-driver.md §2.2, against @grpc/grpc-js. Run with
// hack/verify-node-socket.sh, or here: npm ci && node --test check.js

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const test = require('node:test');
const grpc = require('@grpc/grpc-js');
const { listen } = require('./socket');

function socketPath() {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nsock-')), 'd.sock');
}

function shutdown(server) {
  return new Promise((resolve) => server.tryShutdown(resolve));
}

// listenElsewhere starts another process that listens on socketPath,
// removing whatever is there first, as a careless successor driver does.
// With kill set it is killed at once with SIGKILL, which leaves a stale
// socket behind.
async function listenElsewhere(socketPath, kill = false) {
  const child = spawn(process.execPath, ['-e', `
    const fs = require('node:fs');
    try { fs.unlinkSync(${JSON.stringify(socketPath)}); } catch {}
    require('node:net').createServer().listen(${JSON.stringify(socketPath)}, () => console.log('listening'));`]);
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`listener exited with ${code}`)));
  });
  if (kill) {
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  return child;
}

test('the socket has mode 0600 and is removed on stop', async () => {
  const p = socketPath();
  const server = new grpc.Server();
  const removeSocket = await listen(server, p);
  const info = fs.lstatSync(p);
  assert.ok(info.isSocket());
  assert.equal(info.mode & 0o777, 0o600);
  assert.deepEqual(fs.readdirSync(path.dirname(p)), ['d.sock'], 'the private bind directory is gone');
  await shutdown(server);
  removeSocket();
  assert.equal(fs.existsSync(p), false);
});

test('a stale socket is replaced', async () => {
  const p = socketPath();
  await listenElsewhere(p, true);
  assert.ok(fs.lstatSync(p).isSocket(), 'a stale socket is left behind');
  const server = new grpc.Server();
  const removeSocket = await listen(server, p);
  await shutdown(server);
  removeSocket();
});

test('a socket another process serves is not taken over', async () => {
  const p = socketPath();
  const other = await listenElsewhere(p);
  try {
    await assert.rejects(listen(new grpc.Server(), p), /served by another process/);
  } finally {
    other.kill();
  }
});

test('a file that is not a socket is left alone', async () => {
  const p = socketPath();
  fs.writeFileSync(p, 'not a socket');
  await assert.rejects(listen(new grpc.Server(), p), /not a socket/);
  assert.equal(fs.readFileSync(p, 'utf8'), 'not a socket');
});

test("a successor's socket survives the stop", async () => {
  const p = socketPath();
  const server = new grpc.Server();
  const removeSocket = await listen(server, p);
  const successor = await listenElsewhere(p);
  try {
    const theirs = fs.lstatSync(p).ino;
    await shutdown(server);
    removeSocket();
    assert.equal(fs.lstatSync(p).ino, theirs, "the successor's socket is still at the path");
  } finally {
    successor.kill();
  }
});

// The reason for the private directory: bound directly at the path, grpc-js
// removes whatever socket is there when it stops. Should this test fail,
// grpc-js no longer does that, and docs/writing-a-driver.md can say so.
test('grpc-js bound at the path removes a successor socket on stop', async () => {
  const p = socketPath();
  const server = new grpc.Server();
  await new Promise((resolve, reject) => {
    server.bindAsync('unix:' + p, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });
  const successor = await listenElsewhere(p);
  try {
    await shutdown(server);
    assert.equal(fs.existsSync(p), false, "grpc-js removed the successor's socket");
  } finally {
    successor.kill();
  }
});

test('SIGTERM: the driver stops, removes its socket and exits 0', async () => {
  const p = socketPath();
  const driver = spawn(process.execPath, [path.join(__dirname, 'driver.js'), 'unix://' + p]);
  await new Promise((resolve, reject) => {
    driver.stdout.once('data', resolve);
    driver.once('exit', (code) => reject(new Error(`driver exited with ${code}`)));
  });
  assert.ok(fs.lstatSync(p).isSocket());
  const exited = new Promise((resolve) => driver.once('exit', resolve));
  driver.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal(fs.existsSync(p), false);
});
