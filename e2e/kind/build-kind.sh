#!/usr/bin/env bash
# Builds the kind CLI (sigs.k8s.io/kind, version in e2e/kind/KIND_VERSION) from the Go module
# proxy into ${TESSERA_CACHE:-$HOME/.cache/tessera}/kind/kind-<version> and prints that path
# on its last line. A no-op when it is there. kind's module has no replace directives, so a
# plain `go install module@version` works.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${TESSERA_KIND_VERSION:-$(tr -d '[:space:]' < "$here/KIND_VERSION")}"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
out="$cache/kind/kind-$version"
if [[ -x "$out" ]]; then echo "$out"; exit 0; fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then go_bin=/usr/local/go/bin/go; fi
[[ -n "$go_bin" ]] || { echo "build-kind.sh: no Go toolchain found (PATH, /usr/local/go/bin)" >&2; exit 1; }

mkdir -p "$cache/kind"
gobin="$(mktemp -d "$cache/kind/.gobin.XXXXXX")"
trap 'rm -rf "$gobin"' EXIT
start=$SECONDS
GOTOOLCHAIN=local CGO_ENABLED=0 GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOBIN="$gobin" \
  "$go_bin" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$version" >&2
mv -f "$gobin/kind" "$out"
echo "build-kind.sh: kind $version built in $((SECONDS - start)) s" >&2
echo "$out"
