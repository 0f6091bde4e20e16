#!/usr/bin/env bash
# Fails when a generated file differs from what `make generate` produces.
# It regenerates into a copy of the work tree, so it neither needs a clean
# git state nor touches the files being checked.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
(cd "${root}" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "${tmp}" 2>/dev/null || true)
make -C "${tmp}" --no-print-directory generate >/dev/null
# Compare every generated file, in both directions: changed, missing, extra.
generated() { (cd "$1" && find . -path ./bin -prune -o -type f \( -name '*.pb.go' -o -name 'zz_generated.*.go' -o -path './deploy/crds/*' -o -path ./docs/conformance-matrix.md -o -name '*_pb2.py' -o -name '*_pb2_grpc.py' \) -print | sort); }
status=0
if ! diff <(generated "${root}") <(generated "${tmp}") >/dev/null; then
  echo "generated files differ in presence:"; diff <(generated "${root}") <(generated "${tmp}") || true; status=1
fi
for f in $(generated "${tmp}"); do
  if [[ -f "${root}/${f}" ]] && ! cmp -s "${root}/${f}" "${tmp}/${f}"; then
    echo "stale generated file: ${f#./} (run make generate)"; status=1
  fi
done
[[ ${status} == 0 ]] && echo "generated files are current"
exit ${status}
