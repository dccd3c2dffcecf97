#!/usr/bin/env bash
# Runs golangci-lint at a pinned version, installing it into $1 (bin/) from
# the Go module proxy on first use.
set -euo pipefail
bin=$1 version=$2
shift 2
tool="$bin/golangci-lint-$version"
if [[ ! -x "$tool" ]]; then
  echo "installing golangci-lint $version..." >&2
  mkdir -p "$bin"
  GOBIN="$(cd "$bin" && pwd)" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version" >&2
  mv "$bin/golangci-lint" "$tool"
fi
exec "$tool" "$@"
