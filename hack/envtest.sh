#!/usr/bin/env bash
# Builds kube-apiserver and etcd from Go modules into $1 (default bin/envtest)
# unless they are already there, then prints the folder's absolute path as
# the last line (the value for KUBEBUILDER_ASSETS). The tool module lives in
# hack/envtest-tools so the project's go.mod stays free of k8s.io/kubernetes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../bin/envtest}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stamp="$out/.built-from"
# Content only, not paths: any checkout of the same modules reuses the build.
want=$(cat "$here/envtest-tools/go.mod" "$here/envtest-tools/go.sum" | sha256sum | cut -c1-16)
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  echo "$out"
  exit 0
fi
echo "building etcd and kube-apiserver from Go modules (first time: several minutes)..." >&2
cd "$here/envtest-tools"
go build -o "$out/etcd" ./etcd >&2
go build -o "$out/kube-apiserver" ./kube-apiserver >&2
echo "$want" > "$stamp"
echo "$out"
