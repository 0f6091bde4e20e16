#!/usr/bin/env bash
# make images: builds the container images of machina-manager,
# machina-node-agent and the Go reference drivers into bin/images, without a
# container daemon (cmd/internal/images, with go-containerregistry): one
# layer holding one static binary on an empty base, non-root, no shell.
# Each image is written as an OCI image layout (bin/images/<name>/) and a
# `docker load` archive (bin/images/<name>.tar), read back and checked.
# docs/operating.md says how to load them into a cluster or push them.
#
#   hack/images.sh                          # every image
#   hack/images.sh machina-manager          # some of them
#   hack/images.sh --arch=arm64             # for another architecture
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

revision=unknown
created=${SOURCE_DATE_EPOCH:-0}
if git rev-parse --git-dir >/dev/null 2>&1; then
  revision=$(git rev-parse HEAD)
  # Uncommitted changes make an image no commit describes.
  if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
    revision+=-dirty
  fi
  created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
fi

exec go run ./cmd/internal/images/machina-images \
  --repo="${root}" --out="${root}/bin/images" --revision="${revision}" --created="${created}" "$@"
