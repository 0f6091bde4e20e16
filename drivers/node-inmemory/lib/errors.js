'use strict';
// The error type of the driver: a gRPC status code and a message.
//
// Driver code throws a DriverError; the server turns it into the call's
// status. Messages are for humans (docs/driver-api.md §7.1) and never
// contain secret values (§8.3).

const { status } = require('@grpc/grpc-js');

/** A failed call: the status `code` the core acts on and a `message`. */
class DriverError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'DriverError';
    this.code = code;
  }
}

/** INVALID_ARGUMENT; `message` names the field path (§4.10). */
const invalid = (message) => new DriverError(status.INVALID_ARGUMENT, message);

/** NOT_FOUND: no VM for the machine (§6.4.3). */
const notFound = (message) => new DriverError(status.NOT_FOUND, message);

/** ALREADY_EXISTS: an incompatible VM has the machine's name (§6.1.3). */
const alreadyExists = (message) => new DriverError(status.ALREADY_EXISTS, message);

/** ABORTED: another call for the same machine is in flight (§9). */
const aborted = (message) => new DriverError(status.ABORTED, message);

/** The name of a gRPC status code, e.g. "INVALID_ARGUMENT". */
const codeName = (code) => status[code] ?? `CODE_${code}`;

/**
 * quote renders a value from a request for a message, as Python's repr
 * does for a string: in single quotes, with control characters, quotes and
 * backslashes escaped so that a message stays one line.
 */
function quote(value) {
  const escaped = String(value).replace(/[\\'\x00-\x1f\x7f]/g, (c) => {
    switch (c) {
      case '\\': return '\\\\';
      case "'": return "\\'";
      case '\n': return '\\n';
      case '\r': return '\\r';
      case '\t': return '\\t';
      default: return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
    }
  });
  return `'${escaped}'`;
}

module.exports = { DriverError, invalid, notFound, alreadyExists, aborted, codeName, quote };
