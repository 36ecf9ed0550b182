#!/usr/bin/env bash
# Downloads the SIG-Network policy API module (sigs.k8s.io/network-policy-api, the version
# Tessera's ClusterNetworkPolicy schema declares) into Tessera's Go module cache
# (${TESSERA_CACHE:-$HOME/.cache/tessera}/go/mod, go-env.sh) through the module proxy, and
# prints its directory. e2e/cluster-network-policy-crds.unit.test.ts compares the CRDs Tessera
# generates with the module's config/crd/{standard,experimental}. No-op when cached.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${NETWORK_POLICY_API_VERSION:-v0.3.0}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
dir="$cache/go/mod/sigs.k8s.io/network-policy-api@$version"
if [[ -d "$dir/config/crd" ]]; then
  echo "$dir"
  exit 0
fi
source "$here/go-env.sh"
# Outside any module: `go mod download module@version` needs no go.mod.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if ! out="$(cd "$scratch" && "$go_bin" mod download -json "sigs.k8s.io/network-policy-api@$version")"; then
  echo "network-policy-api.sh: go mod download sigs.k8s.io/network-policy-api@$version failed:" >&2
  printf '%s\n' "$out" >&2
  exit 1
fi
echo "$dir"
