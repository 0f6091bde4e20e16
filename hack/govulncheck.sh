#!/usr/bin/env bash
# Runs govulncheck over every module of go.work, offline. vuln.go.dev cannot
# be reached from here, so the database is built from the OSV files that the
# golang.org/x/vulndb module ships (data/osv) by that module's own indexdb
# command; govulncheck reads it with -db file://. Everything comes from the
# Go module proxy at the versions below, and the database and the
# govulncheck binary are cached outside the work tree, keyed by version, so
# a warm cache builds nothing. Bump VULNDB_VERSION (the proxy's latest
# pseudo-version of golang.org/x/vulndb) for newer vulnerability data.
#
# It fails on a vulnerability that the code calls in a required module: bump
# that module. A called vulnerability of the standard library is a warning
# only: its fix is a newer Go on the machine (GOTOOLCHAIN=local here), not a
# change to this repository. GOVULNCHECK_STDLIB=fail makes it fail as well.
set -euo pipefail

VULN_VERSION=${VULN_VERSION:-v1.9.0}
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
STDLIB=${GOVULNCHECK_STDLIB:-warn}
CACHE_ROOT=${MACHINA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/machina}
CACHE=${CACHE_ROOT}/govulncheck
BIN=${CACHE}/govulncheck-${VULN_VERSION}/govulncheck
DB=${CACHE}/vulndb-${VULNDB_VERSION}

log() { echo "govulncheck: $*" >&2; }

ready() { [[ -x ${BIN} && -f ${DB}/index/modules.json ]]; }

prepare() {
  mkdir -p "${CACHE}"
  # One build at a time: a second caller waits and then finds the cache warm.
  exec 9>"${CACHE}/.lock"
  flock 9
  if [[ ! -x ${BIN} ]]; then
    log "building govulncheck ${VULN_VERSION}"
    GOWORK=off GOFLAGS=-mod=mod GOBIN=$(dirname "${BIN}") go install "golang.org/x/vuln/cmd/govulncheck@${VULN_VERSION}"
  fi
  if [[ ! -f ${DB}/index/modules.json ]]; then
    log "building the database of golang.org/x/vulndb@${VULNDB_VERSION} (a cold build takes a few minutes)"
    local info src tmp
    info=$(GOWORK=off go mod download -json "golang.org/x/vulndb@${VULNDB_VERSION}")
    if grep -q '"Error"' <<<"${info}"; then
      log "cannot download golang.org/x/vulndb@${VULNDB_VERSION}:"; echo "${info}" >&2; exit 1
    fi
    src=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"${info}")
    tmp=$(mktemp -d "${CACHE}/vulndb.XXXXXX")
    GOWORK=off GOFLAGS=-mod=mod go run "golang.org/x/vulndb/cmd/indexdb@${VULNDB_VERSION}" \
      -vulns "${src}/data/osv" -out "${tmp}"
    rm -rf "${DB}"
    mv "${tmp}" "${DB}"
  fi
  exec 9>&-
}

# called reads govulncheck's JSON stream and prints one line per
# vulnerability the code calls: OSV id, module, version, fixed version and
# summary, tab-separated.
called() {
  python3 -c '
import json, sys
text, dec, i, osv, seen = sys.stdin.read(), json.JSONDecoder(), 0, {}, {}
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i == len(text):
        break
    msg, i = dec.raw_decode(text, i)
    if "osv" in msg:
        osv[msg["osv"]["id"]] = msg["osv"].get("summary", "")
    f = msg.get("finding")
    if f and f["trace"] and "function" in f["trace"][0]:
        t = f["trace"][0]
        seen[f["osv"]] = (t.get("module", ""), t.get("version", ""), f.get("fixed_version", "none"))
for id, (mod, ver, fixed) in sorted(seen.items()):
    print("\t".join((id, mod, ver, fixed, osv.get(id, ""))))
'
}

ready || prepare
cd "$(dirname "$0")/.."
root=$(pwd -P)
status=0
declare -A stdlib=() # OSV id -> what to print, once for all modules
for dir in $(go list -m -f '{{.Dir}}'); do
  rel=${dir#"${root}"/}
  # govulncheck reads the module in its directory; go.work still applies.
  if ! json=$(cd "${dir}" && "${BIN}" -db "file://${DB}" -format json ./...); then
    log "${rel}: govulncheck failed"; status=1; continue
  fi
  fail=0
  while IFS=$'\t' read -r id mod ver fixed summary; do
    if [[ ${mod} == stdlib ]]; then
      stdlib[${id}]="${id} in the standard library of Go ${ver#v}, fixed in Go ${fixed#v}: ${summary}"
    else
      echo "${rel}: ${id} in ${mod}@${ver}, fixed in ${fixed}: ${summary}"
      fail=1
    fi
  done < <(called <<<"${json}")
  if [[ ${fail} == 1 ]]; then
    status=1
    # The traces, for the one who fixes it.
    (cd "${dir}" && "${BIN}" -db "file://${DB}" ./...) || true
  fi
done
if (( ${#stdlib[@]} > 0 )); then
  kind=warning
  if [[ ${STDLIB} == fail ]]; then kind=error; status=1; fi
  echo "govulncheck: ${kind}: the code calls ${#stdlib[@]} vulnerabilities of the standard library; a newer Go fixes them:"
  printf '  %s\n' "${stdlib[@]}" | sort
fi
if [[ ${status} == 0 ]]; then
  echo "govulncheck: no called vulnerability in a required module"
fi
exit ${status}
