#!/usr/bin/env bash
# Checks the Node.js socket lifecycle that docs/writing-a-driver.md §2.2
# shows (hack/node-socket/socket.js) against @grpc/grpc-js: mode 0600, stale
# and live sockets, and that a stopping driver leaves a successor's socket
# alone. Needs node (v18 or later) and npm; the dependencies come from the
# committed package-lock.json. Not part of `make test`, which needs no
# Node.js.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/node-socket"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node --test check.js
