#!/usr/bin/env node
'use strict';
// A minimal driver on @grpc/grpc-js for check.js and for trying the
// conformance suite's transport checks against grpc-js by hand:
//
//   node driver.js unix:///tmp/node-driver/d.sock &
//   go run ./cmd/machina-conformance --endpoint unix:///tmp/node-driver/d.sock \
//     --machine-class conformance/testdata/machineclass.yaml \
//     --focus '^(Transport/socket_permissions|Deadlines/)'
//
// It answers the identity RPCs, holds CreateMachine and GetMachineStatus
// for a minute (a slow provider: gRPC ends them at their deadline) and
// answers DeleteMachine OK. It is not a conforming driver.

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { listen, stopOnSignals } = require('./socket');

const protoRoot = path.join(__dirname, '..', '..', 'proto');
const definition = protoLoader.loadSync(
  ['machina/driver/v1alpha1/identity.proto', 'machina/driver/v1alpha1/machine.proto'],
  { includeDirs: [protoRoot], keepCase: true },
);
const api = grpc.loadPackageDefinition(definition).machina.driver.v1alpha1;

const hold = (_call, callback) => setTimeout(() => callback({ code: grpc.status.UNAVAILABLE, details: 'slow provider' }), 60000);

async function main() {
  const endpoint = process.argv[2] || process.env.MACHINA_DRIVER_ENDPOINT;
  if (!endpoint || !endpoint.startsWith('unix:///')) {
    throw new Error(`endpoint ${endpoint}: want unix:///absolute/path`);
  }
  const server = new grpc.Server();
  server.addService(api.IdentityService.service, {
    GetPluginInfo: (_call, cb) => cb(null, { name: 'node-check.driver.machina.io', vendor_version: 'v0.1.0' }),
    GetPluginCapabilities: (_call, cb) => cb(null, { capabilities: [] }),
    Probe: (_call, cb) => cb(null, {}),
  });
  server.addService(api.MachineService.service, {
    CreateMachine: hold,
    GetMachineStatus: hold,
    DeleteMachine: (_call, cb) => cb(null, {}),
  });
  const removeSocket = await listen(server, endpoint.slice('unix://'.length));
  stopOnSignals(server, removeSocket);
  console.log('serving on ' + endpoint);
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
