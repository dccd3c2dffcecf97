#!/usr/bin/env bash
# Local development on kind (docker or podman).
#   hack/kind.sh setup        a kind cluster with the CRDs the assets need and a mock HCO
#   hack/kind.sh load IMAGE   load a locally built image into that cluster
#   hack/kind.sh delete       delete the cluster
# CLUSTER (default virt-platform-autopilot) names the cluster; CONTAINER_TOOL
# (podman or docker, detected) the engine; VENDOR_CRDS a folder of the
# vendors' real CRDs to install instead of the minimal ones in test/crds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cluster=${CLUSTER:-virt-platform-autopilot}
tool=${CONTAINER_TOOL:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
if [[ "$tool" == podman ]]; then
  export KIND_EXPERIMENTAL_PROVIDER=podman
fi

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "$1 not found: $2" >&2; exit 1; }
}

setup() {
  need kind "go install sigs.k8s.io/kind@latest (or https://kind.sigs.k8s.io/docs/user/quick-start/)"
  need kubectl "https://kubernetes.io/docs/tasks/tools/ (or 'apt-get install kubectl')"
  need "$tool" "install podman or docker, or set CONTAINER_TOOL"
  if ! kind get clusters 2>/dev/null | grep -qx "$cluster"; then
    kind create cluster --name "$cluster" --wait 120s
  fi
  kubectl config use-context "kind-$cluster" >/dev/null
  local crds=("$root/test/crds")
  if [[ -n "${VENDOR_CRDS:-}" ]]; then
    crds=("$VENDOR_CRDS")
  fi
  for dir in "${crds[@]}"; do
    # Recursive: the vendor folder groups CRDs by vendor.
    kubectl apply --server-side -R -f "$dir" --field-manager=kind-setup >/dev/null
  done
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
  kubectl create namespace openshift-cnv --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply --server-side -f "$root/config/samples/hco.yaml" --field-manager=kind-setup >/dev/null
  echo "kind cluster $cluster ready (context kind-$cluster): CRDs from ${crds[*]}, HyperConverged openshift-cnv/kubevirt-hyperconverged"
  echo "next: make deploy-local logs-local"
}

load() {
  local image=${1:?image}
  need kind "go install sigs.k8s.io/kind@latest"
  if [[ "$tool" == podman ]]; then
    # kind cannot read podman's store directly: hand it an archive.
    local archive
    archive=$(mktemp --suffix=.tar)
    trap 'rm -f "$archive"' RETURN
    podman save --format docker-archive -o "$archive" "$image"
    kind load image-archive "$archive" --name "$cluster"
  else
    kind load docker-image "$image" --name "$cluster"
  fi
}

case ${1:-} in
  setup) setup ;;
  load) load "${2:-}" ;;
  delete) kind delete cluster --name "$cluster" ;;
  *) echo "usage: $0 setup|load IMAGE|delete" >&2; exit 2 ;;
esac
