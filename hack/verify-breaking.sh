#!/usr/bin/env bash
# Runs `buf breaking` against the Driver API as committed on main. Skipped
# only while main holds no proto yet (the first commit that adds it).
set -euo pipefail
buf=$1
cd "$(dirname "$0")/.."
if ! git rev-parse --verify --quiet main >/dev/null || ! git cat-file -e main:proto/machina 2>/dev/null; then
  echo "buf breaking: skipped, main has no proto yet"
  exit 0
fi
${buf} breaking --against '.git#branch=main'
echo "buf breaking: no breaking change against main"
