#!/usr/bin/env bash
# Deletes the kind cluster "${TESSERA_KIND_CLUSTER:-tessera}" (its node containers, their
# /var volumes and its kubeconfig). A no-op when there is none. Images stay.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}/kind"
name="${TESSERA_KIND_CLUSTER:-tessera}"
kind="$(bash "$here/build-kind.sh" | tail -n1)"
export CONTAINERS_CONF="$here/containers.conf" KIND_EXPERIMENTAL_PROVIDER=podman
"$kind" delete cluster --name "$name" --kubeconfig "$cache/$name.kubeconfig" >&2
rm -f "$cache/$name.kubeconfig"
