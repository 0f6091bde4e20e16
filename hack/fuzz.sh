#!/usr/bin/env bash
# machina's fuzz targets (`make fuzz`): runs every `func FuzzXxx(f *testing.F)`
# of the repository for FUZZTIME each (default 30s), one after another (go
# test fuzzes one target per invocation), and prints a table. Their seed
# corpora (f.Add and testdata/fuzz/FuzzXxx/) run in every `go test`, so
# `make test` covers them without fuzzing.
#
#   hack/fuzz.sh                      # every target, 30s each
#   FUZZTIME=5m hack/fuzz.sh          # longer
#   FUZZ=ProviderSpec hack/fuzz.sh    # only targets whose name matches
#
# A failing input is written by go test to the package's
# testdata/fuzz/FuzzXxx/ directory; commit it with the fix, and it becomes
# part of the seed corpus that every `go test` runs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

fuzztime=${FUZZTIME:-30s}
filter=${FUZZ:-.}
# Two workers by default: the machines this runs on are small and shared.
parallel=${FUZZ_PARALLEL:-2}

# The packages that declare fuzz targets, found from the source so that only
# their test binaries are built.
mapfile -t dirs < <(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' --include='*_test.go' . |
  grep -v '/testdata/' | xargs -r -n1 dirname | sort -u)
if [ "${#dirs[@]}" -eq 0 ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi

results=()
failed=0
total=0
for dir in "${dirs[@]}"; do
  # go test -list prints the names matching the pattern, then "ok ...".
  mapfile -t targets < <(go test -list '^Fuzz' "${dir}" | grep -E '^Fuzz' | grep -E -- "${filter}" || true)
  for target in "${targets[@]}"; do
    total=$((total + 1))
    echo "=== ${dir#./} ${target} (${fuzztime})"
    start=$(date +%s)
    log=$(mktemp)
    if go test -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}" -parallel "${parallel}" "${dir}" 2>&1 | tee "${log}"; then
      status=ok
    else
      status=FAIL
      failed=$((failed + 1))
    fi
    # The last progress line holds the number of executions.
    execs=$(grep -oE 'execs: [0-9]+' "${log}" | tail -n1 | grep -oE '[0-9]+' || echo "?")
    rm -f "${log}"
    results+=("$(printf '%-4s  %-52s %-36s %10s execs %5ss' "${status}" "${dir#./}" "${target}" "${execs}" "$(($(date +%s) - start))")")
  done
done

echo
echo "fuzz targets (FUZZTIME=${fuzztime}):"
printf '%s\n' "${results[@]}"
echo "${total} targets, ${failed} failed"
if [ "${total}" -eq 0 ]; then
  echo "no target matches FUZZ=${filter}" >&2
  exit 1
fi
[ "${failed}" -eq 0 ]
