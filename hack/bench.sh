#!/usr/bin/env bash
# machina's benchmarks (`make bench`): builds the manager, the virtualnode
# driver and the benchmark program, then runs machina-bench, which runs the
# driver call benchmarks and the scenarios on a local kube-apiserver and
# etcd, prints one table and writes bench/results.json. Arguments go to
# machina-bench (BENCH_ARGS in make), for example:
#
#   hack/bench.sh --machines=500 --skip=roll
#   hack/bench.sh --manager-arg=--kube-api-qps=200 --out=/tmp/qps200.json
#   hack/bench.sh --help
#
# A full run takes about three to five minutes on two cores, plus up to three for
# the in-place rollout of 200 machines (--skip=inplace leaves it out) and as much
# for the machine configuration pool rollout of 200 nodes, the last part
# (--skip=pool leaves it out). Benchmarks measure; they
# never fail because of a time (docs/performance.md).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

assets=$(hack/envtest-assets.sh)

bin=${root}/bin
mkdir -p "${bin}"
for pkg in ./cmd/machina-manager ./drivers/virtualnode/cmd/machina-driver-virtualnode ./bench/cmd/machina-bench; do
  echo "go build ${pkg}"
  go build -o "${bin}/" "${pkg}"
done

# exec: an interrupt reaches machina-bench, which stops what it started.
exec "${bin}/machina-bench" --repo="${root}" --bin="${bin}" --assets="${assets}" "$@"
