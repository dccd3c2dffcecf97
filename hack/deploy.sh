#!/usr/bin/env bash
# Renders a kustomize overlay with the image set, and applies or deletes it.
#   hack/deploy.sh render|apply|delete <overlay dir> <image>
# The overlay in the repository is never edited: a throw-away kustomization
# next to it sets the image.
set -euo pipefail
action=${1:?usage: $0 render|apply|delete <overlay> <image>}
overlay=${2:?overlay folder, e.g. config/default}
image=${3:?image, e.g. quay.io/me/virt-platform-autopilot:v0.1.0}

if ! command -v kubectl >/dev/null 2>&1; then
  echo "kubectl not found: install it (https://kubernetes.io/docs/tasks/tools/, or 'apt-get install kubectl')" >&2
  exit 1
fi
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "$root/_output/deploy.XXXXXX" 2>/dev/null || { mkdir -p "$root/_output" && mktemp -d "$root/_output/deploy.XXXXXX"; })
trap 'rm -rf "$tmp"' EXIT
rel=$(realpath --relative-to="$tmp" "$root/$overlay")
name=${image%:*}
tag=${image##*:}
if [[ "$name" == "$image" || "$tag" == */* ]]; then # no tag given
  name=$image
  tag=latest
fi
# The overlay already renamed the image to its own default (newName); the
# wrapper renames that default to the image asked for.
current=$(awk '/newName:/ {print $2; exit}' "$root/$overlay/kustomization.yaml")
cat > "$tmp/kustomization.yaml" <<YAML
resources:
  - $rel
images:
  - name: ${current:-virt-platform-autopilot}
    newName: $name
    newTag: "$tag"
YAML

case $action in
  render) kubectl kustomize "$tmp" ;;
  apply)  kubectl kustomize "$tmp" | kubectl apply --server-side --field-manager=virt-platform-autopilot-deploy -f - ;;
  delete) kubectl kustomize "$tmp" | kubectl delete --ignore-not-found -f - ;;
  *) echo "unknown action $action: want render, apply or delete" >&2; exit 2 ;;
esac
