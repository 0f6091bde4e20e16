'use strict';
// Secret stripping for Driver API messages (docs/driver-api.md §8).
//
// A field is secret when it carries the field option
// `(machina.driver.v1alpha1.secret) = true`. The option is read from the
// protobufjs reflection objects of the loaded proto files (proto.js), so a
// field that a later proto version marks secret is stripped without a change
// here. This mirrors the Go package
// github.com/machina-io/machina/proto/sanitize and the Python driver's
// sanitize.py, so that a request logged by this driver looks like one logged
// by the core.
//
// Messages are the plain objects of proto.js's LOADER_OPTIONS; the
// protobufjs Type of a message says what each field is.

const protobuf = require('protobufjs');

/**
 * Replaces the value of every secret string or bytes field (in bytes fields
 * as its UTF-8 bytes, which JSON shows base64-encoded).
 */
const REDACTED = '***stripped***';

// Deeper levels of a (pathological, self-nesting) message are cleared
// rather than left unsanitized.
const MAX_DEPTH = 100;

const REDACTABLE = new Set(['string', 'bytes']);

/**
 * A Sanitizer strips the messages of one loaded Driver API.
 * secretOption is the extension field `machina.driver.v1alpha1.secret`
 * (proto.load's secretOption).
 */
class Sanitizer {
  constructor(secretOption) {
    this.secretOption = secretOption;
    // Resolving option names costs more than a map lookup, and every logged
    // call walks the same few fields.
    this.cache = new WeakMap();
  }

  /**
   * Tell whether field carries `(machina.driver.v1alpha1.secret) = true`.
   * protobufjs keeps an option under the name the .proto file wrote, in
   * parentheses: "(secret)" or "(machina.driver.v1alpha1.secret)"; the name
   * is resolved from the field's scope, as protoc does, to the extension.
   */
  isSecret(field) {
    let secret = this.cache.get(field);
    if (secret === undefined) {
      secret = false;
      for (const [name, value] of Object.entries(field.options ?? {})) {
        const m = /^\((.+)\)$/.exec(name);
        if (m && value === true && this.resolveExtension(field, m[1]) === this.secretOption) {
          secret = true;
        }
      }
      this.cache.set(field, secret);
    }
    return secret;
  }

  // resolveExtension finds the extension field an option name refers to:
  // in the field's message, then in each enclosing scope, the first
  // extension of that name.
  resolveExtension(field, name) {
    for (let scope = field.parent; scope; scope = scope.parent) {
      const found = scope.lookup(name, [protobuf.Field], true);
      if (found && found.extend) return found;
    }
    return null;
  }

  /**
   * Return a deep copy of message (of protobufjs Type type) with every
   * secret field replaced. String and bytes values become REDACTED; lists
   * and maps of them keep their length and keys but have each value
   * replaced; a secret field of message type has every field inside it
   * treated as secret; secret numbers, booleans and enums are cleared.
   * Non-secret nested messages are searched too. Fields the type does not
   * declare are dropped, as nothing tells whether they are secret. The input
   * is not modified.
   */
  strip(type, message) {
    return this.stripMessage(type, message, false, 0);
  }

  stripMessage(type, message, everything, depth) {
    const out = {};
    if (depth > MAX_DEPTH || message === null || typeof message !== 'object') return out;
    for (const field of type.fieldsArray) {
      const value = message[field.name];
      if (value === undefined || value === null) continue;
      const secret = everything || this.isSecret(field);
      const nested = field.resolvedType instanceof protobuf.Type ? field.resolvedType : null;
      const one = (v) => {
        if (nested) return this.stripMessage(nested, v, secret, depth + 1);
        if (secret) return redacted(field);
        return v;
      };
      const clears = secret && !nested && !REDACTABLE.has(field.type);
      if (clears) continue;
      if (field.map) {
        out[field.name] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, one(v)]));
      } else if (field.repeated) {
        out[field.name] = Array.from(value, one);
      } else {
        out[field.name] = one(value);
      }
    }
    return out;
  }

  /**
   * Render message for a log line: compact JSON of strip(), with the proto3
   * JSON names (lowerCamelCase) in sorted order and bytes in base64, as
   * the Python driver logs it.
   */
  toText(type, message) {
    return JSON.stringify(toJSON(type, this.strip(type, message)));
  }
}

function redacted(field) {
  return field.type === 'bytes' ? Buffer.from(REDACTED) : REDACTED;
}

const jsonName = (name) => name.replace(/_(.)/g, (_, c) => c.toUpperCase());

function toJSON(type, message) {
  const fields = type.fieldsArray
    .filter((f) => message[f.name] !== undefined)
    .map((f) => [jsonName(f.name), f])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out = {};
  for (const [name, field] of fields) {
    const nested = field.resolvedType instanceof protobuf.Type ? field.resolvedType : null;
    const one = (v) => (nested ? toJSON(nested, v) : Buffer.isBuffer(v) ? v.toString('base64') : v);
    const value = message[field.name];
    if (field.map) {
      out[name] = Object.fromEntries(Object.keys(value).sort().map((k) => [k, one(value[k])]));
    } else if (field.repeated) {
      out[name] = Array.from(value, one);
    } else {
      out[name] = one(value);
    }
  }
  return out;
}

module.exports = { Sanitizer, REDACTED };
