#!/usr/bin/env bash
# Installs Tessera into the kind cluster up.sh made, as a user does:
#  1. localhost/tessera:<v> (make image) is tagged with the image reference manifests/ name
#     (ghcr.io/tessera-project/tessera:<v>, which cannot be pulled here) and loaded onto every
#     node with `kind load image-archive`, with the probe-server image the e2e runner's pods
#     run (localhost/tessera-probe:<v>, images/build.sh probe); the pods' IfNotPresent pull
#     policy then takes the loaded image;
#  2. exactly `kubectl apply -f manifests/`;
#  3. waits until every Deployment and DaemonSet in tessera-system has rolled out and every
#     pod is Ready, and reports how long that took after the apply.
# TESSERA_IMAGE=<ref> loads that local image under the manifests' reference instead.
# Progress on stderr; the last line of stdout is {"applyToReadyMs":N}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="${TESSERA_KIND_KUBE_VERSION:-$(tr -d '[:space:]' < "$here/VERSION")}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}/kind"
name="${TESSERA_KIND_CLUSTER:-tessera}"
image="localhost/tessera:$(node -p "require('$root/package.json').version")"
kubectl="$cache/$version/bin/kubectl"
kind="$(bash "$here/build-kind.sh" | tail -n1)"
export KUBECONFIG="$cache/$name.kubeconfig"
timeout_s=${TESSERA_KIND_DEPLOY_TIMEOUT:-300}

manifest_image=$(sed -n 's/^ *image: *\([^ ]*\).*/\1/p' "$root/manifests/40-agent.yaml" | head -n1)
probe_image="localhost/tessera-probe:$(node -p "require('$root/package.json').version")"
image=${TESSERA_IMAGE:-$image}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/images/containers.conf}
podman tag "$image" "$manifest_image"
archive="$cache/tessera-images.tar"
rm -f "$archive"
podman save --quiet --multi-image-archive --format docker-archive -o "$archive" "$manifest_image" "$probe_image"
CONTAINERS_CONF="$here/containers.conf" KIND_EXPERIMENTAL_PROVIDER=podman \
  "$kind" load image-archive "$archive" --name "$name" >&2
rm -f "$archive"
echo "kind-deploy: $image loaded as $manifest_image, and $probe_image" >&2

start=$(date +%s%N)
"$kubectl" apply -f "$root/manifests/" >&2
# Ready = every pod Running with all containers ready, and no pod of an old ReplicaSet left.
while :; do
  rollout_done=true
  for w in $("$kubectl" -n tessera-system get deployment,daemonset -o name); do
    "$kubectl" -n tessera-system rollout status "$w" --timeout=1s >/dev/null 2>&1 || rollout_done=false
  done
  if $rollout_done; then break; fi
  if (( ($(date +%s%N) - start) / 1000000000 > timeout_s )); then
    echo "kind-deploy: not Ready after ${timeout_s} s:" >&2
    "$kubectl" -n tessera-system get pods -o wide >&2
    exit 1
  fi
  sleep 1
done
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
"$kubectl" -n tessera-system get pods -o wide >&2
echo "kind-deploy: apply → all tessera-system workloads rolled out and Ready in ${elapsed_ms} ms" >&2
echo "{\"applyToReadyMs\":$elapsed_ms}"
