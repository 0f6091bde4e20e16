#!/usr/bin/env bash
# Builds the kube-apiserver, etcd and kubectl binaries that envtest and the demo
# use, from the Go module proxy (this machine cannot download release binaries).
#
# The binaries are cached outside the work tree, keyed by version, so a warm
# cache makes this a no-op. The script prints the directory that holds them;
# point KUBEBUILDER_ASSETS at it.
#
#   KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)
#
# Versions: KUBE_VERSION must match the minor of the k8s.io/* libraries in
# core/go.mod; ETCD_VERSION is the etcd that Kubernetes release pins.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.1}   # v1.37.2 is not served by the module proxy (403)
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}
CACHE_ROOT=${MACHINA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/machina}
ASSETS=${CACHE_ROOT}/envtest/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}

log() { echo "envtest-assets: $*" >&2; }

if [[ -x ${ASSETS}/kube-apiserver && -x ${ASSETS}/etcd && -x ${ASSETS}/kubectl ]]; then
  echo "${ASSETS}"
  exit 0
fi

mkdir -p "${ASSETS}"
# One build at a time: a second caller waits for the first and then finds
# the cache warm.
exec 9>"${ASSETS}.lock"
flock 9
if [[ -x ${ASSETS}/kube-apiserver && -x ${ASSETS}/etcd && -x ${ASSETS}/kubectl ]]; then
  echo "${ASSETS}"
  exit 0
fi
WORK=$(mktemp -d "${CACHE_ROOT}/build.XXXXXX")
trap 'rm -rf "${WORK}"' EXIT
export GOFLAGS=-mod=mod GOWORK=off

staging_version=v0${KUBE_VERSION#v1}   # v1.37.2 -> v0.37.2

build_kube() {
  local dir=${WORK}/kube
  mkdir -p "${dir}"
  cd "${dir}"
  go mod init machina.local/envtest-kube >/dev/null 2>&1
  go mod edit -require="k8s.io/kubernetes@${KUBE_VERSION}"
  local info kubemod
  info=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}")
  if grep -q '"Error"' <<<"${info}"; then
    log "cannot download k8s.io/kubernetes@${KUBE_VERSION}:"; echo "${info}" >&2; exit 1
  fi
  kubemod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' <<<"${info}")
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
  # with directories of its own repository; a dependent module must replace
  # them with the published versions instead.
  local m
  for m in $(sed -n 's#^\s*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "${kubemod}"); do
    go mod edit -replace="${m}=${m}@${staging_version}"
  done
  go mod edit -go="$(go env GOVERSION | sed 's/^go//')"
  local pkg=k8s.io/component-base/version
  local cgo=k8s.io/client-go/pkg/version
  local major minor date
  major=$(echo "${KUBE_VERSION#v}" | cut -d. -f1)
  minor=$(echo "${KUBE_VERSION#v}" | cut -d. -f2)
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ld="-s -w"
  for p in ${pkg} ${cgo}; do
    ld+=" -X ${p}.gitVersion=${KUBE_VERSION} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor}"
    ld+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=${date}"
  done
  log "building kube-apiserver and kubectl ${KUBE_VERSION} (a cold build takes several minutes)"
  CGO_ENABLED=0 go build -trimpath -ldflags "${ld}" -o "${WORK}/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
}

build_etcd() {
  local dir=${WORK}/etcd
  mkdir -p "${dir}"
  cd "${dir}"
  go mod init machina.local/envtest-etcd >/dev/null 2>&1
  cat > main.go <<'GO'
// Command etcd wraps etcdmain so that etcd can be built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go mod edit -require="go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  go mod edit -go="$(go env GOVERSION | sed 's/^go//')"
  log "building etcd ${ETCD_VERSION}"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${WORK}/bin/etcd" .
}

build_kube
build_etcd
mv "${WORK}"/bin/* "${ASSETS}/"
"${ASSETS}/kube-apiserver" --version >&2
echo "${ASSETS}"
