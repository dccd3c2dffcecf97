#!/usr/bin/env bash
# Builds kubectl from Go modules into $1 (default bin/tools) unless it is
# already there, then prints the folder's absolute path as the last line (to
# put on PATH). Only for machines without kubectl: CI, a bare container.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../bin/tools}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stamp="$out/.kubectl-built-from"
want=$(cat "$here/kubectl-tool/go.mod" "$here/kubectl-tool/go.sum" | sha256sum | cut -c1-16)
if [[ -x "$out/kubectl" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  echo "$out"
  exit 0
fi
echo "building kubectl from Go modules..." >&2
cd "$here/kubectl-tool"
ver=$(go list -m -f '{{.Version}}' k8s.io/kubectl | sed 's/^v0\./v1./')
go build -ldflags "-X k8s.io/component-base/version.gitVersion=$ver" -o "$out/kubectl" . >&2
echo "$want" > "$stamp"
echo "$out"
