'use strict';
// The Driver API (machina.driver.v1alpha1) loaded from the proto files at
// run time: no generated code. The files are read once, by protobufjs, into
// one Root; gRPC gets its service definitions from that Root through
// @grpc/proto-loader, and sanitize.js reads the `secret` field option from
// the same Root's reflection objects, which keep every option of the .proto
// source (proto-loader's own descriptors drop custom options).

const fs = require('node:fs');
const path = require('node:path');
// @grpc/proto-loader registers google/protobuf/descriptor.proto (which
// options.proto imports) with protobufjs when it is loaded: load it first.
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

/** The proto files of the Driver API, relative to the proto root. */
const FILES = [
  'machina/driver/v1alpha1/options.proto',
  'machina/driver/v1alpha1/identity.proto',
  'machina/driver/v1alpha1/machine.proto',
];

/** The package of the Driver API version this driver serves (§3.1). */
const PACKAGE = 'machina.driver.v1alpha1';

/**
 * How requests become JavaScript objects and responses messages. Field
 * names as in the .proto files (machine_class, provider_id); unset fields
 * absent (proto3 sends no zero values, so "absent" is "empty" for scalars,
 * and a message field is present exactly when the caller set it); bytes as
 * Buffers; enums by name; 64-bit integers as strings.
 */
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true };

/** The repository's proto directory, where this driver's files are read from. */
const DEFAULT_PROTO_DIR = path.join(__dirname, '..', '..', '..', 'proto');

/**
 * Load the Driver API from protoDir (a directory holding machina/...).
 * Returns the protobufjs Root (for reflection), the gRPC package of
 * machina.driver.v1alpha1 (IdentityService, MachineService) and the
 * extension field of the `secret` option.
 */
function load(protoDir = DEFAULT_PROTO_DIR) {
  const root = new protobuf.Root();
  const bundled = root.resolvePath;
  root.resolvePath = (origin, target) => {
    if (path.isAbsolute(target)) return target;
    const candidate = path.join(protoDir, target);
    // Imports that are not in protoDir (google/protobuf/*) are bundled with protobufjs.
    return fs.existsSync(candidate) ? candidate : bundled(origin, target);
  };
  root.loadSync(FILES, { keepCase: true });
  root.resolveAll();
  const secretOption = root.lookup(`${PACKAGE}.secret`);
  if (!(secretOption instanceof protobuf.Field) || !secretOption.extend) {
    throw new Error(`${PACKAGE}.secret is not a field option in ${protoDir}`);
  }
  const definition = protoLoader.fromJSON(root.toJSON(), LOADER_OPTIONS);
  const api = PACKAGE.split('.').reduce((ns, name) => ns[name], require('@grpc/grpc-js').loadPackageDefinition(definition));
  return { root, api, secretOption };
}

module.exports = { load, FILES, PACKAGE, LOADER_OPTIONS, DEFAULT_PROTO_DIR };
