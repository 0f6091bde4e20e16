#!/usr/bin/env bash
# machina's fault suite, full configuration (`make chaos`): kills the
# manager with SIGKILL at random points of a scale-up, a rolling update and
# a scale-down, kills the driver, stops the API server for 90 seconds, runs
# a fleet against a driver that fails 30% of its calls, and after each phase
# counts VMs, Machines and Nodes and searches every log, Event and object
# for a canary secret. It prints the seed first and a results table last,
# and fails on any leak, duplicate, orphan, Failed or stuck machine, canary
# or manager exit. Arguments go to the suite (CHAOS_ARGS in make), for
# example:
#
#   hack/chaos.sh -chaos.seed=42                 # replay a run
#   hack/chaos.sh -chaos.rounds=1 -chaos.machines=10 -chaos.outage=30s
#   hack/chaos.sh -chaos.log-dir=/tmp/chaos      # keep the logs there
#
# The bounded configuration runs in `make test` (TestChaos without flags).
# A full run takes about 15 minutes on two cores (docs/reliability.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)
export KUBEBUILDER_ASSETS

cd "${root}/cmd"
exec go test -count=1 -timeout=90m -run '^TestChaos$' -v ./internal/chaos/ -args -chaos.full "$@"
