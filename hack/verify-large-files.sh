#!/usr/bin/env bash
# Fails when a tracked file is over 1 MiB and not text: built binaries,
# archives and images belong in bin/ or a release, not in git history, where
# every clone pays for them forever. Text files (generated code, golden
# files) of any size pass. A file is binary when grep -I says so (a NUL byte
# in its first bytes), as git itself decides.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
status=0
while IFS=$'\t' read -r size path; do
  if (( size > limit )) && ! grep -qI '' -- "${path}"; then
    echo "tracked binary file over 1 MiB: ${path} (${size} bytes); untrack it (git rm --cached) and ignore it"
    status=1
  fi
done < <(git ls-files -z | xargs -0 -r stat -c $'%s\t%n' -- 2>/dev/null || true)
[[ ${status} == 0 ]] && echo "no tracked binary file over 1 MiB"
exit ${status}
