#!/usr/bin/env bash
# The machina demo (`make demo`): builds the manager, the virtualnode driver,
# the node agent and the demo program, then runs the demo on a local kube-apiserver and
# etcd. Arguments go to the demo program, for example:
#
#   hack/demo.sh --keep        # keep everything running after the rollout
#   hack/demo.sh --help        # every option
#
# Needs only Go: kube-apiserver, etcd and kubectl are built from the Go
# module proxy by hack/envtest-assets.sh on first use (several minutes) and
# cached in ~/.cache/machina.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

assets=$(hack/envtest-assets.sh)

bin=${root}/bin
mkdir -p "${bin}"
for pkg in ./cmd/machina-manager ./drivers/virtualnode/cmd/machina-driver-virtualnode ./cmd/machina-node-agent ./cmd/machina-demo; do
  echo "go build ${pkg}"
  go build -o "${bin}/" "${pkg}"
done

# exec: signals (Ctrl-C) reach the demo itself, which stops what it started.
exec "${bin}/machina-demo" --repo="${root}" --bin="${bin}" --assets="${assets}" "$@"
