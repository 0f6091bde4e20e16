#!/usr/bin/env bash
# Runs golangci-lint (.golangci.yml) over every module of go.work in one
# invocation: the packages of all modules load and type-check together, so a
# dependency they share is analysed once.
#
#   hack/lint.sh "go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@VERSION"
#
# The Makefile passes the pinned command. golangci-lint caches its results in
# ~/.cache/golangci-lint (GOLANGCI_LINT_CACHE), outside the work tree.
set -euo pipefail
lint=$1
cd "$(dirname "$0")/.."
root=$(pwd -P)
patterns=()
for dir in $(go list -m -f '{{.Dir}}'); do
  patterns+=("./${dir#"${root}"/}/...")
done
# A second run on the machine (another checkout's make verify) waits for the
# first instead of failing after five seconds.
${lint} run --allow-serial-runners "${patterns[@]}"
