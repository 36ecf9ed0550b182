#!/usr/bin/env bash
# Creates (or reuses) the kind cluster "${TESSERA_KIND_CLUSTER:-tessera}" on podman from the
# node image build-images.sh makes (built first when missing), waits until every node is
# Ready, and prints only `export KUBECONFIG=<file>` on stdout (progress and timings go to
# stderr):   eval "$(make -s kind-up)"
# The kubeconfig lives at $HOME/.cache/tessera/kind/<cluster>.kubeconfig. `make kind-down`
# (down.sh) deletes the cluster.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="${TESSERA_KIND_KUBE_VERSION:-$(tr -d '[:space:]' < "$here/VERSION")}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}/kind"
name="${TESSERA_KIND_CLUSTER:-tessera}"
kubeconfig="$cache/$name.kubeconfig"
node_image="localhost/tessera-kind-node:$version"

export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/images/containers.conf}
if ! podman image exists "$node_image"; then
  bash "$here/build-images.sh" >/dev/null
fi
kind="$(bash "$here/build-kind.sh" | tail -n1)"
kubectl="$cache/$version/bin/kubectl"

# kind runs `podman run` for the nodes; they get this file's rlimits (see its comments).
export CONTAINERS_CONF="$here/containers.conf"
export KIND_EXPERIMENTAL_PROVIDER=podman

# Workers join through the name <cluster>-control-plane, which only resolves on a podman
# network with DNS. With podman's CNI backend that takes the dnsname plugin (Debian:
# golang-github-containernetworking-plugin-dnsname), and only networks created after it was
# installed have it: a DNS-less "kind" network that no container uses is removed here so kind
# creates it again.
if [[ "$(podman info --format '{{.Host.NetworkBackend}}')" == cni ]] &&
  ! compgen -G '/usr/lib/cni/dnsname' >/dev/null && ! compgen -G '/opt/cni/bin/dnsname' >/dev/null; then
  echo "kind-up: podman's CNI backend has no dnsname plugin, so workers cannot resolve the control plane:" >&2
  echo "kind-up:   apt-get install golang-github-containernetworking-plugin-dnsname" >&2
  exit 1
fi
if [[ "$(podman network inspect kind --format '{{.DNSEnabled}}' 2>/dev/null || true)" == false ]] &&
  [[ -z "$(podman ps -a --filter network=kind --format '{{.ID}}')" ]]; then
  echo "kind-up: removing podman network kind (created without DNS)" >&2
  podman network rm kind >/dev/null
fi

# kind bind-mounts the host's /lib/modules into every node (read-only, for kube-proxy's and
# iptables' module loading); podman refuses a missing source ("statfs /lib/modules: no such
# file or directory"), and a sandbox without kernel modules has none. An empty one serves.
[[ -d /lib/modules ]] || mkdir -p /lib/modules

start=$SECONDS
if "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
  echo "kind-up: cluster $name exists; reusing it" >&2
  "$kind" export kubeconfig --name "$name" --kubeconfig "$kubeconfig" >&2
else
  "$kind" create cluster --name "$name" --image "$node_image" --config "$here/cluster.yaml" \
    --kubeconfig "$kubeconfig" --wait 5m --retain >&2 || {
    echo "kind-up: kind create cluster failed; nodes kept for inspection (make kind-down removes them)" >&2
    exit 1
  }
  echo "kind-up: kind create cluster done in $((SECONDS - start)) s" >&2
fi
"$kubectl" --kubeconfig "$kubeconfig" wait --for=condition=Ready nodes --all --timeout=300s >&2
echo "kind-up: all nodes Ready after $((SECONDS - start)) s" >&2
"$kubectl" --kubeconfig "$kubeconfig" get nodes -o wide >&2
echo "export KUBECONFIG=$kubeconfig"
