'use strict';
// Tests of lib/sanitize.js: the secret option read from the loaded protos.

const assert = require('node:assert/strict');
const test = require('node:test');
const protobuf = require('protobufjs');
const proto = require('../lib/proto');
const { Sanitizer, REDACTED } = require('../lib/sanitize');

const CANARY = 'canary-7f3a';
const loaded = proto.load();
const sanitizer = new Sanitizer(loaded.secretOption);
const type = (name) => loaded.root.lookupType(`${proto.PACKAGE}.${name}`);

test('secrets and user_data of a request are replaced, the rest stays', () => {
  const request = {
    machine: { name: 'm1', namespace: 'ns', labels: { team: 'a' } },
    machine_class: { name: 'c', namespace: 'ns', provider_spec: Buffer.from('{"size":"s"}') },
    secrets: { token: Buffer.from(CANARY), other: Buffer.from('x') },
    user_data: Buffer.from(CANARY),
    last_known_state: 'state',
  };
  const clean = sanitizer.strip(type('CreateMachineRequest'), request);
  assert.deepEqual(clean.secrets, { token: Buffer.from(REDACTED), other: Buffer.from(REDACTED) });
  assert.deepEqual(clean.user_data, Buffer.from(REDACTED));
  assert.deepEqual(clean.machine, request.machine);
  assert.deepEqual(clean.machine_class, request.machine_class);
  assert.equal(clean.last_known_state, 'state');
  // The input is untouched.
  assert.deepEqual(request.secrets.token, Buffer.from(CANARY));
  assert.deepEqual(request.user_data, Buffer.from(CANARY));
});

test('every secret field of the Driver API is found by its option', () => {
  // The fields of docs/driver-api.md §8.1, found without a list in the code.
  const found = [];
  const ns = loaded.root.lookup(proto.PACKAGE);
  for (const t of ns.nestedArray.filter((o) => o instanceof protobuf.Type)) {
    for (const f of t.fieldsArray) if (sanitizer.isSecret(f)) found.push(`${t.name}.${f.name}`);
  }
  assert.deepEqual(found.sort(), [
    'CreateMachineRequest.secrets',
    'CreateMachineRequest.user_data',
    'DeleteMachineRequest.secrets',
    'GetMachineStatusRequest.secrets',
    'InitializeMachineRequest.secrets',
    'ListMachinesRequest.secrets',
    'UpdateMachineRequest.secrets',
  ]);
});

test('toText is one line of JSON without secrets', () => {
  const request = {
    machine_class: { name: 'c', namespace: 'ns', provider_spec: Buffer.from('{}') },
    secrets: { token: Buffer.from(CANARY) },
  };
  const text = sanitizer.toText(type('ListMachinesRequest'), request);
  assert.ok(!text.includes(CANARY), text);
  assert.ok(!text.includes('\n'));
  const parsed = JSON.parse(text);
  assert.equal(parsed.machineClass.name, 'c');
  assert.equal(parsed.machineClass.providerSpec, Buffer.from('{}').toString('base64'));
  // bytes are base64 in JSON: "***stripped***" encodes to this.
  assert.equal(parsed.secrets.token, 'Kioqc3RyaXBwZWQqKio=');
});

test('every shape of secret field, as a later proto version might add', () => {
  // A message parsed into the loaded Root, so that its option names resolve
  // against the real machina.driver.v1alpha1.secret; both spellings of the
  // option name count.
  protobuf.parse(`
    syntax = "proto3";
    package sanitizetest;
    import "machina/driver/v1alpha1/options.proto";
    message Inner { string text = 1; int64 count = 2; }
    message Outer {
      string password = 1 [(machina.driver.v1alpha1.secret) = true];
      repeated string tokens = 2 [(machina.driver.v1alpha1.secret) = true];
      int64 pin = 3 [(machina.driver.v1alpha1.secret) = true];
      Inner nested = 4 [(machina.driver.v1alpha1.secret) = true];
      Inner plain = 5;
      map<string, Inner> inners = 6 [(machina.driver.v1alpha1.secret) = true];
      bool flag = 7 [(machina.driver.v1alpha1.secret) = false];
    }`, loaded.root, { keepCase: true });
  loaded.root.resolveAll();
  const outer = loaded.root.lookupType('sanitizetest.Outer');
  const clean = sanitizer.strip(outer, {
    password: CANARY,
    tokens: [CANARY, CANARY],
    pin: '1234',
    nested: { text: CANARY, count: '7' },
    plain: { text: 'visible', count: '3' },
    inners: { a: { text: CANARY } },
    flag: true,
    unknown: CANARY,
  });
  assert.deepEqual(clean, {
    password: REDACTED,
    tokens: [REDACTED, REDACTED],
    nested: { text: REDACTED },
    plain: { text: 'visible', count: '3' },
    inners: { a: { text: REDACTED } },
    flag: true,
  });
});

test('a self-nesting message is cut off, not left unsanitized', () => {
  protobuf.parse(`
    syntax = "proto3";
    package sanitizedepth;
    message Node { Node next = 1; string text = 2; }`, loaded.root, { keepCase: true });
  loaded.root.resolveAll();
  const node = loaded.root.lookupType('sanitizedepth.Node');
  let deep = { text: 'bottom' };
  for (let i = 0; i < 150; i++) deep = { next: deep };
  const clean = sanitizer.strip(node, deep);
  assert.ok(!JSON.stringify(clean).includes('bottom'));
});
