'use strict';
// Tests of lib/driver.js and lib/validate.js.

const assert = require('node:assert/strict');
const { describe, test, beforeEach } = require('node:test');
const { status } = require('@grpc/grpc-js');
const { InMemoryDriver, CSI_DRIVER, HOST_PATH_PREFIX, PROVIDER_ID_PREFIX } = require('../lib/driver');

const machine = (name = 'm1', namespace = 'ns', provider_id = '') => ({ name, namespace, provider_id });
const klass = ({ name = 'c1', namespace = 'ns', spec = '{"size":"small","zone":"a"}' } = {}) => ({
  name, namespace, provider_spec: Buffer.from(spec),
});
const create = (machineName = 'm1', machineNamespace = 'ns', classArgs = {}) => ({
  machine: machine(machineName, machineNamespace),
  machine_class: klass(classArgs),
});

let driver;
beforeEach(() => {
  driver = new InMemoryDriver();
});

/** Expect promise to reject with a DriverError of code whose message contains text. */
async function rejects(promise, code, text = '') {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${status[code]}, got OK`);
  assert.equal(err.code, code, `${status[err.code]}: ${err.message}`);
  assert.ok(err.message.includes(text), `${JSON.stringify(err.message)} does not contain ${JSON.stringify(text)}`);
  return err;
}

const providerIds = () => driver.vms().map((vm) => vm.providerId);

describe('CreateMachine', () => {
  test('is idempotent on the name', async () => {
    const first = await driver.createMachine(create());
    assert.ok(first.provider_id.startsWith(`${PROVIDER_ID_PREFIX}ns/m1/`), first.provider_id);
    assert.equal(first.node_name, 'm1');
    const again = create('m1', 'ns', { spec: '{ "zone": "a", "size": "small" }' }); // same JSON, other bytes
    again.machine.uid = 'another-uid';
    again.user_data = Buffer.from('renewed token');
    again.secrets = { token: Buffer.from('other') };
    assert.equal((await driver.createMachine(again)).provider_id, first.provider_id);
    assert.equal(driver.vms().length, 1);
  });

  test('an incompatible spec is ALREADY_EXISTS and keeps the VM', async () => {
    const first = await driver.createMachine(create());
    const err = await rejects(driver.createMachine(create('m1', 'ns', { spec: '{"size":"large","zone":"a"}' })),
      status.ALREADY_EXISTS, 'size');
    assert.ok(!err.message.includes('large'), 'values are not quoted');
    assert.deepEqual(providerIds(), [first.provider_id]);
  });

  test('another class name gets the VM', async () => {
    // The class name is not part of the key (§6.1.3, §11.8); the VM stays
    // listed under the class it was created for.
    const first = await driver.createMachine(create());
    assert.equal((await driver.createMachine(create('m1', 'ns', { name: 'renamed' }))).provider_id, first.provider_id);
    const st = await driver.getMachineStatus({ machine: machine(), machine_class: klass({ name: 'renamed' }) });
    assert.equal(st.provider_id, first.provider_id);
    const listed = await driver.listMachines({ machine_class: klass() });
    assert.deepEqual(listed.machines.map((m) => m.provider_id), [first.provider_id]);
  });

  test('the namespace is part of the key', async () => {
    // A Machine of the same name in another namespace is another Machine:
    // its own VM, and the first one is never reported or deleted for it.
    const first = await driver.createMachine(create());
    const otherMachine = machine('m1', 'other');
    const otherClass = klass({ namespace: 'other' });
    await rejects(driver.getMachineStatus({ machine: otherMachine, machine_class: otherClass }), status.NOT_FOUND);
    await driver.deleteMachine({ machine: otherMachine, machine_class: otherClass });
    assert.deepEqual(providerIds(), [first.provider_id]);
    const other = await driver.createMachine({ machine: otherMachine, machine_class: otherClass });
    assert.notEqual(other.provider_id, first.provider_id);
    assert.ok(other.provider_id.startsWith(`${PROVIDER_ID_PREFIX}other/m1/`), other.provider_id);
    await driver.deleteMachine({ machine: machine(), machine_class: klass() });
    assert.deepEqual(providerIds(), [other.provider_id]);
  });

  test('a class of another namespace is invalid', async () => {
    await rejects(driver.createMachine(create('m1', 'other')), status.INVALID_ARGUMENT, 'machine_class.namespace');
    assert.deepEqual(driver.vms(), []);
  });

  test('a re-created machine gets a new provider ID', async () => {
    const first = await driver.createMachine(create());
    await driver.deleteMachine({ machine: machine(), machine_class: klass() });
    const second = await driver.createMachine(create());
    assert.notEqual(first.provider_id, second.provider_id);
  });

  test('invalid arguments name the field', async () => {
    const cases = {
      'machine is required': { machine_class: klass() },
      'machine.name is required': { machine: machine(''), machine_class: klass() },
      "machine.name 'M1' must be a DNS-1123 subdomain": { machine: machine('M1'), machine_class: klass() },
      'machine.namespace is required': { machine: machine('m1', ''), machine_class: klass() },
      'machine_class is required': { machine: machine() },
      'machine_class.namespace is required': create('m1', 'ns', { namespace: '' }),
      'machine_class.provider_spec is required': create('m1', 'ns', { spec: '' }),
      'machine_class.provider_spec is not valid JSON': create('m1', 'ns', { spec: '{nope' }),
      'machine_class.provider_spec must be a JSON object': create('m1', 'ns', { spec: '[1]' }),
      'machine_class.provider_spec.createDelay': create('m1', 'ns', { spec: '{"createDelay":"soon"}' }),
      'user_data is 1048577 bytes, at most 1048576': { ...create(), user_data: Buffer.alloc((1 << 20) + 1) },
      'secrets has 65 entries': { ...create(), secrets: Object.fromEntries([...Array(65).keys()].map((i) => [`k${i}`, Buffer.from('v')])) },
      'last_known_state is 65537 bytes': { ...create(), last_known_state: 'x'.repeat((64 << 10) + 1) },
    };
    for (const [message, request] of Object.entries(cases)) {
      await rejects(driver.createMachine(request), status.INVALID_ARGUMENT, message);
    }
    assert.deepEqual(driver.vms(), []);
  });

  test('a slow create claims the machine', async () => {
    const request = create('m1', 'ns', { spec: '{"createDelay": 0.3}' });
    const creating = driver.createMachine(request);
    // Until the creation is done, calls for the machine answer ABORTED, and
    // a second create must not start another VM.
    await rejects(driver.createMachine(request), status.ABORTED);
    const st = { machine: machine(), machine_class: klass({ spec: '{"createDelay": 0.3}' }) };
    await rejects(driver.getMachineStatus(st), status.ABORTED);
    const created = await creating;
    assert.equal((await driver.getMachineStatus(st)).provider_id, created.provider_id);
    assert.equal(driver.vms().length, 1);
  });
});

describe('DeleteMachine and GetMachineStatus', () => {
  test('delete with another provider ID keeps the VM', async () => {
    const vm = await driver.createMachine(create());
    await driver.deleteMachine({ machine: machine('m1', 'ns', `${PROVIDER_ID_PREFIX}ns/m1/old`), machine_class: klass() });
    const st = await driver.getMachineStatus({ machine: machine('m1', 'ns', vm.provider_id), machine_class: klass() });
    assert.equal(st.provider_id, vm.provider_id);
  });

  test('delete is idempotent, and the status is then NOT_FOUND', async () => {
    const vm = await driver.createMachine(create());
    const del = { machine: machine('m1', 'ns', vm.provider_id), machine_class: klass() };
    for (let i = 0; i < 3; i++) await driver.deleteMachine(del);
    for (const providerId of ['', vm.provider_id]) {
      await rejects(driver.getMachineStatus({ machine: machine('m1', 'ns', providerId), machine_class: klass() }), status.NOT_FOUND);
    }
  });

  test('a status with another provider ID is NOT_FOUND', async () => {
    await driver.createMachine(create());
    await rejects(driver.getMachineStatus({ machine: machine('m1', 'ns', 'x:///y'), machine_class: klass() }), status.NOT_FOUND);
  });
});

describe('ListMachines', () => {
  test('lists only the class in its namespace', async () => {
    const mine = await driver.createMachine(create('m1'));
    await driver.createMachine(create('m2', 'ns', { name: 'other-class' }));
    await driver.createMachine({ machine: machine('m3', 'ns2'), machine_class: klass({ namespace: 'ns2' }) });
    const listed = await driver.listMachines({ machine_class: klass() });
    assert.deepEqual(listed.machines, [{ machine_name: 'm1', provider_id: mine.provider_id }]);
    await rejects(driver.listMachines({}), status.INVALID_ARGUMENT, 'machine_class is required');
  });
});

describe('GetVolumeIDs', () => {
  const pv = (name, spec, csi_driver, csi_volume_handle) => ({
    name, spec: Buffer.from(JSON.stringify(spec)), csi_driver, csi_volume_handle,
  });

  test('maps its own CSI and hostPath volumes', async () => {
    const got = await driver.getVolumeIds({
      volumes: [
        pv('csi-mine', { csi: { driver: CSI_DRIVER, volumeHandle: 'vol-1' } }, CSI_DRIVER, 'vol-1'),
        pv('csi-in-spec-only', { csi: { driver: CSI_DRIVER, volumeHandle: 'vol-2' } }),
        pv('csi-other', { csi: { driver: 'other.csi', volumeHandle: 'vol-3' } }, 'other.csi', 'vol-3'),
        pv('host-mine', { hostPath: { path: `${HOST_PATH_PREFIX}disk-1` } }),
        pv('host-other', { hostPath: { path: '/var/lib/x' } }),
        pv('nfs', { nfs: { server: 's', path: '/' } }),
      ],
    });
    assert.deepEqual(Object.fromEntries(got.volume_ids.map((v) => [v.persistent_volume_name, v.volume_id])), {
      'csi-mine': 'vol-1', 'csi-in-spec-only': 'vol-2', 'host-mine': '/node-inmemory/disk-1',
    });
  });

  test('invalid volumes', async () => {
    const v = (name, spec = '{}') => ({ name, spec: Buffer.from(spec) });
    const cases = {
      'volumes is required': [],
      'volumes[0].name is required': [{ spec: Buffer.from('{}') }],
      'volumes[1].spec is not valid JSON': [v('a'), v('b', '{')],
      'volumes[1].spec must be a JSON object': [v('a'), v('b', '["csi"]')],
      "volumes[2].name 'a' repeats volumes[0].name": [v('a'), v('b'), v('a')],
      'volumes has 1025 entries': [...Array(1025).keys()].map((i) => v(`v${i}`)),
    };
    for (const [message, volumes] of Object.entries(cases)) {
      await rejects(driver.getVolumeIds({ volumes }), status.INVALID_ARGUMENT, message);
    }
  });
});

describe('UpdateMachine', () => {
  const created = async (spec) => {
    const resp = await driver.createMachine(create('m1', 'ns', { spec }));
    return [machine('m1', 'ns', resp.provider_id), resp];
  };
  const update = (m, old, next) => ({ machine: m, old_machine_class: klass({ spec: old }), machine_class: klass({ spec: next }) });

  test('tags are applied to the same VM', async () => {
    const old = '{"size":"small","tags":{"team":"a"}}';
    const next = '{"size":"small","tags":{"team":"b"},"labels":{"x":"y"}}';
    const [m, first] = await created(old);
    for (let i = 0; i < 2; i++) { // the repeat is applied again and changes nothing
      const resp = await driver.updateMachine(update(m, old, next));
      assert.equal(resp.applied.provider_id, first.provider_id);
      assert.equal(resp.needs_new_vm, undefined);
    }
    const [vm] = driver.vms();
    assert.deepEqual(vm.spec, JSON.parse(next));
    assert.equal(vm.providerId, first.provider_id);
    // The VM matches the new class now.
    assert.equal((await driver.createMachine(create('m1', 'ns', { spec: next }))).provider_id, first.provider_id);
  });

  test('other keys need a new VM and leave the VM alone', async () => {
    const old = '{"size":"small","tags":{"team":"a"}}';
    const next = '{"size":"large","tags":{"team":"b"}}';
    const [m] = await created(old);
    const resp = await driver.updateMachine(update(m, old, next));
    assert.equal(resp.applied, undefined);
    assert.match(resp.needs_new_vm.reason, /size/);
    assert.deepEqual(driver.vms()[0].spec, JSON.parse(old));
  });

  test('errors', async () => {
    const old = '{"size":"small"}';
    const [m] = await created(old);
    await rejects(driver.updateMachine(update(machine('m1', 'ns', 'other'), old, old)), status.NOT_FOUND);
    await rejects(driver.updateMachine(update(machine(), old, old)), status.INVALID_ARGUMENT, 'machine.provider_id');
    await rejects(driver.updateMachine({ machine: m, machine_class: klass({ spec: old }) }), status.INVALID_ARGUMENT, 'old_machine_class');
  });
});
