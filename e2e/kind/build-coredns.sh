#!/usr/bin/env bash
# Builds CoreDNS (github.com/coredns/coredns, the version kubeadm's image list names for this
# Kubernetes version) from the Go module proxy into
#   ${TESSERA_CACHE:-$HOME/.cache/tessera}/kind/coredns/<version>/coredns
# and prints that path on its last line. A no-op when it is there. Optional: without it the
# cluster has no DNS (build-images.sh then ships no CoreDNS image). Static (CGO_ENABLED=0).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${TESSERA_KIND_KUBE_VERSION:-$(tr -d '[:space:]' < "$here/VERSION")}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
kubeadm="$(bash "$here/build-kube.sh" | tail -n1)/kubeadm"
coredns_version="$("$kubeadm" config images list --kubernetes-version "$version" | sed -n 's#.*/coredns:##p')"
[[ -n $coredns_version ]] || { echo "build-coredns.sh: kubeadm names no CoreDNS image" >&2; exit 1; }
out="$cache/kind/coredns/$coredns_version/coredns"
if [[ -x "$out" ]]; then echo "$out"; exit 0; fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then go_bin=/usr/local/go/bin/go; fi
[[ -n "$go_bin" ]] || { echo "build-coredns.sh: no Go toolchain found (PATH, /usr/local/go/bin)" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
gobin="$(mktemp -d "$cache/kind/.gobin.XXXXXX")"
trap 'rm -rf "$gobin"' EXIT
start=$SECONDS
GOTOOLCHAIN=local CGO_ENABLED=0 GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOBIN="$gobin" \
  "$go_bin" install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$coredns_version" >&2
mv -f "$gobin/coredns" "$out"
echo "build-coredns.sh: CoreDNS $coredns_version built in $((SECONDS - start)) s" >&2
echo "$out"
