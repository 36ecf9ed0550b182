#!/usr/bin/env bash
# Installs Tessera into the kind cluster up.sh made: `podman save` of localhost/tessera:<v>
# (make image), `kind load image-archive` onto every node, `kubectl apply -f manifests/`,
# every Deployment and DaemonSet in tessera-system pointed at that image (`kubectl set
# image`; the manifests name the published ghcr.io image, which cannot be pulled here), then
# waits until every pod in tessera-system is Running and Ready and reports how long that took
# after the apply. Progress on stderr.
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

archive="$cache/tessera-image.tar"
rm -f "$archive"
CONTAINERS_CONF=${CONTAINERS_CONF:-$root/images/containers.conf} \
  podman save --quiet --format docker-archive -o "$archive" "$image"
CONTAINERS_CONF="$here/containers.conf" KIND_EXPERIMENTAL_PROVIDER=podman \
  "$kind" load image-archive "$archive" --name "$name" >&2
rm -f "$archive"

start=$(date +%s%N)
"$kubectl" apply -f "$root/manifests/" >&2
"$kubectl" -n tessera-system set image deployment,daemonset --all "*=$image" >&2
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
