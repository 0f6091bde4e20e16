'use strict';
// Checks of the REQUIRED fields and size limits of requests.
//
// Every check throws a DriverError with code INVALID_ARGUMENT and a message
// that starts with the field path (docs/driver-api.md §4.1, §4.10).
// Messages quote names, never provider specs or secret values.
//
// Requests are the plain objects of proto.js's LOADER_OPTIONS: a field the
// caller left unset is absent, so str() and bytes() read it as empty.

const { invalid, quote } = require('./errors');

// Limits of docs/driver-api.md §4.2, in bytes.
const MAX_NAME = 253;
const MAX_NAMESPACE = 63;
const MAX_UID = 128;
const MAX_PROVIDER_ID = 2048;
const MAX_PROVIDER_SPEC = 256 << 10;
const MAX_SECRET_ENTRIES = 64;
const MAX_SECRETS = 1 << 20;
const MAX_USER_DATA = 1 << 20;
const MAX_LAST_KNOWN_STATE = 64 << 10;
const MAX_VOLUMES = 1024;
const MAX_VOLUME_SPEC = 64 << 10;
const MAX_OTHER_STRING = 4096;

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const EMPTY = Buffer.alloc(0);

/** A string field of a request; "" when unset. */
const str = (value) => value ?? '';

/** A bytes field of a request; empty when unset. */
const bytes = (value) => value ?? EMPTY;

/** The size of a string (UTF-8) or Buffer in bytes. */
const size = (value) => (Buffer.isBuffer(value) ? value.length : Buffer.byteLength(value, 'utf8'));

function maxBytes(field, value, limit) {
  const n = size(value);
  if (n > limit) throw invalid(`${field} is ${n} bytes, at most ${limit} are allowed`);
}

/** Check a REQUIRED DNS-1123 subdomain (§4.3). */
function objectName(field, name) {
  if (!name) throw invalid(`${field} is required`);
  maxBytes(field, name, MAX_NAME);
  if (!SUBDOMAIN.test(name)) throw invalid(`${field} ${quote(name)} must be a DNS-1123 subdomain`);
}

/** Check a REQUIRED DNS-1123 label (§4.3). */
function namespace(field, value) {
  if (!value) throw invalid(`${field} is required`);
  maxBytes(field, value, MAX_NAMESPACE);
  if (!LABEL.test(value)) throw invalid(`${field} ${quote(value)} must be a DNS-1123 label`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parse a REQUIRED JSON object without quoting it in errors. */
function jsonObject(field, raw, limit) {
  raw = bytes(raw);
  if (raw.length === 0) throw invalid(`${field} is required`);
  maxBytes(field, raw, limit);
  let value;
  try {
    value = JSON.parse(utf8.decode(raw));
  } catch {
    throw invalid(`${field} is not valid JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`${field} must be a JSON object`);
  }
  return value;
}

/**
 * Check request.machine and return it with its string fields filled in
 * ("" for unset).
 */
function machine(request, { needProviderId = false } = {}) {
  if (!request.machine) throw invalid('machine is required');
  const m = {
    name: str(request.machine.name),
    namespace: str(request.machine.namespace),
    uid: str(request.machine.uid),
    provider_id: str(request.machine.provider_id),
  };
  objectName('machine.name', m.name);
  namespace('machine.namespace', m.namespace);
  if (needProviderId && !m.provider_id) throw invalid('machine.provider_id is required');
  maxBytes('machine.provider_id', m.provider_id, MAX_PROVIDER_ID);
  maxBytes('machine.uid', m.uid, MAX_UID);
  return m;
}

/**
 * Check request.machine_class; return { name, namespace } and its parsed
 * provider spec.
 */
function machineClass(request) {
  const c = request.machine_class;
  if (!c) throw invalid('machine_class is required');
  const cls = { name: str(c.name), namespace: str(c.namespace) };
  objectName('machine_class.name', cls.name);
  namespace('machine_class.namespace', cls.namespace);
  const spec = jsonObject('machine_class.provider_spec', c.provider_spec, MAX_PROVIDER_SPEC);
  return [cls, spec];
}

/**
 * Refuse a class of another namespace than its machine's (§4.9). The VM
 * would be listed in that namespace's class scope, where no Machine claims
 * it, so CreateMachine must not create it.
 */
function sameNamespace(m, c) {
  if (c.namespace !== m.namespace) {
    throw invalid(`machine_class.namespace ${quote(c.namespace)} must equal machine.namespace ${quote(m.namespace)}`);
  }
}

/** Check the size of a `secrets` map; the message names sizes only. */
function secrets(values) {
  const entries = Object.entries(values ?? {});
  if (entries.length > MAX_SECRET_ENTRIES) {
    throw invalid(`secrets has ${entries.length} entries, at most ${MAX_SECRET_ENTRIES} are allowed`);
  }
  const total = entries.reduce((sum, [k, v]) => sum + size(k) + bytes(v).length, 0);
  if (total > MAX_SECRETS) throw invalid(`secrets is ${total} bytes, at most ${MAX_SECRETS} are allowed`);
}

/** Check the size of `last_known_state`. */
function lastKnownState(value) {
  maxBytes('last_known_state', str(value), MAX_LAST_KNOWN_STATE);
}

/** Check the size of `user_data`. */
function userData(value) {
  maxBytes('user_data', bytes(value), MAX_USER_DATA);
}

/** Check request.volumes; return the parsed spec of each volume. */
function volumes(request) {
  const list = request.volumes ?? [];
  if (list.length === 0) throw invalid('volumes is required: at least one volume');
  if (list.length > MAX_VOLUMES) throw invalid(`volumes has ${list.length} entries, at most ${MAX_VOLUMES} are allowed`);
  const first = new Map();
  return list.map((volume, i) => {
    const field = `volumes[${i}]`;
    const name = str(volume.name);
    objectName(`${field}.name`, name);
    // The answer names volumes by name: a name sent twice could not be
    // answered unambiguously (§6.6.4).
    if (first.has(name)) throw invalid(`${field}.name ${quote(name)} repeats volumes[${first.get(name)}].name`);
    first.set(name, i);
    const spec = jsonObject(`${field}.spec`, volume.spec, MAX_VOLUME_SPEC);
    maxBytes(`${field}.csi_driver`, str(volume.csi_driver), MAX_OTHER_STRING);
    maxBytes(`${field}.csi_volume_handle`, str(volume.csi_volume_handle), MAX_OTHER_STRING);
    return spec;
  });
}

module.exports = {
  MAX_NAME, MAX_NAMESPACE, MAX_UID, MAX_PROVIDER_ID, MAX_PROVIDER_SPEC, MAX_SECRET_ENTRIES, MAX_SECRETS,
  MAX_USER_DATA, MAX_LAST_KNOWN_STATE, MAX_VOLUMES, MAX_VOLUME_SPEC, MAX_OTHER_STRING,
  str, bytes, objectName, namespace, jsonObject, machine, machineClass, sameNamespace, secrets,
  lastKnownState, userData, volumes,
};
