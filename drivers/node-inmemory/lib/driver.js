'use strict';
// The in-memory provider and the MachineService logic on top of it.
//
// A VM is a record in this process's memory. It is keyed by the machine's
// namespace and name, the idempotency key of CreateMachine
// (docs/driver-api.md §6.1.3): one Machine, at most one VM. A Machine of the
// same name in another namespace gets a VM of its own; the class name is not
// part of the key. Its provider ID is
// `node-inmemory:///<namespace>/<name>/<incarnation>`; the incarnation is
// random per VM, so that a VM created again under a deleted VM's name never
// gets the deleted VM's provider ID (§4.8: provider IDs are not reused).
//
// The provider spec is any JSON object. One key is understood:
// `createDelay` (seconds, a number, at most 300) makes CreateMachine take
// that long, like a slow cloud API; while it runs, other calls for the same
// machine answer ABORTED (§9) and a call whose deadline passed leaves the
// creation running, so that the retry finds the VM (§10.3).

const crypto = require('node:crypto');
const { setTimeout: sleep } = require('node:timers/promises');
const validate = require('./validate');
const { aborted, alreadyExists, invalid, notFound } = require('./errors');

/** Prefix of every provider ID of this driver. */
const PROVIDER_ID_PREFIX = 'node-inmemory:///';

/** CSI volumes of this CSI driver are disks of this provider. */
const CSI_DRIVER = 'node-inmemory.csi.machina.io';

/** hostPath volumes under this directory are disks of this provider. */
const HOST_PATH_PREFIX = '/node-inmemory/';

const MAX_CREATE_DELAY = 300;

/**
 * Provider spec keys UpdateMachine changes on a running VM, as a cloud tags
 * a running instance.
 */
const TAG_LIKE_KEYS = ['labels', 'tags'];

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Deep equality of parsed JSON values; the order of object keys does not matter. */
function jsonEqual(a, b) {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

/** The top-level keys whose values differ between two provider specs, sorted. */
function differingKeys(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys]
    .filter((k) => Object.hasOwn(a, k) !== Object.hasOwn(b, k) || !jsonEqual(a[k], b[k]))
    .sort();
}

/** The createDelay of a provider spec in seconds; 0 when absent. */
function createDelay(spec) {
  if (!Object.hasOwn(spec, 'createDelay')) return 0;
  const value = spec.createDelay;
  if (typeof value !== 'number' || !(value >= 0 && value <= MAX_CREATE_DELAY)) {
    throw invalid(`machine_class.provider_spec.createDelay must be a number of seconds from 0 to ${MAX_CREATE_DELAY}`);
  }
  return value;
}

const key = (m) => `${m.namespace}/${m.name}`;

const addresses = (vm) => [{ type: 'Hostname', address: vm.name }];

function statusResponse(vm) {
  return { provider_id: vm.providerId, node_name: vm.name, addresses: addresses(vm) };
}

/**
 * MachineService logic; methods take a request and resolve to its response.
 *
 * Failures reject with a DriverError. Calls run concurrently on the event
 * loop; calls for one machine are kept apart by machineCall, so a slow
 * creation delays nothing else.
 */
class InMemoryDriver {
  constructor() {
    /** @type {Map<string, {name, namespace, classNamespace, className, spec, providerId, uid}>} */
    this.vmTable = new Map();
    this.busy = new Set();
  }

  /** Run fn as the only call for machine m, else ABORTED. */
  async machineCall(m, fn) {
    const k = key(m);
    if (this.busy.has(k)) {
      throw aborted(`another call for machine ${m.namespace}/${m.name} is in flight; retry`);
    }
    this.busy.add(k);
    try {
      return await fn();
    } finally {
      this.busy.delete(k);
    }
  }

  /** A snapshot of every VM (for tests and diagnostics). */
  vms() {
    return [...this.vmTable.values()];
  }

  /** Create the VM for request.machine, or return the existing one (§6.1). */
  async createMachine(request) {
    const m = validate.machine(request);
    const [c, spec] = validate.machineClass(request);
    validate.sameNamespace(m, c);
    validate.secrets(request.secrets);
    validate.lastKnownState(request.last_known_state);
    validate.userData(request.user_data);
    const delay = createDelay(spec);
    return this.machineCall(m, async () => {
      const existing = this.vmTable.get(key(m));
      if (existing) {
        checkCompatible(existing, m, spec);
        return createResponse(existing);
      }
      // The provider is slow: the name is claimed for the whole delay, so
      // that a retry after a deadline cannot start a second VM.
      if (delay > 0) await sleep(delay * 1000);
      const vm = {
        name: m.name,
        namespace: m.namespace,
        classNamespace: c.namespace,
        className: c.name,
        spec,
        providerId: `${PROVIDER_ID_PREFIX}${m.namespace}/${m.name}/${crypto.randomBytes(6).toString('hex')}`,
        uid: m.uid,
      };
      this.vmTable.set(key(m), vm);
      return createResponse(vm);
    });
  }

  /**
   * Apply a class change to the running VM, or answer needs_new_vm (§6.7).
   * Only the provider spec keys in TAG_LIKE_KEYS can change on a running VM;
   * any other difference from the VM's own spec leaves the VM untouched and
   * answers needs_new_vm. A VM that already matches is answered applied
   * (idempotency).
   */
  async updateMachine(request) {
    const m = validate.machine(request, { needProviderId: true });
    if (!request.old_machine_class) throw invalid('old_machine_class is required');
    validate.jsonObject('old_machine_class.provider_spec', request.old_machine_class.provider_spec, validate.MAX_PROVIDER_SPEC);
    const [, spec] = validate.machineClass(request);
    validate.secrets(request.secrets);
    validate.lastKnownState(request.last_known_state);
    return this.machineCall(m, async () => {
      let vm = this.vmTable.get(key(m));
      if (!vm || vm.providerId !== m.provider_id) {
        throw notFound(`no VM with provider ID ${m.provider_id} for machine ${m.name}`);
      }
      const differ = differingKeys(vm.spec, spec);
      const fixed = differ.filter((k) => !TAG_LIKE_KEYS.includes(k));
      if (fixed.length > 0) {
        return {
          needs_new_vm: {
            reason: `provider spec keys ${fixed.join(', ')} differ and cannot change on a running VM` +
              ` (only ${TAG_LIKE_KEYS.join(' and ')} can)`,
          },
        };
      }
      if (differ.length > 0) {
        vm = { ...vm, spec };
        this.vmTable.set(key(m), vm);
      }
      return { applied: statusResponse(vm) };
    });
  }

  /**
   * Delete the machine's VM; a VM that is gone is OK (§6.3). With
   * machine.provider_id set only the VM with that ID is deleted, never a
   * newer VM of the same name.
   */
  async deleteMachine(request) {
    const m = validate.machine(request);
    validate.machineClass(request);
    validate.secrets(request.secrets);
    validate.lastKnownState(request.last_known_state);
    return this.machineCall(m, async () => {
      const vm = this.vmTable.get(key(m));
      if (vm && (!m.provider_id || vm.providerId === m.provider_id)) this.vmTable.delete(key(m));
      return {};
    });
  }

  /** Look the VM up by name, and by provider ID when one is given (§6.4). */
  async getMachineStatus(request) {
    const m = validate.machine(request);
    validate.machineClass(request);
    validate.secrets(request.secrets);
    const vm = await this.machineCall(m, async () => this.vmTable.get(key(m)));
    if (!vm) throw notFound(`no VM for machine ${m.name}`);
    if (m.provider_id && vm.providerId !== m.provider_id) {
      throw notFound(`no VM with provider ID ${m.provider_id} for machine ${m.name}`);
    }
    return statusResponse(vm);
  }

  /**
   * List the VMs created for machines of this class (§6.5). The scope is the
   * class's namespace and name. The provider spec defines no further scope:
   * one driver process is one provider account and serves one control
   * cluster.
   */
  async listMachines(request) {
    const [c] = validate.machineClass(request);
    validate.secrets(request.secrets);
    return {
      machines: this.vms()
        .filter((vm) => vm.classNamespace === c.namespace && vm.className === c.name)
        .map((vm) => ({ provider_id: vm.providerId, machine_name: vm.name })),
    };
  }

  /**
   * Map the volumes that are this provider's disks to their IDs (§6.6). A
   * CSI volume of CSI_DRIVER maps to its volume handle, a hostPath volume
   * under HOST_PATH_PREFIX to its path. Other volumes are left out.
   */
  async getVolumeIds(request) {
    const specs = validate.volumes(request);
    const volumeIds = [];
    request.volumes.forEach((volume, i) => {
      const id = volumeId(volume, specs[i]);
      if (id) volumeIds.push({ persistent_volume_name: volume.name, volume_id: id });
    });
    return { volume_ids: volumeIds };
  }
}

/**
 * Throw ALREADY_EXISTS unless vm is what the request would create.
 *
 * Compared: the provider spec as parsed JSON (key order and spacing do not
 * matter). Not compared, as §6.1.3 requires or recommends: secrets,
 * user_data, last_known_state, uid, labels, annotations and the class name
 * (a Machine whose class was changed keeps its VM, which stays listed under
 * its original class, §11.8). The message names what differs, never values.
 */
function checkCompatible(vm, m, spec) {
  if (!jsonEqual(vm.spec, spec)) {
    throw alreadyExists(
      `machine ${m.name} exists with another provider spec (keys that differ: ${differingKeys(vm.spec, spec).join(', ')})`,
    );
  }
}

function createResponse(vm) {
  return {
    provider_id: vm.providerId,
    node_name: vm.name,
    last_known_state: JSON.stringify({ providerID: vm.providerId }),
    addresses: addresses(vm),
  };
}

const text = (v) => (v === undefined || v === null ? '' : String(v));

/** The provider volume ID of volume, or "" when it is not ours. */
function volumeId(volume, spec) {
  const csi = isObject(spec.csi) ? spec.csi : {};
  const driver = volume.csi_driver || text(csi.driver);
  const handle = volume.csi_volume_handle || text(csi.volumeHandle);
  if (driver) return driver === CSI_DRIVER ? handle : '';
  if (isObject(spec.hostPath)) {
    const p = text(spec.hostPath.path);
    if (p.startsWith(HOST_PATH_PREFIX)) return p;
  }
  return '';
}

module.exports = {
  InMemoryDriver, PROVIDER_ID_PREFIX, CSI_DRIVER, HOST_PATH_PREFIX, MAX_CREATE_DELAY, TAG_LIKE_KEYS,
  jsonEqual, differingKeys,
};
