#!/usr/bin/env bash
# Builds kustomize (sigs.k8s.io/kustomize, the version hack/kustomize/go.mod
# pins) into $1 (default bin/tools) unless the binary there was built from
# the same go.mod and go.sum, then prints its absolute path as the last
# line. test/e2e runs the autopilot's KRM function through it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../bin/tools}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin="$out/kustomize"
stamp="$bin.built-from"
want=$(cd "$here/kustomize" && cat go.mod go.sum | sha256sum | cut -c1-16)
if [[ -x "$bin" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  echo "$bin"
  exit 0
fi
echo "building kustomize from Go modules..." >&2
cd "$here/kustomize"
go build -o "$bin" sigs.k8s.io/kustomize/kustomize/v5 >&2
echo "$want" > "$stamp"
echo "$bin"
