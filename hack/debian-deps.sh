#!/usr/bin/env bash
# Installs the Debian packages the project needs and the Go toolchain cannot
# provide: Python's gRPC runtime and protoc with the gRPC Python plugin, for
# the Python driver (drivers/python-inmemory) and its generated stubs; and
# prometheus for its promtool, which tests the alert rules and the Grafana
# dashboard's queries (deploy/monitoring, deploy/grafana); and Node.js with
# npm for the Node.js driver (drivers/node-inmemory) where the machine has no
# node of its own (its npm packages come from the npm registry, see there).
# A no-op when they are installed.
set -euo pipefail
pkgs=(python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc prometheus)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  pkgs+=(nodejs npm)
fi
if dpkg -s "${pkgs[@]}" >/dev/null 2>&1; then
  exit 0
fi
sudo=""
[[ $(id -u) == 0 ]] || sudo=sudo
echo "installing Debian packages: ${pkgs[*]}" >&2
${sudo} apt-get update -qq
${sudo} apt-get install -y -qq "${pkgs[@]}" >&2
