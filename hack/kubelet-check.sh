#!/usr/bin/env bash
# Builds kubelet-check (hack/kubelet-check: the kubelet's own configuration
# checks, for test/nodecheck) into $1 (default bin/tools) unless the binary
# there was built from the same sources, then prints the binary's absolute
# path as the last line. The stamp is the sources' content, not their
# paths, so any checkout of the same sources reuses the build; the test
# computes the same stamp and refuses a binary built from other sources.
set -euo pipefail
# Byte order for the glob below, as the test sorts the file names.
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../bin/tools}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin="$out/kubelet-check"
stamp="$bin.built-from"
want=$(cd "$here/kubelet-check" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)
if [[ -x "$bin" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  echo "$bin"
  exit 0
fi
echo "building kubelet-check from Go modules (first time: a few minutes)..." >&2
cd "$here/kubelet-check"
go build -o "$bin" . >&2
echo "$want" > "$stamp"
echo "$bin"
