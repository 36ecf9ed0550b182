#!/usr/bin/env bash
# Builds Tessera's images with podman, from this repository and the package registries alone
# (no container registry is needed):
#   1. localhost/debian:bookworm           the base (images/base.sh: debootstrap, cached)
#   2. localhost/tessera:<package.json version>   the Dockerfile
#   3. localhost/tessera-controlplane:<e2e/controlplane/VERSION>   test-only: etcd +
#      kube-apiserver + kubectl for the containers suite (e2e/containers); only with
#      `images/build.sh all` (or `controlplane`).
#   4. localhost/tessera-probe:<package.json version>   test-only: the e2e runner's probe
#      server for real clusters (images/probe.Containerfile, on image 2); with `probe` (which
#      builds 2 first) or `all`.
# Each step is incremental: the base is rebuilt only when its inputs change, the others reuse
# podman's layer cache. Prints the timing of each step.
#
# Usage: images/build.sh [tessera|controlplane|probe|all]   (default tessera)
# Environment: BASE_IMAGE (default localhost/debian:bookworm; another one skips step 1),
# NODE_EXTRA_CA_CERTS (a CA bundle the build's npm must trust, passed as the build secret `ca`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/images/containers.conf}
what=${1:-tessera}
case $what in tessera | controlplane | probe | all) ;; *) echo "usage: images/build.sh [tessera|controlplane|probe|all]" >&2; exit 2 ;; esac

base=${BASE_IMAGE:-localhost/debian:bookworm}
version=$(node -p "require('$root/package.json').version")
kube_version=$(tr -d '[:space:]' <"$root/e2e/controlplane/VERSION")

# Runs a command with its stdout discarded (podman build --quiet prints the image id) and
# reports how long it took.
timed() {
  local label=$1 start=$SECONDS
  shift
  "$@" >/dev/null
  echo "images: $label done in $((SECONDS - start)) s"
}

secret=()
if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -s $NODE_EXTRA_CA_CERTS ]]; then
  secret=(--secret "id=ca,src=$NODE_EXTRA_CA_CERTS")
fi

if [[ $base == localhost/debian:bookworm ]]; then
  timed "base $base" bash "$root/images/base.sh"
fi

if [[ $what == tessera || $what == probe || $what == all ]]; then
  timed "localhost/tessera:$version" \
    podman build --layers --quiet "${secret[@]}" --build-arg "BASE_IMAGE=$base" \
      -t "localhost/tessera:$version" -f "$root/Dockerfile" "$root"
  podman image inspect --format "images: localhost/tessera:$version is {{.Size}} bytes" "localhost/tessera:$version"
fi

if [[ $what == controlplane || $what == all ]]; then
  bin_dir=$(bash "$root/e2e/controlplane/build.sh" | tail -n1)
  timed "localhost/tessera-controlplane:$kube_version" \
    podman build --layers --quiet --build-arg "BASE_IMAGE=$base" \
      -t "localhost/tessera-controlplane:$kube_version" -f "$root/images/controlplane/Containerfile" "$bin_dir"
fi

if [[ $what == probe || $what == all ]]; then
  timed "localhost/tessera-probe:$version" \
    podman build --layers --quiet --build-arg "TESSERA_IMAGE=localhost/tessera:$version" \
      -t "localhost/tessera-probe:$version" -f "$root/images/probe.Containerfile" "$root/e2e/dataplane"
fi
